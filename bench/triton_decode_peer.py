#!/usr/bin/env python3
"""A split-KV decode kernel in Triton: the Triton peer of bench_decode.py.

Decode is one new query (or a few) per sequence over a long cached context,
so the work is reading K and V once; this kernel is written for that and for
nothing else. Two launches:

  phase 1, one program per (split, kv head, sequence): the program takes the
    query rows of every query head that shares its kv head (Hq/Hkv heads
    times the sequence's new tokens, padded to a tile of at least 16 rows,
    so one tl.dot serves the whole GQA group and each K/V byte is read once
    per kv head, not once per query head), walks its share of the
    sequence's key tiles with the online softmax in base 2 and writes a
    partial result per row: o (already divided by its own l), m (the
    running maximum, base-2 logits) and l (the sum of exp2(s - m));
  phase 2, one program per (query token, query head): the combine. It
    rescales the splits' partials to their common maximum and adds them;
    GPT-OSS's null-logit sink enters here, once, as one more term
    exp2(sink - M) of the denominator (so it is not counted once per split).

With one split the first phase finishes the rows itself (sink included) and
writes the output: a single launch, which is what a short window needs.

The key range of a sequence is the union of what its query rows may see:
query i of n_q sits at key position n_k - n_q + i (bottom-right); causal
keeps keys at or before a row's position; a window (left, right; -1 is
unbounded) bounds it on either side. Only the key tiles that meet this range
are visited (tiles start on a BLOCK_N boundary, keys outside the range are
masked off in the loads, so a page or row left of a window is never read);
the range is cut into NUM_SPLITS runs of whole tiles, and each row's own
mask is applied element by element on every visited tile. A split whose run
is empty (a short sequence beside a long one) writes m = -inf, l = 0.
Sinks: "null_logit" (above) or "bias_key0" (sink[h] added to the score of
key position 0 of each sequence, in phase 1).

Two K/V layouts, one kernel (PAGED is a compile-time switch):
  contiguous  k, v [total_k, Hkv, D], sequence b's keys from cu_seqlens_k[b];
  paged       k_cache, v_cache [num_pages, page_size, Hkv, D]; key j of
              sequence b is row j % page_size of page block_table[b, j //
              page_size] (block_table int32 [B, max_pages]); seqused_k int32
              [B] counts its keys. Each tile looks up the page of every key.

How many splits (choose_splits): the programs without splitting are
batch * Hkv. A split costs one partial row of D floats per query row plus a
share of the combine, so splitting pays only while the GPU has too few
programs to keep its memory system busy. The count is
    ceil(PROGRAMS_PER_SM * SMs / (batch * Hkv)),
capped so that every split keeps at least MIN_KEYS_PER_SPLIT keys of the
longest sequence's visible range (a window of 128 keys never splits) and at
most MAX_SPLITS. PROGRAMS_PER_SM = 4: a program holds a 16-row tile and
keeps num_stages K/V tiles in flight, and about four of them per SM cover
the memory latency. On the H200 (132 SMs): 8 x 32768 keys with 8 kv heads
gets 9 splits, 64 x 8192 gets 2, 256 x 2048 gets 1, one sequence of 131072
keys gets 64. The tile sizes are tuned per problem by triton.autotune.

Head dims that are not a power of two are padded in registers (masked loads
and stores). q, k and v in bf16 or fp16 (fp32 in the interpreter); the
partials are fp32 in a workspace cached per device (grown as needed, so the
timed calls allocate nothing; not for concurrent calls on several streams).
No spans, no soft-cap, no LSE output.

Check it on the CPU, in Triton's interpreter, against a plain PyTorch
reference (a dense masked softmax per sequence; for the paged layout the
pages are gathered first), with splits forced to 1, 2 and more than there
are tiles, and K/V outside every window poisoned with NaN:

    TRITON_INTERPRET=1 python3 bench/triton_decode_peer.py

On a GPU the same command without TRITON_INTERPRET checks bf16 and fp16.
"""

import os
import sys

import torch
import triton
import triton.language as tl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from triton_peer import (LOG2E, SINK_CODES, _interpreter_scalar_index,  # noqa: E402
                         _load_reference)
from triton_paged_peer import (gather_pages, make_paged_case,  # noqa: E402
                               paged_reference, poison_unseen_pages)

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"

PROGRAMS_PER_SM = 4
MIN_KEYS_PER_SPLIT = 256
MAX_SPLITS = 64
MAX_ROWS = 128          # query rows of one tile: new tokens * (Hq / Hkv)
CPU_SM_COUNT = 4        # what the heuristic assumes in the interpreter

# (BLOCK_N, warps, stages) tried by the autotuner for phase 1.
_CONFIGS = [(64, 4, 2), (64, 4, 3), (64, 4, 4), (128, 4, 2), (128, 4, 3), (128, 8, 3),
            (32, 4, 4), (64, 2, 3)]
_AUTOTUNE = [triton.Config({"BLOCK_N": bn}, num_warps=w, num_stages=s) for bn, w, s in _CONFIGS]
if INTERPRET:
    _AUTOTUNE = [triton.Config({"BLOCK_N": 16}, num_warps=1, num_stages=1)]


@triton.autotune(configs=_AUTOTUNE,
                 key=["max_seqlen_q", "max_seqlen_k", "G", "D_PAD", "BLOCK_M", "NUM_SPLITS",
                      "PAGED", "PAGE", "CAUSAL", "WINDOW", "SINK", "DIRECT"])
@triton.jit
def _split_kv_kernel(
        q_ptr, k_ptr, v_ptr, o_ptr, part_o_ptr, part_m_ptr, part_l_ptr,
        cu_q_ptr, cu_k_ptr, used_k_ptr, table_ptr, sinks_ptr, scale2,
        q_tok, q_head, o_tok, o_head,                  # query / output strides (elements)
        k_page, k_row, k_head, v_page, v_row, v_head,  # K/V strides (page unused if contiguous)
        table_row, total_q, heads_q, window_left, window_right, max_seqlen_q, max_seqlen_k,
        G: tl.constexpr, D: tl.constexpr, D_PAD: tl.constexpr, BLOCK_M: tl.constexpr,
        BLOCK_N: tl.constexpr, NUM_SPLITS: tl.constexpr, PAGED: tl.constexpr,
        PAGE: tl.constexpr, CAUSAL: tl.constexpr, WINDOW: tl.constexpr, SINK: tl.constexpr,
        DIRECT: tl.constexpr):
    split = tl.program_id(0)
    kv_head = tl.program_id(1)
    seq = tl.program_id(2)
    q_start = tl.load(cu_q_ptr + seq)
    n_q = tl.load(cu_q_ptr + seq + 1) - q_start
    if n_q <= 0:
        return  # no new tokens: nothing to write, nothing to combine
    if PAGED:
        n_k = tl.load(used_k_ptr + seq)
        k_start = n_k * 0
    else:
        k_start = tl.load(cu_k_ptr + seq)
        n_k = tl.load(cu_k_ptr + seq + 1) - k_start

    # Row r of the tile is query token r // G, query head kv_head * G + r % G.
    rows = tl.arange(0, BLOCK_M)
    token = rows // G
    head = kv_head * G + rows % G
    row_ok = token < n_q
    pos = n_k - n_q + token  # key position of each row (bottom-right)
    dims = tl.arange(0, D_PAD)
    dim_ok = dims < D
    q_rows = (q_start + token).to(tl.int64)
    q = tl.load(q_ptr + q_rows[:, None] * q_tok + head[:, None] * q_head + dims[None, :],
                mask=row_ok[:, None] & dim_ok[None, :], other=0.0)

    # The keys some row may see: [lo, hi). Rows sit at n_k - n_q .. n_k - 1,
    # so the last row reaches the last key whatever causal and the right
    # window say; only the left window edge of the first row cuts the range.
    lo = n_k * 0
    hi = n_k
    if WINDOW:
        if window_left >= 0:
            lo = tl.maximum(lo, n_k - n_q - window_left)
    # This split's run of whole tiles inside [first tile of lo, hi).
    base = lo - lo % BLOCK_N
    n_tiles = tl.cdiv(tl.maximum(hi - base, 0), BLOCK_N)
    per_split = tl.cdiv(n_tiles, NUM_SPLITS)
    t0 = tl.minimum(split * per_split, n_tiles)
    t1 = tl.minimum(t0 + per_split, n_tiles)

    row_max = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    row_sum = tl.zeros([BLOCK_M], dtype=tl.float32)
    if SINK == 1:
        if DIRECT:  # one split: the null logit is a starting term
            row_max = tl.load(sinks_ptr + head, mask=row_ok, other=0.0) * 1.4426950408889634
            row_sum = row_sum + 1.0
    if SINK == 2:
        bias2 = tl.load(sinks_ptr + head, mask=row_ok, other=0.0) * 1.4426950408889634
    acc = tl.zeros([BLOCK_M, D_PAD], dtype=tl.float32)
    if PAGED:
        table = table_ptr + seq.to(tl.int64) * table_row

    for start in range(base + t0 * BLOCK_N, base + t1 * BLOCK_N, BLOCK_N):
        keys = start + tl.arange(0, BLOCK_N)
        key_ok = (keys >= lo) & (keys < hi)
        if PAGED:
            page = tl.load(table + keys // PAGE, mask=key_ok, other=0).to(tl.int64)
            k_off = page * k_page + (keys % PAGE) * k_row + kv_head * k_head
            v_off = page * v_page + (keys % PAGE) * v_row + kv_head * v_head
        else:
            key_rows = (k_start + keys).to(tl.int64)
            k_off = key_rows * k_row + kv_head * k_head
            v_off = key_rows * v_row + kv_head * v_head
        load_ok = key_ok[:, None] & dim_ok[None, :]
        k = tl.load(k_ptr + k_off[:, None] + dims[None, :], mask=load_ok, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale2
        if SINK == 2:
            s = tl.where((keys == 0)[None, :], s + bias2[:, None], s)
        ok = key_ok[None, :] & row_ok[:, None]
        if CAUSAL:
            ok = ok & (keys[None, :] <= pos[:, None])
        if WINDOW:
            if window_left >= 0:
                ok = ok & (pos[:, None] - keys[None, :] <= window_left)
            if window_right >= 0:
                ok = ok & (keys[None, :] - pos[:, None] <= window_right)
        s = tl.where(ok, s, float("-inf"))
        new_max = tl.maximum(row_max, tl.max(s, 1))
        safe_max = tl.where(new_max == float("-inf"), 0.0, new_max)
        p = tl.exp2(s - safe_max[:, None])
        correction = tl.exp2(row_max - safe_max)
        row_sum = row_sum * correction + tl.sum(p, 1)
        v = tl.load(v_ptr + v_off[:, None] + dims[None, :], mask=load_ok, other=0.0)
        acc = acc * correction[:, None] + tl.dot(p.to(v.dtype), v)
        row_max = new_max

    out = acc / tl.where(row_sum > 0, row_sum, 1.0)[:, None]
    if DIRECT:
        tl.store(o_ptr + q_rows[:, None] * o_tok + head[:, None] * o_head + dims[None, :],
                 out.to(o_ptr.dtype.element_ty), mask=row_ok[:, None] & dim_ok[None, :])
    else:
        slot = (split * total_q + q_rows) * heads_q + head  # [split, token, head]
        tl.store(part_o_ptr + slot[:, None] * D + dims[None, :], out,
                 mask=row_ok[:, None] & dim_ok[None, :])
        tl.store(part_m_ptr + slot, row_max, mask=row_ok)
        tl.store(part_l_ptr + slot, row_sum, mask=row_ok)


@triton.jit
def _combine_kernel(o_ptr, part_o_ptr, part_m_ptr, part_l_ptr, sinks_ptr, o_tok, o_head,
                    total_q, heads_q, D: tl.constexpr, D_PAD: tl.constexpr,
                    NUM_SPLITS: tl.constexpr, SPLITS_PAD: tl.constexpr, SINK: tl.constexpr):
    token = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1)
    splits = tl.arange(0, SPLITS_PAD)
    split_ok = splits < NUM_SPLITS
    dims = tl.arange(0, D_PAD)
    dim_ok = dims < D
    slot = (splits * total_q + token) * heads_q + head
    m = tl.load(part_m_ptr + slot, mask=split_ok, other=float("-inf"))
    l = tl.load(part_l_ptr + slot, mask=split_ok, other=0.0)
    o = tl.load(part_o_ptr + slot[:, None] * D + dims[None, :],
                mask=split_ok[:, None] & dim_ok[None, :], other=0.0)
    top = tl.max(m, 0)
    if SINK == 1:
        sink2 = tl.load(sinks_ptr + head) * 1.4426950408889634
        top = tl.maximum(top, sink2)
    top = tl.where(top == float("-inf"), 0.0, top)
    weight = tl.exp2(m - top) * l        # each split's share of the denominator
    denom = tl.sum(weight, 0)
    if SINK == 1:
        denom += tl.exp2(sink2 - top)
    out = tl.sum(o * weight[:, None], 0) / tl.where(denom > 0, denom, 1.0)
    tl.store(o_ptr + token * o_tok + head * o_head + dims, out.to(o_ptr.dtype.element_ty),
             mask=dim_ok)


# --- the host side -------------------------------------------------------------

_SM_COUNT = {}
_WORKSPACE = {}


def sm_count(device):
    device = torch.device(device)
    if device.type != "cuda":
        return CPU_SM_COUNT
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _SM_COUNT:
        _SM_COUNT[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return _SM_COUNT[index]


def visible_keys(max_seqlen_q, max_seqlen_k, causal, window_size):
    """The most keys one sequence's query rows may see together, from
    host-known maxima only: n_q + left window (the last row sits on the last
    key, so neither causal nor the right window shortens the range)."""
    wl = window_size[0]
    if wl < 0:
        return max_seqlen_k
    return min(max_seqlen_k, max_seqlen_q + wl)


def choose_splits(batch, heads_kv, max_seqlen_q, max_seqlen_k, causal=True,
                  window_size=(-1, -1), sms=132):
    """The split count of the module docstring: enough programs for
    PROGRAMS_PER_SM per SM, at least MIN_KEYS_PER_SPLIT keys per split, at
    most MAX_SPLITS."""
    keys = visible_keys(max_seqlen_q, max_seqlen_k, causal, window_size)
    programs = max(1, batch * heads_kv)
    wanted = -(-PROGRAMS_PER_SM * sms // programs)
    return max(1, min(wanted, keys // MIN_KEYS_PER_SPLIT, MAX_SPLITS))


def _workspace(device, numel):
    """An fp32 buffer of at least numel elements, kept per device."""
    key = str(device)
    buf = _WORKSPACE.get(key)
    if buf is None or buf.numel() < numel:
        buf = torch.empty(max(numel, 1 << 16), dtype=torch.float32, device=device)
        _WORKSPACE[key] = buf
    return buf


def plan(q, heads_kv, batch, max_seqlen_q, max_seqlen_k, causal=True, window_size=(-1, -1),
         num_splits=None):
    """(splits, query rows per tile) a call would use."""
    group = q.shape[1] // heads_kv
    rows = max(16, triton.next_power_of_2(max(1, max_seqlen_q) * group))
    if num_splits is None:
        num_splits = choose_splits(batch, heads_kv, max_seqlen_q, max_seqlen_k, causal,
                                   window_size, sm_count(q.device))
    return int(num_splits), rows


def _launch(q, k, v, cu_q, cu_k, used_k, table, paged, max_seqlen_q, max_seqlen_k,
            softmax_scale, causal, window_size, sinks, sinks_mode, out, num_splits, config):
    total_q, hq, d = q.shape
    hkv = k.shape[-2]
    assert hq % hkv == 0, "Hq must be a multiple of Hkv"
    assert q.stride(2) == 1 and k.stride(-1) == 1 and v.stride(-1) == 1
    assert (sinks is None) == (sinks_mode == "none"), "sinks go with a sinks_mode"
    assert k.dtype == q.dtype and v.dtype == q.dtype
    out = torch.empty_like(q) if out is None else out
    batch = cu_q.shape[0] - 1
    group = hq // hkv
    splits, rows = plan(q, hkv, batch, max_seqlen_q, max_seqlen_k, causal, window_size,
                        num_splits)
    assert rows <= MAX_ROWS, (f"{max_seqlen_q} new tokens x {group} heads per kv head: "
                              f"more query rows than one tile of {MAX_ROWS} (a decode kernel)")
    wl, wr = window_size
    scale = softmax_scale if softmax_scale is not None else d ** -0.5
    direct = splits == 1
    if direct:
        part_o = part_m = part_l = out  # unused
    else:
        n = splits * total_q * hq
        buf = _workspace(q.device, n * (d + 2))
        part_o = buf[:n * d]
        part_m = buf[n * d:n * (d + 1)]
        part_l = buf[n * (d + 1):n * (d + 2)]
    sink_arg = sinks if sinks is not None else q
    if paged:
        k_strides = (k.stride(0), k.stride(1), k.stride(2))
        v_strides = (v.stride(0), v.stride(1), v.stride(2))
        page, table_row = k.shape[1], table.stride(0)
    else:
        k_strides = (0, k.stride(0), k.stride(1))
        v_strides = (0, v.stride(0), v.stride(1))
        page, table_row, table = 1, 0, cu_q
    kernel, meta = _split_kv_kernel, {}
    if config is not None:
        kernel = _split_kv_kernel.fn
        meta = dict(BLOCK_N=config[0], num_warps=config[1], num_stages=config[2])
    kernel[(splits, hkv, batch)](
        q, k, v, out, part_o, part_m, part_l, cu_q, cu_k if cu_k is not None else cu_q,
        used_k if used_k is not None else cu_q, table, sink_arg, scale * LOG2E,
        q.stride(0), q.stride(1), out.stride(0), out.stride(1), *k_strides, *v_strides,
        table_row, total_q, hq, wl, wr, max_seqlen_q, max_seqlen_k,
        G=group, D=d, D_PAD=triton.next_power_of_2(d), BLOCK_M=rows, NUM_SPLITS=splits,
        PAGED=bool(paged), PAGE=page, CAUSAL=bool(causal),
        WINDOW=tuple(window_size) != (-1, -1), SINK=SINK_CODES[sinks_mode], DIRECT=direct,
        **meta)
    if not direct:
        _combine_kernel[(total_q, hq)](
            out, part_o, part_m, part_l, sink_arg, out.stride(0), out.stride(1), total_q, hq,
            D=d, D_PAD=triton.next_power_of_2(d), NUM_SPLITS=splits,
            SPLITS_PAD=max(2, triton.next_power_of_2(splits)), SINK=SINK_CODES[sinks_mode],
            num_warps=1 if INTERPRET else 2)
    return out


def splitkv_decode_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                          softmax_scale=None, causal=True, window_size=(-1, -1), sinks=None,
                          sinks_mode="none", out=None, num_splits=None, config=None):
    """q [total_q, Hq, D]; k, v [total_k, Hkv, D] (last dim contiguous);
    cu_seqlens_q, cu_seqlens_k int32 [B+1]. The arguments of
    attnjit.varlen_attention (no spans, no soft-cap, no LSE; causal defaults
    to True here). num_splits: instead of choose_splits. config: (BLOCK_N,
    warps, stages) instead of the autotuned one. Returns out [total_q, Hq, D]."""
    return _launch(q, k, v, cu_seqlens_q, cu_seqlens_k, None, None, False, max_seqlen_q,
                   max_seqlen_k, softmax_scale, causal, window_size, sinks, sinks_mode, out,
                   num_splits, config)


def splitkv_decode_paged(q, k_cache, v_cache, block_table, cu_seqlens_q, seqused_k,
                         max_seqlen_q, max_seqlen_k, softmax_scale=None, causal=True,
                         window_size=(-1, -1), sinks=None, sinks_mode="none", out=None,
                         num_splits=None, config=None):
    """q [total_q, Hq, D]; k_cache, v_cache [num_pages, page_size, Hkv, D]
    (last dim contiguous); block_table int32 [B, max_pages]; cu_seqlens_q
    int32 [B+1]; seqused_k int32 [B]. The arguments of
    attnjit.paged_attention (no spans, no soft-cap, no LSE); num_splits and
    config as in splitkv_decode_varlen. Returns out [total_q, Hq, D]."""
    return _launch(q, k_cache, v_cache, cu_seqlens_q, None, seqused_k, block_table, True,
                   max_seqlen_q, max_seqlen_k, softmax_scale, causal, window_size, sinks,
                   sinks_mode, out, num_splits, config)


# --- the check ------------------------------------------------------------------

def poison_unseen_rows(k, v, cu_seqlens_k, n_q, window):
    """Fill with NaN the contiguous K/V rows of each sequence left of every
    query row's window. Returns how many rows."""
    wl = window[0]
    if wl < 0:
        return 0
    cu = cu_seqlens_k.tolist()
    poisoned = 0
    for b, nq in enumerate(n_q):
        n_k = cu[b + 1] - cu[b]
        if nq == 0:
            continue
        lo = max(0, n_k - nq - wl)
        k[cu[b]:cu[b] + lo] = float("nan")
        v[cu[b]:cu[b] + lo] = float("nan")
        poisoned += lo
    return poisoned


# n_q and n_k per sequence, Hq, Hkv, D, page size, causal, window, sinks, dtype on
# the CPU (the interpreter has no bf16; on the GPU the cases alternate bf16 / fp16)
CHECK_CASES = [
    ([1, 1, 1], [37, 300, 1], 8, 1, 64, 16, True, (-1, -1), "none", "fp32"),
    ([1, 1], [130, 77], 8, 2, 128, 16, True, (31, 0), "null_logit", "fp32"),
    ([2, 3, 0, 1], [50, 90, 20, 1], 4, 2, 64, 32, True, (-1, -1), "bias_key0", "fp32"),
    ([1, 4], [200, 150], 4, 1, 80, 16, False, (20, 3), "null_logit", "fp32"),
    ([1, 1], [260, 33], 2, 2, 128, 64, True, (0, -1), "bias_key0", "fp32"),
    ([1, 1, 1], [513, 100, 64], 16, 2, 64, 16, True, (127, 0), "null_logit", "fp16"),
    ([3, 1], [40, 70], 8, 4, 64, 16, False, (-1, -1), "none", "fp32"),
    ([1, 2], [1000, 999], 8, 2, 128, 16, True, (-1, -1), "null_logit", "fp16"),
    ([1, 1], [300, 5], 4, 1, 96, 16, True, (-1, 40), "bias_key0", "fp32"),
]


def self_check(device):
    """Both layouts against the reference on small decodes of every mode,
    with the heuristic's split count and with 1, 2 and more splits than
    tiles; the reference itself against the project's."""
    if INTERPRET:
        _interpreter_scalar_index()
    ref = _load_reference()
    g = torch.Generator().manual_seed(0)
    worst = {}
    worst_ref = 0.0
    for case, (n_q, n_k, hq, hkv, d, page, causal, window, mode, cpu_dtype) in \
            enumerate(CHECK_CASES):
        if device == "cuda":
            dtype = torch.bfloat16 if case % 2 == 0 else torch.float16
        else:
            dtype = {"fp32": torch.float32, "fp16": torch.float16}[cpu_dtype]
        q, kc, vc, table, cu_q, used_k = make_paged_case(
            n_q, n_k, hq, hkv, d, page, device, dtype, generator=g)
        sinks = (torch.rand(hq, generator=g) * 4 - 1).to(device) if mode != "none" else None
        kw = dict(causal=causal, window_size=window, sinks=sinks, sinks_mode=mode)
        want = paged_reference(q, kc, vc, table, cu_q, used_k, **kw)
        k, cu_k = gather_pages(kc, table, used_k)
        v, _ = gather_pages(vc, table, used_k)
        theirs, _ = ref.varlen_attention_reference(q.float(), k.float(), v.float(), cu_q, cu_k,
                                                   **kw)
        err_ref = float(ref.relative_error(want, theirs))
        worst_ref = max(worst_ref, err_ref)
        # K/V that no query may see become NaN: reading any of it would show.
        poisoned = (poison_unseen_pages(kc, vc, table, n_q, n_k, window),
                    poison_unseen_rows(k, v, cu_k, n_q, window))
        heuristic, rows = plan(q, hkv, len(n_q), max(n_q), max(n_k), causal, window)
        splits = sorted({heuristic, 1, 2, 64})
        configs = [None] if INTERPRET else [None, _CONFIGS[case % len(_CONFIGS)]]
        errs = {}
        for layout in ("contiguous", "paged"):
            for n in splits:
                for config in configs:
                    out = torch.full_like(q, float("nan"))
                    if layout == "paged":
                        splitkv_decode_paged(q, kc, vc, table, cu_q, used_k, max(n_q), max(n_k),
                                             out=out, num_splits=n, config=config, **kw)
                    else:
                        splitkv_decode_varlen(q, k, v, cu_q, cu_k, max(n_q), max(n_k),
                                              out=out, num_splits=n, config=config, **kw)
                    err = float(ref.relative_error(out.float(), want))
                    errs[(layout, n)] = max(errs.get((layout, n), 0.0), err)
        bound = {torch.float32: 1e-4, torch.float16: 2e-3, torch.bfloat16: 1e-2}[dtype]
        key = str(dtype).replace("torch.", "")
        worst[key] = (max(worst.get(key, (0.0, bound))[0], max(errs.values())), bound)
        by_layout = "; ".join(
            f"{lay} " + " ".join(f"{n}:{e:.1e}" for (l2, n), e in errs.items() if l2 == lay)
            for lay in ("contiguous", "paged"))
        print(f"n_q={n_q} n_k={n_k} H{hq}/{hkv} D{d} page {page} causal={causal} "
              f"window={window} sinks={mode} {key} ({rows} rows/tile, heuristic split "
              f"count {heuristic}; poisoned {poisoned[1]} rows, {poisoned[0]} pages): "
              f"rel err by splits: {by_layout} (reference vs project's {err_ref:.1e})",
              flush=True)
    ok = all(w <= b for w, b in worst.values()) and worst_ref <= 1e-5
    summary = ", ".join(f"{k} worst {w:.2e} (bound {b:.0e})" for k, (w, b) in worst.items())
    print(f"{summary}; reference vs project's {worst_ref:.1e}")
    print("PASSED" if ok else "FAILED")
    return ok


if __name__ == "__main__":
    sys.exit(0 if self_check("cuda" if torch.cuda.is_available() else "cpu") else 1)

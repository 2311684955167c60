#!/usr/bin/env python3
"""A paged Triton attention kernel: the Triton peer of bench_paged.py.

K and V live in a page pool [num_pages, page_size, Hkv, D]; each sequence's
keys are found through its row of the block table (int32 [B, max_pages]:
logical page -> physical page), the way serving engines hold their K/V cache.
The kernel is of the kind such engines write by hand: inside the key loop,
each key tile loads the physical page of every one of its keys from the block
table and gathers its K and V rows from those pages.

FlashAttention-2's algorithm over the varlen new tokens: one program per
(query tile, query head, sequence); cu_seqlens_q [B+1] delimits each
sequence's new queries, seqused_k [B] counts its keys (cached prefix plus the
new tokens), and query i of a chunk of n_q sits at key position
seqused_k - n_q + i (bottom-right). Online softmax in base 2; key tiles
limited to the causal / window range (-1: unbounded), and every K/V load and
block-table load masked to that range, so pages outside it are never read;
the mask applied by element on every visited tile; GQA by head division; both
sink forms (GPT-OSS null logit: an extra denominator term; MiMo bias on key 0
of each sequence). Decodes (n_q = 1) and chunks run in one launch; a program
whose query tile is past its sequence's new tokens returns at once. Each
query head of a GQA group reads its kv head's pages itself (the group's
later reads mostly hit L2), and a decode fills one row of a 16-row query
tile: the plain per-head form, without packing a group's heads into one tile
or splitting long key ranges across programs. No multimodal spans and no
soft-cap. Head dims that are not a power of two are
padded in registers.

Check it on the CPU, in Triton's interpreter, against a plain PyTorch
reference (gather the pages, then a dense masked softmax):

    TRITON_INTERPRET=1 python3 bench/triton_paged_peer.py
"""

import math
import os
import sys

import torch
import triton
import triton.language as tl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from triton_peer import (LOG2E, SINK_CODES, _interpreter_scalar_index,  # noqa: E402
                         _load_reference)

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"

# (BLOCK_M, BLOCK_N, warps, stages); configs with BLOCK_M above what the
# longest chunk needs are pruned before tuning (decodes use BLOCK_M 16).
_CONFIGS = [(16, 32, 4, 2), (16, 64, 4, 3), (16, 128, 4, 3), (16, 64, 2, 3),
            (32, 64, 4, 3), (64, 32, 4, 2), (64, 64, 4, 3), (64, 128, 4, 2),
            (128, 32, 4, 3), (128, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 2)]
_AUTOTUNE = [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s)
             for bm, bn, w, s in _CONFIGS]
if INTERPRET:
    _AUTOTUNE = [triton.Config({"BLOCK_M": 16, "BLOCK_N": 16}, num_warps=1, num_stages=1)]


def _prune(configs, named_args, **kwargs):
    """Drop query tiles larger than the longest chunk needs."""
    max_q = kwargs.get("max_seqlen_q", named_args.get("max_seqlen_q", 1))
    cap = max(16, triton.next_power_of_2(max(int(max_q), 1)))
    kept = [c for c in configs if c.kwargs["BLOCK_M"] <= cap]
    return kept or configs[:1]


@triton.autotune(configs=_AUTOTUNE,
                 key=["max_seqlen_q", "max_seqlen_k", "D_PAD", "PAGE", "CAUSAL", "WINDOW",
                      "SINK", "group"],
                 prune_configs_by={"early_config_prune": _prune})
@triton.jit
def _paged_attention_kernel(
        q_ptr, k_ptr, v_ptr, o_ptr, table_ptr, cu_q_ptr, used_k_ptr, sinks_ptr, scale2,
        q_tok, q_head, o_tok, o_head,            # query / output strides (elements)
        k_page, k_row, k_head, v_page, v_row, v_head,  # page pool strides (elements)
        table_row,                               # block-table row stride
        group, window_left, window_right, max_seqlen_q, max_seqlen_k,
        D: tl.constexpr, D_PAD: tl.constexpr, PAGE: tl.constexpr, BLOCK_M: tl.constexpr,
        BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, WINDOW: tl.constexpr,
        SINK: tl.constexpr):
    tile = tl.program_id(0)
    head = tl.program_id(1)
    seq = tl.program_id(2)
    q_start = tl.load(cu_q_ptr + seq)
    n_q = tl.load(cu_q_ptr + seq + 1) - q_start
    if tile * BLOCK_M >= n_q:
        return  # this sequence has fewer new tokens (a decode beside chunks)
    n_k = tl.load(used_k_ptr + seq)
    kv_head = head // group

    rows = tile * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < n_q
    pos = n_k - n_q + rows  # key position of each query row (bottom-right)
    dims = tl.arange(0, D_PAD)
    dim_ok = dims < D
    q_rows = (q_start + rows).to(tl.int64)
    q = tl.load(q_ptr + q_rows[:, None] * q_tok + head * q_head + dims[None, :],
                mask=row_ok[:, None] & dim_ok[None, :], other=0.0)

    # The keys any row of this tile can see: [lo, hi).
    first_pos = n_k - n_q + tile * BLOCK_M
    last_pos = n_k - n_q + tl.minimum(tile * BLOCK_M + BLOCK_M, n_q) - 1
    lo = n_k * 0
    hi = n_k
    if CAUSAL:
        hi = tl.minimum(hi, last_pos + 1)
    if WINDOW:
        if window_left >= 0:
            lo = tl.maximum(lo, first_pos - window_left)
        if window_right >= 0:
            hi = tl.minimum(hi, last_pos + window_right + 1)
    table = table_ptr + seq.to(tl.int64) * table_row

    if SINK == 1:
        sink2 = tl.load(sinks_ptr + head) * 1.4426950408889634
        row_max = tl.zeros([BLOCK_M], dtype=tl.float32) + sink2
        row_sum = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    else:
        row_max = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
        row_sum = tl.zeros([BLOCK_M], dtype=tl.float32)
    if SINK == 2:
        bias2 = tl.load(sinks_ptr + head) * 1.4426950408889634
    acc = tl.zeros([BLOCK_M, D_PAD], dtype=tl.float32)

    # Tiles start on a BLOCK_N boundary (a tile then stays inside one page
    # when BLOCK_N divides the page size); keys below lo are masked off.
    for start in range(lo - lo % BLOCK_N, hi, BLOCK_N):
        keys = start + tl.arange(0, BLOCK_N)
        key_ok = (keys >= lo) & (keys < hi)
        # The physical page of each key, then its row inside the page.
        page = tl.load(table + keys // PAGE, mask=key_ok, other=0).to(tl.int64)
        slot = keys % PAGE
        load_ok = key_ok[:, None] & dim_ok[None, :]
        k = tl.load(k_ptr + (page * k_page + slot * k_row + kv_head * k_head)[:, None]
                    + dims[None, :], mask=load_ok, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale2
        if SINK == 2:
            s = tl.where((keys == 0)[None, :], s + bias2, s)
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
        v = tl.load(v_ptr + (page * v_page + slot * v_row + kv_head * v_head)[:, None]
                    + dims[None, :], mask=load_ok, other=0.0)
        acc = acc * correction[:, None] + tl.dot(p.to(v.dtype), v)
        row_max = new_max

    out = acc / tl.where(row_sum > 0, row_sum, 1.0)[:, None]
    tl.store(o_ptr + q_rows[:, None] * o_tok + head * o_head + dims[None, :],
             out.to(o_ptr.dtype.element_ty), mask=row_ok[:, None] & dim_ok[None, :])


def paged_attention_triton(q, k_cache, v_cache, block_table, cu_seqlens_q, seqused_k,
                           max_seqlen_q, max_seqlen_k, softmax_scale=None, causal=True,
                           window_size=(-1, -1), sinks=None, sinks_mode="none", out=None,
                           config=None):
    """q [total_q, Hq, D]; k_cache/v_cache [num_pages, page_size, Hkv, D] (last
    dim contiguous); block_table int32 [B, max_pages]; cu_seqlens_q int32
    [B+1]; seqused_k int32 [B]. The arguments of attnjit.paged_attention
    (no spans, no soft-cap, no LSE). config: (BLOCK_M, BLOCK_N, warps,
    stages) instead of the autotuned one. Returns out [total_q, Hq, D]."""
    _, hq, d = q.shape
    _, page_size, hkv, _ = k_cache.shape
    assert q.stride(2) == 1 and k_cache.stride(3) == 1 and v_cache.stride(3) == 1
    assert hq % hkv == 0 and (sinks is None) == (sinks_mode == "none")
    out = torch.empty_like(q) if out is None else out
    batch = block_table.shape[0]
    wl, wr = window_size
    scale = softmax_scale if softmax_scale is not None else d ** -0.5
    grid = lambda meta: (triton.cdiv(max_seqlen_q, meta["BLOCK_M"]), hq, batch)  # noqa: E731
    kernel, meta = _paged_attention_kernel, {}
    if config is not None:
        kernel = _paged_attention_kernel.fn
        meta = dict(BLOCK_M=config[0], BLOCK_N=config[1], num_warps=config[2],
                    num_stages=config[3])
    kernel[grid](
        q, k_cache, v_cache, out, block_table, cu_seqlens_q, seqused_k,
        sinks if sinks is not None else q, scale * LOG2E,
        q.stride(0), q.stride(1), out.stride(0), out.stride(1),
        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        v_cache.stride(0), v_cache.stride(1), v_cache.stride(2), block_table.stride(0),
        hq // hkv, wl, wr, max_seqlen_q, max_seqlen_k,
        D=d, D_PAD=triton.next_power_of_2(d), PAGE=page_size, CAUSAL=bool(causal),
        WINDOW=tuple(window_size) != (-1, -1), SINK=SINK_CODES[sinks_mode], **meta)
    return out


# --- the plain PyTorch reference ---------------------------------------------

def gather_pages(cache, block_table, seqused_k):
    """The keys of each sequence out of the page pool, packed: returns
    ([sum seqused_k, H, D], cu_seqlens_k int32 [B+1]). Reads the table on the host."""
    page_size = cache.shape[1]
    lengths = [int(n) for n in seqused_k.tolist()]
    parts = []
    for b, n in enumerate(lengths):
        pages = block_table[b, :(n + page_size - 1) // page_size].long()
        parts.append(cache[pages].reshape(-1, *cache.shape[2:])[:n])
    cu = torch.tensor([0] + lengths, dtype=torch.int64).cumsum(0).to(torch.int32)
    packed = torch.cat(parts) if parts else cache.new_empty((0,) + tuple(cache.shape[2:]))
    return packed, cu.to(cache.device)


def dense_reference(q, k, v, cu_seqlens_q, cu_seqlens_k, softmax_scale=None, causal=True,
                    window_size=(-1, -1), sinks=None, sinks_mode="none",
                    mm_prefix_ranges=None, mm_prefix_clamp=False, budget=1 << 28):
    """A dense masked softmax in fp32 per sequence over packed K/V, query rows
    taken in chunks so that one chunk's scores stay under `budget` bytes.
    q [total_q, Hq, D], k/v [total_k, Hkv, D]; query i of a sequence of n_q
    new tokens and n_k keys sits at key position n_k - n_q + i. Spans:
    (sequence, start, end) rows whose keys see each other (bounded by the
    left window alone with mm_prefix_clamp, as Gemma-4 defines it). Returns out [total_q, Hq, D] fp32."""
    total_q, hq, d = q.shape
    hkv = k.shape[1]
    group = hq // hkv
    scale = softmax_scale if softmax_scale is not None else d ** -0.5
    wl, wr = window_size
    cu_q = cu_seqlens_q.tolist()
    cu_k = cu_seqlens_k.tolist()
    spans = [[] for _ in range(len(cu_q) - 1)]
    if mm_prefix_ranges is not None:
        for b, r0, r1 in mm_prefix_ranges.tolist():
            spans[b].append((r0, r1))
    out = torch.zeros(total_q, hq, v.shape[2], dtype=torch.float32, device=q.device)
    sink = sinks.float().view(hkv, group, 1, 1) if sinks is not None else None
    for b in range(len(cu_q) - 1):
        q0, n_q, k0, n_k = cu_q[b], cu_q[b + 1] - cu_q[b], cu_k[b], cu_k[b + 1] - cu_k[b]
        if n_q == 0 or n_k == 0:
            continue
        kb = k[k0:k0 + n_k].float()
        vb = v[k0:k0 + n_k].float()
        j = torch.arange(n_k, device=q.device)[None, :]
        step = max(1, budget // (4 * hq * n_k))
        for a in range(0, n_q, step):
            rows = min(step, n_q - a)
            qb = q[q0 + a:q0 + a + rows].float().view(rows, hkv, group, d)
            s = torch.einsum("ikgd,jkd->kgij", qb, kb) * scale      # [Hkv, G, rows, n_k]
            p = (torch.arange(a, a + rows, device=q.device) + (n_k - n_q))[:, None]
            in_window = torch.ones(rows, n_k, dtype=torch.bool, device=q.device)
            if wl >= 0:
                in_window &= p - j <= wl
            if wr >= 0:
                in_window &= j - p <= wr
            visible = in_window & (j <= p) if causal else in_window.clone()
            in_left = p - j <= wl if wl >= 0 else torch.ones_like(in_window)
            for r0, r1 in spans[b]:
                same = (p >= r0) & (p <= r1) & (j >= r0) & (j <= r1)
                visible |= same & in_left if mm_prefix_clamp else same
            if sinks_mode == "bias_key0":
                s[..., 0] += sink[..., 0]
            s = s.masked_fill(~visible, -math.inf)
            top = s.amax(-1, keepdim=True)
            if sinks_mode == "null_logit":
                top = torch.maximum(top, sink.expand_as(top))
            top = torch.where(torch.isinf(top), torch.zeros_like(top), top)
            w = torch.exp(s - top)
            denom = w.sum(-1, keepdim=True)
            if sinks_mode == "null_logit":
                denom = denom + torch.exp(sink - top)
            w = w / torch.where(denom > 0, denom, torch.ones_like(denom))
            o = torch.einsum("kgij,jkd->ikgd", w, vb)                 # [rows, Hkv, G, D]
            out[q0 + a:q0 + a + rows] = o.reshape(rows, hq, -1)
    return out


def paged_reference(q, k_cache, v_cache, block_table, cu_seqlens_q, seqused_k, **kw):
    """Gather the pages, then dense_reference."""
    k, cu_k = gather_pages(k_cache, block_table, seqused_k)
    v, _ = gather_pages(v_cache, block_table, seqused_k)
    return dense_reference(q, k, v, cu_seqlens_q, cu_k, **kw)


# --- the check ----------------------------------------------------------------

def make_paged_case(n_q, n_k, hq, hkv, d, page_size, device, dtype, share_first_page=False,
                    spare_pages=3, generator=None):
    """Random q and a random page pool with a shuffled block table for
    sequences of n_q[b] new tokens over n_k[b] keys; spare pages and the rows
    of each last page past the sequence's keys hold NaN, and table entries
    past a sequence's pages point far outside the pool. With
    share_first_page, sequence 1 reuses sequence 0's first page (a shared
    prefix). Returns q, k_cache, v_cache, block_table, cu_seqlens_q, seqused_k."""
    g = generator
    pages_of = [(n + page_size - 1) // page_size for n in n_k]
    owned = list(pages_of)
    if share_first_page:
        assert n_k[0] >= page_size and n_k[1] >= page_size
        owned[1] -= 1
    num_pages = sum(owned) + spare_pages
    perm = torch.randperm(num_pages, generator=g)
    table = torch.full((len(n_k), max(pages_of) + 2), num_pages + 1000, dtype=torch.int32)
    used = 0
    for b, n in enumerate(pages_of):
        first = 0
        if share_first_page and b == 1:
            table[1, 0] = table[0, 0]
            first = 1
        take = n - first
        table[b, first:n] = perm[used:used + take].to(torch.int32)
        used += take
    shape = (num_pages, page_size, hkv, d)
    k_cache = torch.full(shape, float("nan"), dtype=dtype)
    v_cache = torch.full(shape, float("nan"), dtype=dtype)
    for b, n in enumerate(n_k):
        for i in range(pages_of[b]):
            rows = min(page_size, n - i * page_size)
            phys = int(table[b, i])
            if share_first_page and b == 1 and i == 0:
                continue  # the shared page is sequence 0's
            k_cache[phys, :rows] = torch.randn(rows, hkv, d, generator=g).to(dtype)
            v_cache[phys, :rows] = torch.randn(rows, hkv, d, generator=g).to(dtype)
    cu_q = torch.tensor([0] + list(n_q)).cumsum(0).to(torch.int32)
    q = torch.randn(int(cu_q[-1]), hq, d, generator=g).to(dtype)
    used_k = torch.tensor(n_k, dtype=torch.int32)
    return tuple(t.to(device) for t in (q, k_cache, v_cache, table, cu_q, used_k))


def poison_unseen_pages(k_cache, v_cache, block_table, n_q, n_k, window):
    """Fill with NaN the pages of each sequence that none of its queries can
    see (wholly left of every row's window), unless another sequence also
    maps them. Returns how many."""
    page_size = k_cache.shape[1]
    wl, wr = window
    table = block_table.tolist()
    counts = {}
    for b, n in enumerate(n_k):
        for i in range((n + page_size - 1) // page_size):
            counts[table[b][i]] = counts.get(table[b][i], 0) + 1
    poisoned = 0
    for b, (nq, nk) in enumerate(zip(n_q, n_k)):
        if nq == 0:
            continue
        # The last query sees up to key nk - 1 in every mode; the first one
        # sees back to its left window edge.
        lo = max(0, nk - nq - wl) if wl >= 0 else 0
        for i in range((nk + page_size - 1) // page_size):
            last = min(nk, (i + 1) * page_size) - 1
            if last < lo and counts[table[b][i]] == 1:
                k_cache[table[b][i]] = float("nan")
                v_cache[table[b][i]] = float("nan")
                poisoned += 1
    return poisoned


# n_q and n_k per sequence, heads, head dim, page size, causal, window, sinks
CHECK_CASES = [
    # decode, chunk over a cached prefix, all-new, an empty sequence; shared page
    ([1, 20, 33, 0], [37, 50, 33, 18], 4, 2, 64, 16, True, (-1, -1), "none", True),
    ([1, 1, 24], [70, 45, 90], 4, 1, 64, 32, True, (7, 0), "null_logit", True),
    ([40, 17], [40, 60], 2, 2, 80, 64, False, (5, 5), "bias_key0", False),
    ([1, 30], [130, 150], 4, 2, 64, 128, True, (-1, -1), "bias_key0", True),
    ([1, 19, 1], [300, 280, 5], 2, 1, 128, 256, True, (0, -1), "none", True),
    ([25, 1], [61, 40], 4, 2, 64, 16, False, (20, 3), "null_logit", True),
    ([9, 1], [29, 33], 2, 1, 64, 16, True, (11, 0), "bias_key0", True),
    ([1, 1, 12], [100, 77, 64], 4, 2, 64, 16, True, (31, 0), "null_logit", False),
    ([1, 16], [200, 150], 2, 1, 64, 32, True, (40, 0), "bias_key0", False),
]


def self_check(device):
    """The kernel against the reference (and the reference against the
    project's) on small paged problems of every mode."""
    if INTERPRET:
        _interpreter_scalar_index()
    ref = _load_reference()
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    g = torch.Generator().manual_seed(0)
    worst = worst_ref = 0.0
    for case, (n_q, n_k, hq, hkv, d, page, causal, window, mode, share) in enumerate(CHECK_CASES):
        q, kc, vc, table, cu_q, used_k = make_paged_case(
            n_q, n_k, hq, hkv, d, page, device, dtype, share_first_page=share, generator=g)
        sinks = (torch.rand(hq, generator=g) * 4 - 1).to(device) if mode != "none" else None
        want = paged_reference(q, kc, vc, table, cu_q, used_k, causal=causal,
                               window_size=window, sinks=sinks, sinks_mode=mode)
        # The reference itself against the project's (fp32, gathered K/V).
        k, cu_k = gather_pages(kc, table, used_k)
        v, _ = gather_pages(vc, table, used_k)
        theirs, _ = ref.varlen_attention_reference(
            q.float(), k.float(), v.float(), cu_q, cu_k, causal=causal, window_size=window,
            sinks=sinks, sinks_mode=mode)
        err_ref = float(ref.relative_error(want, theirs))
        # Pages that no query may see become NaN: reading one would show.
        poisoned = poison_unseen_pages(kc, vc, table, n_q, n_k, window)
        # The autotuned call (as the benchmark makes it), and on the GPU one
        # more tile configuration per case, in turn.
        configs = [None] if INTERPRET else [None, _CONFIGS[case % len(_CONFIGS)]]
        errs = []
        for config in configs:
            out = torch.full_like(q, float("nan"))
            paged_attention_triton(q, kc, vc, table, cu_q, used_k, max(n_q), max(n_k),
                                   causal=causal, window_size=window, sinks=sinks,
                                   sinks_mode=mode, out=out, config=config)
            errs.append(float(ref.relative_error(out.float(), want)))
        err = max(errs)
        worst, worst_ref = max(worst, err), max(worst_ref, err_ref)
        print(f"n_q={n_q} n_k={n_k} H{hq}/{hkv} D{d} page {page} causal={causal} "
              f"window={window} sinks={mode}{' shared page' if share else ''}"
              f"{f' ({poisoned} unseen pages poisoned)' if poisoned else ''}: "
              f"rel err {err:.2e}{f' (also config {configs[-1]})' if configs[-1] else ''} "
              f"(reference vs project's {err_ref:.1e})")
    bound = 1e-2 if dtype == torch.bfloat16 else 1e-4
    print(f"worst {worst:.2e} (bound {bound:.0e}); reference vs project's {worst_ref:.1e}")
    return worst <= bound and worst_ref <= 1e-5


if __name__ == "__main__":
    sys.exit(0 if self_check("cuda" if torch.cuda.is_available() else "cpu") else 1)

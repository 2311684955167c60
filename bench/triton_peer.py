#!/usr/bin/env python3
"""A hand-written Triton attention kernel: the Triton peer of
bench_attention.py (FlexAttention is Triton-generated; this one is the kind a
serving engine writes by hand, like vLLM's prefill kernel in docs/device.md).

FlashAttention-2's algorithm on the packed [tokens, heads, D] layout of
equal-length sequences: one program per (query tile, query head, sequence),
online softmax in base 2, key tiles limited to the causal / window range,
the mask applied by element on every visited tile, GQA by head division, and
both sink forms (GPT-OSS null logit, MiMo bias on key 0). No multimodal spans
(those problems report "-"). Head dims that are not a power of two are padded
to the next one in registers, with masked loads.

Check it on the CPU, in Triton's interpreter, against the reference:

    TRITON_INTERPRET=1 python3 bench/triton_peer.py
"""

import importlib.util
import os

import torch
import triton
import triton.language as tl

SINK_CODES = {"none": 0, "null_logit": 1, "bias_key0": 2}
LOG2E = 1.4426950408889634

_AUTOTUNE = [
    triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s)
    for bm, bn, w, s in [(128, 64, 8, 3), (128, 64, 4, 3), (128, 32, 4, 3), (64, 64, 4, 3),
                         (64, 32, 4, 2), (128, 128, 8, 2)]
]
if os.environ.get("TRITON_INTERPRET") == "1":
    _AUTOTUNE = [triton.Config({"BLOCK_M": 16, "BLOCK_N": 16}, num_warps=1, num_stages=1)]


@triton.autotune(configs=_AUTOTUNE, key=["seqlen", "D_PAD", "CAUSAL", "WINDOW", "SINK", "group"])
@triton.jit
def _attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, sinks_ptr, scale2,
                      q_tok, k_tok, v_tok, o_tok,  # token strides (heads * D)
                      seqlen, num_heads, group, window_left, window_right,
                      D: tl.constexpr, D_PAD: tl.constexpr, BLOCK_M: tl.constexpr,
                      BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, WINDOW: tl.constexpr,
                      SINK: tl.constexpr):
    tile = tl.program_id(0)
    head = tl.program_id(1)
    seq = tl.program_id(2)
    kv_head = head // group
    rows = tile * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, D_PAD)
    dim_ok = dims < D
    base = seq * seqlen
    q = tl.load(q_ptr + (base + rows)[:, None] * q_tok + head * D + dims[None, :],
                mask=(rows < seqlen)[:, None] & dim_ok[None, :], other=0.0)

    # Keys this tile can see (equal lengths: query i is key position i).
    first = tile * 0
    last = seqlen + tile * 0  # exclusive
    if CAUSAL:
        if (tile + 1) * BLOCK_M < last:
            last = (tile + 1) * BLOCK_M
    if WINDOW:
        if window_left >= 0:
            if tile * BLOCK_M - window_left > first:
                first = tile * BLOCK_M - window_left
        if window_right >= 0:
            if (tile + 1) * BLOCK_M + window_right < last:
                last = (tile + 1) * BLOCK_M + window_right
    first = (first // BLOCK_N) * BLOCK_N

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

    for start in range(first, last, BLOCK_N):
        keys = start + tl.arange(0, BLOCK_N)
        key_ok = keys < seqlen
        kv_off = (base + keys)[:, None]
        k = tl.load(k_ptr + kv_off * k_tok + kv_head * D + dims[None, :],
                    mask=key_ok[:, None] & dim_ok[None, :], other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale2
        if SINK == 2:
            s = tl.where((keys == 0)[None, :], s + bias2, s)
        ok = key_ok[None, :] & (rows < seqlen)[:, None]
        if CAUSAL:
            ok = ok & (keys[None, :] <= rows[:, None])
        if WINDOW:
            if window_left >= 0:
                ok = ok & (rows[:, None] - keys[None, :] <= window_left)
            if window_right >= 0:
                ok = ok & (keys[None, :] - rows[:, None] <= window_right)
        s = tl.where(ok, s, float("-inf"))
        new_max = tl.maximum(row_max, tl.max(s, 1))
        safe_max = tl.where(new_max == float("-inf"), 0.0, new_max)
        p = tl.exp2(s - safe_max[:, None])
        correction = tl.exp2(row_max - safe_max)
        row_sum = row_sum * correction + tl.sum(p, 1)
        v = tl.load(v_ptr + kv_off * v_tok + kv_head * D + dims[None, :],
                    mask=key_ok[:, None] & dim_ok[None, :], other=0.0)
        acc = acc * correction[:, None] + tl.dot(p.to(v.dtype), v)
        row_max = new_max

    out = acc / tl.where(row_sum > 0, row_sum, 1.0)[:, None]
    tl.store(o_ptr + (base + rows)[:, None] * o_tok + head * D + dims[None, :],
             out.to(o_ptr.dtype.element_ty), mask=(rows < seqlen)[:, None] & dim_ok[None, :])


def triton_attention(q, k, v, batch, seqlen, causal, window, sinks, sinks_mode, out=None):
    """q [batch * seqlen, Hq, D], k/v [batch * seqlen, Hkv, D], contiguous."""
    _, hq, d = q.shape
    hkv = k.shape[1]
    out = torch.empty_like(q) if out is None else out
    d_pad = triton.next_power_of_2(d)
    wl, wr = window
    grid = lambda meta: (triton.cdiv(seqlen, meta["BLOCK_M"]), hq, batch)  # noqa: E731
    _attention_kernel[grid](
        q, k, v, out, sinks if sinks is not None else q, d ** -0.5 * LOG2E,
        q.stride(0), k.stride(0), v.stride(0), out.stride(0),
        seqlen, hq, hq // hkv, wl, wr,
        D=d, D_PAD=d_pad, CAUSAL=causal, WINDOW=window != (-1, -1),
        SINK=SINK_CODES[sinks_mode])
    return out


def triton_peer(pr, q, k, v, sinks):
    """A zero-argument callable for bench_attention.py, or None (spans)."""
    name, batch, seqlen, hq, hkv, d, causal, window, sinks_mode, use_spans = pr
    if use_spans:
        return None
    out = torch.empty_like(q)
    return lambda: triton_attention(q, k, v, batch, seqlen, causal, window, sinks, sinks_mode,
                                    out=out)


def _load_reference():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "attnjit",
                        "reference.py")
    spec = importlib.util.spec_from_file_location("attnjit_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def interpreting():
    """Whether TRITON_INTERPRET=1 runs the Triton kernels on the CPU here (the
    self-tests); if so, the interpreter is patched for them first."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return False
    _interpreter_scalar_index()
    return True


def _interpreter_scalar_index():
    """Triton's CPU interpreter holds scalars as 1-element arrays, which
    NumPy 2 no longer turns into an index (range() over runtime bounds
    fails); make __index__ take the single element."""
    from triton.runtime import interpreter
    original = interpreter._patch_lang_tensor

    def patched(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))

    interpreter._patch_lang_tensor = patched


def self_check(device):
    """The kernel against the reference on small problems of every mode."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        _interpreter_scalar_index()
    ref = _load_reference()
    torch.manual_seed(0)
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    cases = [  # batch, seqlen, hq, hkv, d, causal, window, sinks
        (2, 37, 2, 1, 80, False, (-1, -1), "none"),
        (1, 45, 4, 2, 64, True, (-1, -1), "none"),
        (2, 40, 2, 2, 80, False, (5, 5), "bias_key0"),
        (1, 50, 4, 1, 64, True, (7, 0), "null_logit"),
        (1, 33, 2, 2, 128, True, (0, -1), "none"),
    ]
    worst = 0.0
    for batch, seqlen, hq, hkv, d, causal, window, mode in cases:
        total = batch * seqlen
        q = torch.randn(total, hq, d, device=device, dtype=dtype)
        k = torch.randn(total, hkv, d, device=device, dtype=dtype)
        v = torch.randn(total, hkv, d, device=device, dtype=dtype)
        sinks = torch.rand(hq, device=device) * 4 - 1
        cu = torch.arange(0, total + 1, seqlen, device=device, dtype=torch.int32)
        got = triton_attention(q, k, v, batch, seqlen, causal, window,
                               sinks if mode != "none" else None, mode)
        want, _ = ref.varlen_attention_reference(
            q.float(), k.float(), v.float(), cu, cu, causal=causal, window_size=window,
            sinks=sinks if mode != "none" else None, sinks_mode=mode)
        err = float(ref.relative_error(got.float(), want))
        worst = max(worst, err)
        print(f"B{batch} S{seqlen} H{hq}/{hkv} D{d} causal={causal} window={window} "
              f"sinks={mode}: rel err {err:.2e}")
    bound = 1e-2 if dtype == torch.bfloat16 else 1e-4
    print(f"worst {worst:.2e} (bound {bound:.0e})")
    return worst <= bound


if __name__ == "__main__":
    import sys
    sys.exit(0 if self_check("cuda" if torch.cuda.is_available() else "cpu") else 1)

"""FlashAttention-4 (the flash-attn-4 package: CuTe DSL kernels, its Hopper
forward on the H200) as a peer of bench_attention.py, where it can be
imported. The device machine installs nothing from the network; a session
brings the pinned wheels in three calls and installs them under /tmp (how:
docs/device.md, "FlashAttention-4"); `source /tmp/fa4.env` then puts the
package on PYTHONPATH, and bench/device_run.sh does that when the file is
there. Without it the peer's column says why it is missing.

The call is FA4's varlen entry on attnjit's own varlen tensors ([total, H,
D], cumulative lengths), the modes passed as its users pass them: causal,
`window_size=(left, right)` with None for an unbounded side (attnjit's
-1), and GPT-OSS's sinks as `learnable_sink` (one logit per query head in
every row's denominator: attnjit's null_logit). The key-0 bias and image
spans have no argument of their own (a score_mod / mask_mod in the CuTe DSL
would; not written here): those problems show "-" with the reason. Each
peer output is checked against the fp32 reference on the reduced instance
bench_attention.py checks attnjit on.
"""

_FA4 = {}


def fa4_interface():
    """(flash_attn.cute.interface, None) or (None, why not)."""
    if "module" not in _FA4:
        try:
            import flash_attn.cute.interface as interface  # noqa: PLC0415
            _FA4["module"], _FA4["why"] = interface, None
        except Exception as e:  # not installed here, or its compiler is missing
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            _FA4["module"], _FA4["why"] = None, f"FA4 not importable ({first[:80]})"
    return _FA4["module"], _FA4["why"]


def fa4_version():
    try:
        from importlib import metadata  # noqa: PLC0415
        return metadata.version("flash-attn-4")
    except Exception:
        return None


def fa4_varlen(q, k, v, cu_q, cu_k, max_q, max_k, causal, window, sinks_mode, sinks):
    """A callable running FA4's varlen entry (returns the output [total_q,
    Hq, Dv]; v may be narrower than q and k), or (None, why): the modes as
    its users pass them, attnjit's -1 window sides as None, GPT-OSS's sinks
    as learnable_sink. The key-0 bias has no argument there."""
    if sinks_mode == "bias_key0":
        return None, "no key-0 bias argument (a score_mod would be one)"
    interface, why = fa4_interface()
    if interface is None:
        return None, why
    left, right = window
    window_size = (None if left < 0 else left, None if right < 0 else right)
    sink = sinks if sinks_mode == "null_logit" else None

    def run():
        res = interface.flash_attn_varlen_func(
            q, k, v, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, max_seqlen_q=max_q,
            max_seqlen_k=max_k, causal=causal, window_size=window_size,
            learnable_sink=sink)
        return res[0] if isinstance(res, tuple) else res  # (out, lse)
    return run, None


def fa4_call(pr, q, k, v, cu, sinks, seqlen):
    """fa4_varlen on a bench/problems.py problem's varlen tensors, or (None,
    why): image spans have no argument there (a mask_mod with block
    sparsity would be one)."""
    causal, window, sinks_mode, use_spans = pr[6], pr[7], pr[8], pr[9]
    if use_spans:
        return None, "no image-span argument (a mask_mod with block sparsity would be one)"
    return fa4_varlen(q, k, v, cu, cu, seqlen, seqlen, causal, window, sinks_mode, sinks)

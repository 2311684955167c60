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


# ---- bench_user_variants.py: the same masks and scores as FA4's mods ---------
#
# Each problem's mask_mod / score_mod in the CuTe DSL, written from the same
# definitions as its FlexAttention mods (q: the query's index, which is its
# position, every sequence having n_q == n_k; k: the key's), over FA4's
# batched entry (flash_attn_func, [B, S, H, D]) with the block mask FA4's
# compute_block_sparsity builds from the mask_mod at the tile FA4 picks for
# the head dim. The DSL resolves names through this module's globals, so
# cutlass, cute and FA4's utils are imported into them on first use.

FA4_USER_PROBLEMS = ("llama4_chunked_local", "prefix_lm", "document_mask", "alibi_causal",
                     "causal_expr", "sliding_window_expr", "key0_bias_expr", "streaming_llm",
                     "strided", "longformer_global_band", "dilated_window")


def _scalar_mod(score):
    """Asks FA4 for one score per score_mod call (its default with aux
    tensors). FA4 hands such a call the batch and head as SSA values of shape
    (1,) but q, k and the scores as values of shape 1; an expression mixing
    the two fails in the DSL ("profile of input tuples doesn't match"), so
    the mods above index each operand ([0]) and build their result with
    scalar_to_ssa, as FA4 builds the scores' vector."""
    try:
        score.__vec_size__ = 1
    except AttributeError:  # (a wrapper without attributes: FA4's default is 1)
        pass


def _user_mods(name, own, seqlen):
    """(mask_mod, score_mod, aux_tensors) of a problem in the CuTe DSL."""
    global cutlass, cute, fu  # noqa: PLW0603  (the DSL's name resolution)
    import cutlass  # noqa: PLC0415
    import cutlass.cute as cute  # noqa: PLC0415
    from flash_attn.cute import utils as fu  # noqa: PLC0415

    if name == "llama4_chunked_local":
        chunk = int(own["chunk"])

        @cute.jit
        def mask(b, h, q, k, seqlen_info, aux):
            c = fu.scalar_to_ssa(chunk, cutlass.Int32)
            return ((q // c) == (k // c)) & (k <= q)
        return mask, None, None
    if name == "prefix_lm":
        @cute.jit
        def mask(b, h, q, k, seqlen_info, aux):
            return (k < fu.scalar_to_ssa(aux[0][b[0]], cutlass.Int32)) | (k <= q)
        return mask, None, [own["prefix"]]
    if name == "document_mask":
        s = int(seqlen)

        @cute.jit
        def mask(b, h, q, k, seqlen_info, aux):
            doc_q = fu.scalar_to_ssa(aux[0][b[0] * s + q[0]], cutlass.Int32)
            doc_k = fu.scalar_to_ssa(aux[0][b[0] * s + k[0]], cutlass.Int32)
            return (doc_q == doc_k) & (k <= q)
        return mask, None, [own["doc"]]
    if name == "alibi_causal":
        @cute.jit
        def mask(b, h, q, k, seqlen_info, aux):
            return k <= q

        @cute.jit  # (FA4 passes a score_mod's arguments by these names)
        def score(tSrS_ssa, b_idx, h_idx, q_idx, kv_idx, seqlen_info, aux_tensors):
            # One score per call (vec 1); every operand a scalar, the result
            # an SSA of the scores' own make (_scalar_mod).
            slope = aux_tensors[0][h_idx[0]]
            distance = cutlass.Float32(q_idx[0] - kv_idx[0])  # >= 0 where the mask keeps it
            return fu.scalar_to_ssa(tSrS_ssa[0] - slope * distance, cutlass.Float32)
        _scalar_mod(score)
        return mask, score, [own["slopes"]]
    if name == "causal_expr":
        @cute.jit
        def mask(b, h, q, k, seqlen_info, aux):
            return k <= q
        return mask, None, None
    if name == "sliding_window_expr":
        window = int(own["window"])

        @cute.jit
        def mask(b, h, q, k, seqlen_info, aux):
            return (k <= q) & ((q - k) <= fu.scalar_to_ssa(window, cutlass.Int32))
        return mask, None, None
    if name == "key0_bias_expr":
        radius = int(own["radius"])

        @cute.jit
        def mask(b, h, q, k, seqlen_info, aux):
            r = fu.scalar_to_ssa(radius, cutlass.Int32)
            return ((q - k) <= r) & ((k - q) <= r)

        @cute.jit  # (FA4 passes a score_mod's arguments by these names)
        def score(tSrS_ssa, b_idx, h_idx, q_idx, kv_idx, seqlen_info, aux_tensors):
            s = tSrS_ssa[0]
            biased = s + aux_tensors[0][h_idx[0]]
            key0 = (fu.scalar_to_ssa(kv_idx[0], cutlass.Int32)
                    == fu.scalar_to_ssa(0, cutlass.Int32))
            return cute.where(key0, fu.scalar_to_ssa(biased, cutlass.Float32),
                              fu.scalar_to_ssa(s, cutlass.Float32))
        _scalar_mod(score)
        return mask, score, [own["key0_bias"]]
    if name == "streaming_llm":
        sinks, window = int(own["sink_tokens"]), int(own["window"])

        @cute.jit
        def mask(b, h, q, k, seqlen_info, aux):
            first = fu.scalar_to_ssa(sinks, cutlass.Int32)
            w = fu.scalar_to_ssa(window, cutlass.Int32)
            return (k <= q) & ((k < first) | ((q - k) <= w))
        return mask, None, None
    if name == "strided":
        stride = int(own["stride"])

        @cute.jit
        def mask(b, h, q, k, seqlen_info, aux):
            d = fu.scalar_to_ssa(stride, cutlass.Int32)
            return (k <= q) & (((q - k) % d) == fu.scalar_to_ssa(0, cutlass.Int32))
        return mask, None, None
    if name == "longformer_global_band":
        global_tokens, band = int(own["global_tokens"]), int(own["band"])

        @cute.jit
        def mask(b, h, q, k, seqlen_info, aux):
            g = fu.scalar_to_ssa(global_tokens, cutlass.Int32)
            w = fu.scalar_to_ssa(band, cutlass.Int32)
            return (k < g) | (q < g) | (((q - k) <= w) & ((k - q) <= w))
        return mask, None, None
    if name == "dilated_window":
        window, dilation = int(own["window"]), int(own["dilation"])

        @cute.jit
        def mask(b, h, q, k, seqlen_info, aux):
            w = fu.scalar_to_ssa(window, cutlass.Int32)
            d = fu.scalar_to_ssa(dilation, cutlass.Int32)
            zero = fu.scalar_to_ssa(0, cutlass.Int32)
            return (k <= q) & ((q - k) <= w) & (((q - k) % d) == zero)
        return mask, None, None
    raise KeyError(name)


def fa4_user_runner(name, own, q4, k4, v4):
    """FA4 with a problem's mods and its block mask on [B, S, H, D] tensors:
    (dict(first_s: block mask build + first call, run, build: the block
    mask's build alone, tile, blocks: [partial, full, total]), None), or
    (None, why)."""
    import math  # noqa: PLC0415
    import time  # noqa: PLC0415

    import torch  # noqa: PLC0415
    interface, why = fa4_interface()
    if interface is None:
        return None, why
    from flash_attn.cute.compute_block_sparsity import compute_block_sparsity  # noqa: PLC0415
    batch, seqlen, _, d = q4.shape
    mask, score, aux = _user_mods(name, own, seqlen)
    cfg = interface._tile_size_fwd_sm90(d, v4.shape[-1], False, False)  # a mask_mod: neither
    tile = (cfg.m_block_size, cfg.n_block_size)

    def build():
        return compute_block_sparsity(tile_m=tile[0], tile_n=tile[1], batch_size=batch,
                                      num_heads=1, seqlen_q=seqlen, seqlen_k=seqlen,
                                      mask_mod=mask, aux_tensors=aux, device=q4.device)
    torch.cuda.synchronize()
    start = time.perf_counter()
    blocks = build()

    def run():
        out = interface.flash_attn_func(q4, k4, v4, causal=False, mask_mod=mask, score_mod=score,
                                        aux_tensors=aux, block_sparse_tensors=blocks)
        return out[0] if isinstance(out, tuple) else out
    run()
    torch.cuda.synchronize()
    first = time.perf_counter() - start
    total = batch * math.ceil(seqlen / tile[0]) * math.ceil(seqlen / tile[1])
    full = int(blocks.full_block_cnt.sum()) if blocks.full_block_cnt is not None else 0
    return dict(first_s=first, run=run, build=build, tile=tile,
                blocks=[int(blocks.mask_block_cnt.sum()), full, total]), None

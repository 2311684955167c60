"""attnjit.paged_attention's argument checks (CPU tensors, no GPU needed)
and the custom op's fake implementation (FakeTensor, no GPU needed); the
results on the GPU are test_paged.py's.

Run: python -m pytest python/tests. Without a built extension these run on
the package's sources with a stand-in for attnjit._C (paged_support.py).
"""

import math

import re

import pytest

from paged_support import (_cu, _paged, _varlen, attnjit, reference,
                           varlen_attention_reference)

torch = pytest.importorskip("torch")


# ---- argument checks, on CPU tensors -------------------------------------

def _args(dtype=torch.bfloat16, hq=4, hkv=2, d=64, page_size=16,
          lens_q=(5, 7), lens_k=(20, 7), num_pages=6):
    pages = [-(-n // page_size) for n in lens_k]
    width = max(pages)
    table = (torch.arange(len(lens_k) * width, dtype=torch.int32) % num_pages)
    return dict(q=torch.randn(sum(lens_q), hq, d).to(dtype),
                k_cache=torch.randn(num_pages, page_size, hkv, d).to(dtype),
                v_cache=torch.randn(num_pages, page_size, hkv, d).to(dtype),
                block_table=table.view(len(lens_k), width),
                cu_seqlens_q=_cu(lens_q),
                seqused_k=torch.tensor(lens_k, dtype=torch.int32),
                max_seqlen_q=max(lens_q), max_seqlen_k=max(lens_k))


def _raises(kind, match, **changes):
    args = _args()
    args.update(changes)
    with pytest.raises(kind, match=match) as caught:
        attnjit.paged_attention(**args)
    assert str(caught.value).startswith("paged_attention: "), caught.value
    return caught.value


def test_exported():
    assert "paged_attention" in attnjit.__all__
    assert attnjit.paged_attention is _paged.paged_attention


def test_a_valid_call_on_cpu_tensors_asks_for_cuda():
    _raises(ValueError, "q, k_cache, v_cache, block_table, cu_seqlens_q, "
                        "seqused_k, sinks and out must be CUDA tensors on one "
                        "device, got q on cpu, k_cache on cpu")


def test_not_a_tensor():
    _raises(TypeError, "`q` must be a torch.Tensor", q=[1, 2, 3])
    _raises(TypeError, "`k_cache` must be a torch.Tensor", k_cache=None)
    _raises(TypeError, "`v_cache` must be a torch.Tensor", v_cache=3)
    _raises(TypeError, "`block_table` must be a torch.Tensor",
            block_table=[[0, 1]])
    _raises(TypeError, "`seqused_k` must be a torch.Tensor",
            seqused_k=[20, 7])
    _raises(TypeError, "`cu_seqlens_q` must be a torch.Tensor",
            cu_seqlens_q=(0, 5, 12))


def test_scales_need_an_fp8_cache():
    message = ("k_scale/v_scale are for an fp8 cache (k_cache and v_cache of "
               "torch.float8_e4m3fn), got torch.bfloat16")
    for name in ("k_scale", "v_scale"):
        error = _raises(ValueError, re.escape(message), **{name: torch.ones(())})
        assert str(error) == "paged_attention: " + message
    _raises(ValueError, "k_scale/v_scale", k_scale=1.0, v_scale=1.0)


def _fp8_args():
    args = _args()
    args["k_cache"] = args["k_cache"].to(torch.float8_e4m3fn)
    args["v_cache"] = args["v_cache"].to(torch.float8_e4m3fn)
    args["k_scale"] = torch.ones(1)
    args["v_scale"] = torch.ones(1)
    return args


@pytest.mark.skipif(not hasattr(torch, "float8_e4m3fn"), reason="no fp8 in this torch")
def test_fp8_cache_arguments():
    base = _fp8_args()

    def fails(kind, match, **change):
        args = dict(base)
        args.update(change)
        with pytest.raises(kind, match=match):
            attnjit.paged_attention(**args)

    fails(ValueError, "an fp8 cache needs k_scale and v_scale .* k_scale is None",
          k_scale=None)
    fails(ValueError, "v_scale is None", v_scale=None)
    fails(TypeError, "`k_scale` must be torch.float32", k_scale=torch.ones(1, dtype=torch.float16))
    fails(ValueError, r"`v_scale` must hold one element .* \[2\]", v_scale=torch.ones(2))
    fails(TypeError, "k_cache and v_cache must both be torch.float8_e4m3fn or neither",
          v_cache=base["v_cache"].to(torch.bfloat16))
    fails(TypeError, "q must be bfloat16 or float16 with an fp8 cache",
          q=base["q"].float())
    # Well-formed otherwise: what is left is the device check (CPU tensors).
    fails(ValueError, "k_scale on cpu, v_scale on cpu", )


@pytest.mark.parametrize("dtype", [torch.float32, torch.int8])
def test_unsupported_dtype(dtype):
    args = _args()
    _raises(TypeError, "q, k_cache and v_cache must be bfloat16 or float16",
            q=args["q"].to(dtype))


def test_mixed_dtypes():
    args = _args()
    _raises(TypeError, "q, k_cache and v_cache must have one dtype",
            k_cache=args["k_cache"].half())
    _raises(TypeError, "q, k_cache and v_cache must have one dtype",
            v_cache=args["v_cache"].half())
    _raises(TypeError, "`out` must be torch.bfloat16",
            out=torch.empty_like(args["q"], dtype=torch.float16))


def test_dims():
    args = _args()
    _raises(ValueError, r"q must be 3-D \[total_q, Hq, head_dim\]",
            q=args["q"].flatten(1))
    _raises(ValueError, r"k_cache and v_cache must be 4-D \[num_pages, "
                        r"page_size, Hkv, head_dim\]",
            k_cache=args["k_cache"].flatten(0, 1))
    _raises(ValueError, "must be 4-D", v_cache=args["v_cache"][None])


@pytest.mark.parametrize("dim,what", [(0, "num_pages"), (1, "page_size"),
                                      (2, "Hkv")])
def test_k_and_v_caches_agree(dim, what):
    shape = list(_args()["v_cache"].shape)
    shape[dim] *= 2
    v_cache = torch.randn(shape).bfloat16()
    error = _raises(ValueError, f"k_cache and v_cache must have one {what}, "
                                f"got {shape[dim] // 2} and {shape[dim]}",
                    v_cache=v_cache)
    assert "shapes" in str(error)


def test_v_cache_head_dim_is_k_caches_or_a_narrower_one_the_spec_takes():
    # (128 under 192 is the one narrower pair: test_value_heads.py.)
    for width in (128, 32):
        _raises(ValueError, f"v_cache has head_dim {width} under q's and k's 64",
                v_cache=torch.randn(6, 16, 2, width).bfloat16())


def test_head_dim():
    _raises(ValueError, "q and k_cache must have one head_dim, got 64 and 128",
            k_cache=torch.randn(6, 16, 2, 128).bfloat16(),
            v_cache=torch.randn(6, 16, 2, 128).bfloat16())
    args = _args(d=72)
    with pytest.raises(ValueError, match="head_dim 72 is not supported"):
        attnjit.paged_attention(**args)


def test_gqa_ratio():
    args = _args(hq=6, hkv=4)
    with pytest.raises(ValueError, match="multiple of the key/value heads"):
        attnjit.paged_attention(**args)


@pytest.mark.parametrize("page_size", [8, 24, 100, 4112])
def test_page_size(page_size):
    args = _args(page_size=page_size, lens_k=(20, 7))
    with pytest.raises(ValueError, match=r"page_size \(k_cache.shape\[1\]\) "
                                         r"must be a multiple of 16 in "
                                         rf"\[16, 4096\], got {page_size}"):
        attnjit.paged_attention(**args)


@pytest.mark.parametrize("page_size", [16, 48, 256, 4096])
def test_page_sizes_accepted(page_size):
    args = _args(page_size=page_size, num_pages=3)
    with pytest.raises(ValueError, match="must be CUDA tensors"):
        attnjit.paged_attention(**args)


def test_no_pages():
    empty = torch.empty(0, 16, 2, 64).bfloat16()
    _raises(ValueError, "k_cache must hold between 1 and 2147483647 pages, "
                        "got 0", k_cache=empty, v_cache=empty)


def test_cu_seqlens_q():
    args = _args()
    _raises(TypeError, "`cu_seqlens_q` must be torch.int32",
            cu_seqlens_q=args["cu_seqlens_q"].long())
    _raises(ValueError,
            r"cu_seqlens_q must be 1-D \[B\+1\], got shape \[1, 3\]",
            cu_seqlens_q=args["cu_seqlens_q"][None])
    _raises(ValueError, r"cu_seqlens_q must be 1-D \[B\+1\], got shape \[0\]",
            cu_seqlens_q=torch.zeros(0, dtype=torch.int32))
    _raises(ValueError, "cu_seqlens_q and seqused_k must be contiguous",
            cu_seqlens_q=torch.zeros(6, dtype=torch.int32)[::2])


def test_seqused_k():
    args = _args()
    _raises(TypeError, "`seqused_k` must be torch.int32",
            seqused_k=args["seqused_k"].long())
    _raises(ValueError, r"seqused_k must be 1-D \[B\] = \[2\] \(B\+1 is the "
                        r"length of cu_seqlens_q\), got shape \[3\]",
            seqused_k=torch.tensor([20, 7, 1], dtype=torch.int32))
    _raises(ValueError, r"seqused_k must be 1-D \[B\] = \[2\]",
            seqused_k=args["seqused_k"][None])
    _raises(ValueError, "cu_seqlens_q and seqused_k must be contiguous",
            seqused_k=torch.tensor([20, 0, 7, 0], dtype=torch.int32)[::2])


def test_block_table():
    args = _args()
    table = args["block_table"]  # [2, 2]
    _raises(TypeError, "`block_table` must be torch.int32",
            block_table=table.long())
    _raises(ValueError, r"block_table must be 2-D \[B, max_pages_per_seq\] "
                        r"with B = 2 rows \(one per sequence of "
                        r"cu_seqlens_q\), "
                        r"got shape \[4\]", block_table=table.flatten())
    _raises(ValueError, r"with B = 2 rows .* got shape \[3, 2\]",
            block_table=torch.zeros(3, 2, dtype=torch.int32))
    wide = torch.zeros(2, 4, dtype=torch.int32)
    _raises(ValueError, r"block_table must be contiguous in its last "
                        r"dimension, got strides \(4, 2\)",
            block_table=wide[:, ::2])
    _raises(ValueError, "block_table rows must not overlap: row stride 0 for "
                        "2 columns",
            block_table=table[:1].expand(2, 2))
    _raises(ValueError, r"block_table has 1 columns, fewer than the 2 pages "
                        r"that max_seqlen_k \(20\) spans with page_size 16",
            block_table=table[:, :1])


def test_block_table_views_accepted():
    args = _args()
    wider = torch.zeros(2, 9, dtype=torch.int32)
    for table in (wider[:, :2], wider[:, 3:5], wider[:, :7],
                  torch.zeros(2, 1, 2, dtype=torch.int32)[:, 0]):
        args["block_table"] = table
        with pytest.raises(ValueError, match="must be CUDA tensors"):
            attnjit.paged_attention(**args)
    # One sequence: its row stride is never used.
    one = _args(lens_q=(5,), lens_k=(40,))
    one["block_table"] = torch.zeros(4, 3, dtype=torch.int32)[:1, :3].expand(
        1, 3)
    with pytest.raises(ValueError, match="must be CUDA tensors"):
        attnjit.paged_attention(**one)


def test_max_seqlen():
    _raises(TypeError, "`max_seqlen_q` must be an int", max_seqlen_q=7.0)
    _raises(ValueError, r"`max_seqlen_k` must be in \[0, ", max_seqlen_k=-1)


def test_modes_are_varlen_attentions_checks():
    _raises(ValueError, "softmax_scale must be > 0 and within float32",
            softmax_scale=-1.0)
    _raises(ValueError, "softcap must be 0 \\(off\\) or > 0", softcap=math.inf)
    _raises(ValueError, r"window_size\[0\]` must be in \[-1, ",
            window_size=(-2, 0))
    _raises(TypeError, "window_size must be a pair", window_size=7)
    _raises(ValueError, "sinks_mode must be one of", sinks_mode="bias")
    _raises(ValueError, "sinks must be given exactly when",
            sinks_mode="null_logit")
    _raises(TypeError, "`sinks` must be torch.float32",
            sinks=torch.zeros(4, dtype=torch.bfloat16),
            sinks_mode="bias_key0")
    _raises(ValueError, r"contiguous \[Hq\] = \[4\]", sinks=torch.zeros(2),
            sinks_mode="null_logit")
    _raises(TypeError, "`mm_prefix_ranges` must be torch.int32",
            mm_prefix_ranges=torch.zeros(1, 3, dtype=torch.int64))
    _raises(ValueError, r"must be \[R, 3\]",
            mm_prefix_ranges=torch.zeros(1, 2, dtype=torch.int32))
    _raises(ValueError, "mm_prefix_clamp=True needs mm_prefix_ranges",
            mm_prefix_clamp=True)
    _raises(ValueError, "out must have q's shape",
            out=torch.empty(12, 4, 128, dtype=torch.bfloat16))


def test_cache_strides():
    _raises(ValueError, "`k_cache` must be contiguous in its last dimension",
            k_cache=torch.randn(6, 16, 2, 128).bfloat16()[..., ::2])
    padded = torch.randn(6, 16, 2, 68).bfloat16()[..., :64]
    _raises(ValueError, "`v_cache` row and head strides must be positive "
                        "multiples of 8 elements", v_cache=padded)
    extent = 16 * 2 * 64
    flat = torch.randn(6 * extent).bfloat16()
    overlapping = flat.as_strided((4, 16, 2, 64), (extent - 128, 128, 64, 1))
    _raises(ValueError, "`k_cache` pages must be a positive multiple of 8 "
                        "elements apart and must not overlap: page stride "
                        f"{extent - 128} for pages of {extent} elements",
            k_cache=overlapping, v_cache=overlapping)
    odd = flat.as_strided((4, 16, 2, 64), (extent + 4, 128, 64, 1))
    _raises(ValueError, f"page stride {extent + 4} for pages",
            k_cache=odd, v_cache=odd)
    # Pages interleaved row by row: each page's elements spread over others'.
    interleaved = torch.randn(16, 6, 2, 64).bfloat16().transpose(0, 1)
    _raises(ValueError, "`k_cache` pages must be", k_cache=interleaved,
            v_cache=interleaved)


@pytest.mark.parametrize("layout", ["separate", "combined", "heads_outer",
                                    "one_page", "one_head"])
def test_cache_layouts_accepted(layout):
    hkv = 1 if layout == "one_head" else 2
    args = _args(hkv=hkv, num_pages=1 if layout == "one_page" else 6)
    n = args["k_cache"].shape[0]
    if layout == "combined":
        cache = torch.randn(n, 2, 16, hkv, 64).bfloat16()
        args["k_cache"], args["v_cache"] = cache[:, 0], cache[:, 1]
    elif layout == "heads_outer":
        for name in ("k_cache", "v_cache"):
            args[name] = torch.randn(n, hkv, 16, 64).bfloat16().transpose(1, 2)
    elif layout in ("one_page", "one_head"):
        # Strides of dimensions of size 1 are never stepped over.
        base = torch.randn(n, 16, 3, 64).bfloat16()
        args["k_cache"] = base[:, :, :hkv]
        args["v_cache"] = base[:, :, 1:1 + hkv]
    with pytest.raises(ValueError, match="must be CUDA tensors"):
        attnjit.paged_attention(**args)
    strides = _paged._cache_strides(args["k_cache"], "k_cache", hkv, 64)
    assert all(s > 0 and s % 8 == 0 for s in strides)


def test_alignment():
    base = torch.randn(12 * 4 * 64 + 4).bfloat16()
    _raises(ValueError, "q must start at a 16-byte aligned address",
            q=base[4:].view(12, 4, 64))
    base = torch.randn(6 * 16 * 2 * 64 + 4).bfloat16()
    _raises(ValueError, "k_cache must start at a 16-byte aligned address",
            k_cache=base[4:].view(6, 16, 2, 64))


def test_check_values():
    """The device-value checks of check=True, on host tensors."""
    def check(cu_q=(0, 5, 12), used=(20, 7), table=((0, 1), (2, 3)),
              total_q=12, max_q=7, max_k=20, page_size=16, num_pages=6):
        return _paged._check_values(
            torch.tensor(cu_q, dtype=torch.int32),
            torch.tensor(used, dtype=torch.int32),
            torch.as_tensor(table, dtype=torch.int32), total_q, max_q, max_k,
            page_size, num_pages)

    assert check() == [20, 7]
    # Entries past a sequence's pages are never read: anything goes.
    assert check(table=((0, 1), (2, -1))) == [20, 7]
    assert check(table=((0, 1), (2, 99))) == [20, 7]

    def rejects(match, **changes):
        with pytest.raises(ValueError, match=match) as caught:
            check(**changes)
        assert str(caught.value).startswith("paged_attention: ")

    rejects(r"cu_seqlens_q must start at 0 and not decrease", cu_q=(1, 5, 12))
    rejects(r"cu_seqlens_q must start at 0 and not decrease", cu_q=(0, 6, 5))
    rejects(r"cu_seqlens_q ends at 13, past the 12 rows", cu_q=(0, 5, 13))
    rejects(r"max_seqlen_q \(6\) is below the longest sequence \(7\)",
            max_q=6)
    rejects(r"seqused_k\[1\] = 6 is below the 7 new queries of sequence 1",
            used=(20, 6))
    rejects(r"seqused_k\[0\] = -1 is below the 5 new queries", used=(-1, 7))
    rejects(r"max_seqlen_k \(19\) is below seqused_k\[0\] = 20", max_k=19)
    rejects(r"block_table\[0, 1\] = 6 is not a page of the cache \[0, 6\) "
            r"\(sequence 0 reads its first 2 entries\)",
            table=((0, 6), (2, 3)))
    rejects(r"block_table\[1, 0\] = -1 is not a page", table=((0, 1), (-1, 3)))
    rejects(r"block_table\[1, 0\] = 2 is not a page of the cache \[0, 2\)",
            num_pages=2)
    # Empty sequences read no entry at all.
    assert check(cu_q=(0, 0, 0), used=(0, 0), table=((-5, -5), (-5, -5)),
                 total_q=0) == [0, 0]
    assert check(cu_q=(0,), used=(), table=torch.zeros(0, 3), total_q=0) == []


def test_spans_are_checked_against_seqused_k():
    ranges = torch.tensor([[0, 10, 19], [1, 0, 6]], dtype=torch.int32)
    _varlen._check_spans(ranges, 2, [20, 7], "paged_attention")
    with pytest.raises(ValueError, match=r"paged_attention: mm_prefix_ranges: "
                                         r"span \[0, 7\] is past the 7 keys "
                                         r"of sequence 1"):
        _varlen._check_spans(torch.tensor([[1, 0, 7]], dtype=torch.int32), 2,
                             [20, 7], "paged_attention")


def test_gather_paged_reads_through_the_table():
    ps = 16
    # The value of a row is 100 * page + row, in each head and element.
    ids = (100 * torch.arange(5)[:, None] + torch.arange(ps)[None, :]).float()
    k_cache = ids[:, :, None, None].expand(5, ps, 2, 8).contiguous()
    v_cache = (-ids)[:, None, :, None].expand(5, 2, ps, 8).contiguous()
    v_cache = v_cache.transpose(1, 2)  # heads-outer
    table = torch.tensor([[2, 0, -1], [4, 7, 7], [3, 1, 0]],
                         dtype=torch.int32)
    used = torch.tensor([20, 5, 0], dtype=torch.int32)
    k, v, cu_k = reference.gather_paged(k_cache, v_cache, table, used)
    want = ([200 + r for r in range(16)] + [0, 1, 2, 3]
            + [400 + r for r in range(5)])
    assert cu_k.tolist() == [0, 20, 25, 25]
    assert k[:, 0, 0].tolist() == want and k[:, 1, 7].tolist() == want
    assert v[:, 1, 3].tolist() == [-x for x in want]
    q = torch.randn(4, 4, 8)
    cu_q = torch.tensor([0, 3, 4, 4], dtype=torch.int32)
    out, lse = reference.paged_attention_reference(
        q, k_cache, v_cache, table, cu_q, used, window_size=(3, 0))
    want_out, want_lse = varlen_attention_reference(
        q, k, v, cu_q, cu_k, causal=True, window_size=(3, 0))
    assert torch.equal(out, want_out) and torch.equal(lse, want_lse)


def test_fake_tensors_go_through_the_op():
    """The custom op's schema and fake implementation (torch.compile and
    CUDA-graph capture rely on them), with fake CUDA tensors: no GPU."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    lens_q, lens_k = (5, 1, 0), (40, 17, 3)
    with FakeTensorMode():
        cuda = torch.device("cuda")
        q = torch.empty(6, 8, 128, device=cuda, dtype=torch.bfloat16)
        cache = torch.empty(10, 2, 16, 2, 128, device=cuda,
                            dtype=torch.bfloat16)
        table = torch.empty(3, 5, device=cuda, dtype=torch.int32)
        cu_q = torch.empty(4, device=cuda, dtype=torch.int32)
        used = torch.empty(3, device=cuda, dtype=torch.int32)
        sinks = torch.empty(8, device=cuda)
        ranges = torch.empty(2, 3, device=cuda, dtype=torch.int32)
        out, lse = attnjit.paged_attention(
            q, cache[:, 0], cache[:, 1], table, cu_q, used, max(lens_q),
            max(lens_k), causal=True, window_size=(31, 0), sinks=sinks,
            sinks_mode="null_logit", mm_prefix_ranges=ranges,
            mm_prefix_clamp=True, return_lse=True)
        assert out.shape == (6, 8, 128) and out.dtype == torch.bfloat16
        assert out.device.type == "cuda"
        assert lse.shape == (8, 6) and lse.dtype == torch.float32
        plain = attnjit.paged_attention(q, cache[:, 0], cache[:, 1], table,
                                        cu_q, used, 5, 40)
        assert plain.shape == (6, 8, 128)
        given = torch.empty_like(q)
        assert attnjit.paged_attention(q, cache[:, 0], cache[:, 1], table,
                                       cu_q, used, 5, 40, out=given) is given
        # Mistakes are reported at trace time, before the op.
        with pytest.raises(ValueError, match=r"fewer than the 6 pages"):
            attnjit.paged_attention(q, cache[:, 0], cache[:, 1], table, cu_q,
                                    used, 5, 81)
        with pytest.raises(ValueError, match="k_scale/v_scale are for an fp8"):
            attnjit.paged_attention(q, cache[:, 0], cache[:, 1], table, cu_q,
                                    used, 5, 40, k_scale=torch.ones(()))
        with pytest.raises(ValueError, match="k_cache, v_cache, block_table"):
            attnjit.paged_attention(q, cache[:, 0], cache[:, 1],
                                    torch.empty(3, 5, dtype=torch.int32),
                                    cu_q, used, 5, 40)
    schema = str(torch.ops.attnjit.paged_attention.default._schema)
    assert schema.startswith("attnjit::paged_attention(Tensor q, "
                             "Tensor k_cache, Tensor v_cache, "
                             "Tensor block_table, Tensor cu_seqlens_q, "
                             "Tensor seqused_k, SymInt max_seqlen_q, "
                             "SymInt max_seqlen_k"), schema

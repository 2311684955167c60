"""attnjit.paged_attention: argument checks (CPU tensors, no GPU needed), the
custom op's fake implementation (FakeTensor, no GPU needed), and results
against the plain PyTorch reference and against varlen_attention on the
contiguous equivalent (GPU).

Run: python -m pytest python/tests (with the package installed, or with
PYTHONPATH=<build>/python after a CMake build with -DATTNJIT_BUILD_PYTHON=ON).
Without a built extension the checks are still tested, on the package's
sources with a stand-in for attnjit._C (see _import_attnjit).
"""

import itertools
import math
import pathlib
import random
import sys
import types

import pytest

torch = pytest.importorskip("torch")


def _import_attnjit():
    """(attnjit, whether its extension is the real one).

    The argument checks run before any kernel is looked up, so they need no
    extension. Where attnjit cannot be imported because attnjit._C is not
    built, the package's sources beside this folder are imported with a
    stand-in _C whose kernel lookup raises, and taken out of sys.modules
    again afterwards, so that no other test module sees the stand-in.
    """
    try:
        import attnjit
        import attnjit.reference  # noqa: F401
        return attnjit, True
    except ImportError:
        pass
    sources = pathlib.Path(__file__).resolve().parents[1]
    if not (sources / "attnjit" / "_paged.py").is_file():
        pytest.skip("attnjit is not importable and its sources are not here",
                    allow_module_level=True)
    stand_in = types.ModuleType("attnjit._C")

    class Error(RuntimeError):
        pass

    def get_kernel(flags, target=None):
        raise Error("attnjit._C is not built (a test stand-in)")

    stand_in.Error = Error
    stand_in.version = lambda: "stand-in"
    stand_in.cache_stats = dict
    stand_in.get_kernel = get_kernel
    saved_path, saved_modules = list(sys.path), set(sys.modules)
    sys.path.insert(0, str(sources))
    sys.modules["attnjit._C"] = stand_in
    try:
        import attnjit
        import attnjit.reference  # noqa: F401
    finally:
        sys.path[:] = saved_path
        for name in list(sys.modules):
            if ((name == "attnjit" or name.startswith("attnjit."))
                    and name not in saved_modules):
                del sys.modules[name]
    return attnjit, False


attnjit, HAS_EXTENSION = _import_attnjit()
_paged, _varlen = attnjit._paged, attnjit._varlen
reference = attnjit.reference
relative_error = reference.relative_error
lse_error = reference.lse_error
varlen_attention_reference = reference.varlen_attention_reference
gather_paged = reference.gather_paged

HAS_GPU = torch.cuda.is_available() and HAS_EXTENSION
gpu = pytest.mark.skipif(
    not HAS_GPU, reason="no GPU here (or attnjit._C not built); GPU tests "
                        "run on the device machine")

BOUND = {torch.bfloat16: 1e-2, torch.float16: 3e-3}
LSE_BOUND = 2e-2
NAN = float("nan")


# ---- argument checks, on CPU tensors -------------------------------------

def _cu(lens, device="cpu"):
    return torch.tensor([0, *itertools.accumulate(lens)], dtype=torch.int32,
                        device=device)


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
    message = ("k_scale/v_scale need an fp8 kv cache, which this build does "
               "not support yet")
    for name in ("k_scale", "v_scale"):
        error = _raises(ValueError, message, **{name: torch.ones(())})
        assert str(error) == "paged_attention: " + message
    _raises(ValueError, "k_scale/v_scale", k_scale=1.0, v_scale=1.0)


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
                                      (2, "Hkv"), (3, "head_dim")])
def test_k_and_v_caches_agree(dim, what):
    shape = list(_args()["v_cache"].shape)
    shape[dim] *= 2
    v_cache = torch.randn(shape).bfloat16()
    error = _raises(ValueError, f"k_cache and v_cache must have one {what}, "
                                f"got {shape[dim] // 2} and {shape[dim]}",
                    v_cache=v_cache)
    assert "shapes" in str(error)


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
    _raises(ValueError, "softmax_scale must be finite and > 0",
            softmax_scale=-1.0)
    _raises(ValueError, "softcap must be finite and >= 0", softcap=math.inf)
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
        with pytest.raises(ValueError, match="k_scale/v_scale need an fp8"):
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


# ---- results against the reference, on the GPU --------------------------

def _random_cache(num_pages, page_size, hkv, d, dtype, layout, gen):
    """(k_cache, v_cache) [num_pages, page_size, Hkv, D] in one of the three
    layouts an engine uses."""
    def randn(*shape):
        return torch.randn(*shape, device="cuda", generator=gen).to(dtype)

    if layout == "separate":
        return (randn(num_pages, page_size, hkv, d),
                randn(num_pages, page_size, hkv, d))
    if layout == "combined":  # one [num_pages, 2, page_size, Hkv, D] cache
        cache = randn(num_pages, 2, page_size, hkv, d)
        return cache[:, 0], cache[:, 1]
    if layout == "heads_outer":  # [num_pages, Hkv, page_size, D] per tensor
        return (randn(num_pages, hkv, page_size, d).transpose(1, 2),
                randn(num_pages, hkv, page_size, d).transpose(1, 2))
    raise ValueError(layout)


class Paged:
    """A batch over a paged cache whose block table is shuffled, a page
    shared by two sequences where asked (prefix caching), and every cache
    row that no sequence reads set to NaN (spare pages, the tail of each
    sequence's last page); a row's unread block-table entries point to a
    NaN page. A kernel that lets any of those into a product returns NaN.
    """

    def __init__(self, lens_q, lens_k, hq=4, hkv=2, d=64, page_size=16,
                 dtype=torch.bfloat16, layout="separate", share=True,
                 spare_pages=2, extra_columns=0, table_view=False, seed=0):
        assert all(0 <= n_q <= n_k for n_q, n_k in zip(lens_q, lens_k))
        self.lens_q, self.lens_k = list(lens_q), list(lens_k)
        self.page_size = page_size
        gen = torch.Generator(device="cuda")
        gen.manual_seed(seed)
        rng = random.Random(seed)
        pages_of = [-(-n // page_size) for n in lens_k]
        # Sequences 0 and 1 share their first page, as prefix caching does
        # with a common prompt prefix (a full page of the same tokens).
        self.shared = (share and len(lens_k) >= 2 and lens_k[0] >= page_size
                       and lens_k[1] >= page_size)
        owned = sum(pages_of) - int(self.shared)
        num_pages = owned + spare_pages
        physical = list(range(num_pages))
        rng.shuffle(physical)
        spare = physical[owned:]
        width = max(pages_of + [1]) + extra_columns
        table = [[rng.choice(spare)] * width for _ in lens_k]
        taken = iter(physical[:owned])
        for b, pages in enumerate(pages_of):
            for i in range(pages):
                table[b][i] = (table[0][0] if self.shared and b == 1 and i == 0
                               else next(taken))
        self.table_list = table
        self.k_cache, self.v_cache = _random_cache(num_pages, page_size, hkv,
                                                   d, dtype, layout, gen)
        read = torch.zeros(num_pages, page_size, dtype=torch.bool)
        for b, n_k in enumerate(lens_k):
            j = torch.arange(n_k)
            read[torch.tensor(table[b], dtype=torch.long)[j // page_size],
                 j % page_size] = True
        self.poison(~read)
        if table_view:  # a view of a wider table: row stride > columns
            wide = torch.full((len(lens_k), width + 5), spare[0],
                              dtype=torch.int32)
            wide[:, :width] = torch.tensor(table, dtype=torch.int32).view(
                len(lens_k), width)
            self.block_table = wide.cuda()[:, :width]
        else:
            self.block_table = torch.tensor(table, dtype=torch.int32,
                                            device="cuda").view(len(lens_k),
                                                                width)
        self.q = torch.randn(sum(lens_q), hq, d, device="cuda",
                             generator=gen).to(dtype)
        self.cu_seqlens_q = _cu(lens_q, "cuda")
        self.seqused_k = torch.tensor(lens_k, dtype=torch.int32, device="cuda")
        self.max_seqlen_q = max(lens_q + [0])
        self.max_seqlen_k = max(lens_k + [0])

    def poison(self, rows):
        """NaN into the cache rows selected by a [num_pages, page_size] mask
        (written through the views into their storage)."""
        rows = rows.to("cuda")
        self.k_cache[rows] = NAN
        self.v_cache[rows] = NAN

    def args(self):
        return dict(q=self.q, k_cache=self.k_cache, v_cache=self.v_cache,
                    block_table=self.block_table,
                    cu_seqlens_q=self.cu_seqlens_q, seqused_k=self.seqused_k,
                    max_seqlen_q=self.max_seqlen_q,
                    max_seqlen_k=self.max_seqlen_k)

    def gather(self):
        """The contiguous equivalent: k, v [sum of seqused_k, Hkv, D] and
        cu_seqlens_k, read through the block table."""
        return gather_paged(self.k_cache, self.v_cache, self.block_table,
                            self.seqused_k)


def _sinks(hq, seed=0):
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed + 1000)
    return torch.rand(hq, device="cuda", generator=gen) * 4 - 1  # [-1, 3]


def _ranges(rows):
    return torch.tensor(rows, dtype=torch.int32, device="cuda")


def _compare(problem, return_lse=False, against_varlen=True, **mode):
    """Runs paged_attention into a NaN-filled out and compares it with the
    reference on the gathered keys and, with the same kernel flags, with
    varlen_attention on them. Returns (out, lse)."""
    assert "causal" in mode  # the two APIs' defaults differ
    q = problem.q
    out = torch.full_like(q, NAN)
    result = attnjit.paged_attention(**problem.args(), **mode, out=out,
                                     return_lse=return_lse)
    torch.cuda.synchronize()
    got, lse = result if return_lse else (result, None)
    assert got.data_ptr() == out.data_ptr()
    k, v, cu_k = problem.gather()
    ref_out, ref_lse = varlen_attention_reference(q, k, v,
                                                  problem.cu_seqlens_q, cu_k,
                                                  **mode)
    bound = BOUND[q.dtype]
    err = relative_error(got, ref_out)
    assert err <= bound, f"relative error {err:.3e} against the reference"
    if lse is not None:
        assert lse.shape == ref_lse.shape and lse.dtype == torch.float32
        assert lse_error(lse, ref_lse) <= LSE_BOUND
    if against_varlen:
        contiguous = attnjit.varlen_attention(
            q, k, v, problem.cu_seqlens_q, cu_k, problem.max_seqlen_q,
            problem.max_seqlen_k, return_lse=return_lse, **mode)
        torch.cuda.synchronize()
        want, want_lse = (contiguous if return_lse else (contiguous, None))
        err = relative_error(got, want)
        assert err <= bound, f"relative error {err:.3e} against varlen"
        if lse is not None:
            assert lse_error(lse, want_lse) <= LSE_BOUND
    return got, lse


# A mixed batch: a chunk of 57 new tokens over a cached prefix (sharing its
# first page with the next sequence), decode steps (one query) at several
# lengths, a whole prompt, empty sequences, a one-token sequence, a
# sequence with cached keys and no new token, lengths at and just past page
# boundaries of 16 and 256.
MIXED_Q = [57, 1, 300, 0, 1, 1, 0, 1, 1]
MIXED_K = [400, 700, 300, 0, 1, 17, 33, 256, 513]
# Spans in key positions: [300, 380] of sequence 0 straddles its chunk's
# start (position 343); [10, 99] lies in the cached prefix; sequence 1's
# span ends at its decode query; sequence 2 starts with an image.
SPANS = [[0, 300, 380], [0, 10, 99], [1, 690, 699], [2, 0, 79],
         [5, 3, 12]]

CASES = {
    "causal_gqa_d128": (dict(hq=8, hkv=2, d=128), dict(causal=True)),
    "full_d64": (dict(hq=4, hkv=4, d=64), dict(causal=False)),
    "gpt_oss_window_null_logit_d64": (
        dict(hq=16, hkv=2, d=64),
        dict(causal=True, window_size=(127, 0), sinks_mode="null_logit")),
    "mimo_window_bias_key0_d80": (
        dict(hq=4, hkv=4, d=80),
        dict(causal=False, window_size=(64, 64), sinks_mode="bias_key0")),
    "causal_bias_key0_d128": (dict(hq=4, hkv=2, d=128),
                              dict(causal=True, sinks_mode="bias_key0")),
    "softcap_d96": (dict(hq=4, hkv=1, d=96), dict(causal=True, softcap=5.0)),
    "gemma_spans_clamp_d256": (
        dict(hq=4, hkv=2, d=256),
        dict(causal=True, window_size=(31, 0), mm_prefix_ranges=SPANS,
             mm_prefix_clamp=True)),
    "gemma_spans_no_clamp_d256": (
        dict(hq=4, hkv=2, d=256),
        dict(causal=True, window_size=(31, 0), mm_prefix_ranges=SPANS)),
    "spans_unbounded_window_d128": (
        dict(hq=2, hkv=1, d=128),
        dict(causal=True, mm_prefix_ranges=SPANS)),
    "window_zero_d64": (dict(hq=4, hkv=2, d=64),
                        dict(causal=True, window_size=(0, 0))),
    "fp16_window_d128": (dict(hq=2, hkv=1, d=128, dtype=torch.float16),
                         dict(causal=False, window_size=(20, 5))),
    "chunk_d192": (dict(hq=4, hkv=1, d=192), dict(causal=True)),
}


def _mode(mode, hq, seed=0):
    mode = dict(mode)
    if mode.get("sinks_mode", "none") != "none":
        mode["sinks"] = _sinks(hq, seed)
    if "mm_prefix_ranges" in mode:
        mode["mm_prefix_ranges"] = _ranges(mode["mm_prefix_ranges"])
    return mode


@gpu
@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("page_size", [16, 256])
@pytest.mark.parametrize("return_lse", [False, True])
def test_against_reference(name, page_size, return_lse):
    shape, mode = CASES[name]
    problem = Paged(MIXED_Q, MIXED_K, page_size=page_size, seed=7, **shape)
    assert problem.shared
    _compare(problem, return_lse=return_lse,
             **_mode(mode, problem.q.shape[1]))


@gpu
@pytest.mark.parametrize("layout", ["separate", "combined", "heads_outer"])
@pytest.mark.parametrize("page_size", [16, 64, 256])
def test_kv_layouts(layout, page_size):
    problem = Paged(MIXED_Q, MIXED_K, hq=8, hkv=2, d=128, page_size=page_size,
                    layout=layout, table_view=layout == "combined",
                    extra_columns=3, seed=11)
    _compare(problem, return_lse=True, causal=True)
    _compare(problem, causal=True, window_size=(31, 0),
             mm_prefix_ranges=_ranges(SPANS), mm_prefix_clamp=True)


@gpu
def test_the_shared_page_is_one_page():
    # Two sequences over one prefix page and the same queries at the same
    # positions see the same keys there: the rows agree.
    problem = Paged([16, 16], [16, 16], hq=4, hkv=2, d=64, page_size=16,
                    seed=3)
    assert problem.shared and problem.table_list[0][0] == \
        problem.table_list[1][0]
    problem.q[16:] = problem.q[:16]
    out, _ = _compare(problem, causal=True)
    assert torch.equal(out[:16], out[16:])


@gpu
@pytest.mark.parametrize("page_size", [16, 256])
def test_decode_batch(page_size):
    # One query per sequence; lengths around page boundaries; GQA 8.
    lens_k = [1, 15, 16, 17, 255, 256, 257, 1000, 4097]
    problem = Paged([1] * len(lens_k), lens_k, hq=64, hkv=8, d=64,
                    page_size=page_size, seed=5)
    sinks = _sinks(64)
    _compare(problem, return_lse=True, causal=True, window_size=(127, 0),
             sinks=sinks, sinks_mode="null_logit")
    _compare(problem, causal=True)


@gpu
@pytest.mark.parametrize("page_size", [16, 256])
def test_chunked_prefill_matches_one_pass(page_size):
    """A prompt prefilled in two chunks over the cache, as an engine does:
    the second chunk's keys are written into the cache only after the first
    chunk ran (NaN before), and the two chunks together equal one pass."""
    n, first = 600, 350
    problem = Paged([n], [n], hq=8, hkv=4, d=128, page_size=page_size,
                    seed=9)
    mode = dict(causal=True, window_size=(200, 0),
                mm_prefix_ranges=_ranges([[0, 300, 420]]),
                mm_prefix_clamp=True)
    one_pass, _ = _compare(problem, **mode)
    keys = problem.k_cache.clone(), problem.v_cache.clone()
    table = problem.block_table[0].long()
    late = torch.arange(first, n, device="cuda")
    late_rows = (table[late // page_size], late % page_size)
    problem.k_cache[late_rows] = NAN
    problem.v_cache[late_rows] = NAN
    q = problem.q
    chunks = []
    for start, stop in ((0, first), (first, n)):
        if start:
            problem.k_cache[late_rows] = keys[0][late_rows]
            problem.v_cache[late_rows] = keys[1][late_rows]
        out = torch.full_like(q[start:stop], NAN)
        chunks.append(attnjit.paged_attention(
            q[start:stop], problem.k_cache, problem.v_cache,
            problem.block_table, _cu([stop - start], "cuda"),
            torch.tensor([stop], dtype=torch.int32, device="cuda"),
            stop - start, stop, out=out, **mode))
    torch.cuda.synchronize()
    chunked = torch.cat(chunks)
    assert relative_error(chunked, one_pass.float()) <= BOUND[q.dtype]
    k, v, cu_k = problem.gather()
    ref, _ = varlen_attention_reference(q, k, v, problem.cu_seqlens_q, cu_k,
                                        **mode)
    assert relative_error(chunked, ref) <= BOUND[q.dtype]


@gpu
def test_empty_batches():
    problem = Paged([0, 0], [0, 5], page_size=16, seed=1)
    out, lse = attnjit.paged_attention(**problem.args(), causal=True,
                                       return_lse=True)
    assert out.shape == (0, 4, 64) and lse.shape == (4, 0)
    none = Paged([], [], page_size=16, spare_pages=1, seed=1)
    assert none.block_table.shape == (0, 1)
    out = attnjit.paged_attention(**none.args())
    assert out.shape == (0, 4, 64)


@gpu
def test_out_view_and_nothing_else_written():
    problem = Paged([70, 1], [300, 40], hq=4, hkv=2, d=64, page_size=16,
                    seed=4)
    out_full = torch.zeros(71, 8, 64, device="cuda").bfloat16()
    out = out_full[:, 2:6]
    result = attnjit.paged_attention(**problem.args(), causal=True, out=out)
    assert result.data_ptr() == out.data_ptr()
    k, v, cu_k = problem.gather()
    ref, _ = varlen_attention_reference(problem.q, k, v, problem.cu_seqlens_q,
                                        cu_k, causal=True)
    assert relative_error(out, ref) <= 1e-2
    assert out_full[:, :2].abs().sum().item() == 0
    assert out_full[:, 6:].abs().sum().item() == 0


@gpu
def test_cpu_ranges_are_checked_and_used():
    problem = Paged([40], [120], hq=2, hkv=1, page_size=16, seed=6)
    bad = torch.tensor([[0, 10, 30], [0, 20, 40]], dtype=torch.int32)
    with pytest.raises(ValueError, match="paged_attention: mm_prefix_ranges: "
                                         "spans .* overlap"):
        attnjit.paged_attention(**problem.args(), mm_prefix_ranges=bad)
    good = torch.tensor([[0, 10, 30], [0, 70, 100]], dtype=torch.int32)
    _compare(problem, causal=True, mm_prefix_ranges=good)


@gpu
def test_check_true_reads_device_values():
    problem = Paged([5, 7], [20, 30], hq=2, hkv=1, page_size=16, seed=8)
    attnjit.paged_attention(**problem.args(), check=True)
    args = problem.args()
    args["seqused_k"] = torch.tensor([20, 6], dtype=torch.int32, device="cuda")
    with pytest.raises(ValueError, match=r"seqused_k\[1\] = 6 is below the 7"):
        attnjit.paged_attention(**args, check=True)
    args = problem.args()
    args["max_seqlen_k"] = 25
    with pytest.raises(ValueError, match=r"max_seqlen_k \(25\) is below "
                                         r"seqused_k\[1\] = 30"):
        attnjit.paged_attention(**args, check=True)
    args = problem.args()
    table = problem.block_table.clone()
    table[1, 1] = problem.k_cache.shape[0]
    args["block_table"] = table
    with pytest.raises(ValueError, match=r"block_table\[1, 1\] = \d+ is not a "
                                         r"page of the cache"):
        attnjit.paged_attention(**args, check=True)
    args = problem.args()
    args["max_seqlen_q"] = 6
    with pytest.raises(ValueError, match="below the longest sequence"):
        attnjit.paged_attention(**args, check=True)
    with pytest.raises(ValueError, match="past the 30 keys of sequence 1"):
        attnjit.paged_attention(**problem.args(), check=True,
                                mm_prefix_ranges=_ranges([[1, 20, 30]]))


@gpu
def test_no_backward():
    problem = Paged([5], [20], hq=2, hkv=1, page_size=16)
    problem.q.requires_grad_()
    with pytest.raises(RuntimeError, match="paged_attention: there is no "
                                           "backward"):
        attnjit.paged_attention(**problem.args())
    with torch.no_grad():
        attnjit.paged_attention(**problem.args())


@gpu
def test_cache_hits_after_the_first_call():
    problem = Paged([3], [33], hq=2, hkv=1, page_size=16)
    attnjit.paged_attention(**problem.args(), softcap=3.0)
    before = attnjit.cache_stats()
    attnjit.paged_attention(**problem.args(), softcap=3.0)
    assert attnjit.cache_stats() == before


@gpu
def test_cuda_graph_capture_replays_with_new_lengths_and_tables():
    """Captured once; replayed as decode steps in which the keys grow by one
    (written into the cache), seqused_k and the block table change in
    place, and max_seqlen_k stays the table's capacity."""
    page_size, hq, hkv, d = 16, 8, 2, 64
    lens = [5, 31, 100]
    capacity = 160
    problem = Paged([1, 1, 1], [n + 3 for n in lens], hq=hq, hkv=hkv, d=d,
                    page_size=page_size, share=False,
                    extra_columns=capacity // page_size, seed=12)
    # Before capture: the keys of the first step.
    problem.seqused_k.copy_(torch.tensor(lens, dtype=torch.int32))
    sinks = _sinks(hq)
    mode = dict(causal=True, window_size=(63, 0), sinks=sinks,
                sinks_mode="null_logit")
    args = problem.args()
    args["max_seqlen_k"] = capacity
    attnjit.paged_attention(**args, **mode)  # compile and load first
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = attnjit.paged_attention(**args, **mode)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(13)
    for step in range(3):
        problem.seqused_k.copy_(torch.tensor([n + step for n in lens],
                                             dtype=torch.int32))
        problem.q.copy_(torch.randn(problem.q.shape, device="cuda",
                                    generator=gen))
        if step == 2:
            # Move sequence 2's first page elsewhere (same contents).
            spare = problem.table_list[0][-1]
            first = problem.table_list[2][0]
            problem.k_cache[spare] = problem.k_cache[first]
            problem.v_cache[spare] = problem.v_cache[first]
            problem.block_table[2, 0] = spare
        graph.replay()
        torch.cuda.synchronize()
        k, v, cu_k = problem.gather()
        ref, _ = varlen_attention_reference(problem.q, k, v,
                                            problem.cu_seqlens_q, cu_k, **mode)
        assert relative_error(out, ref) <= 1e-2, step


@gpu
def test_torch_compile_fullgraph():
    problem = Paged([90, 1, 40], [200, 77, 40], hq=4, hkv=1, d=128,
                    page_size=16, layout="combined", seed=2)
    sinks = _sinks(4)
    ranges = _ranges([[0, 100, 150]])

    def layer(q, k_cache, v_cache, table, cu_q, used, sinks, ranges):
        o, lse = attnjit.paged_attention(
            q * 1.0, k_cache, v_cache, table, cu_q, used, 90, 200,
            causal=True, window_size=(31, 0), sinks=sinks,
            sinks_mode="bias_key0", mm_prefix_ranges=ranges,
            mm_prefix_clamp=True, return_lse=True)
        return o.float().sum(-1), lse

    compiled = torch.compile(layer, fullgraph=True)
    inputs = (problem.q, problem.k_cache, problem.v_cache,
              problem.block_table, problem.cu_seqlens_q, problem.seqused_k,
              sinks, ranges)
    got, got_lse = compiled(*inputs)
    want, want_lse = layer(*inputs)
    torch.testing.assert_close(got, want, rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(got_lse, want_lse)


@gpu
def test_opcheck():
    problem = Paged([40, 1], [60, 24], hq=4, hkv=2, d=64, page_size=16,
                    seed=4)
    sinks = _sinks(4)
    op_args = (problem.q, problem.k_cache, problem.v_cache,
               problem.block_table, problem.cu_seqlens_q, problem.seqused_k,
               40, 60, None, True, 15, 0, sinks, "null_logit", None, False,
               0.0, True, False)
    torch.library.opcheck(torch.ops.attnjit.paged_attention.default, op_args)


@gpu
def test_launch_follows_the_tensors_device():
    if torch.cuda.device_count() < 2:
        pytest.skip("one GPU: the cross-device path needs two")
    problem = Paged([30, 1], [64, 33], hq=2, hkv=1, page_size=16)
    args = {n: (a.to("cuda:1") if isinstance(a, torch.Tensor) else a)
            for n, a in problem.args().items()}
    out = attnjit.paged_attention(**args, causal=True)
    torch.cuda.synchronize(1)
    assert out.device == torch.device("cuda:1")
    k, v, cu_k = problem.gather()
    ref, _ = varlen_attention_reference(problem.q, k, v, problem.cu_seqlens_q,
                                        cu_k, causal=True)
    assert relative_error(out.cpu(), ref.cpu()) <= 1e-2


# Last in this file: a kernel that reads past a row's pages would read these
# entries, and an out-of-range page may fault the CUDA context.
@gpu
@pytest.mark.parametrize("padding", [-1, 2**31 - 1])
def test_unread_block_table_entries_may_hold_anything(padding):
    problem = Paged([1, 30, 1], [17, 40, 256], hq=4, hkv=2, d=64,
                    page_size=16, extra_columns=2, seed=10)
    for b, n_k in enumerate(problem.lens_k):
        problem.block_table[b, -(-n_k // 16):] = padding
    _compare(problem, causal=True, window_size=(127, 0))

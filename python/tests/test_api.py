"""attnjit.varlen_attention: argument checks (CPU tensors, no GPU needed) and
results against the plain PyTorch reference (GPU).

Run: python -m pytest python/tests (with the package installed, or with
PYTHONPATH=<build>/python after a CMake build with -DATTNJIT_BUILD_PYTHON=ON).
"""

import itertools
import math
import shutil
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
attnjit = pytest.importorskip("attnjit")

from attnjit.reference import (lse_error, relative_error,  # noqa: E402
                               varlen_attention_reference)

HAS_GPU = torch.cuda.is_available()
gpu = pytest.mark.skipif(
    not HAS_GPU, reason="no GPU here (torch.cuda.is_available() is False); "
                        "GPU tests run on the device machine")

BOUND = {torch.bfloat16: 1e-2, torch.float16: 3e-3}


# ---- argument checks, on CPU tensors -------------------------------------

def _args(device="cpu", dtype=torch.bfloat16, hq=4, hkv=2, d=64,
          lens_q=(5, 7), lens_k=None):
    lens_k = lens_k or lens_q
    tq, tk = sum(lens_q), sum(lens_k)

    def cu(lens):
        return torch.tensor([0, *itertools.accumulate(lens)],
                            dtype=torch.int32, device=device)

    return dict(q=torch.randn(tq, hq, d, device=device).to(dtype),
                k=torch.randn(tk, hkv, d, device=device).to(dtype),
                v=torch.randn(tk, hkv, d, device=device).to(dtype),
                cu_seqlens_q=cu(lens_q), cu_seqlens_k=cu(lens_k),
                max_seqlen_q=max(lens_q), max_seqlen_k=max(lens_k))


def _raises(kind, match, **changes):
    args = _args()
    args.update(changes)
    with pytest.raises(kind, match=match):
        attnjit.varlen_attention(**args)


def test_version_and_stats():
    assert attnjit.__version__ == "0.1.0"
    stats = attnjit.cache_stats()
    for name in ("memory_hits", "disk_hits", "aot_hits", "compiles",
                 "corrupt_entries", "write_failures", "disk_disabled",
                 "generic_launches"):
        assert name in stats


@pytest.mark.skipif(sys.platform != "linux" or shutil.which("nm") is None,
                    reason="reads the ELF dynamic symbol table with binutils' nm")
def test_wait_specialized_with_no_kernel_returns():
    # No kernel launched in this process yet (or none pending): at once.
    attnjit.wait_specialized()
    assert "wait_specialized" in attnjit.__all__


def test_the_module_exports_its_init_function_alone():
    """attnjit._C carries static copies of attnjit, of yaml-cpp's inline
    functions and of standard-library template instances. Exported, they
    took the place of the shared libstdc++'s and yaml-cpp's own symbols in
    a process with torch (a crash on a malformed spec, or in torch's import
    when attnjit came first); python/src/module.map keeps them local."""
    out = subprocess.run(["nm", "-D", "--defined-only", attnjit._C.__file__],
                         capture_output=True, text=True, check=True).stdout
    assert [line.split()[-1] for line in out.splitlines()] == ["PyInit__C"]


def test_a_valid_call_on_cpu_tensors_asks_for_cuda():
    _raises(ValueError, "must be CUDA tensors on one device")


def test_not_a_tensor():
    _raises(TypeError, "`q` must be a torch.Tensor", q=[1, 2, 3])


@pytest.mark.parametrize("dtype", [torch.float32, torch.int8])
def test_unsupported_dtype(dtype):
    args = _args()
    _raises(TypeError, "bfloat16 or float16", q=args["q"].to(dtype))


def test_mixed_dtypes():
    args = _args()
    _raises(TypeError, "one dtype", k=args["k"].half())


def test_out_dtype():
    args = _args()
    _raises(TypeError, "`out` must be torch.bfloat16",
            out=torch.empty_like(args["q"], dtype=torch.float16))


def test_shapes():
    args = _args()
    _raises(ValueError, "must be 3-D", q=args["q"].flatten(1))
    _raises(ValueError, "v must have k's shape", v=args["v"][:-1])
    _raises(ValueError, "one head_dim", k=torch.randn(12, 2, 80).bfloat16(),
            v=torch.randn(12, 2, 80).bfloat16())
    _raises(ValueError, "out must have q's shape",
            out=torch.empty(12, 4, 80, dtype=torch.bfloat16))


def test_head_dim_not_supported():
    args = _args(d=72)
    with pytest.raises(ValueError, match="head_dim 72 is not supported"):
        attnjit.varlen_attention(**args)


def test_gqa_ratio():
    args = _args(hq=6, hkv=4)
    with pytest.raises(ValueError, match=r"multiple of the key/value heads"):
        attnjit.varlen_attention(**args)


def test_cu_seqlens():
    args = _args()
    _raises(TypeError, "`cu_seqlens_q` must be torch.int32",
            cu_seqlens_q=args["cu_seqlens_q"].long())
    _raises(ValueError, r"1-D \[B\+1\] of one length",
            cu_seqlens_k=args["cu_seqlens_k"][:-1])
    _raises(ValueError, r"1-D \[B\+1\]",
            cu_seqlens_q=args["cu_seqlens_q"][None])
    _raises(ValueError, "contiguous",
            cu_seqlens_q=torch.zeros(6, dtype=torch.int32)[::2])


def test_max_seqlen():
    _raises(TypeError, "`max_seqlen_q` must be an int", max_seqlen_q=7.0)
    _raises(ValueError, r"`max_seqlen_k` must be in \[0, ", max_seqlen_k=-1)


def test_scale_and_softcap():
    _raises(ValueError, "softmax_scale must be > 0 and within float32",
            softmax_scale=0.0)
    _raises(ValueError, "softmax_scale", softmax_scale=math.nan)
    _raises(ValueError, "softcap must be 0 \\(off\\) or > 0", softcap=-1.0)


def test_window_size():
    _raises(ValueError, r"window_size\[0\]` must be in \[-1, ",
            window_size=(-2, 0))
    _raises(TypeError, "window_size must be a pair", window_size=5)
    _raises(TypeError, "window_size must be a pair", window_size=(1, 2, 3))
    _raises(TypeError, r"`window_size\[1\]` must be an int",
            window_size=(3, 0.5))


def test_sinks():
    _raises(ValueError, "sinks_mode must be one of", sinks_mode="bias")
    _raises(ValueError, "sinks must be given exactly when",
            sinks_mode="null_logit")
    _raises(ValueError, "sinks must be given exactly when",
            sinks=torch.zeros(4))
    _raises(TypeError, "`sinks` must be torch.float32",
            sinks=torch.zeros(4, dtype=torch.bfloat16),
            sinks_mode="bias_key0")
    _raises(ValueError, r"contiguous \[Hq\] = \[4\]", sinks=torch.zeros(2),
            sinks_mode="bias_key0")


def test_mm_prefix_ranges():
    _raises(TypeError, "`mm_prefix_ranges` must be torch.int32",
            mm_prefix_ranges=torch.zeros(1, 3, dtype=torch.int64))
    _raises(ValueError, r"must be \[R, 3\]",
            mm_prefix_ranges=torch.zeros(1, 2, dtype=torch.int32))
    _raises(ValueError, "mm_prefix_clamp=True needs mm_prefix_ranges",
            mm_prefix_clamp=True)


def test_strides():
    q = torch.randn(12, 4, 128).bfloat16()[:, :, ::2]
    _raises(ValueError, "contiguous in its last dimension", q=q)
    k = torch.randn(12, 2, 68).bfloat16()[:, :, :64]
    _raises(ValueError, "multiples of 8 elements", k=k)
    # A view of packed qkv is fine on the host side (it fails on the device
    # check, the last one).
    packed = torch.randn(12, 8, 64).bfloat16()
    _raises(ValueError, "CUDA tensors", q=packed[:, :4], k=packed[:, 4:6],
            v=packed[:, 6:8])


def test_alignment():
    base = torch.randn(12 * 4 * 64 + 4).bfloat16()
    q = base[4:].view(12, 4, 64)  # 8 bytes past an aligned start
    _raises(ValueError, "16-byte aligned", q=q)


@pytest.mark.skipif(not HAS_GPU, reason="no GPU here; checked after the "
                                          "device, on the device machine")
def test_no_backward():
    args = _args(device="cuda")
    args["q"].requires_grad_()
    with pytest.raises(RuntimeError, match="no backward"):
        attnjit.varlen_attention(**args)
    with torch.no_grad():
        attnjit.varlen_attention(**args)


def test_check_mm_prefix_ranges():
    ranges = torch.tensor([[0, 0, 3], [1, 2, 5], [1, 6, 9]], dtype=torch.int32)
    attnjit.check_mm_prefix_ranges(ranges, 2, key_lengths=[4, 10])
    with pytest.raises(ValueError, match="overlap"):
        attnjit.check_mm_prefix_ranges(
            torch.tensor([[1, 2, 5], [1, 5, 9]], dtype=torch.int32), 2)
    with pytest.raises(ValueError, match="start <= end"):
        attnjit.check_mm_prefix_ranges(
            torch.tensor([[0, 4, 3]], dtype=torch.int32), 2)
    with pytest.raises(ValueError, match=r"sequence 2 is not in \[0, 2\)"):
        attnjit.check_mm_prefix_ranges(
            torch.tensor([[2, 0, 1]], dtype=torch.int32), 2)
    with pytest.raises(ValueError, match="past the 3 keys"):
        attnjit.check_mm_prefix_ranges(ranges, 2, key_lengths=[3, 10])


def test_mm_prefix_spans_csr_on_cpu():
    ranges = torch.tensor([[2, 40, 50], [0, 10, 19], [2, 0, 3], [0, 0, 4],
                           [7, 0, 1]], dtype=torch.int32)
    offsets, spans = attnjit.mm_prefix_spans(ranges, 3, torch.device("cpu"))
    assert offsets.dtype == torch.int32 and spans.dtype == torch.int32
    assert offsets.tolist() == [0, 2, 2, 4]
    assert spans.tolist()[:4] == [[0, 4], [10, 19], [0, 3], [40, 50]]


# ---- results against the reference, on the GPU --------------------------

def _cu(lens):
    out = [0]
    for n in lens:
        out.append(out[-1] + n)
    return torch.tensor(out, dtype=torch.int32, device="cuda")


def _problem(lens_q, lens_k=None, hq=4, hkv=2, d=64, dtype=torch.bfloat16,
             seed=None):
    lens_k = lens_k or lens_q
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed if seed is not None else torch.seed() % 2**31)
    tq, tk = sum(lens_q), sum(lens_k)
    randn = lambda *s: torch.randn(*s, device="cuda", generator=gen).to(dtype)
    return dict(q=randn(tq, hq, d), k=randn(tk, hkv, d), v=randn(tk, hkv, d),
                cu_seqlens_q=_cu(lens_q), cu_seqlens_k=_cu(lens_k),
                max_seqlen_q=max(lens_q), max_seqlen_k=max(lens_k))


def _sinks(hq):
    return torch.rand(hq, device="cuda") * 4 - 1  # uniform in [-1, 3]


def _ranges(rows):
    return torch.tensor(rows, dtype=torch.int32, device="cuda")


REFERENCE_ONLY = ("max_seqlen_q", "max_seqlen_k", "return_lse", "out",
                  "check")


def _compare(args, return_lse=False, **mode):
    dtype = args["q"].dtype
    result = attnjit.varlen_attention(**args, **mode, return_lse=return_lse)
    torch.cuda.synchronize()
    out, lse = result if return_lse else (result, None)
    ref_args = {n: a for n, a in args.items() if n not in REFERENCE_ONLY}
    ref_out, ref_lse = varlen_attention_reference(**ref_args, **mode)
    err = relative_error(out, ref_out)
    assert err <= BOUND[dtype], f"relative error {err:.3e}"
    if lse is not None:
        assert lse.shape == ref_lse.shape and lse.dtype == torch.float32
        assert lse_error(lse, ref_lse) <= 2e-2
    return out, lse


CASES = {
    "plain_d128": (dict(lens_q=[100, 1, 257], hq=4, hkv=4, d=128), {}),
    "causal_gqa_d64": (dict(lens_q=[130, 7, 64], hq=8, hkv=2, d=64),
                       dict(causal=True)),
    "mimo_window_bias_key0_d80": (
        dict(lens_q=[200, 77, 1], hq=4, hkv=4, d=80),
        dict(window_size=(64, 64), sinks_mode="bias_key0")),
    "gpt_oss_null_logit_d64": (
        dict(lens_q=[300, 45], hq=16, hkv=2, d=64),
        dict(causal=True, window_size=(127, 0), sinks_mode="null_logit")),
    "gemma_spans_clamp_d256": (
        dict(lens_q=[300, 90], hq=4, hkv=2, d=256),
        dict(causal=True, window_size=(31, 0),
             mm_prefix_ranges=[[0, 10, 99], [0, 150, 160], [1, 0, 79]],
             mm_prefix_clamp=True)),
    "gemma_spans_no_clamp_d256": (
        dict(lens_q=[300, 90], hq=4, hkv=2, d=256),
        dict(causal=True, window_size=(31, 0),
             mm_prefix_ranges=[[1, 0, 79], [0, 150, 160], [0, 10, 99]])),
    "softcap_d96": (dict(lens_q=[90, 33], hq=4, hkv=1, d=96),
                    dict(causal=True, softcap=5.0)),
    "chunked_prefill_d192": (
        dict(lens_q=[17, 64], lens_k=[150, 194], hq=4, hkv=1, d=192),
        dict(causal=True)),
    "fp16_window_d128": (
        dict(lens_q=[129, 64], hq=2, hkv=1, d=128, dtype=torch.float16),
        dict(window_size=(20, 5))),
    "empty_sequences": (dict(lens_q=[0, 5, 4, 0], lens_k=[3, 5, 0, 0], hq=2,
                             hkv=1),
                        dict(causal=True, sinks_mode="null_logit")),
}


@gpu
@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("return_lse", [False, True])
def test_against_reference(name, return_lse):
    shape, mode = CASES[name]
    args = _problem(**shape)
    mode = dict(mode)
    if mode.get("sinks_mode", "none") != "none":
        mode["sinks"] = _sinks(args["q"].shape[1])
    if "mm_prefix_ranges" in mode:
        mode["mm_prefix_ranges"] = _ranges(mode["mm_prefix_ranges"])
    _compare(args, return_lse=return_lse, **mode)


@gpu
def test_the_two_sink_forms_differ():
    args = _problem([200], hq=4, hkv=4, d=64, seed=3)
    sinks = _sinks(4)
    a = attnjit.varlen_attention(**args, sinks=sinks, sinks_mode="null_logit")
    b = attnjit.varlen_attention(**args, sinks=sinks, sinks_mode="bias_key0")
    assert relative_error(a, b.float()) > 1e-2


@gpu
def test_strided_views_and_out():
    lens = [70, 130]
    packed = torch.randn(sum(lens), 4 + 2 + 2, 64, device="cuda").bfloat16()
    q, k, v = packed[:, :4], packed[:, 4:6], packed[:, 6:8]
    out_full = torch.zeros(sum(lens), 8, 64, device="cuda").bfloat16()
    out = out_full[:, 2:6]
    args = dict(q=q, k=k, v=v, cu_seqlens_q=_cu(lens), cu_seqlens_k=_cu(lens),
                max_seqlen_q=130, max_seqlen_k=130)
    result = attnjit.varlen_attention(**args, causal=True, out=out)
    assert result.data_ptr() == out.data_ptr()
    ref, _ = varlen_attention_reference(q, k, v, args["cu_seqlens_q"],
                                        args["cu_seqlens_k"], causal=True)
    assert relative_error(out, ref) <= 1e-2
    assert out_full[:, :2].abs().sum().item() == 0  # nothing else written


@gpu
def test_padded_buffers_past_the_last_sequence():
    """q, k and v with more rows than cu_seqlens covers (a padded buffer, as a
    CUDA graph replays one): check=True takes them, the sequences' rows match
    the reference of the covered rows, the rows past the last sequence of
    out are not written."""
    lens = [70, 130]
    pad = 37
    q = torch.randn(sum(lens) + pad, 4, 64, device="cuda").bfloat16()
    k = torch.randn(sum(lens) + pad + 5, 2, 64, device="cuda").bfloat16()
    v = torch.randn_like(k)
    out = torch.full_like(q, float("nan"))
    args = dict(cu_seqlens_q=_cu(lens), cu_seqlens_k=_cu(lens), max_seqlen_q=130,
                max_seqlen_k=130)
    attnjit.varlen_attention(q, k, v, **args, causal=True, out=out, check=True)
    n = sum(lens)
    ref, _ = varlen_attention_reference(q[:n], k[:n], v[:n], args["cu_seqlens_q"],
                                        args["cu_seqlens_k"], causal=True)
    assert relative_error(out[:n], ref) <= 1e-2
    assert torch.isnan(out[n:]).all()


@gpu
def test_heads_outer_layout():
    # k and v stored [heads, tokens, D] and viewed [tokens, heads, D]: the
    # head stride is larger than the row stride (on sm_90a the TMA maps
    # then have their strides out of order).
    lens = [70, 130]
    args = _problem(lens, hq=4, hkv=2, d=128)
    for name in ("q", "k", "v"):
        args[name] = args[name].transpose(0, 1).contiguous().transpose(0, 1)
        assert args[name].stride(1) > args[name].stride(0)
    _compare(args, causal=True)
    _compare(args, causal=True, window_size=(31, 0))


@gpu
def test_cpu_ranges_are_checked_and_used():
    args = _problem([120], hq=2, hkv=1, d=64)
    bad = torch.tensor([[0, 10, 30], [0, 20, 40]], dtype=torch.int32)
    with pytest.raises(ValueError, match="overlap"):
        attnjit.varlen_attention(**args, causal=True, mm_prefix_ranges=bad)
    good = torch.tensor([[0, 10, 30], [0, 50, 90]], dtype=torch.int32)
    _compare(args, causal=True, mm_prefix_ranges=good)


@gpu
def test_check_true_reads_device_values():
    args = _problem([50, 60], hq=2, hkv=1, d=64)
    args["max_seqlen_q"] = 40
    with pytest.raises(ValueError, match="below the longest sequence"):
        attnjit.varlen_attention(**args, check=True)
    args["max_seqlen_q"] = 60
    ranges = _ranges([[1, 0, 70]])
    with pytest.raises(ValueError, match="past the 60 keys"):
        attnjit.varlen_attention(**args, check=True, causal=True,
                                 mm_prefix_ranges=ranges)


@gpu
def test_cache_hits_after_the_first_call():
    args = _problem([33], hq=2, hkv=1, d=64)
    attnjit.varlen_attention(**args, softcap=3.0)
    before = attnjit.cache_stats()
    attnjit.varlen_attention(**args, softcap=3.0)
    assert attnjit.cache_stats() == before  # the Python memo answered


@gpu
def test_cuda_graph_capture():
    args = _problem([100, 28], hq=4, hkv=2, d=64, seed=1)
    sinks = _sinks(4)
    mode = dict(causal=True, window_size=(63, 0), sinks=sinks,
                sinks_mode="null_logit")
    attnjit.varlen_attention(**args, **mode)  # compile and load first
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = attnjit.varlen_attention(**args, **mode)
    for seed in (5, 6):
        fresh = _problem([100, 28], hq=4, hkv=2, d=64, seed=seed)
        for name in ("q", "k", "v"):
            args[name].copy_(fresh[name])
        graph.replay()
        torch.cuda.synchronize()
        ref_args = {n: a for n, a in args.items() if n not in REFERENCE_ONLY}
        ref, _ = varlen_attention_reference(**ref_args, **mode)
        assert relative_error(out, ref) <= 1e-2


@gpu
def test_torch_compile_fullgraph():
    args = _problem([90, 40], hq=4, hkv=1, d=128, seed=2)
    sinks = _sinks(4)

    def layer(q, k, v, cu_q, cu_k, sinks):
        o, lse = attnjit.varlen_attention(
            q * 1.0, k, v, cu_q, cu_k, 90, 90, causal=True,
            window_size=(31, 0), sinks=sinks, sinks_mode="bias_key0",
            return_lse=True)
        return o.float().sum(-1), lse

    compiled = torch.compile(layer, fullgraph=True)
    inputs = (args["q"], args["k"], args["v"], args["cu_seqlens_q"],
              args["cu_seqlens_k"], sinks)
    got, got_lse = compiled(*inputs)
    want, want_lse = layer(*inputs)
    torch.testing.assert_close(got, want, rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(got_lse, want_lse)


@gpu
def test_opcheck():
    args = _problem([40, 24], hq=4, hkv=2, d=64, seed=4)
    sinks = _sinks(4)
    op_args = (args["q"], args["k"], args["v"], args["cu_seqlens_q"],
               args["cu_seqlens_k"], 40, 40, None, True, 15, 0, sinks,
               "null_logit", None, False, 0.0, True, False)
    torch.library.opcheck(torch.ops.attnjit.varlen_attention.default,
                          op_args)


@gpu
def test_launch_follows_the_tensors_device():
    if torch.cuda.device_count() < 2:
        pytest.skip("one GPU: the cross-device path needs two")
    args = _problem([64], hq=2, hkv=1, d=64)
    moved = {n: (a.to("cuda:1") if isinstance(a, torch.Tensor) else a)
             for n, a in args.items()}
    _compare(moved)

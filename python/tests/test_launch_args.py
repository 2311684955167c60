"""The launch's arguments: one list (runtime/include/attnjit/attention_args_list.h)
makes the binding's parameters and _C.LAUNCH_ARGS, and the Python callers
pass their values positionally in that order. These tests fail when the
list, the binding and the callers disagree: the binding's names against
the list's, then each eager call's values by name, on CPU tensors (the
device check and the launch are stubbed).

Run: python -m pytest python/tests.
"""

import pytest

from paged_support import (HAS_EXTENSION, _cu, _paged, _varlen, attnjit,
                           listed_launch_args)

torch = pytest.importorskip("torch")
_C = attnjit._C

SPLIT_KV = "ATTNJIT_ATTENTION_ARGS_V3_SPLIT_KV"


@pytest.mark.skipif(not HAS_EXTENSION, reason="attnjit._C is not built")
def test_the_binding_takes_the_lists_arguments():
    """LAUNCH_ARGS: the list's groups in order but split-KV's; launch's
    signature: those, the stream, then split-KV's and the options."""
    groups = listed_launch_args()
    assert list(groups)[0] == "ATTNJIT_ATTENTION_ARGS_V1" and SPLIT_KV in groups
    positional = tuple(name for group, names in groups.items()
                       if group != SPLIT_KV for name in names)
    assert _C.LAUNCH_ARGS == positional
    signature = _C.AttentionKernel.launch.__doc__.split("\n", 1)[0]
    params = [p.split(":")[0].strip() for p in
              signature[signature.index("(") + 1:signature.rindex(")")].split(", ")
              if ":" in p or p == "self"]
    assert params == ["self", *positional, "stream", *groups[SPLIT_KV],
                      "plan_only", "user_args"]


@pytest.fixture
def launched(monkeypatch):
    """The eager paths without a GPU: the device checks pass CPU tensors
    (device -1), nothing changes the current device, and the launches are
    recorded as {name: value} over _C.LAUNCH_ARGS."""
    calls = []

    def record(device, key, args, user_args=(), prepared=None):
        assert len(args) == len(_C.LAUNCH_ARGS)
        calls.append((dict(key[0]), dict(zip(_C.LAUNCH_ARGS, args))))

    for module in (_varlen, _paged):
        monkeypatch.setattr(module, "_check_device", lambda *a, **k: -1)
        monkeypatch.setattr(module, "_launch_on", record)
        monkeypatch.setattr(module, "_CHECKED", {})
    monkeypatch.setattr(_varlen, "_on_device", lambda device, fn: fn())
    return calls


def _expect(values, expected):
    """Every name of LAUNCH_ARGS has its expected value (a callable: a
    check of the value)."""
    assert set(expected) == set(_C.LAUNCH_ARGS), (
        "names this test does not know, or knows but LAUNCH_ARGS lacks: "
        f"{sorted(set(expected) ^ set(_C.LAUNCH_ARGS))}")
    for name in _C.LAUNCH_ARGS:
        want = expected[name]
        if callable(want):
            assert want(values[name]), (name, values[name])
        else:
            assert values[name] == want, (name, values[name], want)
            assert type(values[name]) is type(want), (name, values[name])


def _allocated(value):
    return isinstance(value, int) and value != 0


def test_varlen_passes_each_argument_by_its_name(launched):
    # Row and head strides of their own for each of q, k, v and out.
    q = torch.zeros(8, 4, 72, dtype=torch.bfloat16)[..., :64]
    k = torch.zeros(16, 2, 80, dtype=torch.bfloat16)[..., :64]
    v = torch.zeros(16, 2, 64, dtype=torch.bfloat16)
    out = torch.zeros(8, 4, 96, dtype=torch.bfloat16)[..., :64]
    cu_q, cu_k = _cu((3, 5)), _cu((7, 9))
    sinks = torch.zeros(4)
    spans = torch.tensor([[1, 2, 4]], dtype=torch.int32)
    attnjit.varlen_attention(q, k, v, cu_q, cu_k, 6, 10, softmax_scale=0.125,
                             causal=True, window_size=(5, 0), sinks=sinks,
                             sinks_mode="null_logit", mm_prefix_ranges=spans,
                             mm_prefix_clamp=True, softcap=30.0,
                             return_lse=True, out=out)
    (flags, values), = launched
    assert "kv_layout" not in flags
    _expect(values, {
        "q": q.data_ptr(), "k": k.data_ptr(), "v": v.data_ptr(),
        "o": out.data_ptr(), "lse": _allocated, "sinks": sinks.data_ptr(),
        "cu_seqlens_q": cu_q.data_ptr(), "cu_seqlens_k": cu_k.data_ptr(),
        "mm_span_offsets": _allocated, "mm_spans": _allocated,
        "q_row_stride": 288, "q_head_stride": 72,
        "k_row_stride": 160, "k_head_stride": 80,
        "v_row_stride": 128, "v_head_stride": 64,
        "o_row_stride": 384, "o_head_stride": 96,
        "num_seqs": 2, "num_heads_q": 4, "num_heads_kv": 2, "total_q": 8,
        "total_k": 16, "max_seqlen_q": 6, "max_seqlen_k": 10, "scale": 0.125,
        "softcap": 30.0, "window_left": 5, "window_right": 0,
        # Not paged, not fp8.
        "block_table": 0, "seqused_k": 0, "block_table_stride": 0,
        "k_page_stride": 0, "v_page_stride": 0, "page_size": 0,
        "num_pages": 0, "k_scale": 0, "v_scale": 0})
    assert values["mm_spans"] != values["mm_span_offsets"]


def test_paged_passes_each_argument_by_its_name(launched):
    """The caches are k and v, with their page strides; an fp8 cache's
    scales; no cu_seqlens_k (a user spec's key-token tensors only, in
    test_user.py) and no total_k."""
    fp8 = torch.float8_e4m3fn
    q = torch.zeros(8, 4, 64, dtype=torch.bfloat16)
    # Pages of 16 rows of 2 heads, heads 96 and 80 bytes apart.
    k_cache = torch.zeros(6, 16, 2, 96, dtype=fp8)[..., :64]
    v_cache = torch.zeros(6, 16, 2, 80, dtype=fp8)[..., :64]
    table = torch.tensor([[0, 2, 4, 0], [1, 3, 5, 0]], dtype=torch.int32)
    cu_q = _cu((3, 5))
    used = torch.tensor([20, 33], dtype=torch.int32)
    k_scale, v_scale = torch.ones(1), torch.ones(1)
    attnjit.paged_attention(q, k_cache, v_cache, table[:, :3], cu_q, used, 5,
                            33, k_scale=k_scale, v_scale=v_scale)
    (flags, values), = launched
    assert flags["kv_layout"] == "paged" and flags["kv_dtype"] == "fp8_e4m3"
    _expect(values, {
        "q": q.data_ptr(), "k": k_cache.data_ptr(), "v": v_cache.data_ptr(),
        "o": _allocated, "lse": 0, "sinks": 0, "cu_seqlens_q": cu_q.data_ptr(),
        "cu_seqlens_k": 0, "mm_span_offsets": 0, "mm_spans": 0,
        "q_row_stride": 256, "q_head_stride": 64,
        "k_row_stride": 192, "k_head_stride": 96,
        "v_row_stride": 160, "v_head_stride": 80,
        "o_row_stride": 256, "o_head_stride": 64,
        "num_seqs": 2, "num_heads_q": 4, "num_heads_kv": 2, "total_q": 8,
        "total_k": 0, "max_seqlen_q": 5, "max_seqlen_k": 33, "scale": 0.0,
        "softcap": 0.0, "window_left": -1, "window_right": -1,
        "block_table": table.data_ptr(), "seqused_k": used.data_ptr(),
        "block_table_stride": 4, "k_page_stride": 16 * 192,
        "v_page_stride": 16 * 160, "page_size": 16, "num_pages": 6,
        "k_scale": k_scale.data_ptr(), "v_scale": v_scale.data_ptr()})


def test_an_allocated_out_is_contiguous_whatever_q_s_strides(launched):
    """Without out=, o is allocated contiguous [total_q, Hq, Dv] (the
    strides the launch passes) also where q is dense in another order
    (heads outermost), which an empty_like preserving q's strides would
    copy; with Dv < D, o is narrower than q."""
    q = torch.zeros(4, 8, 64, dtype=torch.bfloat16).transpose(0, 1)  # [8, 4, 64]
    k = torch.zeros(16, 2, 64, dtype=torch.bfloat16)
    cu_q, cu_k = _cu((3, 5)), _cu((7, 9))
    out = attnjit.varlen_attention(q, k, k, cu_q, cu_k, 5, 9)
    q192 = torch.zeros(2, 8, 192, dtype=torch.bfloat16).transpose(0, 1)
    k192 = torch.zeros(16, 2, 192, dtype=torch.bfloat16)
    v128 = torch.zeros(16, 2, 128, dtype=torch.bfloat16)
    narrow = attnjit.varlen_attention(q192, k192, v128, cu_q, cu_k, 5, 9)
    pages = torch.zeros(6, 16, 2, 64, dtype=torch.bfloat16)
    table = torch.tensor([[0, 2], [1, 3]], dtype=torch.int32)
    used = torch.tensor([20, 30], dtype=torch.int32)
    paged = attnjit.paged_attention(q, pages, pages, table, cu_q, used, 5, 30)
    for o, shape, (_, values) in zip((out, narrow, paged),
                                      ((8, 4, 64), (8, 2, 128), (8, 4, 64)),
                                      launched):
        assert o.shape == shape and o.is_contiguous()
        assert values["o"] == o.data_ptr()
        assert (values["o_row_stride"], values["o_head_stride"]) == o.stride()[:2]


def test_no_keys_anywhere_fill_the_outputs_without_a_launch(launched):
    """total_k = 0: k and v have no storage to launch over; every query sees
    no key (o = 0, lse = -inf, or the sink's logit with null_logit)."""
    q = torch.randn(8, 4, 64, dtype=torch.bfloat16)
    empty = torch.empty(0, 2, 64, dtype=torch.bfloat16)
    cu_q, cu_k = _cu((3, 5)), _cu((0, 0))
    out = torch.full_like(q, float("nan"))
    o, lse = attnjit.varlen_attention(q, empty, empty, cu_q, cu_k, 5, 0,
                                      return_lse=True, out=out)
    assert o is out and not o.any() and torch.isneginf(lse).all()
    sinks = torch.randn(4)
    o, lse = attnjit.varlen_attention(q, empty, empty, cu_q, cu_k, 5, 0,
                                      sinks=sinks, sinks_mode="null_logit",
                                      return_lse=True)
    assert not o.any() and torch.equal(lse, sinks.view(4, 1).expand(4, 8))
    assert not launched


def test_scalar_arguments_get_the_ops_own_errors(launched):
    q = torch.zeros(8, 4, 64, dtype=torch.bfloat16)
    k = torch.zeros(16, 2, 64, dtype=torch.bfloat16)
    cu_q, cu_k = _cu((3, 5)), _cu((7, 9))

    def call(**kw):
        return attnjit.varlen_attention(q, k, k, cu_q, cu_k, 5, 9, **kw)
    for kw, kind, text in (
            (dict(softcap=None), TypeError, r"`softcap` must be a real number \(0.0: off\), got None"),
            (dict(softmax_scale="0.5"), TypeError, "`softmax_scale` must be a real number"),
            (dict(softmax_scale=1j), TypeError, "`softmax_scale` must be a real number"),
            (dict(softmax_scale=10**400), ValueError, "`softmax_scale` is beyond any float's range"),
            (dict(softmax_scale=1e-46), ValueError, "float32's normal range"),
            (dict(softmax_scale=1e39), ValueError, "float32's normal range"),
            (dict(softmax_scale=float("nan")), ValueError, "float32's normal range"),
            (dict(softcap=1e-40), ValueError, "softcap must be 0 .* float32"),
            (dict(softcap=-1.0), ValueError, "softcap must be 0")):
        with pytest.raises(kind, match="varlen_attention: .*" + text):
            call(**kw)
    call(softmax_scale=torch.tensor(0.125), softcap=30)  # one element, an int
    assert launched[-1][1]["scale"] == 0.125 and launched[-1][1]["softcap"] == 30.0
    with pytest.raises(ValueError, match="query heads"):
        attnjit.varlen_attention(q[:, :0], k, k, cu_q, cu_k, 5, 9)


def test_learnable_sinks_and_scales_are_refused(launched):
    q = torch.zeros(8, 4, 64, dtype=torch.bfloat16)
    k = torch.zeros(16, 2, 64, dtype=torch.bfloat16)
    sinks = torch.nn.Parameter(torch.zeros(4))
    with pytest.raises(RuntimeError, match="no backward pass"):
        attnjit.varlen_attention(q, k, k, _cu((3, 5)), _cu((7, 9)), 5, 9,
                                 sinks=sinks, sinks_mode="null_logit")
    with torch.no_grad():
        attnjit.varlen_attention(q, k, k, _cu((3, 5)), _cu((7, 9)), 5, 9,
                                 sinks=sinks, sinks_mode="null_logit")
    pages = torch.zeros(6, 16, 2, 64, dtype=torch.float8_e4m3fn)
    table = torch.tensor([[0, 2], [1, 3]], dtype=torch.int32)
    used = torch.tensor([20, 30], dtype=torch.int32)
    with pytest.raises(RuntimeError, match="no backward pass"):
        attnjit.paged_attention(q, pages, pages, table, _cu((3, 5)), used, 5, 30,
                                k_scale=torch.nn.Parameter(torch.ones(1)),
                                v_scale=torch.ones(1))


def test_a_window_warning_names_the_callers_line(launched):
    q = torch.zeros(8, 4, 64, dtype=torch.bfloat16)
    k = torch.zeros(16, 2, 64, dtype=torch.bfloat16)
    with pytest.warns(UserWarning, match=r"window_size=\(0, 0\)") as caught:
        attnjit.varlen_attention(q, k, k, _cu((3, 5)), _cu((7, 9)), 5, 9,
                                 window_size=(0, 0))
    assert caught[0].filename == __file__

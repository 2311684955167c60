"""attnjit.load_spec: parsing and argument checks (no GPU: fake CUDA tensors
go through the custom ops' fake implementations), and on the GPU every
example spec of specs/examples against a PyTorch reference written by hand
for it, over contiguous and paged K/V, under CUDA-graph capture and
torch.compile.

The spec is parsed by attnjit._C, so these tests need the built extension.
"""

import math
import os
import pathlib
import re
import subprocess
import sys

import pytest

from paged_support import (BOUND, HAS_EXTENSION, HAS_GPU, LSE_BOUND, _cu,
                           attnjit, gpu, lse_error, relative_error,
                           varlen_attention_reference)

torch = pytest.importorskip("torch")
_C = attnjit._C
if not HAS_EXTENSION:
    pytest.skip("attnjit._C is not built: user specs are parsed by it",
                allow_module_level=True)

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "specs" / "examples"
DOCUMENT = """\
family: doc_test
extends: attention
args:
  - {name: doc, type: "const int32*", per: key_token, doc: "[total_k] document id"}
  - {name: limit, type: int32, doc: "keys further back are hidden"}
  - {name: table, type: "const float*", per: table, size: width}
  - {name: width, type: int32}
  - {name: tilt, type: float}
mask: "doc[p] == doc[j] and p - j <= limit"
score: "s + tilt * table[min(p - j, width - 1)]"
"""


# ---- parsing ------------------------------------------------------------

def test_load_spec_from_a_path_a_pathlike_and_text():
    by_str = attnjit.load_spec(str(EXAMPLES / "document.yaml"))
    by_path = attnjit.load_spec(EXAMPLES / "document.yaml")
    by_text = attnjit.load_spec((EXAMPLES / "document.yaml").read_text())
    assert by_str is by_path is by_text  # one text, one spec
    assert by_str.family == "document_mask"
    assert by_str.mask == "(doc[p] == doc[j]) and (j <= p)"
    assert by_str.score is None
    assert by_str.args == [{
        "name": "doc", "type": "const int32*", "per": "key_token",
        "size": None, "sorted": True,
        "doc": "[total_k] document id of each key token, non-decreasing "
               "within each sequence"}]
    assert by_str.presets == {"documents": {"head_dim": 64}}
    table = attnjit.load_spec(DOCUMENT)
    assert [a["name"] for a in table.args] == ["doc", "limit", "table",
                                               "width", "tilt"]
    assert table.args[2]["size"] == "width" and table.args[1]["per"] is None
    assert "doc_test" in repr(table)


@pytest.mark.parametrize("text, match", [
    ("family: x\nextends: attention\nmask: \"j <= p +\"\n",
     r"<string>:3:\d+: expected an expression"),
    ("family: x\nextends: attention\nmask: \"j <= q\"\n",
     r"<string>:3:\d+: arg 'q' cannot be read"),
    ("family: x\nextends: attention\nmask: \"s > 0\"\n", r"<string>:3:\d+"),
    ("family: x\nextends: attention\nscore: \"p < j\"\n", r"<string>:3:\d+"),
])
def test_bad_specs_name_the_line_and_column(text, match):
    with pytest.raises(ValueError, match=match) as caught:
        attnjit.load_spec(text)
    assert caught.value.kind == "spec"


@pytest.mark.parametrize("imports", ["torch, attnjit", "attnjit, torch"])
def test_malformed_yaml_is_a_clear_error_whatever_is_imported_first(imports):
    """A YAML syntax error (the parser library throws it) is a ValueError
    naming line and column, also in a process that imported torch, before
    or after attnjit. On the H200 machine (yaml-cpp 0.8, torch 2.11) such a
    process crashed while the module exported its static copies of
    library symbols (test_api.py's export test); a child process runs the
    case, so a crash fails this test and not the whole session."""
    code = (f"import {imports}\n"
            "try:\n"
            "    attnjit.load_spec('family: [x\\n')\n"
            "except ValueError as e:\n"
            "    print('ValueError', e, getattr(e, 'kind', None))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=300, env=env)
    assert child.returncode == 0, (
        f"the child exited with {child.returncode}: {child.stderr[-3000:]}")
    assert re.search(r"^ValueError <string>:\d+:\d+: .* spec$", child.stdout, re.M), child.stdout


def test_the_hidden_divisor_field_is_not_an_arg(no_device):
    """chunked_local divides by its runtime `chunk`: the multiplier's field
    is the runtime's, not listed among the spec's args and refused as a
    keyword; the launch passes `chunk` alone."""
    spec = attnjit.load_spec(EXAMPLES / "chunked_local.yaml")
    assert [a["name"] for a in spec.args] == ["chunk"]
    q = torch.zeros(7, 2, 64, dtype=torch.bfloat16)
    cu = _cu((4, 3))
    with pytest.raises(TypeError, match="unexpected argument `attnjit_div_chunk`"):
        spec(q, q, q, cu, cu, 4, 4, chunk=2, attnjit_div_chunk=1)
    assert not no_device
    spec(q, q, q, cu, cu, 4, 4, chunk=2)
    assert [name for name, *_ in no_device[0][2]] == ["chunk"]


def test_a_spec_that_does_not_extend_attention_is_refused():
    with pytest.raises(ValueError):
        attnjit.load_spec("family: x\nmask: \"j <= p\"\n")


def test_a_missing_file_and_a_wrong_type():
    with pytest.raises(FileNotFoundError):
        attnjit.load_spec("no/such/spec.yaml")
    with pytest.raises(TypeError, match="a path or YAML text"):
        attnjit.load_spec(42)


# ---- argument checks (fake CUDA tensors: no GPU) --------------------------

def _fake_call(spec, paged=False, drop=(), **changes):
    """Calls spec on fake CUDA tensors with valid args, less `drop`, with
    `changes`; returns what the fake implementation returns."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        cuda = torch.device("cuda")
        lens = (5, 7)
        q = torch.empty(12, 4, 64, device=cuda, dtype=torch.bfloat16)
        cu = torch.empty(3, device=cuda, dtype=torch.int32)
        args = dict(doc=torch.empty(12, device=cuda, dtype=torch.int32),
                    limit=9, table=torch.empty(8, device=cuda),
                    width=8, tilt=0.5)
        for name in drop:
            del args[name]
        made = {name: value(cuda) if callable(value) else value
                for name, value in changes.items()}
        args.update(made)
        if not paged:
            k = torch.empty(12, 2, 64, device=cuda, dtype=torch.bfloat16)
            return spec(q, k, k, cu, cu, max(lens), max(lens),
                        return_lse=True, **args)
        cache = torch.empty(4, 16, 2, 64, device=cuda, dtype=torch.bfloat16)
        table = torch.empty(2, 2, device=cuda, dtype=torch.int32)
        used = torch.empty(2, device=cuda, dtype=torch.int32)
        cu_k = args.pop("cu_seqlens_k", cu)
        return spec.paged(q, cache, cache, table, cu, used, 7, 30,
                          cu_seqlens_k=cu_k, return_lse=True, **args)


def test_valid_fake_calls_give_the_shapes():
    spec = attnjit.load_spec(DOCUMENT)
    for paged in (False, True):
        out, lse = _fake_call(spec, paged=paged)
        assert out.shape == (12, 4, 64) and lse.shape == (4, 12)


@pytest.mark.parametrize("drop, changes, kind, match", [
    (("doc",), {}, TypeError, "missing argument `doc`"),
    ((), {"extra": 1}, TypeError, "unexpected argument `extra`"),
    ((), {"limit": 2**31}, ValueError, "`limit` must fit in an int32"),
    ((), {"limit": True}, TypeError, "`limit` must be an int"),
    ((), {"limit": 1.5}, TypeError, "`limit` must be an int"),
    ((), {"tilt": math.nan}, ValueError, "`tilt` must be finite"),
    ((), {"tilt": "0.5"}, TypeError, "`tilt` must be a real number"),
    ((), {"tilt": True}, TypeError, "`tilt` must be a float, got bool"),
    ((), {"tilt": 1e39}, ValueError, "`tilt` must be finite and within float32's range"),
    ((), {"tilt": 10**400}, ValueError, "`tilt` is beyond any float's range"),
    ((), {"width": 8.0}, TypeError, r"`width` must be an int \(int32\), got float"),
    ((), {"doc": lambda d: torch.empty(12, device=d)}, TypeError,
     "`doc` must be torch.int32"),
    ((), {"doc": lambda d: torch.empty(11, device=d, dtype=torch.int32)},
     ValueError, r"`doc` \(per key_token\) needs at least 12 elements"),
    ((), {"doc": lambda d: torch.empty(12, 1, device=d, dtype=torch.int32)},
     ValueError, "`doc` must be a contiguous 1-D tensor"),
    ((), {"doc": lambda d: torch.empty(24, device=d,
                                       dtype=torch.int32)[::2]},
     ValueError, "`doc` must be a contiguous 1-D tensor"),
    ((), {"width": 9}, ValueError,
     r"`table` \(per table\) needs at least 9 elements"),
    ((), {"doc": 3}, TypeError, "`doc` must be a torch.Tensor"),
])
def test_bad_spec_args_are_named(drop, changes, kind, match):
    spec = attnjit.load_spec(DOCUMENT)
    with pytest.raises(kind, match=match):
        _fake_call(spec, drop=drop, **changes)


@pytest.mark.parametrize("paged", [False, True])
def test_a_bad_built_in_argument_names_the_specs_call(paged):
    spec = attnjit.load_spec(DOCUMENT)
    call = "doc_test.paged" if paged else "doc_test"
    with pytest.raises(TypeError, match=rf"^{call}: window_size must be a pair"):
        _fake_call(spec, paged=paged, window_size="wide")


def test_a_cpu_tensor_arg_is_refused():
    spec = attnjit.load_spec(DOCUMENT)
    with pytest.raises(ValueError, match="`doc` must be on q's device"):
        _fake_call(spec, doc=lambda d: torch.empty(12, dtype=torch.int32))


@pytest.fixture
def no_device(monkeypatch):
    """The eager paths without a GPU: the device checks pass CPU tensors
    (device -1) and the launches are recorded instead of run."""
    from attnjit import _paged, _varlen
    launched = []
    for module in (_varlen, _paged):
        monkeypatch.setattr(module, "_check_device", lambda *a, **k: -1)
        monkeypatch.setattr(module, "_launch_on",
                            lambda device, key, args, user_args=(), prepared=None:
                            launched.append((key, args,
                                             list(user_args))))
        # Fresh memos: what the stubbed checks pass must not outlive them.
        monkeypatch.setattr(module, "_CHECKED", {})
    return launched


def test_check_finds_a_sorted_tensor_that_decreases(no_device):
    """check=True reads a sorted tensor on the host, after the other
    checks and before the launch; each sequence is its own domain."""
    spec = attnjit.load_spec(EXAMPLES / "document.yaml")
    q = torch.zeros(7, 2, 64, dtype=torch.bfloat16)
    cu = _cu((4, 3))
    bad = torch.tensor([0, 0, 1, 1, 5, 4, 4], dtype=torch.int32)
    with pytest.raises(ValueError, match=r"`doc` is declared sorted but "
                                         r"decreases at element 5 \(sequence 1\)"):
        spec(q, q, q, cu, cu, 4, 4, doc=bad, check=True)
    assert not no_device
    spec(q, q, q, cu, cu, 4, 4, doc=bad)  # unchecked: the caller's promise
    good = torch.tensor([3, 3, 4, 9, 0, 0, 2], dtype=torch.int32)
    spec(q, q, q, cu, cu, 4, 4, doc=good, check=True)
    assert len(no_device) == 2


def test_check_reads_a_paged_key_token_tensor_where_the_kernel_does(no_device):
    """With a paged cache a sequence's ids are [cu_seqlens_k[b], +
    seqused_k[b]): check=True refuses ranges past the next sequence or the
    tensor, and checks sortedness over exactly that range."""
    spec = attnjit.load_spec(EXAMPLES / "document.yaml")
    q = torch.zeros(2, 4, 64, dtype=torch.bfloat16)
    cache = torch.zeros(4, 16, 2, 64, dtype=torch.bfloat16)
    table = torch.zeros(2, 2, dtype=torch.int32)
    cu_q = _cu((1, 1))
    used = torch.tensor([20, 9], dtype=torch.int32)

    def call(cu_k, doc):
        spec.paged(q, cache, cache, table, cu_q, used, 1, 20,
                   cu_seqlens_k=torch.tensor(cu_k, dtype=torch.int32),
                   doc=torch.tensor(doc, dtype=torch.int32), check=True)

    call([0, 20, 29], [0] * 29)
    call([0, 25, 40], [0] * 20 + [7] * 5 + [1] * 15)  # past used: not read
    with pytest.raises(ValueError, match=r"sequence 0's keys start at element -10 "
                                         r"\(cu_seqlens_k\), before the tensor's start"):
        call([-10, 10, 19], list(range(20)))
    with pytest.raises(ValueError, match=r"sequence 0 has 20 keys from element "
                                         r"0 \(cu_seqlens_k\), past the next "
                                         r"sequence's at element 15"):
        call([0, 15, 24], [0] * 24)
    with pytest.raises(ValueError, match="past the tensor's end at element 28"):
        call([0, 20, 29], [0] * 28)
    with pytest.raises(ValueError, match=r"decreases at element 3 \(sequence 0\)"):
        call([0, 20, 29], [0, 1, 2, 1] + [5] * 25)
    assert len(no_device) == 2


TABLE_BY_HEADS = """\
family: rel_by_head
extends: attention
args:
  - {name: rel, type: "const float*", per: table, size: num_heads_q}
score: "s + rel[h]"
"""


def test_a_table_sized_by_a_built_in_argument(no_device):
    """`size: num_heads_q` sizes a table by the checked heads; a learnable
    table is refused (it would get no gradient); a one-element tensor is a
    float argument, as for the built-in ones."""
    spec = attnjit.load_spec(TABLE_BY_HEADS)
    q = torch.zeros(7, 4, 64, dtype=torch.bfloat16)
    k = torch.zeros(7, 2, 64, dtype=torch.bfloat16)
    cu = _cu((4, 3))
    spec(q, k, k, cu, cu, 4, 4, rel=torch.zeros(4))
    with pytest.raises(ValueError, match=r"`rel` \(per table\) needs at least 4 elements"):
        spec(q, k, k, cu, cu, 4, 4, rel=torch.zeros(3))
    with pytest.raises(RuntimeError, match="no backward pass"):
        spec(q, k, k, cu, cu, 4, 4, rel=torch.nn.Parameter(torch.zeros(4)))
    tilted = attnjit.load_spec(DOCUMENT)
    doc = torch.zeros(7, dtype=torch.int32)
    for tilt in (torch.tensor(0.5), torch.tensor([0.5])):
        tilted(q, k, k, cu, cu, 4, 4, doc=doc, limit=9, table=torch.zeros(8),
               width=8, tilt=tilt)
    assert [t for t in no_device[-1][2] if t[0] == "tilt"] == [("tilt", "float", 0.5)]
    # The table's size argument is checked as itself, eagerly too.
    with pytest.raises(TypeError, match=r"`width` must be an int \(int32\), got float"):
        tilted(q, k, k, cu, cu, 4, 4, doc=doc, limit=9, table=torch.zeros(8),
               width=8.0, tilt=0.5)


def test_paged_cu_seqlens_k_must_be_on_qs_device():
    spec = attnjit.load_spec(EXAMPLES / "document.yaml")
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        q = torch.empty(2, 4, 64, device="cuda", dtype=torch.bfloat16)
        cache = torch.empty(4, 16, 2, 64, device="cuda", dtype=torch.bfloat16)
        table = torch.empty(2, 2, device="cuda", dtype=torch.int32)
        cu_q = torch.empty(3, device="cuda", dtype=torch.int32)
        used = torch.empty(2, device="cuda", dtype=torch.int32)
        doc = torch.empty(29, device="cuda", dtype=torch.int32)
        with pytest.raises(ValueError, match="cu_seqlens_k must be on q's device"):
            spec.paged(q, cache, cache, table, cu_q, used, 1, 20,
                       cu_seqlens_k=torch.empty(3, dtype=torch.int32), doc=doc)


@pytest.mark.parametrize("arg, match", [
    ("{name: window_size, type: int32}", "`window_size` is also a keyword"),
    ("{name: out, type: float}", "`out` is also a keyword"),
    ("{name: k_cache, type: \"const int32*\", per: head}", "`k_cache` is also"),
    ("{name: n, type: int64}", "`n` has type int64"),
    ("{name: buf, type: \"float*\"}", r"`buf` has type float\*"),
])
def test_load_spec_refuses_args_the_call_cannot_take(arg, match):
    text = f"family: x\nextends: attention\nargs:\n  - {arg}\nmask: \"j <= p\"\n"
    with pytest.raises(ValueError, match=match) as caught:
        attnjit.load_spec(text)
    assert caught.value.kind == "spec"


def test_the_eager_call_hands_the_launch_typed_args(no_device):
    """The eager path's wiring: a call hands the launch its spec (in the
    kernel key) and the spec's args as (name, kind, value) in declaration
    order."""
    spec = attnjit.load_spec(DOCUMENT)
    q = torch.zeros(12, 4, 64, dtype=torch.bfloat16)
    k = torch.zeros(12, 2, 64, dtype=torch.bfloat16)
    cu = _cu((5, 7))
    doc = torch.zeros(12, dtype=torch.int32)
    table = torch.zeros(8)
    spec(q, k, k, cu, cu, 7, 7, doc=doc, limit=9, table=table, width=8,
         tilt=0.5)
    (key, _, user_args), = no_device
    assert "kv_layout" not in dict(key[0]) and key[-1] is spec._spec
    assert [(n, kind) for n, kind, _ in user_args] == [
        ("doc", "ptr"), ("limit", "int32"), ("table", "ptr"),
        ("width", "int32"), ("tilt", "float")]
    assert user_args[0][2] == doc.data_ptr() and user_args[1][2] == 9
    assert user_args[4][2] == 0.5
    # A tensor too short for its domain stops the call before the launch.
    with pytest.raises(ValueError, match="needs at least 12 elements"):
        spec(q, k, k, cu, cu, 7, 7, doc=doc[:11], limit=9, table=table,
             width=8, tilt=0.5)
    assert len(no_device) == 1


def test_the_eager_paged_call_passes_cu_seqlens_k(no_device):
    """The paged launch gets cu_seqlens_k (where each sequence's keys start
    in a key-token tensor) after its other arguments, and the spec's args."""
    spec = attnjit.load_spec(EXAMPLES / "document.yaml")
    q = torch.zeros(2, 4, 64, dtype=torch.bfloat16)
    cache = torch.zeros(4, 16, 2, 64, dtype=torch.bfloat16)
    table = torch.zeros(2, 2, dtype=torch.int32)
    cu_q = _cu((1, 1))
    cu_k = _cu((20, 9))
    used = torch.tensor([20, 9], dtype=torch.int32)
    doc = torch.zeros(29, dtype=torch.int32)
    spec.paged(q, cache, cache, table, cu_q, used, 1, 20, cu_seqlens_k=cu_k,
               doc=doc)
    (key, args, user_args), = no_device
    assert dict(key[0])["kv_layout"] == "paged" and key[-1] is spec._spec
    assert dict(zip(_C.LAUNCH_ARGS, args))["cu_seqlens_k"] == cu_k.data_ptr()
    assert user_args == [("doc", "ptr", doc.data_ptr())]


def test_paged_needs_cu_seqlens_k_for_a_key_token_tensor():
    spec = attnjit.load_spec(DOCUMENT)
    with pytest.raises(ValueError, match="pass cu_seqlens_k"):
        _fake_call(spec, paged=True, cu_seqlens_k=None)
    with pytest.raises(ValueError, match="cu_seqlens_k must be a contiguous"):
        _fake_call(spec, paged=True,
                   cu_seqlens_k=lambda d: torch.empty(4, device=d,
                                                      dtype=torch.int32))


# ---- results on the GPU, each example against its hand-written reference --

def _problem(lens_q, lens_k, hq, hkv, d, seed, dtype=torch.bfloat16):
    g = torch.Generator(device="cuda").manual_seed(seed)
    tq, tk = sum(lens_q), sum(lens_k)

    def rand(*shape):
        return torch.randn(*shape, generator=g, device="cuda").to(dtype)

    return dict(q=rand(tq, hq, d), k=rand(tk, hkv, d), v=rand(tk, hkv, d),
                cu_seqlens_q=_cu(lens_q, "cuda"),
                cu_seqlens_k=_cu(lens_k, "cuda"),
                max_seqlen_q=max(lens_q), max_seqlen_k=max(lens_k))


def _doc_ids(lens_k, seed):
    """[total_k] document ids: each sequence cut into runs of random length."""
    g = torch.Generator().manual_seed(seed)
    ids = []
    for n in lens_k:
        cuts = torch.randint(0, max(n, 1), (3,), generator=g).tolist()
        ids += [sum(j >= c for c in cuts) for j in range(n)]
    return torch.tensor(ids, dtype=torch.int32, device="cuda")


# Each example: (file, flags, args maker, mask_mod, score_mod), the
# references written from the example's meaning, not from its expression.
def _chunked_local(lens_q, lens_k, hq):
    chunk = 48
    mask = lambda b, h, p, j: (p // chunk) == (j // chunk)  # noqa: E731
    return dict(chunk=chunk), mask, None


def _prefix_lm(lens_q, lens_k, hq):
    prefix = torch.tensor([min(17 + 29 * b, n) for b, n in enumerate(lens_k)],
                          dtype=torch.int32, device="cuda")
    cpu = prefix.tolist()
    mask = lambda b, h, p, j: (j < cpu[b]) | (j <= p)  # noqa: E731
    return dict(prefix=prefix), mask, None


def _document(lens_q, lens_k, hq):
    return _document_with(_doc_ids(lens_k, seed=3), lens_k)


def _document_with(doc, lens_k):
    """A query sees the earlier keys of its own document."""
    cu_k = _cu(lens_k).tolist()

    def mask(b, h, p, j):
        ids = doc[cu_k[b]:cu_k[b + 1]].long()
        return (ids[p] == ids[j]) & (j <= p)
    return dict(doc=doc), mask, None


def _alibi(lens_q, lens_k, hq):
    slopes = torch.tensor([2 ** (-8 * (i + 1) / hq) for i in range(hq)],
                          device="cuda")

    def score(s, b, h, p, j):
        return s - slopes[h] * (p - j).abs()
    return dict(slopes=slopes), None, score


def _causal_expr(lens_q, lens_k, hq):
    return {}, lambda b, h, p, j: j <= p, None


def _sliding_window_expr(lens_q, lens_k, hq):
    window = 37
    mask = lambda b, h, p, j: (j <= p) & (p - j <= window)  # noqa: E731
    return dict(window=window), mask, None


def _key0_bias_expr(lens_q, lens_k, hq):
    radius = 21
    bias = torch.linspace(-2, 3, hq, device="cuda")

    def score(s, b, h, p, j):
        return s + torch.where(j == 0, bias[h], torch.zeros((), device="cuda"))
    mask = lambda b, h, p, j: (p - j).abs() <= radius  # noqa: E731
    return dict(radius=radius, key0_bias=bias), mask, score


def _streaming_llm(lens_q, lens_k, hq):
    # StreamingLLM's rule: the first sink_tokens keys and a causal window.
    sink_tokens, window = 3, 37
    mask = lambda b, h, p, j: (j <= p) & ((j < sink_tokens) | (p - j <= window))  # noqa: E731
    return dict(sink_tokens=sink_tokens, window=window), mask, None


def _strided(lens_q, lens_k, hq):
    stride = 5
    mask = lambda b, h, p, j: (j <= p) & ((p - j) % stride == 0)  # noqa: E731
    return dict(stride=stride), mask, None


def _global_band(lens_q, lens_k, hq):
    # Longformer: the first global_tokens positions see and are seen by
    # every position; the rest see a band of keys on each side.
    global_tokens, band = 5, 23
    mask = lambda b, h, p, j: (j < global_tokens) | (p < global_tokens) | ((p - j).abs() <= band)  # noqa: E731,E501
    return dict(global_tokens=global_tokens, band=band), mask, None


def _dilated_window(lens_q, lens_k, hq):
    # Longformer's dilated window: every dilation-th key of the window back.
    window, dilation = 61, 3
    mask = lambda b, h, p, j: (j <= p) & (p - j <= window) & ((p - j) % dilation == 0)  # noqa: E731,E501
    return dict(window=window, dilation=dilation), mask, None


EXAMPLE_CASES = {
    "chunked_local": (dict(causal=True), _chunked_local),
    "prefix_lm": ({}, _prefix_lm),
    "document": ({}, _document),
    "alibi": (dict(causal=True), _alibi),
    "causal_expr": ({}, _causal_expr),
    "sliding_window_expr": ({}, _sliding_window_expr),
    "key0_bias_expr": ({}, _key0_bias_expr),
    "streaming_llm": ({}, _streaming_llm),
    "strided": ({}, _strided),
    "global_band": ({}, _global_band),
    "dilated_window": ({}, _dilated_window),
}
SHAPES = [  # (lens_q, lens_k, hq, hkv, d)
    ((130, 1, 64), (130, 200, 64), 8, 2, 128),   # prefill, decode, chunk
    ((77, 0, 300), (77, 50, 300), 4, 4, 64),     # an empty query sequence
]


def test_every_example_has_a_case():
    assert sorted(p.stem for p in EXAMPLES.glob("*.yaml")) == sorted(
        EXAMPLE_CASES)


@gpu
@pytest.mark.parametrize("name", sorted(EXAMPLE_CASES))
@pytest.mark.parametrize("shape", SHAPES, ids=["gqa", "mha"])
def test_example_matches_its_hand_written_reference(name, shape):
    lens_q, lens_k, hq, hkv, d = shape
    flags, make = EXAMPLE_CASES[name]
    spec = attnjit.load_spec(EXAMPLES / f"{name}.yaml")
    args = _problem(lens_q, lens_k, hq, hkv, d, seed=11)
    own, mask, score = make(lens_q, lens_k, hq)
    out = torch.full_like(args["q"], math.nan)  # poisoned
    out, lse = spec(**args, **flags, **own, out=out, return_lse=True)
    ref_args = {n: a for n, a in args.items() if not n.startswith("max_")}
    ref, ref_lse = varlen_attention_reference(**ref_args, **flags,
                                              mask_mod=mask, score_mod=score)
    assert relative_error(out, ref) <= BOUND[torch.bfloat16], name
    assert lse_error(lse, ref_lse) <= LSE_BOUND, name


@gpu
def test_a_first_call_runs_on_the_expression_vm(monkeypatch):
    """ATTNJIT_USER_VM=1 with the VM's variant of the flags cached: the
    first call of a spec no cache holds runs its expressions on the VM (the
    generic tier's launch count says so), matches the reference, and after
    wait_specialized() the spec's own kernel answers."""
    monkeypatch.setenv("ATTNJIT_USER_VM", "1")
    monkeypatch.setenv("ATTNJIT_TIERED", "1")
    # A family of its own: no cache (memory or disk) holds its variant.
    family = f"alibi_vm_{os.getpid()}_{int.from_bytes(os.urandom(4), 'little')}"
    text = (EXAMPLES / "alibi.yaml").read_text().replace(
        "family: alibi", f"family: {family}")
    spec = attnjit.load_spec(text)
    flags, make = EXAMPLE_CASES["alibi"]
    lens_q, lens_k, hq, hkv, d = SHAPES[1]  # no decode: no split sibling
    args = _problem(lens_q, lens_k, hq, hkv, d, seed=13)
    own, mask, score = make(lens_q, lens_k, hq)
    attnjit._C.build_user_vm(spec._spec, {
        "dtype": "bf16", "head_dim": d, "causal": bool(flags.get("causal")),
        "window": False, "sinks": "none", "mm_prefix": False,
        "mm_clamp": False, "softcap": False, "return_lse": False})
    ref_args = {n: a for n, a in args.items() if not n.startswith("max_")}
    ref, _ = varlen_attention_reference(**ref_args, **flags, mask_mod=mask,
                                        score_mod=score)
    before = attnjit.cache_stats()["generic_launches"]
    out = spec(**args, **flags, **own,
               out=torch.full_like(args["q"], math.nan))
    torch.cuda.synchronize()
    assert attnjit.cache_stats()["generic_launches"] == before + 1
    assert relative_error(out, ref) <= BOUND[torch.bfloat16]
    attnjit.wait_specialized()
    again = spec(**args, **flags, **own,
                 out=torch.full_like(args["q"], math.nan))
    torch.cuda.synchronize()
    assert attnjit.cache_stats()["generic_launches"] == before + 1
    assert relative_error(again, ref) <= BOUND[torch.bfloat16]


@gpu
def test_re_expressed_causal_equals_the_flag():
    args = _problem((130, 1, 64), (130, 200, 64), 8, 2, 128, seed=5)
    spec = attnjit.load_spec(EXAMPLES / "causal_expr.yaml")
    mine = spec(**args)
    builtin = attnjit.varlen_attention(**args, causal=True)
    # The same tiles and the same element masks: equal but for rounding.
    assert relative_error(mine, builtin.float()) <= 5e-3


@gpu
def test_paged_matches_contiguous_with_a_key_token_tensor():
    lens_q, lens_k, hq, hkv, d = (9, 1, 40), (150, 70, 40), 8, 2, 128
    page = 16
    spec = attnjit.load_spec(EXAMPLES / "document.yaml")
    args = _problem(lens_q, lens_k, hq, hkv, d, seed=8)
    doc = _doc_ids(lens_k, seed=9)
    want = spec(**args, doc=doc)
    # Scatter each sequence's keys over shuffled pages.
    pages = [-(-n // page) for n in lens_k]
    order = torch.randperm(sum(pages) + 3, generator=torch.Generator()
                           .manual_seed(1)).tolist()
    k_cache = torch.zeros(len(order), page, hkv, d, device="cuda",
                          dtype=torch.bfloat16)
    v_cache = torch.zeros_like(k_cache)
    table = torch.zeros(len(lens_k), max(pages), dtype=torch.int32)
    at, row = 0, 0
    for b, n in enumerate(lens_k):
        for i in range(pages[b]):
            table[b, i] = order[at]
            rows = slice(i * page, min(n, (i + 1) * page))
            take = args["k"][row + rows.start: row + rows.stop]
            k_cache[order[at], :take.shape[0]] = take
            v_cache[order[at], :take.shape[0]] = \
                args["v"][row + rows.start: row + rows.stop]
            at += 1
        row += n
    got = spec.paged(args["q"], k_cache, v_cache, table.cuda(),
                     args["cu_seqlens_q"],
                     torch.tensor(lens_k, dtype=torch.int32, device="cuda"),
                     max(lens_q), max(lens_k), causal=False,
                     cu_seqlens_k=args["cu_seqlens_k"], doc=doc)
    _, mask, _ = _document_with(doc, lens_k)
    ref_args = {n: a for n, a in args.items() if not n.startswith("max_")}
    ref, _ = varlen_attention_reference(**ref_args, mask_mod=mask)
    assert relative_error(got, ref) <= BOUND[torch.bfloat16]
    # Other tiles and splits than the contiguous call's: equal but for
    # rounding.
    assert relative_error(got, want.float()) <= 5e-3


@gpu
def test_cuda_graph_replays_with_new_tensor_values():
    spec = attnjit.load_spec(EXAMPLES / "document.yaml")
    lens = (120, 1, 33)
    args = _problem(lens, lens, 8, 2, 64, seed=12)
    doc = _doc_ids(lens, seed=1)
    spec(**args, doc=doc)  # compile and load first
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = spec(**args, doc=doc)
    ref_args = {n: a for n, a in args.items() if not n.startswith("max_")}
    for seed in (2, 3):
        doc.copy_(_doc_ids(lens, seed=seed))
        graph.replay()
        torch.cuda.synchronize()
        _, mask, _ = _document_with(doc, lens)
        ref, _ = varlen_attention_reference(**ref_args, mask_mod=mask)
        assert relative_error(out, ref) <= BOUND[torch.bfloat16]


@gpu
def test_torch_compile_fullgraph():
    spec = attnjit.load_spec(EXAMPLES / "chunked_local.yaml")
    args = _problem((90, 40), (90, 40), 4, 1, 128, seed=2)

    def layer(q, k, v, cu_q, cu_k):
        o, lse = spec(q * 1.0, k, v, cu_q, cu_k, 90, 90, causal=True,
                      return_lse=True, chunk=32)
        return o.float().sum(-1), lse

    compiled = torch.compile(layer, fullgraph=True)
    inputs = (args["q"], args["k"], args["v"], args["cu_seqlens_q"],
              args["cu_seqlens_k"])
    got, got_lse = compiled(*inputs)
    want, want_lse = layer(*inputs)
    torch.testing.assert_close(got, want, rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(got_lse, want_lse)


@gpu
def test_opcheck():
    spec = attnjit.load_spec(EXAMPLES / "alibi.yaml")
    args = _problem((40, 24), (40, 24), 4, 2, 128, seed=4)
    slopes = torch.rand(4, device="cuda")
    op_args = (spec.id, args["q"], args["k"], args["v"], args["cu_seqlens_q"],
               args["cu_seqlens_k"], 40, 40, None, True, -1, -1, None,
               "none", None, False, 0.0, True, [slopes], [], [], False)
    torch.library.opcheck(torch.ops.attnjit.user_attention.default, op_args)


def test_gpu_marker_matches_the_machine():
    assert HAS_GPU == (torch.cuda.is_available() and HAS_EXTENSION)

"""The custom ops (torch.ops.attnjit.*) as torch sees them, on CPU tensors:
torch.library.opcheck (schema, fake tensors, AOT dispatch) and a
torch.compile(fullgraph=True) trace through each. The device check and the
launch are stubbed: the stub launch zeroes the output (and lse) the real
one would write, so the comparisons opcheck makes are of what the op
returns, not of a kernel's numbers (test_paged.py and test_api.py run the
ops on the GPU).

Run: python -m pytest python/tests.
"""

import ctypes

import pytest

from paged_support import _cu, _paged, _varlen, attnjit

torch = pytest.importorskip("torch")
_C = attnjit._C


def _stub_launch(device, key, args, user_args=(), prepared=None):
    """Zeroes out (and lse) as a launch would write them: args as
    _varlen._launch / _paged._launch build them, _C.LAUNCH_ARGS's values."""
    a = dict(zip(_C.LAUNCH_ARGS, args))
    total_q = a["total_q"]
    if total_q:
        ctypes.memset(a["o"], 0, total_q * a["o_row_stride"] * 2)
        if a["lse"]:
            ctypes.memset(a["lse"], 0, a["num_heads_q"] * total_q * 4)


@pytest.fixture
def stubbed(monkeypatch):
    if not hasattr(torch.ops.attnjit, "varlen_attention"):
        pytest.skip("attnjit's custom ops are not registered here")
    for module in (_varlen, _paged):
        monkeypatch.setattr(module, "_check_device", lambda *a, **k: 0)
        monkeypatch.setattr(module, "_launch_on", _stub_launch)
        # Fresh memos: what the stubbed checks pass must not outlive them.
        monkeypatch.setattr(module, "_CHECKED", {})


def _paged_op_args(return_lse=True):
    q = torch.randn(12, 4, 64, dtype=torch.bfloat16)
    k_cache = torch.randn(6, 16, 2, 64, dtype=torch.bfloat16)
    v_cache = torch.randn(6, 16, 2, 64, dtype=torch.bfloat16)
    table = (torch.arange(4, dtype=torch.int32) % 6).view(2, 2)
    sinks = torch.zeros(4)
    return (q, k_cache, v_cache, table, _cu((5, 7)),
            torch.tensor([20, 7], dtype=torch.int32), 7, 20, None, True, 15, 0,
            sinks, "null_logit", None, False, 0.0, return_lse, False)


def _varlen_op_args(return_lse=True):
    q = torch.randn(12, 4, 64, dtype=torch.bfloat16)
    k = torch.randn(27, 2, 64, dtype=torch.bfloat16)
    return (q, k, k.clone(), _cu((5, 7)), _cu((20, 7)), 7, 20, None, True,
            -1, -1, None, "none", None, False, 0.0, return_lse, False)


@pytest.mark.parametrize("return_lse", [True, False])
def test_opcheck_paged(stubbed, return_lse):
    torch.library.opcheck(torch.ops.attnjit.paged_attention.default,
                          _paged_op_args(return_lse))


@pytest.mark.parametrize("return_lse", [True, False])
def test_opcheck_varlen(stubbed, return_lse):
    torch.library.opcheck(torch.ops.attnjit.varlen_attention.default,
                          _varlen_op_args(return_lse))


def test_the_ops_return_what_the_fakes_say(stubbed):
    for op, args in ((torch.ops.attnjit.paged_attention, _paged_op_args()),
                     (torch.ops.attnjit.varlen_attention, _varlen_op_args())):
        out, lse = op(*args)
        assert out.shape == args[0].shape and out.dtype == args[0].dtype
        assert lse.shape == (4, 12) and lse.dtype == torch.float32
        assert not out.any() and not lse.any()  # the stub launch's zeros


def test_no_backward_through_the_ops(stubbed):
    """There is no backward pass: with an input that requires grad, the op
    raises, at the call or at backward() (never a silent None grad)."""
    args = list(_paged_op_args())
    args[0] = args[0].clone().requires_grad_()
    with pytest.raises(RuntimeError, match="backward"):
        out, _ = torch.ops.attnjit.paged_attention(*args)
        out.float().sum().backward()
    with torch.no_grad():
        torch.ops.attnjit.paged_attention(*args)


def test_torch_compile_fullgraph_through_the_op(stubbed):
    args = _paged_op_args()
    q, k_cache, v_cache, table, cu_q, used = args[:6]

    def layer(q, k_cache, v_cache, table, cu_q, used):
        o, lse = attnjit.paged_attention(q * 1.0, k_cache, v_cache, table, cu_q, used, 7, 20,
                                         window_size=(15, 0), return_lse=True)
        return o.float().sum(-1) + 1.0, lse

    compiled = torch.compile(layer, fullgraph=True, backend="aot_eager")
    got, got_lse = compiled(q, k_cache, v_cache, table, cu_q, used)
    assert torch.equal(got, torch.ones(12, 4)) and not got_lse.any()


def test_no_backward_under_torch_compile(stubbed):
    """Compiled with an input that requires grad: an error, at the trace,
    the call or backward(), and never a gradient left None in silence."""
    args = _paged_op_args()
    q = args[0].clone().requires_grad_()

    def layer(q, k_cache, v_cache, table, cu_q, used):
        o, _ = torch.ops.attnjit.paged_attention(q, k_cache, v_cache, table, cu_q, used,
                                                 *args[6:])
        return o.float().sum()

    compiled = torch.compile(layer, fullgraph=True, backend="aot_eager")
    with pytest.raises(Exception, match="no autograd formula|no backward pass"):
        compiled(q, *args[1:6]).backward()

"""The argument checks' memo of the eager calls (attnjit._varlen and
attnjit._paged each keep one, keyed by their own _checks_key).

An engine calls with the same layouts over and over: the checks of a call
depend only on its tensors' dtypes, shapes, strides, device indices and
the 16-byte alignment of q, k, v and out and on its scalar arguments (types included:
max_seqlen_q=1.0 is an error that 1 is not), so their result is kept under
a key of those, less max_seqlen_q and max_seqlen_k: a decode's
max_seqlen_k grows at every step, so the lengths (and what depends on
them) are checked at every call instead (each module's _launch). The value
kept is the module's _Prepared: the checks' result and what the launches
derive from it. A failed
check stores nothing; a tensor subclass, a tensor of another layout than
strided, or a scalar of another type goes through the checks every time.
The key costs ~5 attribute reads per tensor against the checks' ~50
function calls.
"""

import torch

_MEMO_MAX = 256  # entries per memo; a full memo starts over


class _Unkeyed(Exception):
    """An argument the memo does not key (it is checked every call)."""


def _layout(t):
    """What the checks read of a tensor argument but its address (None
    stays None; the addresses the checks read are keyed by _aligned)."""
    if t is None:
        return None
    if type(t) is not torch.Tensor or t.layout is not torch.strided:
        raise _Unkeyed
    return (t.dtype, t.shape, t.stride(), t.get_device())


def _aligned(*tensors):
    """Whether every tensor given (None aside) starts on a 16-byte line: the
    one fact of their addresses the checks read."""
    bits = 0
    for t in tensors:
        if t is not None:
            bits |= t.data_ptr()
    return not bits & 15


_PLAIN = (int, float, bool, str, type(None))


def _scalar(x):
    if type(x) not in _PLAIN:
        raise _Unkeyed
    return (type(x), x)


def _pair(x):
    if type(x) not in (tuple, list) or len(x) != 2:
        raise _Unkeyed
    return (type(x), _scalar(x[0]), _scalar(x[1]))


def _remember(memo, key, value):
    """memo[key] = value; a full memo starts over."""
    if len(memo) >= _MEMO_MAX:
        memo.clear()
    memo[key] = value

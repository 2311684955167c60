"""The argument checks' memo of the eager calls (attnjit._varlen and
attnjit._paged each keep one, keyed by their own _checks_key).

An engine calls with the same layouts over and over: the checks of a call
depend only on its tensors' dtypes, shapes, strides and device indices, the
16-byte alignment of q, k, v and out, and its scalar arguments (types
included: max_seqlen_q=1.0 is an error that 1 is not), so their result is
kept under a key of those, less max_seqlen_q and max_seqlen_k: a decode's
max_seqlen_k grows at every step, so the lengths (and what depends on them)
are checked at every call instead (each module's _checked). The value kept
is the module's _Prepared: the checks' result and what the launches derive
from it. A failed check stores nothing; a tensor subclass, a tensor of
another layout than strided, or a scalar of another type goes through the
checks every time. The key costs 4 attribute reads per tensor (and the
addresses of q, k, v and out) against the checks' ~50 function calls.
"""

import torch

_MEMO_MAX = 256  # entries per memo; a full memo starts over


class _Unkeyed(Exception):
    """An argument the memo does not key (it is checked every call)."""


_SAME = object()  # in a key: the argument before this one, again


def _layouts(*tensors):
    """What the checks read of the tensor arguments but their addresses, as
    a flat list (None stays None; the addresses are keyed by _aligned). An
    argument that is the one before it (cu_seqlens_q passed as cu_seqlens_k
    too) is keyed as such, without reading it twice."""
    key = []
    previous = None
    for t in tensors:
        if t is None:
            key.append(None)
            continue
        if t is previous:
            key.append(_SAME)
            continue
        previous = t
        if type(t) is not torch.Tensor or t.layout is not torch.strided:
            raise _Unkeyed
        try:
            key += (t.dtype, t.shape, t.stride(), t.get_device())
        except RuntimeError:  # (a nested tensor, strided but without a shape)
            raise _Unkeyed from None
    return key


def _addresses(q, k, v, out):
    """The addresses of q, k (or k_cache), v (or v_cache) and out (0 when
    None), read once per call for the memo's key and the launch; None where
    one is not a tensor with storage (the checks then say what is wrong)."""
    try:
        return (q.data_ptr(), k.data_ptr(), v.data_ptr(),
                0 if out is None else out.data_ptr())
    except (AttributeError, TypeError, RuntimeError):
        return None


def _aligned(addresses):
    """Whether _addresses all start on a 16-byte line: the one fact of
    them the checks read."""
    if addresses is None:
        raise _Unkeyed
    q, k, v, out = addresses
    return not (q | k | v | out) & 15


_PLAIN = frozenset((int, float, bool, str, type(None)))


def _scalars(*values):
    """The scalar arguments with their types (max_seqlen_q=1.0 is an error
    that 1 is not; True == 1 as a key)."""
    types = tuple(map(type, values))
    if not _PLAIN.issuperset(types):
        raise _Unkeyed
    return (types, values)


def _pair(x):
    """window_size: a tuple or list of two scalars, with their types."""
    kind = type(x)
    if (kind is not tuple and kind is not list) or len(x) != 2:
        raise _Unkeyed
    left, right = x
    if type(left) not in _PLAIN or type(right) not in _PLAIN:
        raise _Unkeyed
    return (kind, type(left), left, type(right), right)


def _kept(memo, key):
    """What memo keeps under key (None: nothing, or no key: a call the memo
    does not key)."""
    return None if key is None else memo.get(key)


def _remember(memo, key, value):
    """memo[key] = value (no key: nothing kept); a full memo starts over."""
    if key is None:
        return
    if len(memo) >= _MEMO_MAX:
        memo.clear()
    memo[key] = value

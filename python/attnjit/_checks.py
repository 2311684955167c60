"""The argument checks varlen_attention and paged_attention share (and the
user-spec ops through them): tensors, dtypes, head counts, strides, modes,
devices, alignment and the lengths read back with check=True. Each takes
`op`, the name that prefixes its messages (varlen_attention's by default).
The ops import these names into their own modules, where tests replace
them (``_check_device``) per module.
"""

import operator
import os
import sys
import warnings

import torch

from . import _C

# The spec's head dims (384 and 512 on sm_90a only: elsewhere the compile
# says so), and the value-head widths it takes where v is narrower than q and
# k (head_dim_v; which head_dim each goes with, the spec says at launch).
HEAD_DIMS = tuple(_C.flag_values("head_dim"))
VALUE_HEAD_DIMS = tuple(d for d in _C.flag_values("head_dim_v") if d)
SINK_MODES = ("none", "null_logit", "bias_key0")

_DTYPE_NAMES = {torch.bfloat16: "bf16", torch.float16: "fp16"}
_INT32_MAX = 2**31 - 1
_GRID_MAX = 65535  # sequences and query heads are grid dimensions

_OP = "varlen_attention"  # the op named in a message unless one is given
_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _fail(kind, message, op=_OP):
    raise kind(f"{op}: {message}")


# float32's smallest normal and largest finite values: a scale or cap the
# kernel receives as a float must stay nonzero and finite there.
_FLT_MIN = 1.1754943508222875e-38
_FLT_MAX = 3.4028234663852886e38


def _real(x, name, op, off=""):
    """A float argument (an int, float, numpy scalar or one-element tensor)
    as a Python float; a string, None or anything float() refuses is an
    error of the op's own."""
    if not isinstance(x, (str, bytes)) and x is not None:
        try:
            return float(x)
        except OverflowError:
            _fail(ValueError, f"`{name}` is beyond any float's range", op)
        except (TypeError, ValueError, RuntimeError):
            pass
    _fail(TypeError, f"`{name}` must be a real number{off}, got {x!r}", op)


def _strides(t, name, heads, op=_OP):
    """(row stride, head stride) in elements of the last three dimensions
    [rows, heads, head_dim], after the layout checks."""
    *_, rows, head, last = t.stride()
    if last != 1:
        _fail(ValueError, f"`{name}` must be contiguous in its last dimension "
                          f"(head_dim), got strides {tuple(t.stride())}", op)
    # A dimension of size 1 is never stepped over; give it a valid stride.
    if heads == 1:
        head = t.shape[-1]
    if t.shape[-3] <= 1:
        rows = heads * head
    if rows <= 0 or head <= 0 or rows % 8 or head % 8:
        _fail(ValueError, f"`{name}` row and head strides must be positive "
                          f"multiples of 8 elements (16-byte loads), got "
                          f"strides {tuple(t.stride())}", op)
    return rows, head


def _tensor(t, name, dtype=None, op=_OP):
    if not isinstance(t, torch.Tensor):
        _fail(TypeError, f"`{name}` must be a torch.Tensor, got "
                         f"{type(t).__name__}", op)
    if t.layout is not torch.strided or t.is_nested:
        what = "a nested tensor" if t.is_nested else f"layout {t.layout}"
        _fail(TypeError, f"`{name}` must be a dense (strided) tensor, got "
                         f"{what}", op)
    if dtype is not None and t.dtype != dtype:
        _fail(TypeError, f"`{name}` must be {dtype}, got {t.dtype}", op)


def _index(x, name, low, why, op=_OP):
    try:
        value = operator.index(x)
    except TypeError:
        _fail(TypeError, f"`{name}` must be an int, got {type(x).__name__}",
              op)
    if value < low or value > _INT32_MAX:
        _fail(ValueError, f"`{name}` must be in [{low}, {_INT32_MAX}]{why}, "
                          f"got {value}", op)
    return value


def _check_dtypes(q, k, v, k_name, v_name, op):
    """q's dtype's kernel name, after checking that k and v share it."""
    dtype = q.dtype
    dtype_name = _DTYPE_NAMES.get(dtype)
    if dtype_name is None:
        _fail(TypeError, f"q, {k_name} and {v_name} must be bfloat16 or "
                         f"float16, got {dtype}", op)
    if k.dtype != dtype or v.dtype != dtype:
        _fail(TypeError, f"q, {k_name} and {v_name} must have one dtype, got "
                         f"{q.dtype}, {k.dtype} and {v.dtype}", op)
    return dtype_name


def _check_value_heads(head_dim, head_dim_v, what, op):
    """v's head_dim: q's and k's, or a narrower one the spec takes
    (head_dim_v; returns the flag's value, 0 for "as q and k")."""
    if head_dim_v == head_dim:
        return 0
    if head_dim_v > head_dim or head_dim_v not in VALUE_HEAD_DIMS:
        _fail(ValueError, f"{what} has head_dim {head_dim_v} under q's and k's "
                          f"{head_dim}: v as wide as k, or narrower as one of "
                          f"{', '.join(map(str, VALUE_HEAD_DIMS))} (head_dim_v; "
                          f"128 under 192)", op)
    return head_dim_v


def _check_heads(heads_q, heads_kv, head_dim, op):
    """The supported head dims and the GQA ratio."""
    if head_dim not in HEAD_DIMS:
        _fail(ValueError, f"head_dim {head_dim} is not supported (one of "
                          f"{', '.join(map(str, HEAD_DIMS))})", op)
    if heads_q < 1 or heads_kv < 1 or heads_q % heads_kv:
        _fail(ValueError, f"the query heads ({heads_q}) must be a multiple of "
                          f"the key/value heads ({heads_kv})", op)


def _check_modes(heads_q, softmax_scale, window_size, softcap, sinks,
                 sinks_mode, mm_prefix_ranges, mm_prefix_clamp, op):
    """The mode arguments; returns (scale, window_left, window_right,
    softcap) as the launch takes them."""
    if softmax_scale is None:
        scale = 0.0  # the kernel's default, 1/sqrt(head_dim)
    else:
        scale = _real(softmax_scale, "softmax_scale", op)
        if not _FLT_MIN <= scale <= _FLT_MAX:
            _fail(ValueError, f"softmax_scale must be > 0 and within float32's "
                              f"normal range (the kernel takes a float), got "
                              f"{softmax_scale}", op)
    try:
        window_left, window_right = window_size
    except (TypeError, ValueError):
        _fail(TypeError, f"window_size must be a pair (left, right), got "
                         f"{window_size!r}", op)
    window_left = _index(window_left, "window_size[0]", -1, " (-1: unbounded)",
                         op)
    window_right = _index(window_right, "window_size[1]", -1,
                          " (-1: unbounded)", op)
    softcap = _real(softcap, "softcap", op, " (0.0: off)")
    if not (softcap == 0 or _FLT_MIN <= softcap <= _FLT_MAX):
        _fail(ValueError, f"softcap must be 0 (off) or > 0 within float32's "
                          f"normal range, got {softcap}", op)

    if sinks_mode not in SINK_MODES:
        _fail(ValueError, f"sinks_mode must be one of {', '.join(SINK_MODES)}, "
                          f"got {sinks_mode!r}", op)
    if (sinks is None) != (sinks_mode == "none"):
        _fail(ValueError, f"sinks must be given exactly when sinks_mode is not "
                          f"'none' (sinks_mode={sinks_mode!r}, sinks "
                          f"{'missing' if sinks is None else 'given'})", op)
    if sinks is not None:
        _tensor(sinks, "sinks", torch.float32, op)
        if sinks.shape != (heads_q,) or (heads_q > 1 and sinks.stride(0) != 1):
            _fail(ValueError, f"sinks must be a contiguous [Hq] = [{heads_q}] "
                              f"tensor, got shape {list(sinks.shape)}", op)

    if mm_prefix_ranges is not None:
        _tensor(mm_prefix_ranges, "mm_prefix_ranges", torch.int32, op)
        if mm_prefix_ranges.dim() != 2 or mm_prefix_ranges.shape[1] != 3:
            _fail(ValueError, f"mm_prefix_ranges must be [R, 3] (sequence, "
                              f"start, end inclusive), got shape "
                              f"{list(mm_prefix_ranges.shape)}", op)
    elif mm_prefix_clamp:
        _fail(ValueError, "mm_prefix_clamp=True needs mm_prefix_ranges", op)
    _warn_window_traps(window_left, window_right, mm_prefix_clamp, op)
    return scale, window_left, window_right, softcap


def _warn_window_traps(window_left, window_right, mm_prefix_clamp, op):
    """Window arguments that are legal but almost certainly a mistake: a
    window of (0, 0) (0 is a real window here, not "off") and a clamp whose
    left window is unbounded (the clamp reads the left window alone)."""
    if window_left == 0 and window_right == 0:
        warnings.warn(f"{op}: window_size=(0, 0) lets each query see only its "
                      f"own position; -1 means unbounded (0 is not 'off')",
                      stacklevel=_callers_level())
    if mm_prefix_clamp and window_left == -1:
        warnings.warn(f"{op}: mm_prefix_clamp=True with window_size[0] = -1 "
                      f"has no effect: the clamp bounds image spans by the "
                      f"left window alone", stacklevel=_callers_level())


def _callers_level():
    """warnings.warn's stacklevel, called from a function here, that names
    the first frame outside this package: the user's call, however many
    frames the eager, traced or user-spec path put between."""
    frame, level = sys._getframe(2), 2  # (the function that warns: 1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def _check_out(out, q, op, head_dim_v=0):
    """out: q's shape, or [total_q, Hq, head_dim_v] where v is narrower."""
    if out is not None:
        _tensor(out, "out", q.dtype, op)
        want = q.shape if not head_dim_v else q.shape[:2] + (head_dim_v,)
        if out.shape != want:
            what = "q's shape" if not head_dim_v else "q's rows and heads and v's head_dim"
            _fail(ValueError, f"out must have {what} {list(want)}, got "
                              f"{list(out.shape)}", op)


def _check_aligned(named, op):
    """16-byte aligned starts of the (name, tensor or None) pairs."""
    misaligned = [name for name, t in named
                  if t is not None and t.data_ptr() % 16]
    if misaligned:
        _fail(ValueError, f"{', '.join(misaligned)} must start at a "
                          f"16-byte aligned address (a view that starts "
                          f"mid-row of a larger tensor is not)", op)


def _check_device(q, named, mm_prefix_ranges, op):
    """q's CUDA device index, after checking that the (name, tensor or
    None) pairs are on it and mm_prefix_ranges on it or on the CPU."""
    device = q.get_device()
    given = [(n, t) for n, t in named if t is not None]
    if device < 0 or any(t.get_device() != device for _, t in given):
        names = ["q"] + [n for n, _ in named]
        _fail(ValueError, f"{', '.join(names[:-1])} and {names[-1]} "
                          "must be CUDA tensors on one device, got "
                          f"q on {q.device}, "
                          + ", ".join(f"{n} on {t.device}" for n, t in given),
              op)
    if mm_prefix_ranges is not None and mm_prefix_ranges.get_device() not in (
            -1, device):
        _fail(ValueError, f"mm_prefix_ranges must be on q's device or on the "
                          f"CPU, got {mm_prefix_ranges.device}", op)
    return device


def _check_lengths(name, values, total, bound, bound_name, op):
    """A prefix sum read from the device (check=True): it starts at 0, does
    not decrease, ends within `total` rows, and no length passes `bound`.
    Returns the lengths."""
    lengths = [b - a for a, b in zip(values, values[1:])]
    if values[0] != 0 or any(n < 0 for n in lengths):
        _fail(ValueError, f"{name} must start at 0 and not decrease, got "
                          f"{values}", op)
    if values[-1] > total:
        _fail(ValueError, f"{name} ends at {values[-1]}, past the "
                          f"{total} rows of its tensor", op)
    if lengths and max(lengths) > bound:
        _fail(ValueError, f"{bound_name} ({bound}) is below the longest "
                          f"sequence ({max(lengths)})", op)
    return lengths


def _no_backward(op, *tensors):
    """No tensor argument asks for a gradient (None: an absent optional
    one): a learnable sink or scale would silently get none."""
    if torch.is_grad_enabled():
        for t in tensors:
            if t is not None and t.requires_grad:
                _fail(RuntimeError, "there is no backward pass: call it under "
                                    "torch.no_grad() or torch.inference_mode()", op)

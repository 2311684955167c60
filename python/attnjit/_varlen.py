"""varlen_attention on PyTorch tensors: checks (those shared with
paged_attention in attnjit._checks), flags, launch, custom op.

Eager calls take a short path (check the arguments, allocate the outputs,
launch on the current stream); under torch.compile, or with tensor
subclasses such as FakeTensor, the call goes through the custom op
``attnjit::varlen_attention`` whose fake implementation gives the shapes.
Neither path synchronizes (unless ``check=True``), so both can be captured
in a CUDA graph once the variant has been compiled by a first call.
"""

import math
from typing import Optional, Tuple

import torch

from . import _C
from ._checks import (_GRID_MAX, _INT32_MAX, _OP, _check_aligned,
                      _check_device, _check_dtypes, _check_heads,
                      _check_lengths, _check_modes, _check_out,
                      _check_value_heads, _fail, _index, _no_backward,
                      _strides, _tensor)
from ._memo import (_Unkeyed, _addresses, _aligned, _kept, _layouts, _pair,
                    _remember, _scalars)

# (flag items, device index) -> _C.AttentionKernel: the launch path's
# handles, keyed by the same flag assignment (the spec's names and values)
# that the C++ memo resolves into its canonical FlagSet. The kernel object
# loads its module into each CUDA context on first use there, so nothing
# here is tied to one context.
_kernels = {}

_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
_current_device = getattr(torch._C, "_cuda_getDevice", None)
_capturing = getattr(torch._C, "_cuda_isCurrentStreamCapturing", None)


def _stream(device):
    if _raw_stream is not None:
        return _raw_stream(device)
    return torch.cuda.current_stream(device).cuda_stream


def _kernel(key):
    """key: (flag items, device), or (flag items, device, spec) for a user
    spec's variant (attnjit.load_spec; the spec object keys by identity)."""
    kernel = _kernels.get(key)
    if kernel is None:
        flags = dict(key[0])
        kernel = (_C.get_kernel(flags) if len(key) == 2
                  else _C.get_user_kernel(key[2], flags))
        _kernels[key] = kernel
    return kernel


_CHECKED = {}  # varlen_attention's memo: checks key -> _Prepared


def _checks_key(q, k, v, cu_seqlens_q, cu_seqlens_k, softmax_scale,
                window_size, sinks, sinks_mode, mm_prefix_ranges,
                mm_prefix_clamp, softcap, return_lse, out, causal,
                addresses=None):
    """Everything _validate and _Prepared read of their arguments but the
    lengths (the memo's key), flat; None for a call the memo does not key.
    addresses: _addresses(q, k, v, out), where the caller read them."""
    try:
        key = _layouts(q, k, v, cu_seqlens_q, cu_seqlens_k, sinks,
                       mm_prefix_ranges, out)
        key += _scalars(softmax_scale, sinks_mode, mm_prefix_clamp, softcap,
                        return_lse, causal)
        key += _pair(window_size)
        key.append(_aligned(_addresses(q, k, v, out) if addresses is None
                            else addresses))
    except _Unkeyed:
        return None
    return tuple(key)


class _Prepared:
    """A checked call and what its launches derive from it, made once per
    memo key: _validate's result (`checked`), the variant's flags, the
    outputs' shapes, the launch arguments that do not change from call to
    call (`mid`, `tail`: _C.LAUNCH_ARGS's values around the lengths) and,
    once a launch asked for it, the built-in variant's kernel handle."""

    __slots__ = ("checked", "flags", "out_shape", "out_like_q", "lse_shape",
                 "mid", "tail", "kernel")

    def __init__(self, checked, causal, sinks_mode, return_lse, mm_prefix,
                 mm_prefix_clamp, out_given):
        (dtype_name, _, num_seqs, total_q, total_k, heads_q, heads_kv,
         head_dim, _, _, scale, window_left, window_right, window, softcap,
         q_strides, k_strides, v_strides, o_strides, head_dim_v) = checked
        self.checked = checked
        # With an unbounded window the clamp changes nothing.
        clamp = bool(mm_prefix_clamp) and window
        self.flags = (("dtype", dtype_name), ("head_dim", head_dim),
                      ("head_dim_v", head_dim_v), ("causal", bool(causal)),
                      ("window", window), ("sinks", sinks_mode),
                      ("mm_prefix", mm_prefix), ("mm_clamp", clamp),
                      ("softcap", softcap > 0), ("return_lse", bool(return_lse)))
        width = head_dim_v or head_dim  # o's: v's
        self.out_shape = (total_q, heads_q, width)
        # o as wide as q: q's shape (empty_like parses fewer arguments)
        self.out_like_q = width == head_dim
        self.lse_shape = (heads_q, total_q)
        if not out_given:
            o_strides = (heads_q * width, width)
        self.mid = (q_strides[0], q_strides[1], k_strides[0], k_strides[1],
                    v_strides[0], v_strides[1], o_strides[0], o_strides[1],
                    num_seqs, heads_q, heads_kv, total_q, total_k)
        self.tail = (scale, softcap, window_left, window_right,
                     0, 0, 0, 0, 0, 0, 0,  # the paged layout's: none
                     0, 0)  # fp8 K/V's scales: none
        self.kernel = None


def _prepared(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
              max_seqlen_k, softmax_scale, window_size, sinks, sinks_mode,
              mm_prefix_ranges, mm_prefix_clamp, softcap, return_lse, out,
              causal, memo=None, addresses=None):
    """The call's _Prepared, through the memo (memo: another dict than
    _CHECKED, for tests). The lengths are not in the key (a decode's
    max_seqlen_k grows at every step): the caller checks them at every
    call (_lengths)."""
    key = _checks_key(q, k, v, cu_seqlens_q, cu_seqlens_k, softmax_scale,
                      window_size, sinks, sinks_mode, mm_prefix_ranges,
                      mm_prefix_clamp, softcap, return_lse, out, causal,
                      addresses)
    if memo is None:
        memo = _CHECKED
    prepared = _kept(memo, key)
    if prepared is None:
        # Raises on a bad call: nothing is kept.
        prepared = _Prepared(
            _validate(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                      max_seqlen_k, softmax_scale, window_size, sinks,
                      sinks_mode, mm_prefix_ranges, mm_prefix_clamp, softcap,
                      return_lse, out, True),
            causal, sinks_mode, return_lse, mm_prefix_ranges is not None,
            mm_prefix_clamp, out is not None)
        _remember(memo, key, prepared)
    return prepared


def _checked(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
             softmax_scale, window_size, sinks, sinks_mode, mm_prefix_ranges,
             mm_prefix_clamp, softcap, return_lse, out, causal=False,
             memo=None, addresses=None):
    """An eager call's checks: its _Prepared through the memo, and
    (max_q, max_k), checked at every call, memo or not."""
    return (_prepared(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                      max_seqlen_k, softmax_scale, window_size, sinks,
                      sinks_mode, mm_prefix_ranges, mm_prefix_clamp, softcap,
                      return_lse, out, causal, memo, addresses),
            _lengths(max_seqlen_q, max_seqlen_k))


def _lengths(max_seqlen_q, max_seqlen_k):
    """(max_q, max_k) after their checks (every call makes them, memo or
    not)."""
    return (_index(max_seqlen_q, "max_seqlen_q", 0, ""),
            _index(max_seqlen_k, "max_seqlen_k", 0, ""))


def _traced(q):
    """Under torch.compile, or with a tensor subclass such as FakeTensor:
    the call goes through its custom op (whose fake gives the shapes)."""
    return torch.compiler.is_compiling() or (isinstance(q, torch.Tensor)
                                             and type(q) is not torch.Tensor)


def _returned(result, lse, out, return_lse):
    """A custom op's (out, lse) as the call returns it (into `out` if
    given)."""
    if out is not None:
        out.copy_(result)
        result = out
    return (result, lse) if return_lse else result


def _op_result(q, out, lse):
    """A custom op's return: lse is a tensor even without return_lse."""
    if lse is None:
        lse = q.new_empty((0,), dtype=torch.float32)
    return out, lse


def _fake_outputs(q, v, return_lse):
    """The shapes a custom op returns for q [total_q, Hq, D] and v (or
    v_cache) whose last dimension o takes."""
    total_q, heads_q, _ = q.shape
    lse_shape = (heads_q, total_q) if return_lse else (0,)
    return (q.new_empty((total_q, heads_q, v.shape[-1])),
            q.new_empty(lse_shape, dtype=torch.float32))


def _on_device(device, fn):
    """fn() with q's device current (a launch goes to the current CUDA
    context, and new tensors to the current device)."""
    if device == _current_device():
        return fn()
    with torch.cuda.device(device):
        return fn()


def _span_pointers(mm_prefix_ranges, num_seqs, q, device, key_lengths, check,
                   op):
    """(offsets pointer, spans pointer, tensors) of the kernel's span CSR;
    (0, 0, None) without spans. A CPU `mm_prefix_ranges` is checked on the
    host (no device read); a CUDA one only when `check`, then against
    `key_lengths()` (the keys of each sequence, read from the device). The
    caller holds the returned tensors until the launch is enqueued."""
    if mm_prefix_ranges is None:
        return 0, 0, None
    if check or mm_prefix_ranges.get_device() < 0:
        _check_spans(mm_prefix_ranges, num_seqs,
                     key_lengths() if check else None, op)
    offsets, spans = _on_device(
        device, lambda: mm_prefix_spans(mm_prefix_ranges, num_seqs, q.device))
    offsets_ptr = offsets.data_ptr()
    # No span at all: any valid address; it is never read.
    spans_ptr = spans.data_ptr() if spans.numel() else offsets_ptr
    return offsets_ptr, spans_ptr, (offsets, spans)


def _launch_on(device, key, args, user_args=(), prepared=None):
    """Looks the variant up and launches it on q's device's current stream.
    key: _kernel's; args: the launch's positional arguments, one value per
    name of _C.LAUNCH_ARGS in its order (the paged layout's k and v are its
    caches); user_args: a user spec's own, as (name, kind, value) triples;
    prepared: a built-in call's _Prepared, which keeps the kernel handle.

    A decode-shaped launch may split its keys (split-KV) and needs scratch
    for the parts. Eagerly the library keeps it per stream; while a CUDA
    graph is being captured it comes from torch's allocator (the graph's
    pool), zeroed in the graph, so every replay starts from zeroed
    counters.
    """
    if device != _current_device():
        with torch.cuda.device(device):
            return _launch_on(device, key, args, user_args, prepared)
    if prepared is None:
        kernel = _kernel(key)
    else:
        kernel = prepared.kernel
        if kernel is None:
            kernel = prepared.kernel = _kernel(key)
    stream = _stream(device)
    user = list(user_args)
    if _capturing():
        # A capture launches the variant's own kernel (a tier never enters
        # a graph, docs/tiers.md: the launch waits for it); the workspace
        # asked for covers it and a tier alike.
        need = kernel.launch(*args, stream, plan_only=True)
        if need:
            workspace = torch.zeros(need, dtype=torch.uint8, device=device)
            kernel.launch(*args, stream, workspace=workspace.data_ptr(),
                          workspace_bytes=need, user_args=user)
            return
    # The rest positionally, as keywords cost the binding a search per
    # parameter: num_splits 0 (the library's choice), the library's
    # workspace (0, 0), plan_only False.
    kernel.launch(*args, stream, 0, 0, 0, False, user)


def _validate(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
              softmax_scale, window_size, sinks, sinks_mode, mm_prefix_ranges,
              mm_prefix_clamp, softcap, return_lse, out, pointers):
    """Checks every argument; returns what the launch derives from them.

    Device placement is checked last, so that every other mistake is
    reported (and testable) with CPU tensors too. `pointers` adds the
    alignment checks that need real storage (not under FakeTensor).
    """
    _tensor(q, "q")
    _tensor(k, "k")
    _tensor(v, "v")
    dtype_name = _check_dtypes(q, k, v, "k", "v", _OP)
    if q.dim() != 3 or k.dim() != 3 or v.dim() != 3:
        _fail(ValueError, f"q, k and v must be 3-D [total, heads, head_dim], "
                          f"got shapes {list(q.shape)}, {list(k.shape)} and "
                          f"{list(v.shape)}")
    total_q, heads_q, head_dim = q.shape
    total_k, heads_kv, head_dim_k = k.shape
    if v.shape[:2] != k.shape[:2]:
        _fail(ValueError, f"v must have k's shape {list(k.shape)} (or k's rows "
                          f"and heads, with a narrower head_dim), got "
                          f"{list(v.shape)}")
    if head_dim_k != head_dim:
        _fail(ValueError, f"q and k must have one head_dim, got {head_dim} and "
                          f"{head_dim_k}")
    _check_heads(heads_q, heads_kv, head_dim, _OP)
    head_dim_v = _check_value_heads(head_dim, v.shape[2], "v", _OP)
    if heads_q > _GRID_MAX or total_q > _INT32_MAX or total_k > _INT32_MAX:
        _fail(ValueError, f"too large: {heads_q} query heads (at most "
                          f"{_GRID_MAX}), {total_q} query and {total_k} key "
                          f"rows (at most {_INT32_MAX})")

    _tensor(cu_seqlens_q, "cu_seqlens_q", torch.int32)
    _tensor(cu_seqlens_k, "cu_seqlens_k", torch.int32)
    if (cu_seqlens_q.dim() != 1 or cu_seqlens_k.dim() != 1
            or cu_seqlens_q.shape[0] < 1
            or cu_seqlens_q.shape[0] != cu_seqlens_k.shape[0]):
        _fail(ValueError, f"cu_seqlens_q and cu_seqlens_k must be 1-D [B+1] "
                          f"of one length, got shapes "
                          f"{list(cu_seqlens_q.shape)} and "
                          f"{list(cu_seqlens_k.shape)}")
    num_seqs = cu_seqlens_q.shape[0] - 1
    if num_seqs > _GRID_MAX:
        _fail(ValueError, f"at most {_GRID_MAX} sequences, got {num_seqs}")
    if ((num_seqs and cu_seqlens_q.stride(0) != 1)
            or (num_seqs and cu_seqlens_k.stride(0) != 1)):
        _fail(ValueError, "cu_seqlens_q and cu_seqlens_k must be contiguous")
    max_q, max_k = _lengths(max_seqlen_q, max_seqlen_k)

    scale, window_left, window_right, softcap = _check_modes(
        heads_q, softmax_scale, window_size, softcap, sinks, sinks_mode,
        mm_prefix_ranges, mm_prefix_clamp, _OP)
    _check_out(out, q, _OP, head_dim_v)
    q_strides = _strides(q, "q", heads_q)
    k_strides = _strides(k, "k", heads_kv)
    v_strides = _strides(v, "v", heads_kv)
    o_strides = _strides(out, "out", heads_q) if out is not None else None
    if pointers:
        _check_aligned((("q", q), ("k", k), ("v", v), ("out", out)), _OP)

    device = _check_device(q, (("k", k), ("v", v),
                               ("cu_seqlens_q", cu_seqlens_q),
                               ("cu_seqlens_k", cu_seqlens_k),
                               ("sinks", sinks), ("out", out)),
                           mm_prefix_ranges, _OP)
    window = window_left != -1 or window_right != -1
    return (dtype_name, device, num_seqs, total_q, total_k, heads_q, heads_kv,
            head_dim, max_q, max_k, scale, window_left, window_right, window,
            softcap, q_strides, k_strides, v_strides, o_strides, head_dim_v)


def _check_values(cu_seqlens_q, cu_seqlens_k, total_q, total_k, max_q, max_k):
    """The checks that read device memory (check=True): they synchronize."""
    _check_lengths("cu_seqlens_q", cu_seqlens_q.tolist(), total_q, max_q,
                   "max_seqlen_q", _OP)
    return _check_lengths("cu_seqlens_k", cu_seqlens_k.tolist(), total_k,
                          max_k, "max_seqlen_k", _OP)


def check_mm_prefix_ranges(ranges, num_seqs, key_lengths=None):
    """Checks (sequence, start, end) rows on the host: the sequence in
    [0, num_seqs), 0 <= start <= end (< the sequence's key length when
    `key_lengths` is given), and no two spans of one sequence overlapping.
    Reads the tensor on the host (a synchronization for a CUDA tensor)."""
    _check_spans(ranges, num_seqs, key_lengths, _OP)


def _check_spans(ranges, num_seqs, key_lengths, op):
    rows = ranges.tolist()
    by_seq = {}
    for seq, start, end in rows:
        if not 0 <= seq < num_seqs:
            _fail(ValueError, f"mm_prefix_ranges: sequence {seq} is not in "
                              f"[0, {num_seqs})", op)
        if not 0 <= start <= end:
            _fail(ValueError, f"mm_prefix_ranges: span [{start}, {end}] of "
                              f"sequence {seq} needs 0 <= start <= end", op)
        if key_lengths is not None and end >= key_lengths[seq]:
            _fail(ValueError, f"mm_prefix_ranges: span [{start}, {end}] is "
                              f"past the {key_lengths[seq]} keys of sequence "
                              f"{seq}", op)
        by_seq.setdefault(seq, []).append((start, end))
    for seq, spans in by_seq.items():
        spans.sort()
        for (s0, e0), (s1, e1) in zip(spans, spans[1:]):
            if s1 <= e0:
                _fail(ValueError, f"mm_prefix_ranges: spans [{s0}, {e0}] and "
                                  f"[{s1}, {e1}] of sequence {seq} overlap",
                      op)


def mm_prefix_spans(ranges, num_seqs, device):
    """(sequence, start, end) rows -> the kernel's CSR form: offsets [B+1]
    and spans [R, 2] sorted by (sequence, start), with torch ops on `device`
    (no synchronization for a CUDA `ranges`). Rows whose sequence is
    outside [0, B) fall outside every offset range and are ignored."""
    if ranges.device != device:
        ranges = ranges.to(device)
    seq = ranges[:, 0].to(torch.int64)
    order = torch.argsort(seq * 2**32 + ranges[:, 1].to(torch.int64))
    ordered = ranges.index_select(0, order)
    spans = ordered[:, 1:3].contiguous()
    bounds = torch.arange(num_seqs + 1, device=device, dtype=torch.int32)
    offsets = torch.searchsorted(ordered[:, 0].contiguous(), bounds,
                                 out_int32=True)
    return offsets, spans


def _launch(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
            softmax_scale, causal, window_size, sinks, sinks_mode,
            mm_prefix_ranges, mm_prefix_clamp, softcap, return_lse, out,
            check, user=None):
    """Checks, allocates what is missing and launches; returns (out, lse).
    user: (spec, checker) for a user spec's variant (attnjit._user), the
    checker giving its args' launch triples from the checked sizes."""
    addresses = _addresses(q, k, v, out)
    p, (max_q, max_k) = _checked(
        q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
        softmax_scale, window_size, sinks, sinks_mode, mm_prefix_ranges,
        mm_prefix_clamp, softcap, return_lse, out, causal,
        addresses=addresses)
    if addresses is None:  # (checked tensors: these reads succeed)
        addresses = _addresses(q, k, v, out)
    q_ptr, k_ptr, v_ptr, o_ptr = addresses
    _no_backward(_OP, q, k, v, sinks)
    if out is None:
        out = (torch.empty_like(q, memory_format=torch.contiguous_format)
               if p.out_like_q else q.new_empty(p.out_shape))
        o_ptr = out.data_ptr()
    lse = q.new_empty(p.lse_shape, dtype=torch.float32) if return_lse else None
    offsets_ptr = spans_ptr = 0
    device, num_seqs, total_q = p.checked[1:4]
    if check or mm_prefix_ranges is not None or user is not None:
        total_k, heads_q, heads_kv = p.checked[4:7]
        key_lengths = None
        if check:
            key_lengths = _check_values(cu_seqlens_q, cu_seqlens_k, total_q,
                                        total_k, max_q, max_k)
        offsets_ptr, spans_ptr, _spans = _span_pointers(
            mm_prefix_ranges, num_seqs, q, device, lambda: key_lengths, check,
            _OP)
    user_args = ()
    if user is not None:
        user_args = user[1](device=device, num_seqs=num_seqs, total_q=total_q,
                            total_k=total_k, heads_q=heads_q,
                            heads_kv=heads_kv, pointers=True)
    if total_q == 0 or num_seqs == 0:
        return out, lse
    if p.checked[4] == 0:
        # No sequence has a key, and k and v no storage to point a launch at:
        # every query sees no key (docs/semantics.md, edge cases).
        out.zero_()
        if lse is not None:
            if sinks_mode == "null_logit":
                lse.copy_(sinks.view(-1, 1).expand_as(lse))
            else:
                lse.fill_(-math.inf)
        return out, lse
    # One value per name of _C.LAUNCH_ARGS, in its order
    # (python/tests/test_launch_args.py holds each name to its value).
    args = (q_ptr, k_ptr, v_ptr, o_ptr,
            lse.data_ptr() if lse is not None else 0,
            sinks.data_ptr() if sinks is not None else 0,
            cu_seqlens_q.data_ptr(), cu_seqlens_k.data_ptr(), offsets_ptr,
            spans_ptr) + p.mid + (max_q, max_k) + p.tail
    if user is None:
        _launch_on(device, (p.flags, device), args, (), p)
    else:
        _launch_on(device, (p.flags, device, user[0]), args, user_args)
    return out, lse


@torch.library.custom_op("attnjit::varlen_attention", mutates_args=())
def _varlen_attention_op(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
        cu_seqlens_q: torch.Tensor, cu_seqlens_k: torch.Tensor,
        max_seqlen_q: int, max_seqlen_k: int, softmax_scale: Optional[float],
        causal: bool, window_left: int, window_right: int,
        sinks: Optional[torch.Tensor], sinks_mode: str,
        mm_prefix_ranges: Optional[torch.Tensor], mm_prefix_clamp: bool,
        softcap: float, return_lse: bool,
        check: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    out, lse = _launch(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                       max_seqlen_k, softmax_scale, causal,
                       (window_left, window_right), sinks, sinks_mode,
                       mm_prefix_ranges, mm_prefix_clamp, softcap, return_lse,
                       None, check)
    return _op_result(q, out, lse)


@_varlen_attention_op.register_fake
def _varlen_attention_fake(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                           max_seqlen_k, softmax_scale, causal, window_left,
                           window_right, sinks, sinks_mode, mm_prefix_ranges,
                           mm_prefix_clamp, softcap, return_lse, check):
    _validate(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
              softmax_scale, (window_left, window_right), sinks, sinks_mode,
              mm_prefix_ranges, mm_prefix_clamp, softcap, return_lse, None,
              False)
    return _fake_outputs(q, v, return_lse)


def varlen_attention(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                     max_seqlen_k, softmax_scale=None, causal=False,
                     window_size=(-1, -1), sinks=None, sinks_mode="none",
                     mm_prefix_ranges=None, mm_prefix_clamp=False, softcap=0.0,
                     return_lse=False, out=None, check=False):
    """Variable-length attention (docs/semantics.md), FlashAttention-style args.

    q [total_q, Hq, D], k [total_k, Hkv, D] and v [total_k, Hkv, Dv] (Dv =
    D, or 128 under D 192: DeepSeek's value heads): bf16 or fp16 CUDA
    tensors, last dimension contiguous, row and head strides multiples of 8
    elements.
    cu_seqlens_q / cu_seqlens_k: int32 [B+1] prefix sums. Query row i of a
    sequence sits at key position i + n_k - n_q (bottom-right alignment).

    softmax_scale: default 1/sqrt(D). causal: keys at or before the query's
    position. window_size (left, right): -1 is unbounded; (-1, -1) turns
    the window off; (W, 0) with causal=True is a left window of W keys
    besides the diagonal. sinks: fp32 [Hq], with sinks_mode "null_logit"
    (GPT-OSS: an extra logit in the softmax denominator) or "bias_key0"
    (MiMo-V2.5 vision: added to the score of each sequence's key 0).
    mm_prefix_ranges: int32 [R, 3] rows (sequence, start, end), inclusive
    key positions of image spans whose tokens see each other
    bidirectionally; with mm_prefix_clamp=True an image's earlier tokens
    only inside the left window (Gemma-4: (causal or same image) and q - k
    < sliding_window, window_size=(sliding_window - 1, 0)); the right
    window never applies to a span.
    Spans must not overlap within a sequence; that is checked on the host
    for a CPU tensor (then copied to the device) and, for a CUDA tensor,
    only with check=True. softcap > 0: s <- softcap * tanh(s / softcap).
    return_lse: also return lse [Hq, total_q] fp32 (natural log).
    out: an optional [total_q, Hq, Dv] output to write.
    check: also verify cu_seqlens, max_seqlen and spans against device
    memory (synchronizes; for debugging, not inside CUDA graphs).

    Returns out, or (out, lse) when return_lse. Runs on
    torch.cuda.current_stream() without synchronizing. Inference only.
    """
    if _traced(q):
        return _through_op(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                           max_seqlen_k, softmax_scale, causal, window_size,
                           sinks, sinks_mode, mm_prefix_ranges,
                           mm_prefix_clamp, softcap, return_lse, out, check)
    out, lse = _launch(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                       max_seqlen_k, softmax_scale, causal, window_size, sinks,
                       sinks_mode, mm_prefix_ranges, mm_prefix_clamp, softcap,
                       return_lse, out, check)
    return (out, lse) if return_lse else out


def _through_op(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                max_seqlen_k, softmax_scale, causal, window_size, sinks,
                sinks_mode, mm_prefix_ranges, mm_prefix_clamp, softcap,
                return_lse, out, check):
    # Clear errors at trace time rather than from inside the graph.
    _validate(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
              softmax_scale, window_size, sinks, sinks_mode, mm_prefix_ranges,
              mm_prefix_clamp, softcap, return_lse, out, False)
    window_left, window_right = window_size
    result, lse = torch.ops.attnjit.varlen_attention(
        q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
        None if softmax_scale is None else float(softmax_scale), bool(causal),
        window_left, window_right, sinks, sinks_mode, mm_prefix_ranges,
        bool(mm_prefix_clamp), float(softcap), bool(return_lse), bool(check))
    return _returned(result, lse, out, return_lse)

"""paged_attention on PyTorch tensors: attention over an engine's paged K/V
cache (the kv_layout=paged variants), with varlen_attention's modes.

The shape of the module follows attnjit._varlen, whose checks it shares:
eager calls check the arguments, allocate the outputs and launch on the
current stream; under torch.compile, or with tensor subclasses such as
FakeTensor, the call goes through the custom op ``attnjit::paged_attention``
whose fake implementation gives the shapes. Neither path synchronizes
(unless ``check=True``), so both can be captured in a CUDA graph once the
variant has been compiled by a first call; the graph reads block_table,
seqused_k and cu_seqlens_q from device memory at each replay.
"""

from typing import NamedTuple, Optional, Tuple

import torch

from ._checks import (_DTYPE_NAMES, _GRID_MAX, _INT32_MAX, _check_aligned,
                      _check_device, _check_dtypes, _check_heads,
                      _check_lengths, _check_modes, _check_out,
                      _check_value_heads, _fail, _index, _no_backward,
                      _strides, _tensor)
from ._varlen import (_fake_outputs, _launch_on, _op_result, _returned,
                      _span_pointers, _traced)
from ._memo import (_Unkeyed, _addresses, _aligned, _kept, _layouts, _pair,
                    _remember, _scalars)

_OP = "paged_attention"
PAGE_SIZE_MULTIPLE = 16
PAGE_SIZE_MAX = 4096


def _error(kind, message):
    _fail(kind, message, _OP)


class _Checked(NamedTuple):
    """What the launch derives from the arguments."""
    dtype_name: str
    device: int
    num_seqs: int
    total_q: int
    heads_q: int
    heads_kv: int
    head_dim: int
    num_pages: int
    page_size: int
    max_q: int
    max_k: int
    scale: float
    window_left: int
    window_right: int
    window: bool
    softcap: float
    q_strides: Tuple[int, int]
    k_strides: Tuple[int, int, int]  # (page, row, head)
    v_strides: Tuple[int, int, int]
    o_strides: Optional[Tuple[int, int]]
    block_table_stride: int
    fp8: bool  # k_cache / v_cache hold e4m3 bytes (with k_scale, v_scale)
    head_dim_v: int = 0  # v's and o's head_dim where narrower than q's and k's


def _cache_strides(t, name, heads, head_dim):
    """(page, row, head) strides of a [num_pages, page_size, Hkv, D] cache.

    Rows and heads are checked as q's are; pages must be a positive multiple
    of 8 elements apart and must not overlap (each page's [page_size, Hkv,
    D] elements lie within one page stride), as the kernels address them.
    """
    rows, head = _strides(t, name, heads, _OP)
    num_pages, page_size = t.shape[0], t.shape[1]
    extent = (page_size - 1) * rows + (heads - 1) * head + head_dim
    page = t.stride(0)
    if num_pages <= 1:
        page = extent  # never stepped over; a stride the checks accept
    if page <= 0 or page % 8 or page < extent:
        _error(ValueError, f"`{name}` pages must be a positive multiple of 8 "
                           f"elements apart and must not overlap: page "
                           f"stride {page} for pages of {extent} elements "
                           f"(strides {tuple(t.stride())})")
    return page, rows, head


def _check_metadata(cu_seqlens_q, seqused_k, block_table):
    """Dtypes and layouts of the int32 metadata; returns B."""
    _tensor(cu_seqlens_q, "cu_seqlens_q", torch.int32, _OP)
    _tensor(seqused_k, "seqused_k", torch.int32, _OP)
    _tensor(block_table, "block_table", torch.int32, _OP)
    if cu_seqlens_q.dim() != 1 or cu_seqlens_q.shape[0] < 1:
        _error(ValueError, f"cu_seqlens_q must be 1-D [B+1], got shape "
                           f"{list(cu_seqlens_q.shape)}")
    num_seqs = cu_seqlens_q.shape[0] - 1
    if num_seqs > _GRID_MAX:
        _error(ValueError, f"at most {_GRID_MAX} sequences, got {num_seqs}")
    if seqused_k.shape != (num_seqs,):
        _error(ValueError, f"seqused_k must be 1-D [B] = [{num_seqs}] (B+1 "
                           f"is the length of cu_seqlens_q), got shape "
                           f"{list(seqused_k.shape)}")
    if ((num_seqs and cu_seqlens_q.stride(0) != 1)
            or (num_seqs > 1 and seqused_k.stride(0) != 1)):
        _error(ValueError, "cu_seqlens_q and seqused_k must be contiguous")
    if block_table.dim() != 2 or block_table.shape[0] != num_seqs:
        _error(ValueError, f"block_table must be 2-D [B, max_pages_per_seq] "
                           f"with B = {num_seqs} rows (one per sequence of "
                           f"cu_seqlens_q), got shape "
                           f"{list(block_table.shape)}")
    rows, cols = block_table.shape
    if cols > 1 and block_table.stride(1) != 1:
        _error(ValueError, f"block_table must be contiguous in its last "
                           f"dimension, got strides "
                           f"{tuple(block_table.stride())}")
    if rows > 1 and block_table.stride(0) < cols:
        _error(ValueError, f"block_table rows must not overlap: row stride "
                           f"{block_table.stride(0)} for {cols} columns")
    return num_seqs


def _validate(q, k_cache, v_cache, block_table, cu_seqlens_q, seqused_k,
              max_seqlen_q, max_seqlen_k, softmax_scale, window_size, sinks,
              sinks_mode, mm_prefix_ranges, mm_prefix_clamp, softcap, k_scale,
              v_scale, out, pointers):
    """Checks every argument; returns a _Checked.

    As in varlen_attention, device placement is checked last, so that every
    other mistake is reported (and testable) with CPU tensors too;
    `pointers` adds the alignment checks that need real storage.
    """
    _tensor(q, "q", op=_OP)
    _tensor(k_cache, "k_cache", op=_OP)
    _tensor(v_cache, "v_cache", op=_OP)
    fp8 = _FP8 is not None and _FP8 in (k_cache.dtype, v_cache.dtype)
    if fp8:
        dtype_name = _check_fp8(q, k_cache, v_cache, k_scale, v_scale)
    else:
        if k_scale is not None or v_scale is not None:
            _error(ValueError, f"k_scale/v_scale are for an fp8 cache (k_cache "
                               f"and v_cache of torch.float8_e4m3fn), got "
                               f"{k_cache.dtype}")
        dtype_name = _check_dtypes(q, k_cache, v_cache, "k_cache", "v_cache",
                                   _OP)
    if q.dim() != 3:
        _error(ValueError, f"q must be 3-D [total_q, Hq, head_dim], got shape "
                           f"{list(q.shape)}")
    if k_cache.dim() != 4 or v_cache.dim() != 4:
        _error(ValueError, f"k_cache and v_cache must be 4-D [num_pages, "
                           f"page_size, Hkv, head_dim], got shapes "
                           f"{list(k_cache.shape)} and {list(v_cache.shape)}")
    # (v_cache's head_dim may be narrower: _check_value_heads.)
    for what, a, b in zip(("num_pages", "page_size", "Hkv"),
                          k_cache.shape, v_cache.shape):
        if a != b:
            _error(ValueError, f"k_cache and v_cache must have one {what}, "
                               f"got {a} and {b} (shapes "
                               f"{list(k_cache.shape)} and "
                               f"{list(v_cache.shape)})")
    total_q, heads_q, head_dim = q.shape
    num_pages, page_size, heads_kv, head_dim_k = k_cache.shape
    if head_dim_k != head_dim:
        _error(ValueError, f"q and k_cache must have one head_dim, got "
                           f"{head_dim} and {head_dim_k}")
    _check_heads(heads_q, heads_kv, head_dim, _OP)
    head_dim_v = _check_value_heads(head_dim, v_cache.shape[3], "v_cache", _OP)
    if (page_size % PAGE_SIZE_MULTIPLE or page_size < PAGE_SIZE_MULTIPLE
            or page_size > PAGE_SIZE_MAX):
        _error(ValueError, f"page_size (k_cache.shape[1]) must be a multiple "
                           f"of {PAGE_SIZE_MULTIPLE} in "
                           f"[{PAGE_SIZE_MULTIPLE}, {PAGE_SIZE_MAX}], got "
                           f"{page_size}")
    if num_pages < 1 or num_pages > _INT32_MAX:
        _error(ValueError, f"k_cache must hold between 1 and {_INT32_MAX} "
                           f"pages, got {num_pages}")
    if heads_q > _GRID_MAX or total_q > _INT32_MAX:
        _error(ValueError, f"too large: {heads_q} query heads (at most "
                           f"{_GRID_MAX}), {total_q} query rows (at most "
                           f"{_INT32_MAX})")

    num_seqs = _check_metadata(cu_seqlens_q, seqused_k, block_table)
    max_q, max_k = _lengths(max_seqlen_q, max_seqlen_k, block_table.shape[1],
                            page_size)

    scale, window_left, window_right, softcap = _check_modes(
        heads_q, softmax_scale, window_size, softcap, sinks, sinks_mode,
        mm_prefix_ranges, mm_prefix_clamp, _OP)
    _check_out(out, q, _OP, head_dim_v)
    q_strides = _strides(q, "q", heads_q, _OP)
    k_strides = _cache_strides(k_cache, "k_cache", heads_kv, head_dim)
    v_strides = _cache_strides(v_cache, "v_cache", heads_kv, head_dim_v or head_dim)
    if fp8 and any(x % 16 for x in k_strides + v_strides):
        _error(ValueError, f"fp8 k_cache and v_cache strides must be multiples "
                           f"of 16 elements (16-byte loads), got "
                           f"{tuple(k_cache.stride())} and "
                           f"{tuple(v_cache.stride())}")
    o_strides = _strides(out, "out", heads_q, _OP) if out is not None else None
    if pointers:
        _check_aligned((("q", q), ("k_cache", k_cache), ("v_cache", v_cache),
                        ("out", out)), _OP)

    scales = ((("k_scale", k_scale), ("v_scale", v_scale)) if fp8 else ())
    device = _check_device(q, (("k_cache", k_cache), ("v_cache", v_cache))
                           + scales + (("block_table", block_table),
                               ("cu_seqlens_q", cu_seqlens_q),
                               ("seqused_k", seqused_k), ("sinks", sinks),
                               ("out", out)),
                           mm_prefix_ranges, _OP)
    # A single row is never stepped over; its width is a valid stride.
    table_stride = (block_table.stride(0) if block_table.shape[0] > 1
                    else block_table.shape[1])
    window = window_left != -1 or window_right != -1
    return _Checked(dtype_name, device, num_seqs, total_q, heads_q, heads_kv,
                    head_dim, num_pages, page_size, max_q, max_k, scale,
                    window_left, window_right, window, softcap, q_strides,
                    k_strides, v_strides, o_strides, table_stride, fp8,
                    head_dim_v)


_CHECKED = {}  # paged_attention's memo: checks key -> _Prepared


def _checks_key(q, k_cache, v_cache, block_table, cu_seqlens_q, seqused_k,
                softmax_scale, window_size, sinks, sinks_mode,
                mm_prefix_ranges, mm_prefix_clamp, softcap, k_scale, v_scale,
                out, causal=False, return_lse=False, addresses=None):
    """Everything _validate and _Prepared read of their arguments but the
    lengths (the memo's key), flat; None for a call the memo does not key.
    addresses: _addresses(q, k_cache, v_cache, out), where the caller read
    them."""
    try:
        key = _layouts(q, k_cache, v_cache, block_table, cu_seqlens_q,
                       seqused_k, sinks, mm_prefix_ranges, k_scale, v_scale,
                       out)
        key += _scalars(softmax_scale, sinks_mode, mm_prefix_clamp, softcap,
                        causal, return_lse)
        key += _pair(window_size)
        key.append(_aligned(_addresses(q, k_cache, v_cache, out)
                            if addresses is None else addresses))
    except _Unkeyed:
        return None
    return tuple(key)


class _Prepared:
    """A checked call and what its launches derive from it, made once per
    memo key (as attnjit._varlen's): _validate's _Checked, the variant's
    flags, the outputs' shapes, the launch arguments that do not change
    from call to call and, once a launch asked for it, the built-in
    variant's kernel handle."""

    __slots__ = ("checked", "flags", "out_shape", "out_like_q", "lse_shape",
                 "mid", "tail", "paged", "kernel")

    def __init__(self, c, causal, sinks_mode, return_lse, mm_prefix,
                 mm_prefix_clamp, out_given):
        self.checked = c
        # With an unbounded window the clamp changes nothing.
        clamp = bool(mm_prefix_clamp) and c.window
        self.flags = ((("dtype", c.dtype_name), ("head_dim", c.head_dim),
                       ("head_dim_v", c.head_dim_v), ("causal", bool(causal)),
                       ("window", c.window), ("sinks", sinks_mode),
                       ("mm_prefix", mm_prefix), ("mm_clamp", clamp),
                       ("softcap", c.softcap > 0),
                       ("return_lse", bool(return_lse)),
                       ("kv_layout", "paged"))
                      + ((("kv_dtype", "fp8_e4m3"),) if c.fp8 else ()))
        width = c.head_dim_v or c.head_dim  # o's: v's
        self.out_shape = (c.total_q, c.heads_q, width)
        # o as wide as q: q's shape (empty_like parses fewer arguments)
        self.out_like_q = width == c.head_dim
        self.lse_shape = (c.heads_q, c.total_q)
        o_strides = c.o_strides if out_given else (c.heads_q * width, width)
        k_page, k_row, k_head = c.k_strides
        v_page, v_row, v_head = c.v_strides
        # _C.LAUNCH_ARGS's values between the pointers and the lengths, then
        # between the lengths and the page table, then after it (total_k is
        # not used).
        self.mid = (c.q_strides[0], c.q_strides[1], k_row, k_head, v_row,
                    v_head, o_strides[0], o_strides[1], c.num_seqs,
                    c.heads_q, c.heads_kv, c.total_q, 0)
        self.tail = (c.scale, c.softcap, c.window_left, c.window_right)
        self.paged = (c.block_table_stride, k_page, v_page, c.page_size,
                      c.num_pages)
        self.kernel = None


def _lengths(max_seqlen_q, max_seqlen_k, table_columns, page_size):
    """(max_q, max_k) after their checks: every call makes them, memo or
    not (a decode's max_seqlen_k grows at every step, so they are not in
    the key)."""
    max_q = _index(max_seqlen_q, "max_seqlen_q", 0, "", _OP)
    max_k = _index(max_seqlen_k, "max_seqlen_k", 0, "", _OP)
    pages_needed = -(-max_k // page_size)
    if table_columns < pages_needed:
        _error(ValueError, f"block_table has {table_columns} columns, "
                           f"fewer than the {pages_needed} pages that "
                           f"max_seqlen_k ({max_k}) spans with page_size "
                           f"{page_size}")
    return max_q, max_k


def _prepared(q, k_cache, v_cache, block_table, cu_seqlens_q, seqused_k,
              max_seqlen_q, max_seqlen_k, softmax_scale, window_size, sinks,
              sinks_mode, mm_prefix_ranges, mm_prefix_clamp, softcap, k_scale,
              v_scale, out, causal=False, return_lse=False, memo=None,
              addresses=None):
    """The call's _Prepared, through the memo (memo: another dict than the
    module's _CHECKED, for tests). The lengths are not in the key: the
    caller checks them at every call (_lengths)."""
    key = _checks_key(q, k_cache, v_cache, block_table, cu_seqlens_q,
                      seqused_k, softmax_scale, window_size, sinks,
                      sinks_mode, mm_prefix_ranges, mm_prefix_clamp, softcap,
                      k_scale, v_scale, out, causal, return_lse, addresses)
    if memo is None:
        memo = _CHECKED
    prepared = _kept(memo, key)
    if prepared is None:
        # Raises on a bad call: nothing is kept.
        prepared = _Prepared(
            _validate(q, k_cache, v_cache, block_table, cu_seqlens_q,
                      seqused_k, max_seqlen_q, max_seqlen_k, softmax_scale,
                      window_size, sinks, sinks_mode, mm_prefix_ranges,
                      mm_prefix_clamp, softcap, k_scale, v_scale, out, True),
            causal, sinks_mode, return_lse, mm_prefix_ranges is not None,
            mm_prefix_clamp, out is not None)
        _remember(memo, key, prepared)
    return prepared


def _checked(q, k_cache, v_cache, block_table, cu_seqlens_q, seqused_k,
             max_seqlen_q, max_seqlen_k, softmax_scale, window_size, sinks,
             sinks_mode, mm_prefix_ranges, mm_prefix_clamp, softcap, k_scale,
             v_scale, out, causal=False, return_lse=False, memo=None,
             addresses=None):
    """An eager call's checks: its _Prepared through the memo, and
    (max_q, max_k), checked at every call, memo or not."""
    p = _prepared(q, k_cache, v_cache, block_table, cu_seqlens_q, seqused_k,
                  max_seqlen_q, max_seqlen_k, softmax_scale, window_size,
                  sinks, sinks_mode, mm_prefix_ranges, mm_prefix_clamp,
                  softcap, k_scale, v_scale, out, causal, return_lse, memo,
                  addresses)
    return p, _lengths(max_seqlen_q, max_seqlen_k, block_table.shape[1],
                       p.checked.page_size)


# torch's e4m3 ("fn": no infinities) dtype, where this torch has it.
_FP8 = getattr(torch, "float8_e4m3fn", None)


def _check_fp8(q, k_cache, v_cache, k_scale, v_scale):
    """An fp8 cache: both caches e4m3, q bf16 or fp16, and the per-tensor
    scales as float32 tensors of one element (device pointers, so that a
    CUDA graph replays with the values they hold then)."""
    if k_cache.dtype != _FP8 or v_cache.dtype != _FP8:
        _error(TypeError, f"k_cache and v_cache must both be "
                          f"torch.float8_e4m3fn or neither, got "
                          f"{k_cache.dtype} and {v_cache.dtype}")
    dtype_name = _DTYPE_NAMES.get(q.dtype)
    if dtype_name is None:
        _error(TypeError, f"q must be bfloat16 or float16 with an fp8 cache, "
                          f"got {q.dtype}")
    for name, scale in (("k_scale", k_scale), ("v_scale", v_scale)):
        if scale is None:
            _error(ValueError, f"an fp8 cache needs k_scale and v_scale "
                               f"(float32 tensors of one element); {name} is "
                               f"None")
        _tensor(scale, name, torch.float32, op=_OP)
        if scale.numel() != 1:
            _error(ValueError, f"`{name}` must hold one element (a per-tensor "
                               f"scale), got shape {list(scale.shape)}")
    return dtype_name


def _check_values(cu_seqlens_q, seqused_k, block_table, total_q, max_q, max_k,
                  page_size, num_pages):
    """The checks that read device memory (check=True): they synchronize.
    Returns the keys of each sequence (seqused_k as a list)."""
    lengths_q = _check_lengths("cu_seqlens_q", cu_seqlens_q.tolist(), total_q,
                               max_q, "max_seqlen_q", _OP)
    used = seqused_k.tolist()
    for b, (n_q, n_k) in enumerate(zip(lengths_q, used)):
        if n_k < n_q:
            _error(ValueError, f"seqused_k[{b}] = {n_k} is below the {n_q} "
                               f"new queries of sequence {b} (seqused_k "
                               f"counts the cached keys plus the new ones)")
        if n_k > max_k:
            _error(ValueError, f"max_seqlen_k ({max_k}) is below "
                               f"seqused_k[{b}] = {n_k}")
    if used:
        table = block_table.cpu()
        pages = torch.tensor([-(-n // page_size) for n in used])
        read = torch.arange(table.shape[1])[None, :] < pages[:, None]
        bad = read & ((table < 0) | (table >= num_pages))
        if bad.any():
            b, i = (int(x) for x in bad.nonzero()[0])
            _error(ValueError, f"block_table[{b}, {i}] = {int(table[b, i])} "
                               f"is not a page of the cache [0, {num_pages}) "
                               f"(sequence {b} reads its first "
                               f"{int(pages[b])} entries)")
    return used


def _launch(q, k_cache, v_cache, block_table, cu_seqlens_q, seqused_k,
            max_seqlen_q, max_seqlen_k, softmax_scale, causal, window_size,
            sinks, sinks_mode, mm_prefix_ranges, mm_prefix_clamp, softcap,
            k_scale, v_scale, return_lse, out, check, user=None,
            cu_seqlens_k=None):
    """Checks, allocates what is missing and launches; returns (out, lse).
    user: as attnjit._varlen._launch's; cu_seqlens_k: where each sequence's
    keys start in a user spec's per-key-token tensors."""
    addresses = _addresses(q, k_cache, v_cache, out)
    p, (max_q, max_k) = _checked(
        q, k_cache, v_cache, block_table, cu_seqlens_q, seqused_k,
        max_seqlen_q, max_seqlen_k, softmax_scale, window_size, sinks,
        sinks_mode, mm_prefix_ranges, mm_prefix_clamp, softcap, k_scale,
        v_scale, out, causal, return_lse, addresses=addresses)
    c = p.checked
    if addresses is None:  # (checked tensors: these reads succeed)
        addresses = _addresses(q, k_cache, v_cache, out)
    q_ptr, k_ptr, v_ptr, o_ptr = addresses
    _no_backward(_OP, q, k_cache, v_cache, sinks, k_scale, v_scale)
    if out is None:
        out = (torch.empty_like(q, memory_format=torch.contiguous_format)
               if p.out_like_q else q.new_empty(p.out_shape))
        o_ptr = out.data_ptr()
    lse = q.new_empty(p.lse_shape, dtype=torch.float32) if return_lse else None
    offsets_ptr = spans_ptr = 0
    if check or mm_prefix_ranges is not None:
        key_lengths = None
        if check:
            key_lengths = _check_values(cu_seqlens_q, seqused_k, block_table,
                                        c.total_q, max_q, max_k, c.page_size,
                                        c.num_pages)
        offsets_ptr, spans_ptr, _spans = _span_pointers(
            mm_prefix_ranges, c.num_seqs, q, c.device, lambda: key_lengths,
            check, _OP)
    user_args = ()
    if user is not None:
        user_args = user[1](device=c.device, num_seqs=c.num_seqs,
                            total_q=c.total_q, total_k=None,
                            heads_q=c.heads_q, heads_kv=c.heads_kv,
                            pointers=True)
    if c.total_q == 0 or c.num_seqs == 0:
        return out, lse
    # One value per name of _C.LAUNCH_ARGS, in its order
    # (python/tests/test_launch_args.py holds each name to its value): the
    # caches are k and v.
    args = ((q_ptr, k_ptr, v_ptr, o_ptr, lse.data_ptr() if lse is not None else 0,
             sinks.data_ptr() if sinks is not None else 0,
             cu_seqlens_q.data_ptr(),
             cu_seqlens_k.data_ptr() if cu_seqlens_k is not None else 0,
             offsets_ptr, spans_ptr) + p.mid + (max_q, max_k) + p.tail
            + (block_table.data_ptr(), seqused_k.data_ptr()) + p.paged
            + ((k_scale.data_ptr(), v_scale.data_ptr()) if c.fp8 else (0, 0)))
    if user is None:
        _launch_on(c.device, (p.flags, c.device), args, (), p)
    else:
        _launch_on(c.device, (p.flags, c.device, user[0]), args, user_args)
    return out, lse


@torch.library.custom_op("attnjit::paged_attention", mutates_args=())
def _paged_attention_op(
        q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
        block_table: torch.Tensor, cu_seqlens_q: torch.Tensor,
        seqused_k: torch.Tensor, max_seqlen_q: int, max_seqlen_k: int,
        softmax_scale: Optional[float], causal: bool, window_left: int,
        window_right: int, sinks: Optional[torch.Tensor], sinks_mode: str,
        mm_prefix_ranges: Optional[torch.Tensor], mm_prefix_clamp: bool,
        softcap: float, return_lse: bool, check: bool,
        k_scale: Optional[torch.Tensor] = None,
        v_scale: Optional[torch.Tensor] = None
) -> Tuple[torch.Tensor, torch.Tensor]:
    out, lse = _launch(q, k_cache, v_cache, block_table, cu_seqlens_q,
                       seqused_k, max_seqlen_q, max_seqlen_k, softmax_scale,
                       causal, (window_left, window_right), sinks, sinks_mode,
                       mm_prefix_ranges, mm_prefix_clamp, softcap, k_scale,
                       v_scale, return_lse, None, check)
    return _op_result(q, out, lse)


@_paged_attention_op.register_fake
def _paged_attention_fake(q, k_cache, v_cache, block_table, cu_seqlens_q,
                          seqused_k, max_seqlen_q, max_seqlen_k, softmax_scale,
                          causal, window_left, window_right, sinks, sinks_mode,
                          mm_prefix_ranges, mm_prefix_clamp, softcap,
                          return_lse, check, k_scale=None, v_scale=None):
    _validate(q, k_cache, v_cache, block_table, cu_seqlens_q, seqused_k,
              max_seqlen_q, max_seqlen_k, softmax_scale,
              (window_left, window_right), sinks, sinks_mode, mm_prefix_ranges,
              mm_prefix_clamp, softcap, k_scale, v_scale, None, False)
    return _fake_outputs(q, v_cache, return_lse)


def paged_attention(q, k_cache, v_cache, block_table, cu_seqlens_q, seqused_k,
                    max_seqlen_q, max_seqlen_k, softmax_scale=None,
                    causal=True, window_size=(-1, -1), sinks=None,
                    sinks_mode="none", mm_prefix_ranges=None,
                    mm_prefix_clamp=False, softcap=0.0, k_scale=None,
                    v_scale=None, return_lse=False, out=None, check=False):
    """Attention of new tokens over a paged K/V cache (an engine's page table).

    q [total_q, Hq, D]: the new tokens' queries, sequence b's rows from
    cu_seqlens_q[b] to cu_seqlens_q[b+1] (int32 [B+1]). k_cache, v_cache
    [num_pages, page_size, Hkv, D] (v_cache's last dimension Dv: D, or 128
    under D 192; the output follows it): bf16 or fp16 CUDA tensors with q's
    dtype, last dimension contiguous, any page, row and head strides that
    are multiples of 8 elements with pages that do not overlap (separate
    tensors, k = cache[:, 0] of a [num_pages, 2, page_size, Hkv, D] cache,
    or a heads-outer [num_pages, Hkv, page_size, D] cache viewed with
    .transpose(1, 2)); page_size a multiple of 16, at most 4096. The new
    tokens' keys and values must already be in the cache.

    block_table int32 [B, max_pages_per_seq] (last dimension contiguous;
    a view of a wider table is fine): key position j of sequence b is row
    j % page_size of page block_table[b, j // page_size]; only the first
    ceil(seqused_k[b] / page_size) entries of a row are read. seqused_k
    int32 [B]: the keys of each sequence (cached prefix plus new tokens).
    Query i of a sequence's n_q new tokens sits at key position
    seqused_k[b] - n_q + i (bottom-right alignment). max_seqlen_q and
    max_seqlen_k bound the new tokens and the keys of any sequence; the
    block table needs at least ceil(max_seqlen_k / page_size) columns.

    The modes are varlen_attention's, with key positions counted in the
    sequence (cached prefix included): causal (default True here),
    window_size (-1 unbounded, 0 a real window), sinks with sinks_mode
    "null_logit" or "bias_key0" (key position 0 of each sequence),
    mm_prefix_ranges int32 [R, 3] (sequence, start, end inclusive) with
    mm_prefix_clamp, softcap, return_lse (lse [Hq, total_q] fp32), out,
    softmax_scale (default 1/sqrt(D)).

    An fp8 cache: k_cache and v_cache of torch.float8_e4m3fn (strides
    multiples of 16), q bf16 or fp16, and k_scale, v_scale float32 tensors
    of one element (> 0) on q's device: the attention is over the
    dequantized k = k8 * k_scale, v = v8 * v_scale. The scales are read on
    the device, so a captured graph replays with their values at replay.

    check: also verify against device memory that cu_seqlens_q starts at 0,
    does not decrease and stays within q and max_seqlen_q; that seqused_k
    covers each sequence's new tokens and stays within max_seqlen_k; that
    every block_table entry a sequence reads is a page of the cache; and
    the spans (synchronizes; for debugging, not inside CUDA graphs).

    Returns out, or (out, lse) when return_lse. Runs on
    torch.cuda.current_stream() without synchronizing. Inference only.
    """
    if _traced(q):
        return _through_op(q, k_cache, v_cache, block_table, cu_seqlens_q,
                           seqused_k, max_seqlen_q, max_seqlen_k,
                           softmax_scale, causal, window_size, sinks,
                           sinks_mode, mm_prefix_ranges, mm_prefix_clamp,
                           softcap, k_scale, v_scale, return_lse, out, check)
    out, lse = _launch(q, k_cache, v_cache, block_table, cu_seqlens_q,
                       seqused_k, max_seqlen_q, max_seqlen_k, softmax_scale,
                       causal, window_size, sinks, sinks_mode,
                       mm_prefix_ranges, mm_prefix_clamp, softcap, k_scale,
                       v_scale, return_lse, out, check)
    return (out, lse) if return_lse else out


def _through_op(q, k_cache, v_cache, block_table, cu_seqlens_q, seqused_k,
                max_seqlen_q, max_seqlen_k, softmax_scale, causal, window_size,
                sinks, sinks_mode, mm_prefix_ranges, mm_prefix_clamp, softcap,
                k_scale, v_scale, return_lse, out, check):
    # Clear errors at trace time rather than from inside the graph.
    _validate(q, k_cache, v_cache, block_table, cu_seqlens_q, seqused_k,
              max_seqlen_q, max_seqlen_k, softmax_scale, window_size, sinks,
              sinks_mode, mm_prefix_ranges, mm_prefix_clamp, softcap, k_scale,
              v_scale, out, False)
    window_left, window_right = window_size
    result, lse = torch.ops.attnjit.paged_attention(
        q, k_cache, v_cache, block_table, cu_seqlens_q, seqused_k,
        max_seqlen_q, max_seqlen_k,
        None if softmax_scale is None else float(softmax_scale), bool(causal),
        window_left, window_right, sinks, sinks_mode, mm_prefix_ranges,
        bool(mm_prefix_clamp), float(softcap), bool(return_lse), bool(check),
        k_scale, v_scale)
    return _returned(result, lse, out, return_lse)

"""attnjit.load_spec: attention variants written in a spec.

A user spec (docs/expressions.md) extends the attention spec with a `mask`
and/or a `score` expression and args of its own: int32 and float scalars,
and read-only int32/float tensors indexed per key token, query token,
sequence, head, kv head or table. ``load_spec`` parses and checks it (errors
at file:line:column) and returns a callable: the call takes
varlen_attention's arguments plus the spec's own args as keywords, and
``.paged(...)`` takes paged_attention's. Each flag combination compiles on
its first call and is cached like the built-in variants (memory, disk, AOT
dirs). Eager calls launch at once; under torch.compile (or with FakeTensor)
the call goes through the custom ops ``attnjit::user_attention`` and
``attnjit::user_paged_attention``, which name the spec by its id. Neither
synchronizes, so both can be captured in a CUDA graph after a first call.
"""

import contextlib
import hashlib
import inspect
import operator
import os
from typing import List, Optional, Tuple

import torch

from . import _C
from . import _paged, _varlen
from ._checks import (_FLT_MAX, _INT32_MAX, _fail, _no_backward, _real,
                      _tensor)
from ._varlen import _fake_outputs, _op_result, _returned, _traced

# spec id -> UserAttention: how the custom ops find the spec they run.
_SPECS = {}

_TENSOR_DTYPES = {"const int32*": torch.int32, "const float*": torch.float32}
_ARG_TYPES = ("int32", "float", *_TENSOR_DTYPES)

@contextlib.contextmanager
def _named(op, base):
    """Errors the shared checks raise under the built-in op's name
    (`varlen_attention: ...`) re-raised under the spec's call's name."""
    try:
        yield
    except (TypeError, ValueError) as e:
        text = str(e)
        if not text.startswith(base + ": "):
            raise
        error = type(e)(op + text[len(base):])
        error.__dict__.update(e.__dict__)
        raise error from None


def load_spec(spec):
    """Parses a user spec from a path (str or os.PathLike, a file ending in
    .yaml or .yml) or from YAML text; returns its UserAttention. The spec
    must say `extends: attention`. Errors: ValueError (its .kind "spec")
    naming file:line:column, FileNotFoundError for a missing file."""
    if isinstance(spec, os.PathLike) or (
            isinstance(spec, str) and "\n" not in spec
            and spec.strip().endswith((".yaml", ".yml"))):
        path = os.fspath(spec)
        with open(path, encoding="utf-8") as f:
            text, source = f.read(), path
    elif isinstance(spec, str):
        text, source = spec, "<string>"
    else:
        raise TypeError(f"load_spec: takes a path or YAML text, got "
                        f"{type(spec).__name__}")
    try:
        parsed = _C.load_spec(text, source)
    except _C.Error as e:
        if getattr(e, "kind", None) != "spec":
            raise
        error = ValueError(str(e))
        error.kind = "spec"
        raise error from None
    for arg in parsed.args:
        problem = None
        if arg["name"] in _CALL_KEYWORDS:
            problem = ("is also a keyword of the attention call; rename it "
                       "(the call could not tell them apart)")
        elif arg["type"] not in _ARG_TYPES:
            problem = (f"has type {arg['type']}; a spec's own args are "
                       f"{', '.join(_ARG_TYPES)}")
        if problem:
            error = ValueError(f"{source}: spec '{parsed.family}': arg "
                               f"`{arg['name']}` {problem}")
            error.kind = "spec"
            raise error
    spec_id = (parsed.family + "-"
               + hashlib.sha256(text.encode()).hexdigest()[:16])
    attention = _SPECS.get(spec_id)
    if attention is None:
        attention = UserAttention(parsed, spec_id)
        _SPECS[spec_id] = attention
    return attention


class UserAttention:
    """A user spec's attention (from attnjit.load_spec).

    attention(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
              max_seqlen_k, *, <varlen_attention's keywords>, <spec args>)
    attention.paged(q, k_cache, v_cache, block_table, cu_seqlens_q,
                    seqused_k, max_seqlen_q, max_seqlen_k, *,
                    cu_seqlens_k=None, <paged_attention's keywords>,
                    <spec args>)

    The spec's mask is ANDed with key validity and with causal / window when
    those are on; its score runs where softcap runs (after it). Tensor args
    are 1-D, contiguous, on q's device, int32 or float32 as declared, with
    at least as many elements as their `per` needs: key_token total_k (with
    a paged cache: indexed through cu_seqlens_k, which must then be given),
    query_token total_q, sequence B, head Hq, kv_head Hkv, table its size.
    A tensor the spec declares `sorted` must not decrease over its domain
    (each sequence's tokens, the heads, the table): tile classification
    skips key tiles on that promise. check=True verifies it on the host.
    """

    def __init__(self, spec, spec_id):
        self._spec = spec
        self.id = spec_id
        self.family = spec.family
        self.description = spec.description
        self.mask = spec.mask
        self.score = spec.score
        self.args = spec.args
        self.presets = spec.presets
        self._names = [a["name"] for a in self.args]

    def __repr__(self):
        parts = [f"family={self.family!r}"]
        if self.mask is not None:
            parts.append(f"mask={self.mask!r}")
        if self.score is not None:
            parts.append(f"score={self.score!r}")
        parts.append(f"args={self._names}")
        return f"UserAttention({', '.join(parts)})"

    # ---- the spec's own args ----------------------------------------------

    def _op(self, paged=False):
        return f"{self.family}{'.paged' if paged else ''}"

    def _check_names(self, given, op):
        unknown = [n for n in given if n not in self._names]
        if unknown:
            _fail(TypeError, f"unexpected argument `{unknown[0]}` (spec "
                             f"'{self.family}' takes "
                             f"{', '.join(self._names) or 'no args'} besides "
                             f"the attention's)", op)
        missing = [a for a in self.args if a["name"] not in given]
        if missing:
            a = missing[0]
            _fail(TypeError, f"missing argument `{a['name']}` ({a['type']}"
                             f"{', per ' + a['per'] if a['per'] else ''}"
                             f"{': ' + a['doc'] if a['doc'] else ''})", op)

    def _needed(self, arg, given, sizes, op):
        """Elements a tensor arg needs, or None where unknown on the host
        (a paged cache's key tokens; a tensor no expression indexes; a
        table sized by a built-in argument the host does not know)."""
        per = arg["per"]
        if per is None:
            return None
        if per == "table":
            size = arg["size"]
            if isinstance(size, str):
                if size in given:  # one of the spec's own int32 args
                    size = _int32(given[size], size, op)
                else:  # a built-in argument: its checked size, where one is
                    domain = _BUILTIN_SIZES.get(size)
                    size = sizes[domain] if domain is not None else None
                    if size is None:
                        return None
            return max(size, 0)
        return sizes[per]

    def _checker(self, given, op, check=False, cu_seqlens_q=None,
                 cu_seqlens_k=None, seqused_k=None):
        """The function _varlen._launch / _paged._launch call with the
        checked sizes: it checks the spec's args and returns their launch
        triples (name, kind, value). With `check`, it also reads on the
        host that each sorted tensor keeps its promise and, with a paged
        cache (seqused_k), that the key-token tensors hold each sequence's
        keys."""
        self._check_names(given, op)

        def checker(device, num_seqs, total_q, total_k, heads_q, heads_kv,
                    pointers):
            sizes = {"key_token": total_k, "query_token": total_q,
                     "sequence": num_seqs, "head": heads_q,
                     "kv_head": heads_kv}
            triples = []
            for arg in self.args:
                name, kind = arg["name"], arg["type"]
                value = given[name]
                if kind == "int32":
                    triples.append((name, "int32", _int32(value, name, op)))
                elif kind == "float":
                    triples.append((name, "float", _float(value, name, op)))
                else:
                    _check_tensor(value, name, _TENSOR_DTYPES[kind],
                                  self._needed(arg, given, sizes, op),
                                  arg["per"], device, pointers, op)
                    # (A learnable table would silently get no gradient.)
                    _no_backward(op, value)
                    triples.append((name, "ptr",
                                    value.data_ptr() if pointers else 0))
            if check:
                self._check_values(given, sizes, cu_seqlens_q, cu_seqlens_k,
                                   seqused_k, op)
            return triples
        return checker

    def _check_values(self, given, sizes, cu_seqlens_q, cu_seqlens_k,
                      seqused_k, op):
        """check=True (reads the tensors on the host; synchronizes): with a
        paged cache, each sequence's keys [cu_seqlens_k[b], + seqused_k[b])
        lie inside every key-token tensor and before the next sequence's;
        a tensor declared `sorted` does not decrease over its domain (each
        sequence's tokens, the heads, the table)."""
        used = seqused_k.tolist() if seqused_k is not None else None
        for arg in self.args:
            value = given[arg["name"]]
            per = arg["per"]
            if per not in ("key_token", "query_token") and not arg["sorted"]:
                continue
            values = value.tolist()
            segments = [(None, 0, min(len(values), self._needed(
                arg, given, sizes, op) or 0))]
            if per in ("key_token", "query_token"):
                cu = (cu_seqlens_k if per == "key_token"
                      else cu_seqlens_q).tolist()
                ends = [cu[b + 1] for b in range(len(cu) - 1)]
                if per == "key_token" and used is not None:
                    ends = [cu[b] + used[b] for b in range(len(used))]
                    for b, end in enumerate(ends):
                        if used[b] == 0:  # (nothing of it is read)
                            continue
                        if cu[b] < 0:
                            _fail(ValueError, f"`{arg['name']}`: sequence {b}'s keys "
                                              f"start at element {cu[b]} "
                                              f"(cu_seqlens_k), before the "
                                              f"tensor's start", op)
                        limit = min(cu[b + 1], len(values))
                        if end > limit:
                            past = ("the next sequence's" if cu[b + 1] < len(values)
                                    else "the tensor's end")
                            _fail(ValueError, f"`{arg['name']}`: sequence {b} has "
                                              f"{used[b]} keys from element {cu[b]} "
                                              f"(cu_seqlens_k), past {past} at "
                                              f"element {limit}", op)
                segments = [(b, cu[b], ends[b]) for b in range(len(ends))]
            if not arg["sorted"]:
                continue
            for b, start, end in segments:
                for i in range(start + 1, end):
                    if values[i] < values[i - 1]:
                        where = f" (sequence {b})" if b is not None else ""
                        _fail(ValueError, f"`{arg['name']}` is declared sorted "
                                          f"but decreases at element {i}"
                                          f"{where}: {values[i - 1]} then "
                                          f"{values[i]}", op)

    def _pack(self, given):
        """The spec's args as the custom ops take them: tensors, ints and
        floats, each in declaration order."""
        tensors, ints, floats = [], [], []
        for arg in self.args:
            value = given[arg["name"]]
            if arg["type"] == "int32":
                ints.append(_int32(value, arg["name"], self._op()))
            elif arg["type"] == "float":
                floats.append(_float(value, arg["name"], self._op()))
            else:
                _tensor(value, arg["name"], _TENSOR_DTYPES[arg["type"]],
                        self._op())
                tensors.append(value)
        return tensors, ints, floats

    def _unpack(self, tensors, ints, floats):
        given, its = {}, {"int32": iter(ints), "float": iter(floats)}
        tensor_it = iter(tensors)
        for arg in self.args:
            given[arg["name"]] = next(its.get(arg["type"], tensor_it))
        return given

    # ---- calls ------------------------------------------------------------

    def __call__(self, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                 max_seqlen_k, *, softmax_scale=None, causal=False,
                 window_size=(-1, -1), sinks=None, sinks_mode="none",
                 mm_prefix_ranges=None, mm_prefix_clamp=False, softcap=0.0,
                 return_lse=False, out=None, check=False, **args):
        """varlen_attention with the spec's mask and score; its own args
        as keywords. Returns out, or (out, lse) when return_lse."""
        op = self._op()
        with _named(op, _varlen._OP):
            if _traced(q):
                self._check_names(args, op)
                _varlen._validate(q, k, v, cu_seqlens_q, cu_seqlens_k,
                                  max_seqlen_q, max_seqlen_k, softmax_scale,
                                  window_size, sinks, sinks_mode,
                                  mm_prefix_ranges, mm_prefix_clamp, softcap,
                                  return_lse, out, False)
                tensors, ints, floats = self._pack(args)
                result, lse = torch.ops.attnjit.user_attention(
                    self.id, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                    max_seqlen_k,
                    None if softmax_scale is None else float(softmax_scale),
                    bool(causal), window_size[0], window_size[1], sinks,
                    sinks_mode, mm_prefix_ranges, bool(mm_prefix_clamp),
                    float(softcap), bool(return_lse), tensors, ints, floats,
                    bool(check))
                return _returned(result, lse, out, return_lse)
            user = (self._spec, self._checker(args, op, check, cu_seqlens_q,
                                              cu_seqlens_k))
            result, lse = _varlen._launch(
                q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                softmax_scale, causal, window_size, sinks, sinks_mode,
                mm_prefix_ranges, mm_prefix_clamp, softcap, return_lse, out,
                check, user=user)
            return (result, lse) if return_lse else result

    def paged(self, q, k_cache, v_cache, block_table, cu_seqlens_q, seqused_k,
              max_seqlen_q, max_seqlen_k, *, cu_seqlens_k=None,
              softmax_scale=None, causal=True, window_size=(-1, -1),
              sinks=None, sinks_mode="none", mm_prefix_ranges=None,
              mm_prefix_clamp=False, softcap=0.0, k_scale=None, v_scale=None,
              return_lse=False, out=None, check=False, **args):
        """paged_attention with the spec's mask and score. cu_seqlens_k
        (int32 [B+1]) is needed by a spec with a key_token tensor: where
        each sequence's keys start in it."""
        op = self._op(paged=True)
        if any(a["per"] == "key_token" for a in self.args):
            if cu_seqlens_k is None:
                _fail(ValueError, "this spec reads a per-key-token tensor, "
                                  "indexed through cu_seqlens_k: pass "
                                  "cu_seqlens_k (int32 [B+1], where each "
                                  "sequence's keys start in that tensor)", op)
        if cu_seqlens_k is not None:
            _tensor(cu_seqlens_q, "cu_seqlens_q", torch.int32, op)
            _tensor(cu_seqlens_k, "cu_seqlens_k", torch.int32, op)
            if (cu_seqlens_k.dim() != 1
                    or cu_seqlens_k.shape != cu_seqlens_q.shape
                    or cu_seqlens_k.stride(0) != 1):
                _fail(ValueError, f"cu_seqlens_k must be a contiguous 1-D "
                                  f"[B+1] tensor like cu_seqlens_q, got shape "
                                  f"{list(cu_seqlens_k.shape)}", op)
            if (isinstance(q, torch.Tensor)
                    and cu_seqlens_k.get_device() != q.get_device()):
                _fail(ValueError, f"cu_seqlens_k must be on q's device, got "
                                  f"{cu_seqlens_k.device} and {q.device}", op)
        with _named(op, _paged._OP):
            if _traced(q):
                self._check_names(args, op)
                _paged._validate(q, k_cache, v_cache, block_table, cu_seqlens_q,
                                 seqused_k, max_seqlen_q, max_seqlen_k,
                                 softmax_scale, window_size, sinks, sinks_mode,
                                 mm_prefix_ranges, mm_prefix_clamp, softcap,
                                 k_scale, v_scale, out, False)
                tensors, ints, floats = self._pack(args)
                result, lse = torch.ops.attnjit.user_paged_attention(
                    self.id, q, k_cache, v_cache, block_table, cu_seqlens_q,
                    seqused_k, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                    None if softmax_scale is None else float(softmax_scale),
                    bool(causal), window_size[0], window_size[1], sinks,
                    sinks_mode, mm_prefix_ranges, bool(mm_prefix_clamp),
                    float(softcap), k_scale, v_scale, bool(return_lse), tensors,
                    ints, floats, bool(check))
                return _returned(result, lse, out, return_lse)
            user = (self._spec, self._checker(args, op, check, cu_seqlens_q,
                                              cu_seqlens_k, seqused_k))
            result, lse = _paged._launch(
                q, k_cache, v_cache, block_table, cu_seqlens_q, seqused_k,
                max_seqlen_q, max_seqlen_k, softmax_scale, causal, window_size,
                sinks, sinks_mode, mm_prefix_ranges, mm_prefix_clamp, softcap,
                k_scale, v_scale, return_lse, out, check, user=user,
                cu_seqlens_k=cu_seqlens_k)
            return (result, lse) if return_lse else result




# A table sized by a built-in argument (`size: num_heads_q`): the domain of
# the checked sizes it names; other built-in arguments are not known to the
# host's checks (the table's length is then the caller's to get right).
_BUILTIN_SIZES = {"num_heads_q": "head", "num_heads_kv": "kv_head",
                  "num_seqs": "sequence", "total_q": "query_token",
                  "total_k": "key_token"}


def _int32(value, name, op):
    if isinstance(value, bool):
        _fail(TypeError, f"`{name}` must be an int (int32), got bool", op)
    try:
        v = operator.index(value)
    except TypeError:
        _fail(TypeError, f"`{name}` must be an int (int32), got "
                         f"{type(value).__name__}", op)
    if not -_INT32_MAX - 1 <= v <= _INT32_MAX:
        _fail(ValueError, f"`{name}` must fit in an int32, got {v}", op)
    return v


def _float(value, name, op):
    """A spec's float arg: what the built-in float args take (an int, a
    float, a numpy scalar, a one-element tensor; not a bool), finite as
    the float32 the kernel receives."""
    if isinstance(value, bool):
        _fail(TypeError, f"`{name}` must be a float, got bool", op)
    v = _real(value, name, op)
    if not abs(v) <= _FLT_MAX:  # (NaN too)
        _fail(ValueError, f"`{name}` must be finite and within float32's "
                          f"range (the kernel takes a float), got {v:.6g}", op)
    return v


def _check_tensor(t, name, dtype, needed, per, device, pointers, op):
    _tensor(t, name, dtype, op)
    if t.dim() != 1 or (t.numel() > 1 and t.stride(0) != 1):
        _fail(ValueError, f"`{name}` must be a contiguous 1-D tensor, got "
                          f"shape {list(t.shape)} and strides "
                          f"{tuple(t.stride())}", op)
    if needed is not None and t.shape[0] < needed:
        _fail(ValueError, f"`{name}` (per {per}) needs at least {needed} "
                          f"elements, got {t.shape[0]}", op)
    if device is not None and t.get_device() != device:
        _fail(ValueError, f"`{name}` must be on q's device (cuda:{device}), "
                          f"got {t.device}", op)
    if pointers and t.data_ptr() % 4:
        _fail(ValueError, f"`{name}` must start at a 4-byte aligned "
                          f"address", op)


# ---- the custom ops (torch.compile) ----------------------------------------

@torch.library.custom_op("attnjit::user_attention", mutates_args=())
def _user_attention_op(
        spec_id: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
        cu_seqlens_q: torch.Tensor, cu_seqlens_k: torch.Tensor,
        max_seqlen_q: int, max_seqlen_k: int, softmax_scale: Optional[float],
        causal: bool, window_left: int, window_right: int,
        sinks: Optional[torch.Tensor], sinks_mode: str,
        mm_prefix_ranges: Optional[torch.Tensor], mm_prefix_clamp: bool,
        softcap: float, return_lse: bool, tensors: List[torch.Tensor],
        ints: List[int], floats: List[float],
        check: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    spec = _spec_of(spec_id)
    given = spec._unpack(tensors, ints, floats)
    out, lse = _varlen._launch(
        q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
        softmax_scale, causal, (window_left, window_right), sinks, sinks_mode,
        mm_prefix_ranges, mm_prefix_clamp, softcap, return_lse, None, check,
        user=(spec._spec, spec._checker(given, spec._op(), check,
                                        cu_seqlens_q, cu_seqlens_k)))
    return _op_result(q, out, lse)


@_user_attention_op.register_fake
def _user_attention_fake(spec_id, q, k, v, cu_seqlens_q, cu_seqlens_k,
                         max_seqlen_q, max_seqlen_k, softmax_scale, causal,
                         window_left, window_right, sinks, sinks_mode,
                         mm_prefix_ranges, mm_prefix_clamp, softcap,
                         return_lse, tensors, ints, floats, check):
    spec = _spec_of(spec_id)
    (_, device, num_seqs, total_q, total_k, heads_q, heads_kv, head_dim,
     *_) = _varlen._validate(
         q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
         softmax_scale, (window_left, window_right), sinks, sinks_mode,
         mm_prefix_ranges, mm_prefix_clamp, softcap, return_lse, None, False)
    spec._checker(spec._unpack(tensors, ints, floats), spec._op())(
        device, num_seqs, total_q, total_k, heads_q, heads_kv, False)
    return _fake_outputs(q, v, return_lse)


@torch.library.custom_op("attnjit::user_paged_attention", mutates_args=())
def _user_paged_attention_op(
        spec_id: str, q: torch.Tensor, k_cache: torch.Tensor,
        v_cache: torch.Tensor, block_table: torch.Tensor,
        cu_seqlens_q: torch.Tensor, seqused_k: torch.Tensor,
        cu_seqlens_k: Optional[torch.Tensor], max_seqlen_q: int,
        max_seqlen_k: int, softmax_scale: Optional[float], causal: bool,
        window_left: int, window_right: int, sinks: Optional[torch.Tensor],
        sinks_mode: str, mm_prefix_ranges: Optional[torch.Tensor],
        mm_prefix_clamp: bool, softcap: float,
        k_scale: Optional[torch.Tensor], v_scale: Optional[torch.Tensor],
        return_lse: bool, tensors: List[torch.Tensor], ints: List[int],
        floats: List[float], check: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    spec = _spec_of(spec_id)
    given = spec._unpack(tensors, ints, floats)
    out, lse = _paged._launch(
        q, k_cache, v_cache, block_table, cu_seqlens_q, seqused_k,
        max_seqlen_q, max_seqlen_k, softmax_scale, causal,
        (window_left, window_right), sinks, sinks_mode, mm_prefix_ranges,
        mm_prefix_clamp, softcap, k_scale, v_scale, return_lse, None, check,
        user=(spec._spec, spec._checker(given, spec._op(paged=True), check,
                                        cu_seqlens_q, cu_seqlens_k,
                                        seqused_k)),
        cu_seqlens_k=cu_seqlens_k)
    return _op_result(q, out, lse)


@_user_paged_attention_op.register_fake
def _user_paged_attention_fake(spec_id, q, k_cache, v_cache, block_table,
                               cu_seqlens_q, seqused_k, cu_seqlens_k,
                               max_seqlen_q, max_seqlen_k, softmax_scale,
                               causal, window_left, window_right, sinks,
                               sinks_mode, mm_prefix_ranges, mm_prefix_clamp,
                               softcap, k_scale, v_scale, return_lse, tensors,
                               ints, floats, check):
    spec = _spec_of(spec_id)
    c = _paged._validate(q, k_cache, v_cache, block_table, cu_seqlens_q,
                         seqused_k, max_seqlen_q, max_seqlen_k, softmax_scale,
                         (window_left, window_right), sinks, sinks_mode,
                         mm_prefix_ranges, mm_prefix_clamp, softcap, k_scale,
                         v_scale, None, False)
    spec._checker(spec._unpack(tensors, ints, floats),
                  spec._op(paged=True))(c.device, c.num_seqs, c.total_q,
                                        None, c.heads_q, c.heads_kv, False)
    return _fake_outputs(q, v_cache, return_lse)


def _spec_of(spec_id):
    spec = _SPECS.get(spec_id)
    if spec is None:
        raise RuntimeError(f"attnjit: no spec '{spec_id}' was loaded in this "
                           f"process (attnjit.load_spec)")
    return spec


def _call_keywords():
    """The parameters of the call and of .paged() (a spec arg of one of
    these names could not be passed, so load_spec refuses it)."""
    names = set()
    for method in (UserAttention.__call__, UserAttention.paged):
        for param in inspect.signature(method).parameters.values():
            if param.kind is not param.VAR_KEYWORD:
                names.add(param.name)
    return frozenset(names)


_CALL_KEYWORDS = _call_keywords()

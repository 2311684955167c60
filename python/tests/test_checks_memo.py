"""The argument checks' memo (each module's _prepared, through its
_checked): an eager call whose key matches an earlier checked
call's skips the checks, so the key must change with everything the checks
read but the lengths, which every call checks; and a failed check must keep
nothing. CPU tensors; the device check is stubbed where a call must pass.

Run: python -m pytest python/tests.
"""

import warnings

import pytest

from paged_support import _cu, _paged, _varlen, attnjit

torch = pytest.importorskip("torch")
FP8 = getattr(torch, "float8_e4m3fn", None)


def _misaligned(shape, dtype=torch.bfloat16):
    """A tensor of `shape` whose data starts 2 bytes past a 16-byte line."""
    n = 1
    for s in shape:
        n *= s
    return torch.zeros(n + 8, dtype=dtype)[1:n + 1].view(shape)


def _on_device(t, index):
    """t, reporting CUDA device `index` (the stubbed checks never look
    further)."""
    t.get_device = lambda: index
    return t


# ---- paged_attention ----------------------------------------------------------

def _paged_args(**changes):
    args = dict(q=torch.randn(12, 4, 64, dtype=torch.bfloat16),
                k_cache=torch.randn(6, 16, 2, 64, dtype=torch.bfloat16),
                v_cache=torch.randn(6, 16, 2, 64, dtype=torch.bfloat16),
                block_table=(torch.arange(4, dtype=torch.int32) % 6).view(2, 2),
                cu_seqlens_q=_cu((5, 7)),
                seqused_k=torch.tensor([20, 7], dtype=torch.int32),
                max_seqlen_q=7, max_seqlen_k=20,
                softmax_scale=None, window_size=(-1, -1), sinks=None,
                sinks_mode="none", mm_prefix_ranges=None, mm_prefix_clamp=False,
                softcap=0.0, k_scale=None, v_scale=None, out=None)
    args.update(changes)
    return args


def _fp8_args():
    return dict(k_cache=torch.zeros(6, 16, 2, 64, dtype=FP8),
                v_cache=torch.zeros(6, 16, 2, 64, dtype=FP8),
                k_scale=torch.ones(1), v_scale=torch.ones(1))


# One change per entry, each a call the checks reject...
PAGED_ERRORS = {
    "q dtype": dict(q=torch.randn(12, 4, 64, dtype=torch.float16)),
    "q alignment": dict(q=_misaligned((12, 4, 64))),
    "k_cache pages": dict(k_cache=torch.randn(5, 16, 2, 64, dtype=torch.bfloat16)),
    "v_cache dtype": dict(v_cache=torch.randn(6, 16, 2, 64, dtype=torch.float16)),
    "block_table dtype": dict(block_table=torch.zeros(2, 2, dtype=torch.int64)),
    "cu_seqlens_q dtype": dict(cu_seqlens_q=torch.tensor([0, 5, 12])),
    "seqused_k shape": dict(seqused_k=torch.tensor([20, 7, 1], dtype=torch.int32)),
    "sinks_mode without sinks": dict(sinks_mode="null_logit"),
    "sinks dtype": dict(sinks=torch.zeros(4, dtype=torch.float16), sinks_mode="null_logit"),
    "sinks shape": dict(sinks=torch.zeros(3), sinks_mode="null_logit"),
    "mm_prefix_clamp without spans": dict(mm_prefix_clamp=True),
    "k_scale on a 16-bit cache": dict(k_scale=torch.ones(1)),
    "v_scale on a 16-bit cache": dict(v_scale=torch.ones(1)),
    "out dtype": dict(out=torch.empty(12, 4, 64, dtype=torch.float16)),
    "k_cache on another device": dict(k_cache=_on_device(
        torch.randn(6, 16, 2, 64, dtype=torch.bfloat16), 1)),
    # the lengths: checked at every call, not keyed
    "max_seqlen_q float": dict(max_seqlen_q=7.0),
    "max_seqlen_k past the table": dict(max_seqlen_k=40),
    "max_seqlen_k negative": dict(max_seqlen_k=-1),
}
if FP8 is not None:
    PAGED_ERRORS["fp8 without v_scale"] = {**_fp8_args(), "v_scale": None}
    PAGED_ERRORS["fp8 v_scale dtype"] = {**_fp8_args(), "v_scale": torch.ones(1).double()}
# ...or accepts with another result (or the same one, by another path).
PAGED_VALID = {
    "q shape": dict(q=torch.randn(13, 4, 64, dtype=torch.bfloat16)),
    "q strides": dict(q=torch.randn(12, 4, 72, dtype=torch.bfloat16)[..., :64]),
    "k_cache page stride": dict(
        k_cache=torch.randn(6, 2, 16, 2, 64, dtype=torch.bfloat16)[:, 0]),
    "softmax_scale": dict(softmax_scale=0.5),
    "window_size": dict(window_size=(63, 0)),
    "window_size list": dict(window_size=[-1, -1]),
    "sinks": dict(sinks=torch.zeros(4), sinks_mode="null_logit"),
    "mm_prefix_ranges": dict(mm_prefix_ranges=torch.zeros(1, 3, dtype=torch.int32)),
    "softcap": dict(softcap=30.0),
    "out": dict(out=torch.empty(12, 4, 64, dtype=torch.bfloat16)),
}
if FP8 is not None:
    PAGED_VALID["fp8 cache"] = _fp8_args()
# Lengths a valid call may change at every step: one key, checked anew.
PAGED_LENGTHS = [dict(max_seqlen_k=21), dict(max_seqlen_k=32), dict(max_seqlen_q=9),
                 dict(max_seqlen_k=True)]

LENGTH_NAMES = ("max_seqlen_q", "max_seqlen_k")


def _key_args(args):
    return {n: a for n, a in args.items() if n not in LENGTH_NAMES}


def _counting_checks(monkeypatch, module):
    """(call, count, memo): call(args) runs module._checked on a memo of its
    own with the device check stubbed (device 0); count[0] counts
    module._validate."""
    monkeypatch.setattr(module, "_check_device", _stub_device)
    count, validate, memo = [0], module._validate, {}

    def counted(*a, **k):
        count[0] += 1
        return validate(*a, **k)
    monkeypatch.setattr(module, "_validate", counted)
    # _validate's form of the result: the checked layout with the lengths
    # of this call (max_q and max_k after the first 8 fields, 9 when paged).
    at = 9 if module is _paged else 8

    def call(args):
        prepared, lengths = module._checked(**args, memo=memo)
        c = prepared.checked
        return tuple.__new__(type(c), c[:at] + lengths + c[at + 2:])
    return call, count, memo


def _assert_the_key_changes(module, args_of, mutations):
    """module._checks_key of args_of(**change) differs from args_of()'s for
    each change that is not of the lengths alone."""
    base = module._checks_key(**_key_args(args_of()))
    assert base == module._checks_key(**_key_args(args_of()))  # fresh tensors
    for name, change in mutations.items():
        if set(change) <= set(LENGTH_NAMES):
            continue
        assert module._checks_key(**_key_args(args_of(**change))) != base, name


@pytest.fixture
def paged_checks(monkeypatch):
    return _counting_checks(monkeypatch, _paged)


def _stub_device(q, named, mm_prefix_ranges, op):
    """_check_device with CPU tensors as device 0 (-1 reads as 0), still
    refusing two devices."""
    index = lambda t: max(t.get_device(), 0)  # noqa: E731
    if any(t is not None and index(t) != index(q) for _, t in named):
        raise ValueError(f"{op}: must be CUDA tensors on one device")
    return 0


def test_the_key_changes_with_everything_the_checks_read():
    _assert_the_key_changes(_paged, _paged_args, {**PAGED_ERRORS, **PAGED_VALID})


def test_a_bad_call_after_a_good_one_is_still_checked(paged_checks):
    call, count, memo = paged_checks
    good = call(_paged_args())
    assert count[0] == 1 and len(memo) == 1
    assert call(_paged_args()) == good and count[0] == 1  # the memo answered
    for name, change in PAGED_ERRORS.items():
        for attempt in range(2):  # the failure is not remembered either
            with pytest.raises((TypeError, ValueError), match="^paged_attention: "):
                call(_paged_args(**change))
            assert len(memo) == 1, name  # a failed check keeps nothing


def test_another_valid_layout_is_checked_and_kept_apart(paged_checks):
    call, count, memo = paged_checks
    call(_paged_args())
    for n, (name, change) in enumerate(PAGED_VALID.items(), start=2):
        args = _paged_args(**change)
        checked = call(args)
        assert count[0] == n and len(memo) == n, name
        assert checked == _paged._validate(**args, pointers=True), name
        assert call(_paged_args(**change)) == checked and count[0] == n + 1, name
        count[0] -= 1  # (the direct _validate above)


def test_paged_variant_flags_are_keyed(paged_checks):
    """causal and return_lse are not checked, but the memo's entry holds the
    variant they choose: each value keeps an entry of its own."""
    call, count, memo = paged_checks
    call(_paged_args())
    for n, change in enumerate((dict(causal=True), dict(return_lse=True)), start=2):
        call(_paged_args(**change))
        assert len(memo) == n and count[0] == n, change
        call(_paged_args(**change))
        assert len(memo) == n and count[0] == n, change


def test_lengths_are_checked_at_every_call_and_not_keyed(paged_checks):
    call, count, memo = paged_checks
    call(_paged_args())
    for change in PAGED_LENGTHS:
        checked = call(_paged_args(**change))
        assert count[0] == 1 and len(memo) == 1, change  # one key for them all
        assert checked == _paged._validate(**_paged_args(**change), pointers=True), change
        count[0] -= 1


def test_unkeyed_arguments_are_checked_every_call(paged_checks):
    call, count, memo = paged_checks
    param = torch.nn.Parameter(torch.randn(12, 4, 64, dtype=torch.bfloat16),
                               requires_grad=False)
    for _ in range(3):
        call(_paged_args(q=param))  # a tensor subclass
    assert count[0] == 3 and not memo
    scale = torch.tensor(0.5)  # a tensor where a float goes: float() takes it
    for _ in range(2):
        call(_paged_args(softmax_scale=scale))
    assert count[0] == 5 and not memo
    sparse = torch.zeros(1, 3, dtype=torch.int32).to_sparse()  # not strided
    with pytest.raises(TypeError, match="`mm_prefix_ranges` must be a dense"):
        call(_paged_args(mm_prefix_ranges=sparse))
    assert count[0] == 6 and not memo
    # Nested: strided, but without a shape (torch raises an internal error
    # where the key would read it).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the nested API is a prototype)
        nested = torch.nested.nested_tensor(list(torch.zeros(2, 12, 4, 64)))
    with pytest.raises(TypeError, match="`q` must be a dense .* nested tensor"):
        call(_paged_args(q=nested))
    assert count[0] == 7 and not memo


def test_a_full_memo_starts_over(paged_checks):
    call, count, memo = paged_checks
    for n in range(attnjit._memo._MEMO_MAX + 3):  # softmax scales: each its own key
        call(_paged_args(softmax_scale=1.0 + n))
    assert count[0] == attnjit._memo._MEMO_MAX + 3
    assert 1 <= len(memo) <= attnjit._memo._MEMO_MAX


# ---- varlen_attention ---------------------------------------------------------

def _varlen_args(**changes):
    k = torch.randn(20, 2, 64, dtype=torch.bfloat16)
    args = dict(q=torch.randn(12, 4, 64, dtype=torch.bfloat16), k=k, v=k.clone(),
                cu_seqlens_q=_cu((5, 7)), cu_seqlens_k=_cu((8, 12)),
                max_seqlen_q=7, max_seqlen_k=12, softmax_scale=None,
                window_size=(-1, -1), sinks=None, sinks_mode="none",
                mm_prefix_ranges=None, mm_prefix_clamp=False, softcap=0.0,
                return_lse=False, out=None, causal=False)
    args.update(changes)
    return args


VARLEN_ERRORS = {
    "q dtype": dict(q=torch.randn(12, 4, 64, dtype=torch.float16)),
    "q alignment": dict(q=_misaligned((12, 4, 64))),
    "k and v shapes": dict(v=torch.randn(21, 2, 64, dtype=torch.bfloat16)),
    "cu_seqlens_q dtype": dict(cu_seqlens_q=torch.tensor([0, 5, 12])),
    "cu_seqlens_k length": dict(cu_seqlens_k=_cu((8, 6, 6))),
    "sinks dtype": dict(sinks=torch.zeros(4, dtype=torch.float16), sinks_mode="null_logit"),
    "sinks shape": dict(sinks=torch.zeros(3), sinks_mode="null_logit"),
    "sinks_mode without sinks": dict(sinks_mode="bias_key0"),
    "mm_prefix_clamp without spans": dict(mm_prefix_clamp=True),
    "mm_prefix_ranges shape": dict(mm_prefix_ranges=torch.zeros(1, 2, dtype=torch.int32)),
    "softcap negative": dict(softcap=-1.0),
    "window_size": dict(window_size=(-2, 0)),
    "out dtype": dict(out=torch.empty(12, 4, 64, dtype=torch.float16)),
    "k on another device": dict(k=_on_device(torch.randn(20, 2, 64, dtype=torch.bfloat16), 1)),
    "max_seqlen_q float": dict(max_seqlen_q=7.0),
    "max_seqlen_k negative": dict(max_seqlen_k=-1),
}
VARLEN_VALID = {
    "q strides": dict(q=torch.randn(12, 4, 72, dtype=torch.bfloat16)[..., :64]),
    "softmax_scale": dict(softmax_scale=0.5),
    "window_size": dict(window_size=(63, 0)),
    "sinks": dict(sinks=torch.zeros(4), sinks_mode="null_logit"),
    "mm_prefix_ranges": dict(mm_prefix_ranges=torch.zeros(1, 3, dtype=torch.int32)),
    "softcap": dict(softcap=30.0),
    "return_lse": dict(return_lse=True),
    "out": dict(out=torch.empty(12, 4, 64, dtype=torch.bfloat16)),
    "causal": dict(causal=True),  # not checked, but the memo keeps the variant's flags
}


@pytest.fixture
def varlen_checks(monkeypatch):
    return _counting_checks(monkeypatch, _varlen)


def test_varlen_key_changes_with_everything_the_checks_read():
    _assert_the_key_changes(_varlen, _varlen_args, {**VARLEN_ERRORS, **VARLEN_VALID})


def test_varlen_bad_calls_after_a_good_one_are_checked(varlen_checks):
    call, count, memo = varlen_checks
    good = call(_varlen_args())
    assert call(_varlen_args()) == good and count[0] == 1
    for name, change in VARLEN_ERRORS.items():
        with pytest.raises((TypeError, ValueError), match="^varlen_attention: "):
            call(_varlen_args(**change))
        assert len(memo) == 1, name
    for n, (name, change) in enumerate(VARLEN_VALID.items(), start=2):
        checked = call(_varlen_args(**change))
        assert len(memo) == n, name
        assert call(_varlen_args(**change)) == checked, name
    for change in (dict(max_seqlen_k=15), dict(max_seqlen_q=9)):  # lengths: one key
        checked = call(_varlen_args(**change))
        args = _varlen_args(**change)
        del args["causal"]  # the flags' business, not the checks'
        assert checked == _varlen._validate(**args, pointers=True), change
        assert len(memo) == 1 + len(VARLEN_VALID), change


@pytest.mark.parametrize("module", ["paged", "varlen"])
def test_the_sinks_tensor_is_keyed(module, paged_checks, varlen_checks):
    """A call with good sinks, then the same call with sinks of another
    dtype or shape (sinks_mode unchanged): checked, and refused."""
    call, _, memo = paged_checks if module == "paged" else varlen_checks
    args_of = _paged_args if module == "paged" else _varlen_args
    call(args_of(sinks=torch.zeros(4), sinks_mode="null_logit"))
    for bad in (torch.zeros(4, dtype=torch.float16), torch.zeros(3)):
        with pytest.raises((TypeError, ValueError), match="^(paged|varlen)_attention: .*sinks"):
            call(args_of(sinks=bad, sinks_mode="null_logit"))
    assert len(memo) == 1


def test_an_argument_passed_twice_is_keyed_once_and_still_checked(varlen_checks):
    """cu_seqlens_q passed as cu_seqlens_k too (self-attention) is keyed as
    'the one before, again': a second call with the same object hits the
    memo, and a call whose cu_seqlens_k is another tensor (here too short)
    is checked."""
    call, count, memo = varlen_checks
    k = torch.randn(12, 2, 64, dtype=torch.bfloat16)
    cu = _cu((5, 7))
    same = _varlen_args(k=k, v=k.clone(), cu_seqlens_q=cu, cu_seqlens_k=cu,
                        max_seqlen_k=7)
    call(same)
    call(same)
    assert count[0] == 1 and len(memo) == 1
    short = torch.tensor([0, 5], dtype=torch.int32)
    with pytest.raises(ValueError, match="cu_seqlens"):
        call({**same, "cu_seqlens_k": short})
    assert count[0] == 2

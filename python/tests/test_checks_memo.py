"""The argument checks' memo (attnjit._varlen._validated): an eager call
whose key matches an earlier checked call's skips the checks, so the key
must change with everything the checks read, and a failed check must keep
nothing. CPU tensors; the device check is stubbed where a call must pass.

Run: python -m pytest python/tests.
"""

import pytest

from paged_support import _cu, _paged, _varlen

torch = pytest.importorskip("torch")


def _paged_args(**changes):
    lens_q, lens_k, page, pages = (5, 7), (20, 7), 16, 6
    width = 2
    args = dict(q=torch.randn(sum(lens_q), 4, 64, dtype=torch.bfloat16),
                k_cache=torch.randn(pages, page, 2, 64, dtype=torch.bfloat16),
                v_cache=torch.randn(pages, page, 2, 64, dtype=torch.bfloat16),
                block_table=(torch.arange(4, dtype=torch.int32) % pages).view(2, width),
                cu_seqlens_q=_cu(lens_q),
                seqused_k=torch.tensor(lens_k, dtype=torch.int32),
                max_seqlen_q=max(lens_q), max_seqlen_k=max(lens_k),
                softmax_scale=None, window_size=(-1, -1), sinks=None,
                sinks_mode="none", mm_prefix_ranges=None, mm_prefix_clamp=False,
                softcap=0.0, k_scale=None, v_scale=None, out=None)
    args.update(changes)
    return args


def _misaligned(shape, dtype=torch.bfloat16):
    """A tensor of `shape` whose data starts 2 bytes past a 16-byte line."""
    n = 1
    for s in shape:
        n *= s
    return torch.zeros(n + 8, dtype=dtype)[1:n + 1].view(shape)


def _strided_q():
    """q's shape with a padded row (another row stride)."""
    return torch.randn(12, 4, 72, dtype=torch.bfloat16)[..., :64]


# One change per entry, each a call the checks reject...
ERRORS = {
    "q dtype": dict(q=torch.randn(12, 4, 64, dtype=torch.float16)),
    "q alignment": dict(q=_misaligned((12, 4, 64))),
    "k_cache pages": dict(k_cache=torch.randn(5, 16, 2, 64, dtype=torch.bfloat16)),
    "v_cache dtype": dict(v_cache=torch.randn(6, 16, 2, 64, dtype=torch.float16)),
    "block_table width": dict(block_table=torch.zeros(2, 1, dtype=torch.int32)),
    "block_table dtype": dict(block_table=torch.zeros(2, 2, dtype=torch.int64)),
    "cu_seqlens_q dtype": dict(cu_seqlens_q=torch.tensor([0, 5, 12])),
    "seqused_k shape": dict(seqused_k=torch.tensor([20, 7, 1], dtype=torch.int32)),
    "max_seqlen_q float": dict(max_seqlen_q=7.0),
    "max_seqlen_k past the table": dict(max_seqlen_k=40),
    "sinks_mode without sinks": dict(sinks_mode="null_logit"),
    "mm_prefix_clamp without spans": dict(mm_prefix_clamp=True),
    "k_scale on a 16-bit cache": dict(k_scale=torch.ones(1)),
    "out dtype": dict(out=torch.empty(12, 4, 64, dtype=torch.float16)),
}
# ...or accepts with another result (or the same one, by another path).
VALID = {
    "q shape": dict(q=torch.randn(13, 4, 64, dtype=torch.bfloat16)),
    "q strides": dict(q=_strided_q()),
    "k_cache page stride": dict(
        k_cache=torch.randn(6, 2, 16, 2, 64, dtype=torch.bfloat16)[:, 0]),
    "max_seqlen_k bool": dict(max_seqlen_k=True),
    "softmax_scale": dict(softmax_scale=0.5),
    "window_size": dict(window_size=(63, 0)),
    "window_size list": dict(window_size=[-1, -1]),
    "sinks": dict(sinks=torch.zeros(4), sinks_mode="null_logit"),
    "mm_prefix_ranges": dict(mm_prefix_ranges=torch.zeros(1, 3, dtype=torch.int32)),
    "softcap": dict(softcap=30.0),
    "out": dict(out=torch.empty(12, 4, 64, dtype=torch.bfloat16)),
}
MUTATIONS = {**ERRORS, **VALID}


def test_the_key_changes_with_everything_the_checks_read():
    base = _paged._checks_key(**_paged_args())
    assert base == _paged._checks_key(**_paged_args())  # fresh tensors, same layouts
    for name, change in MUTATIONS.items():
        assert _paged._checks_key(**_paged_args(**change)) != base, name


def _checked_on_cpu(monkeypatch):
    """The checks with their device check stubbed (device 0), so that a
    valid call on CPU tensors passes them; returns (memo, call, count)."""
    monkeypatch.setattr(_paged, "_check_device", lambda *a, **k: 0)
    memo, count = {}, [0]

    def validate(args):
        count[0] += 1
        return _paged._validate(**args, pointers=True)

    def call(args):
        return _varlen._validated(memo, lambda: _paged._checks_key(**args),
                                  lambda: validate(args))
    return memo, call, count


def test_a_bad_call_after_a_good_one_is_still_checked(monkeypatch):
    memo, call, count = _checked_on_cpu(monkeypatch)
    good = call(_paged_args())
    assert count[0] == 1 and len(memo) == 1
    assert call(_paged_args()) == good and count[0] == 1  # the memo answered
    for name, change in ERRORS.items():
        for attempt in range(2):  # the failure is not remembered either
            with pytest.raises((TypeError, ValueError), match="^paged_attention: "):
                call(_paged_args(**change))
            assert len(memo) == 1, name  # a failed check keeps nothing
    assert count[0] == 1 + 2 * len(ERRORS)


def test_another_valid_layout_is_checked_and_kept_apart(monkeypatch):
    memo, call, count = _checked_on_cpu(monkeypatch)
    call(_paged_args())
    for n, (name, change) in enumerate(VALID.items(), start=2):
        args = _paged_args(**change)
        checked = call(args)
        assert count[0] == n and len(memo) == n, name
        assert checked == _paged._validate(**args, pointers=True), name
        assert call(_paged_args(**change)) == checked and count[0] == n, name


def test_unkeyed_arguments_are_checked_every_call(monkeypatch):
    memo, call, count = _checked_on_cpu(monkeypatch)
    param = torch.nn.Parameter(torch.randn(12, 4, 64, dtype=torch.bfloat16),
                               requires_grad=False)
    for _ in range(3):
        call(_paged_args(q=param))  # a tensor subclass
    assert count[0] == 3 and not memo
    scale = torch.tensor(0.5)  # a tensor where a float goes: float() takes it
    for _ in range(2):
        call(_paged_args(softmax_scale=scale))
    assert count[0] == 5 and not memo


def test_a_full_memo_starts_over(monkeypatch):
    memo, call, count = _checked_on_cpu(monkeypatch)
    for n in range(_varlen._MEMO_MAX + 3):  # softmax scales: each its own key
        call(_paged_args(softmax_scale=1.0 + n))
    assert count[0] == _varlen._MEMO_MAX + 3
    assert 1 <= len(memo) <= _varlen._MEMO_MAX


def test_varlen_key_changes_with_its_arguments():
    q = torch.randn(12, 4, 64, dtype=torch.bfloat16)
    k = torch.randn(20, 2, 64, dtype=torch.bfloat16)
    cu = _cu((5, 7))
    args = dict(q=q, k=k, v=k.clone(), cu_seqlens_q=cu, cu_seqlens_k=_cu((8, 12)),
                max_seqlen_q=7, max_seqlen_k=12, softmax_scale=None,
                window_size=(-1, -1), sinks=None, sinks_mode="none",
                mm_prefix_ranges=None, mm_prefix_clamp=False, softcap=0.0,
                return_lse=False, out=None)
    base = _varlen._checks_key(**args)
    for change in (dict(return_lse=True), dict(k=k.to(torch.float16)),
                   dict(v=torch.randn(20, 2, 72, dtype=torch.bfloat16)[..., :64]),
                   dict(cu_seqlens_k=_cu((8, 6, 6))), dict(max_seqlen_q=7.0),
                   dict(out=_misaligned((12, 4, 64)))):
        assert _varlen._checks_key(**{**args, **change}) != base, change

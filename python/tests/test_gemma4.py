"""Gemma-4's sliding and global layers against the model's own definition of
the mask, not against attnjit.reference (which shares our reading of the
rule).

Gemma-4 lets a query see a key when (causal or same image) and q - k <
sliding_window; engines pass the window as FlashAttention does, (W, 0) with
W = sliding_window - 1, and attnjit's mm_prefix_clamp must give that rule
with (W, 0) and with (W, -1) alike. Images longer than the window, at a
sequence's start and end, across a chunk boundary of a paged chunked
prefill, in decodes and split-KV decodes. The global layers: head dim 512,
causal with image spans that no window bounds, score scale 1.0 over normed
q and k, GQA 8.
"""

import pytest

from paged_support import (BOUND, NAN, _cu, attnjit, gpu, into_pages,
                           relative_error, varlen_attention_reference)

torch = pytest.importorskip("torch")

# (length, images as (start, end inclusive)) per sequence.
SEQUENCES = [
    (300, [(0, 120), (200, 299)]),   # an image first and one at the end
    (257, [(40, 97), (100, 230)]),
    (90, []),
    (1, [(0, 0)]),
]


def gemma4_attention(q, k, v, lengths_q, lengths_k, images, sliding_window,
                     scale=None):
    """Gemma-4's attention, from its definition: per sequence, query i sits
    at position i + n_k - n_q; visible = (k <= q or same image) and, in a
    sliding layer, q - k < sliding_window (a global layer: None, no
    window); softmax of scale * q.k (default 1/sqrt(D); Gemma-4 passes 1.0,
    its q and k being normed) over the visible keys in fp64. Rows with no
    visible key are 0."""
    group = q.shape[1] // k.shape[1]
    out, q0, k0 = [], 0, 0
    for n_q, n_k, spans in zip(lengths_q, lengths_k, images):
        qp = torch.arange(n_k - n_q, n_k, device=q.device)[:, None]
        kp = torch.arange(n_k, device=q.device)[None, :]
        image_of = torch.full((n_k,), -1, device=q.device)
        for index, (start, end) in enumerate(spans):
            image_of[start:end + 1] = index
        query_image = image_of[n_k - n_q:][:, None]
        same_image = (query_image == image_of[None, :]) & (query_image >= 0)
        mask = (kp <= qp) | same_image
        if sliding_window is not None:
            mask &= qp - kp < sliding_window
        qs = q[q0:q0 + n_q].double().transpose(0, 1)
        ks = k[k0:k0 + n_k].double().repeat_interleave(group, 1).transpose(0, 1)
        vs = v[k0:k0 + n_k].double().repeat_interleave(group, 1).transpose(0, 1)
        scores = (qs @ ks.transpose(1, 2)) * (q.shape[2] ** -0.5 if scale is None else scale)
        weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1)
        out.append(torch.nan_to_num(weights @ vs).transpose(0, 1))
        q0, k0 = q0 + n_q, k0 + n_k
    return torch.cat(out).float()


def _ranges(images, device):
    rows = [(b, s, e) for b, spans in enumerate(images) for s, e in spans]
    return torch.tensor(rows, dtype=torch.int32, device=device)


def _inputs(lengths_q, lengths_k, hq, hkv, d, device, seed=0):
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)

    def randn(n, h):
        return torch.randn(n, h, d, device=device, generator=gen).to(torch.bfloat16)
    return randn(sum(lengths_q), hq), randn(sum(lengths_k), hkv), randn(sum(lengths_k), hkv)


@pytest.mark.parametrize("sliding_window", [1, 64, 1000])
@pytest.mark.parametrize("right", [0, -1])
def test_the_reference_is_the_models_rule(sliding_window, right):
    lengths = [n for n, _ in SEQUENCES]
    images = [s for _, s in SEQUENCES]
    q, k, v = _inputs(lengths, lengths, 4, 2, 32, "cpu")
    cu = _cu(lengths)
    want = gemma4_attention(q, k, v, lengths, lengths, images, sliding_window)
    got, _ = varlen_attention_reference(
        q, k, v, cu, cu, causal=True, window_size=(sliding_window - 1, right),
        mm_prefix_ranges=_ranges(images, "cpu"), mm_prefix_clamp=True)
    assert relative_error(got, want) < 1e-5
    if sliding_window == 64:  # images longer than the window: not causal-only
        plain, _ = varlen_attention_reference(
            q, k, v, cu, cu, causal=True, window_size=(sliding_window - 1, right))
        assert relative_error(plain, want) > 1e-2


def test_window_traps_warn():
    checks = attnjit._checks
    with pytest.warns(UserWarning, match="only its own position"):
        checks._check_modes(2, None, (0, 0), 0.0, None, "none", None, False, "op")
    with pytest.warns(UserWarning, match="has no effect"):
        checks._check_modes(2, None, (-1, 0), 0.0, None, "none",
                            _ranges([[(0, 1)]], "cpu"), True, "op")


@gpu
@pytest.mark.parametrize("right", [0, -1])
@pytest.mark.parametrize("sliding_window", [32, 128])
def test_varlen_is_gemma4(sliding_window, right):
    lengths = [n for n, _ in SEQUENCES]
    images = [s for _, s in SEQUENCES]
    q, k, v = _inputs(lengths, lengths, 8, 2, 256, "cuda", seed=1)
    cu = _cu(lengths, "cuda")
    out = torch.full_like(q, NAN)
    attnjit.varlen_attention(
        q, k, v, cu, cu, max(lengths), max(lengths), causal=True,
        window_size=(sliding_window - 1, right),
        mm_prefix_ranges=_ranges(images, "cuda"), mm_prefix_clamp=True, out=out)
    want = gemma4_attention(q.cpu(), k.cpu(), v.cpu(), lengths, lengths, images,
                            sliding_window)
    assert relative_error(out.cpu(), want) <= BOUND[torch.bfloat16]


@gpu
@pytest.mark.parametrize("right", [0, -1])
@pytest.mark.parametrize("steps", ["chunks", "decode", "long_decode"])
def test_paged_is_gemma4(steps, right):
    """Paged K/V: a prompt in two chunks whose boundary cuts an image (the
    second chunk's image tokens see the image's first part in the cache and
    its later tokens), one-token decodes, and decodes long enough to be
    split over the key range."""
    sliding_window, page_size = 96, 16
    if steps == "chunks":
        lengths_k, lengths_q = [600, 300], [260, 300]
        images = [[(300, 420), (590, 599)], [(0, 120), (200, 299)]]
    elif steps == "decode":
        lengths_k, lengths_q = [600, 300, 17], [1, 1, 1]
        images = [[(500, 599)], [(0, 299)], []]
    else:
        lengths_k, lengths_q = [20000, 9000], [1, 1]
        images = [[(19800, 19999)], [(100, 5000)]]
    hq, hkv, d = 16, 2, 256
    q, k, v = _inputs(lengths_q, lengths_k, hq, hkv, d, "cuda", seed=2)
    k_cache, v_cache, table = into_pages(k, v, lengths_k, page_size, "cuda")
    out = torch.full_like(q, NAN)
    attnjit.paged_attention(
        q, k_cache, v_cache, table, _cu(lengths_q, "cuda"),
        torch.tensor(lengths_k, dtype=torch.int32, device="cuda"),
        max(lengths_q), max(lengths_k), causal=True,
        window_size=(sliding_window - 1, right),
        mm_prefix_ranges=_ranges(images, "cuda"), mm_prefix_clamp=True, out=out)
    want = gemma4_attention(q.cpu(), k.cpu(), v.cpu(), lengths_q, lengths_k,
                            images, sliding_window)
    assert relative_error(out.cpu(), want) <= BOUND[torch.bfloat16]


def _normed(x, gain):
    """Gemma-4's q and k norms (unit RMS over D) times a gain, in bf16."""
    x = x.float()
    return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True)) * gain).to(torch.bfloat16)


@gpu
@pytest.mark.parametrize("steps", ["prefill", "chunks", "decode", "long_decode"])
def test_global_layer_is_gemma4(steps):
    """A global layer: D 512, causal, images bidirectional and unbounded by
    any window, scale 1.0; contiguous prefill, then a paged cache of 16-key
    pages: a chunk boundary through an image, decodes, long (split) ones."""
    page_size, hq, hkv, d = 16, 16, 2, 512
    if steps in ("prefill", "chunks"):
        lengths_k, lengths_q = [600, 300], [260, 300]
        images = [[(300, 420), (590, 599)], [(0, 120), (200, 299)]]
        if steps == "prefill":
            lengths_q = lengths_k
    elif steps == "decode":
        lengths_k, lengths_q = [600, 300, 17], [1, 1, 1]
        images = [[(500, 599)], [(0, 299)], []]
    else:
        lengths_k, lengths_q = [20000, 9000], [1, 1]
        images = [[(19800, 19999)], [(100, 5000)]]
    q, k, v = _inputs(lengths_q, lengths_k, hq, hkv, d, "cuda", seed=3)
    q, k = _normed(q, 0.25), _normed(k, 0.25)
    out = torch.full_like(q, NAN)
    ranges = _ranges(images, "cuda")
    if steps == "prefill":
        cu = _cu(lengths_k, "cuda")
        attnjit.varlen_attention(q, k, v, cu, cu, max(lengths_k), max(lengths_k),
                                 softmax_scale=1.0, causal=True,
                                 mm_prefix_ranges=ranges, out=out)
    else:
        k_cache, v_cache, table = into_pages(k, v, lengths_k, page_size, "cuda")
        attnjit.paged_attention(
            q, k_cache, v_cache, table, _cu(lengths_q, "cuda"),
            torch.tensor(lengths_k, dtype=torch.int32, device="cuda"),
            max(lengths_q), max(lengths_k), softmax_scale=1.0, causal=True,
            mm_prefix_ranges=ranges, out=out)
    want = gemma4_attention(q.cpu(), k.cpu(), v.cpu(), lengths_q, lengths_k,
                            images, None, scale=1.0)
    assert relative_error(out.cpu(), want) <= BOUND[torch.bfloat16]
    if steps == "chunks":  # the images matter: not plain causal
        plain = gemma4_attention(q.cpu(), k.cpu(), v.cpu(), lengths_q, lengths_k,
                                 [[], []], None, scale=1.0)
        assert relative_error(plain, want) > 1e-2

"""Gemma-4 sliding-window layers over text and images, checked against the
model's own definition of the mask.

Gemma-4's sliding layers let a key be seen when (causal OR same image) AND
q - k < sliding_window: the window bounds the distance to the past only,
so the tokens of an image also see the later tokens of their image.
Engines pass the window in FlashAttention's convention, (sliding_window - 1,
0) for a causal window, here (127, 0) (the model uses a longer one,
shortened so that the check stays quick), with mm_prefix_ranges for the
images and mm_prefix_clamp=True. The check computes Gemma-4's mask as the
model writes it, in plain PyTorch, and compares; it also checks that the
window (127, -1) gives the same result and that the images make a
difference (images longer than the window, so every reading differs).

    python python/examples/gemma4_sliding_images.py     (exit status 1 on failure)
"""

import sys

import torch

import attnjit

HEADS_Q, HEADS_KV, HEAD_DIM = 16, 8, 256
SLIDING_WINDOW = 128            # the model's config value
WINDOW = (SLIDING_WINDOW - 1, 0)  # as engines pass it
BOUND = 1e-2  # bf16 (docs/semantics.md)

# Per sequence: its length and its images as (start, end inclusive).
SEQUENCES = [
    (1200, [(100, 355), (600, 855)]),   # two 256-token images
    (700, [(0, 279)]),                  # an image first, 280 tokens
    (300, []),                          # text only
    (90, [(10, 89)]),                   # an image at the end
]


def gemma4_attention(q, k, v, lengths, images):
    """Gemma-4's sliding layer written from the model's mask: (causal or
    same image) and q - k < sliding_window, then softmax over the visible
    keys, in fp32. With images=False, plain causal window attention."""
    outs, start = [], 0
    group = q.shape[1] // k.shape[1]
    for n, spans in zip(lengths, (s for _, s in SEQUENCES)):
        pos = torch.arange(n, device=q.device)
        image_id = torch.full((n,), -1, device=q.device)
        for i, (s, e) in enumerate(spans):
            image_id[s:e + 1] = i
        qp, kp = pos[:, None], pos[None, :]
        same_image = (image_id[:, None] == image_id[None, :]) & (image_id[:, None] >= 0)
        mask = ((kp <= qp) | (same_image & images)) & (qp - kp < SLIDING_WINDOW)
        qs = q[start:start + n].float().transpose(0, 1)
        ks = k[start:start + n].float().repeat_interleave(group, 1).transpose(0, 1)
        vs = v[start:start + n].float().repeat_interleave(group, 1).transpose(0, 1)
        scores = (qs @ ks.transpose(1, 2)) / HEAD_DIM ** 0.5
        weights = scores.masked_fill(~mask, float("-inf")).softmax(-1)
        outs.append((weights @ vs).transpose(0, 1))
        start += n
    return torch.cat(outs)


def relative_error(out, ref):
    return ((out.float() - ref).norm() / ref.norm()).item()


def main():
    if not torch.cuda.is_available():
        print("this example runs on a CUDA GPU; none is visible")
        return 1
    torch.manual_seed(0)
    device = torch.device("cuda")
    lengths = [n for n, _ in SEQUENCES]
    cu = torch.tensor([0] + torch.tensor(lengths).cumsum(0).tolist(),
                      dtype=torch.int32, device=device)
    total, longest = sum(lengths), max(lengths)
    # (sequence, start, end) rows, in any order: attnjit sorts them.
    rows = [(b, s, e) for b, (_, spans) in enumerate(SEQUENCES)
            for s, e in spans][::-1]
    ranges = torch.tensor(rows, dtype=torch.int32, device=device)
    q = torch.randn(total, HEADS_Q, HEAD_DIM, device=device, dtype=torch.bfloat16)
    k = torch.randn(total, HEADS_KV, HEAD_DIM, device=device, dtype=torch.bfloat16)
    v = torch.randn(total, HEADS_KV, HEAD_DIM, device=device, dtype=torch.bfloat16)

    print(f"Gemma-4 sliding layers: {len(SEQUENCES)} sequences {lengths}, "
          f"images {rows[::-1]}, Hq {HEADS_Q} / Hkv {HEADS_KV}, D {HEAD_DIM}, "
          f"sliding_window {SLIDING_WINDOW}, bf16")
    gemma4 = gemma4_attention(q, k, v, lengths, images=True)
    plain = gemma4_attention(q, k, v, lengths, images=False)
    checks = []
    for window in (WINDOW, (WINDOW[0], -1)):
        out = attnjit.varlen_attention(
            q, k, v, cu, cu, longest, longest, causal=True, window_size=window,
            mm_prefix_ranges=ranges, mm_prefix_clamp=True)
        error = relative_error(out, gemma4)
        checks.append((error <= BOUND, f"window_size={window}, clamp: rel err "
                       f"vs Gemma-4's mask {error:.3e} (<= {BOUND:g})"))
    gap = relative_error(plain, gemma4)
    checks.append((gap > BOUND, f"images change the result: Gemma-4 vs plain "
                   f"causal window, rel diff {gap:.3e} (> {BOUND:g})"))
    for ok, line in checks:
        print(f"  {'PASS' if ok else 'FAIL'}  {line}")
    failed = not all(ok for ok, _ in checks)
    print(f"cache {attnjit.cache_stats()}")
    print("FAILED" if failed else "PASSED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

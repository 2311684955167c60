"""Gemma-4 sliding-window layers over text and images, checked against PyTorch.

Causal attention with a left window (here 127 keys plus the diagonal:
window_size=(127, 0); the model uses a longer one, shortened so that the
reference stays quick) where the tokens of one image also see each other
bidirectionally (mm_prefix_ranges). Images are longer than the window, so
the two readings differ: mm_prefix_clamp=True keeps the bidirectional
attention inside the window (Hugging Face's (causal OR same image) AND
window), mm_prefix_clamp=False lets a whole image attend to itself.

    python python/examples/gemma4_sliding_images.py     (exit status 1 on failure)
"""

import sys

import torch

import attnjit
from attnjit.reference import (lse_error, relative_error,
                               varlen_attention_reference)

HEADS_Q, HEADS_KV, HEAD_DIM = 16, 8, 256
WINDOW = (127, 0)
BOUND = 1e-2  # bf16 (docs/semantics.md)

# Per sequence: its length and its images as (start, end inclusive).
SEQUENCES = [
    (1200, [(100, 355), (600, 855)]),   # two 256-token images
    (700, [(0, 279)]),                  # an image first, 280 tokens
    (300, []),                          # text only
    (90, [(10, 89)]),                   # an image at the end
]


def main():
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
          f"causal, window {WINDOW}, bf16")
    failed = False
    results = {}
    for clamp in (True, False):
        out, lse = attnjit.varlen_attention(
            q, k, v, cu, cu, longest, longest, causal=True, window_size=WINDOW,
            mm_prefix_ranges=ranges, mm_prefix_clamp=clamp, return_lse=True)
        torch.cuda.synchronize()
        ref, ref_lse = varlen_attention_reference(
            q, k, v, cu, cu, causal=True, window_size=WINDOW,
            mm_prefix_ranges=ranges, mm_prefix_clamp=clamp)
        error, lse_err = relative_error(out, ref), lse_error(lse, ref_lse)
        ok = error <= BOUND and lse_err <= 2e-2
        failed |= not ok
        results[clamp] = out
        print(f"  {'PASS' if ok else 'FAIL'}  mm_prefix_clamp={clamp}: rel err "
              f"{error:.3e} (<= {BOUND:g}), lse max err {lse_err:.2e}")
    gap = relative_error(results[True], results[False].float())
    ok = gap > BOUND
    failed |= not ok
    print(f"  {'PASS' if ok else 'FAIL'}  clamped vs unclamped differ (images "
          f"longer than the window): rel diff {gap:.3e} (> {BOUND:g})")
    print(f"cache {attnjit.cache_stats()}")
    print("FAILED" if failed else "PASSED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

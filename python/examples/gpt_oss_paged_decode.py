"""GPT-OSS sliding layers decoding over a paged K/V cache, checked against
PyTorch.

GQA with 64 query heads over 8 key/value heads, D 64, causal, a window of
128 keys including the diagonal (window_size=(127, 0)), and one learned
sink logit per head that joins the softmax denominator only
(sinks_mode="null_logit"). Sequences of different lengths sit in a cache
of 16-token pages taken from a pool in a shuffled order; each decode step
writes one new token's key and value per sequence into the cache (a page
more where a sequence fills its last one) and runs paged_attention with
one query per sequence. Rows never written hold NaN, so a read past a
sequence's keys would show.

    python python/examples/gpt_oss_paged_decode.py     (exit status 1 on failure)
"""

import random
import sys

import torch

import attnjit
from attnjit.reference import (lse_error, relative_error,
                               varlen_attention_reference)

HEADS_Q, HEADS_KV, HEAD_DIM = 64, 8, 64
WINDOW = (127, 0)
PAGE_SIZE = 16
BOUND = 1e-2  # bf16 (docs/semantics.md)

# Cached keys per sequence before the first step: inside one page, at page
# edges, shorter and longer than the window.
CACHED = [1, 15, 16, 47, 127, 128, 500, 2048, 3001]
DECODE_STEPS = 4


def main():
    if not torch.cuda.is_available():
        print("this example runs on a CUDA GPU; none is visible")
        return 1
    torch.manual_seed(0)
    device = torch.device("cuda")
    rng = random.Random(0)
    final = [n + DECODE_STEPS for n in CACHED]
    pages_needed = [-(-n // PAGE_SIZE) for n in final]
    num_pages = sum(pages_needed) + 8
    free = list(range(num_pages))
    rng.shuffle(free)
    k_cache = torch.full((num_pages, PAGE_SIZE, HEADS_KV, HEAD_DIM),
                         float("nan"), device=device, dtype=torch.bfloat16)
    v_cache = torch.full_like(k_cache, float("nan"))
    # [B, max pages]: columns for the longest sequence at the last step;
    # entries a sequence does not read yet stay 0 (never read).
    block_table = torch.zeros(len(CACHED), max(pages_needed),
                              dtype=torch.int32, device=device)
    pages = [[] for _ in CACHED]
    lengths = [0] * len(CACHED)

    # The model's keys and values per sequence; the reference reads these.
    keys = [torch.randn(n, HEADS_KV, HEAD_DIM, device=device,
                        dtype=torch.bfloat16) for n in final]
    values = [torch.randn_like(k) for k in keys]

    def append(b, count):
        """Writes `count` more tokens of sequence b into the cache."""
        start, end = lengths[b], lengths[b] + count
        while len(pages[b]) * PAGE_SIZE < end:
            block_table[b, len(pages[b])] = free[-1]
            pages[b].append(free.pop())
        positions = torch.arange(start, end, device=device)
        page = block_table[b].long()[positions // PAGE_SIZE]
        k_cache[page, positions % PAGE_SIZE] = keys[b][start:end]
        v_cache[page, positions % PAGE_SIZE] = values[b][start:end]
        lengths[b] = end

    for b, n in enumerate(CACHED):  # the prompts, prefilled earlier
        append(b, n)
    sinks = torch.rand(HEADS_Q, device=device) * 4 - 1  # uniform in [-1, 3]
    mode = dict(causal=True, window_size=WINDOW, sinks=sinks,
                sinks_mode="null_logit")
    batch = len(CACHED)
    cu_q = torch.arange(batch + 1, dtype=torch.int32, device=device)

    print(f"GPT-OSS sliding layers, paged decode: Hq {HEADS_Q} / Hkv "
          f"{HEADS_KV}, D {HEAD_DIM}, causal, window 128 (window_size="
          f"{WINDOW}), null-logit sinks, pages of {PAGE_SIZE} tokens, bf16")
    ok = True
    for step in range(DECODE_STEPS):
        for b in range(batch):
            append(b, 1)
        q = torch.randn(batch, HEADS_Q, HEAD_DIM, device=device,
                        dtype=torch.bfloat16)
        seqused_k = torch.tensor(lengths, dtype=torch.int32, device=device)
        out, lse = attnjit.paged_attention(
            q, k_cache, v_cache, block_table, cu_q, seqused_k, 1,
            max(final), return_lse=True, **mode)
        torch.cuda.synchronize()
        k = torch.cat([keys[b][:n] for b, n in enumerate(lengths)])
        v = torch.cat([values[b][:n] for b, n in enumerate(lengths)])
        cu_k = torch.tensor([0] + torch.tensor(lengths).cumsum(0).tolist(),
                            dtype=torch.int32, device=device)
        ref, ref_lse = varlen_attention_reference(q, k, v, cu_q, cu_k, **mode)
        error, lse_err = relative_error(out, ref), lse_error(lse, ref_lse)
        passed = error <= BOUND and lse_err <= 2e-2
        ok &= passed
        print(f"  {'PASS' if passed else 'FAIL'}  step {step + 1}: keys "
              f"{lengths}: rel err {error:.3e} (<= {BOUND:g}), lse max err "
              f"{lse_err:.2e}")
    print(f"pages used {sum(len(p) for p in pages)} of {num_pages}")
    print(f"cache {attnjit.cache_stats()}")
    print("PASSED" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Gemma-4 sliding layers over a paged K/V cache: chunked prefill with an
image, then decode, each step checked against PyTorch.

A serving engine keeps keys and values in pages (here 64 tokens each) taken
from a pool in no particular order, and runs attention over them with a
block table: paged_attention. The layer is causal with a left window of
1023 keys plus the diagonal, passed as engines pass it (window_size=(1023,
0), FlashAttention's convention); the tokens of an image also see each
other bidirectionally, the earlier ones no further back than the left
window (mm_prefix_ranges, mm_prefix_clamp=True: Gemma-4's (causal OR same
image) AND q - k < sliding_window). Spans are key positions in the
sequence, cached prefix included.

Sequence 0 is a 2000-token prompt with a 280-token image at [900, 1179],
prefilled in two chunks of 1024 and 976 tokens: the chunk boundary cuts the
image. In chunk 1 the image's first 124 tokens see each other (the span as
far as the cache holds it); in chunk 2 the rest of the image sees all of
it, its first part read from the cache. Sequence 1, a 300-token text
prompt, is prefilled beside chunk 1 and decodes beside chunk 2, then both
decode a few tokens. K and V live in one [pages, 2, page_size, Hkv, D]
cache (k = cache[:, 0], v = cache[:, 1]); rows never written hold NaN, so
a read past a sequence's keys would show.

    python python/examples/gemma4_paged_chunked.py     (exit status 1 on failure)
"""

import random
import sys

import torch

import attnjit
from attnjit.reference import (lse_error, relative_error,
                               varlen_attention_reference)

HEADS_Q, HEADS_KV, HEAD_DIM = 16, 8, 256
WINDOW = (1023, 0)
PAGE_SIZE = 64
NUM_PAGES = 64                  # the pool: 4096 tokens
BOUND = 1e-2                    # bf16 (docs/semantics.md)

PROMPTS = [2000, 300]
IMAGE = (0, 900, 1179)          # (sequence, start, end inclusive)
# Tokens each sequence adds per step: two prefill chunks, then decode.
STEPS = [[1024, 300], [976, 1], [1, 1], [1, 1], [1, 1]]
assert STEPS[0][0] + STEPS[1][0] == PROMPTS[0] and STEPS[0][1] == PROMPTS[1]


class PagedCache:
    """A pool of pages and each sequence's pages, handed out in a shuffled
    order as an engine's allocator might."""

    def __init__(self, num_seqs, device):
        self.device = device
        cache = torch.full((NUM_PAGES, 2, PAGE_SIZE, HEADS_KV, HEAD_DIM),
                           float("nan"), device=device, dtype=torch.bfloat16)
        self.k, self.v = cache[:, 0], cache[:, 1]
        self.free = list(range(NUM_PAGES))
        random.Random(0).shuffle(self.free)
        self.pages = [[] for _ in range(num_seqs)]
        self.lengths = [0] * num_seqs

    def append(self, seq, k, v):
        """Writes new tokens' keys and values after the sequence's cached
        ones, taking pages from the pool as needed."""
        start = self.lengths[seq]
        end = start + k.shape[0]
        while len(self.pages[seq]) * PAGE_SIZE < end:
            self.pages[seq].append(self.free.pop())
        positions = torch.arange(start, end, device=self.device)
        table = torch.tensor(self.pages[seq], device=self.device)
        pages, rows = table[positions // PAGE_SIZE], positions % PAGE_SIZE
        self.k[pages, rows] = k
        self.v[pages, rows] = v
        self.lengths[seq] = end

    def block_table(self):
        width = max(len(p) for p in self.pages)
        rows = [p + [0] * (width - len(p)) for p in self.pages]
        return torch.tensor(rows, dtype=torch.int32, device=self.device)

    def seqused_k(self):
        return torch.tensor(self.lengths, dtype=torch.int32,
                            device=self.device)


def cu_seqlens(lengths, device):
    return torch.tensor([0] + torch.tensor(lengths).cumsum(0).tolist(),
                        dtype=torch.int32, device=device)


def image_spans(lengths, device):
    """The image's span as far as the cache holds it (spans must lie within
    each sequence's keys)."""
    seq, start, end = IMAGE
    if lengths[seq] <= start:
        return None
    return torch.tensor([[seq, start, min(end, lengths[seq] - 1)]],
                        dtype=torch.int32, device=device)


def main():
    if not torch.cuda.is_available():
        print("this example runs on a CUDA GPU; none is visible")
        return 1
    torch.manual_seed(0)
    device = torch.device("cuda")
    total = [sum(step[b] for step in STEPS) for b in range(len(PROMPTS))]
    # Each sequence's keys, values and queries, as the model would make them
    # token by token; the reference reads these, not the cache.
    keys = [torch.randn(n, HEADS_KV, HEAD_DIM, device=device,
                        dtype=torch.bfloat16) for n in total]
    values = [torch.randn_like(k) for k in keys]
    queries = [torch.randn(n, HEADS_Q, HEAD_DIM, device=device,
                           dtype=torch.bfloat16) for n in total]
    mode = dict(causal=True, window_size=WINDOW, mm_prefix_clamp=True)

    print(f"Gemma-4 sliding layers over a paged cache: Hq {HEADS_Q} / Hkv "
          f"{HEADS_KV}, D {HEAD_DIM}, causal, window {WINDOW}, image {IMAGE} "
          f"bounded by the left window, pages of {PAGE_SIZE} tokens, bf16")
    cache = PagedCache(len(PROMPTS), device)
    failed = False
    chunk_outputs = []
    for step, new in enumerate(STEPS):
        starts = list(cache.lengths)
        for b, n in enumerate(new):
            cache.append(b, keys[b][starts[b]:starts[b] + n],
                         values[b][starts[b]:starts[b] + n])
        lengths = cache.lengths
        q = torch.cat([queries[b][starts[b]:lengths[b]]
                       for b in range(len(new))])
        cu_q = cu_seqlens(new, device)
        spans = image_spans(lengths, device)
        step_mode = dict(mode, mm_prefix_ranges=spans,
                         mm_prefix_clamp=spans is not None)
        out, lse = attnjit.paged_attention(
            q, cache.k, cache.v, cache.block_table(), cu_q, cache.seqused_k(),
            max(new), max(lengths), return_lse=True, **step_mode)
        torch.cuda.synchronize()
        k = torch.cat([keys[b][:n] for b, n in enumerate(lengths)])
        v = torch.cat([values[b][:n] for b, n in enumerate(lengths)])
        ref, ref_lse = varlen_attention_reference(
            q, k, v, cu_q, cu_seqlens(lengths, device), **step_mode)
        error, lse_err = relative_error(out, ref), lse_error(lse, ref_lse)
        ok = error <= BOUND and lse_err <= 2e-2
        failed |= not ok
        what = "prefill chunk" if max(new) > 1 else "decode"
        print(f"  {'PASS' if ok else 'FAIL'}  step {step + 1} ({what}): new "
              f"tokens {new}, keys {lengths}, image span "
              f"{spans.tolist() if spans is not None else None}: rel err "
              f"{error:.3e} (<= {BOUND:g}), lse max err {lse_err:.2e}")
        if step < 2:
            chunk_outputs.append(out[:new[0]])

    # Chunk 2's rows are what a one-pass prefill of the prompt gives them:
    # its image tokens see the image's first part through the cache.
    n = PROMPTS[0]
    first = STEPS[0][0]
    one_pass, _ = varlen_attention_reference(
        queries[0][:n], keys[0][:n], values[0][:n], cu_seqlens([n], device),
        cu_seqlens([n], device),
        mm_prefix_ranges=torch.tensor([IMAGE], dtype=torch.int32), **mode)
    error = relative_error(chunk_outputs[1], one_pass[first:])
    ok = error <= BOUND
    failed |= not ok
    print(f"  {'PASS' if ok else 'FAIL'}  chunk 2 vs one-pass prefill rows "
          f"{first}..{n - 1}: rel err {error:.3e} (<= {BOUND:g})")
    # The image's tokens in chunk 2 see its later tokens: not plain causal
    # window attention (the trap of a clamp that reads the right window).
    causal_window, _ = varlen_attention_reference(
        queries[0][:n], keys[0][:n], values[0][:n], cu_seqlens([n], device),
        cu_seqlens([n], device), causal=True, window_size=WINDOW)
    gap = relative_error(chunk_outputs[1], causal_window[first:])
    ok = gap > BOUND
    failed |= not ok
    print(f"  {'PASS' if ok else 'FAIL'}  chunk 2 differs from plain causal "
          f"window attention: rel diff {gap:.3e} (> {BOUND:g})")
    print(f"pages used {[len(p) for p in cache.pages]} of {NUM_PAGES}; "
          f"block table {cache.block_table().shape[1]} columns")
    print(f"cache {attnjit.cache_stats()}")
    print("FAILED" if failed else "PASSED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""A Gemma-4 model step through attnjit: both kinds of attention layer, each
over its own paged K/V cache, through a chunked prefill whose chunk boundary
cuts an image and then a few decodes, every layer's output checked against
the PyTorch reference.

Gemma-4 has two kinds of attention layer. Sliding layers (five in six):
head dim 256, causal with a left window of 1023 keys plus the diagonal,
image tokens bidirectional within an image but no further back than the
window (window_size=(1023, 0), mm_prefix_clamp=True). Global layers (one
in six): head dim 512, causal over the whole context, image tokens
bidirectional across the whole image (no window, so no clamp), and a score
scale of 1.0 (q and k are normed before attention; softmax_scale=1.0). An
engine keeps one paged cache per layer kind, since their heads differ.

Sequence 0 is a 2000-token prompt with a 1100-token image at [600, 1699],
prefilled in two chunks of 1024 and 976 tokens (the boundary cuts the
image); sequence 1, a 300-token text prompt, is prefilled beside chunk 1
and decodes beside chunk 2; then both decode a few tokens. Pages hold 16
tokens, handed out in a shuffled order; rows never written hold NaN. Per
layer, sequence 0's rows of chunk 2 must also equal a one-pass prefill of
the prompt (its image tokens see the image's first part through the cache;
chunk 1's cannot yet see the image's later tokens) and differ from the same
layer without the image (the trap of a clamp that reads the right window,
or of spans that are lost).
Head dim 512 runs on sm_90a only (other GPUs answer with an error that
says so).

    python python/examples/gemma4_model_step.py     (exit status 1 on failure)
"""

import random
import sys

import torch

import attnjit
from attnjit.reference import (lse_error, relative_error,
                               varlen_attention_reference)

PAGE_SIZE = 16
BOUND = 1e-2                    # bf16 (docs/semantics.md)
PROMPTS = [2000, 300]
IMAGE = (0, 600, 1699)          # (sequence, start, end inclusive)
# Tokens each sequence adds per step: two prefill chunks, then decodes.
STEPS = [[1024, 300], [976, 1], [1, 1], [1, 1], [1, 1]]
assert STEPS[0][0] + STEPS[1][0] == PROMPTS[0] and STEPS[0][1] == PROMPTS[1]

# (name, Hq, Hkv, D, attention mode): the two layer kinds.
LAYERS = [
    ("sliding", 16, 8, 256, dict(causal=True, window_size=(1023, 0), clamp=True)),
    ("global", 16, 2, 512, dict(causal=True, softmax_scale=1.0, clamp=False)),
]


class PagedCache:
    """One layer kind's pool of pages and each sequence's pages, handed out
    in a shuffled order as an engine's allocator might."""

    def __init__(self, num_pages, heads_kv, head_dim, num_seqs, device, seed):
        self.device = device
        cache = torch.full((num_pages, 2, PAGE_SIZE, heads_kv, head_dim),
                           float("nan"), device=device, dtype=torch.bfloat16)
        self.k, self.v = cache[:, 0], cache[:, 1]
        self.free = list(range(num_pages))
        random.Random(seed).shuffle(self.free)
        self.pages = [[] for _ in range(num_seqs)]
        self.lengths = [0] * num_seqs

    def append(self, seq, k, v):
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
        return torch.tensor(self.lengths, dtype=torch.int32, device=self.device)


def cu_seqlens(lengths, device):
    return torch.tensor([0] + torch.tensor(lengths).cumsum(0).tolist(),
                        dtype=torch.int32, device=device)


def image_spans(lengths, device):
    """The image's span as far as the cache holds it."""
    seq, start, end = IMAGE
    if lengths[seq] <= start:
        return None
    return torch.tensor([[seq, start, min(end, lengths[seq] - 1)]],
                        dtype=torch.int32, device=device)


def normed(x):
    """Gemma-4's q and k norms (unit RMS over D, here with a gain of 0.25)."""
    x = x.float()
    return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True)) * 0.25).to(torch.bfloat16)


def one_pass_checks(name, q, k, v, rows, layer_mode, clamp, device):
    """Sequence 0's rows of its last chunk against a one-pass prefill of its
    prompt, and apart from the same layer without the image; True when both
    hold."""
    n, first = PROMPTS[0], STEPS[0][0]
    cu = cu_seqlens([n], device)
    image = torch.tensor([IMAGE], dtype=torch.int32, device=device)
    one_pass, _ = varlen_attention_reference(q[:n], k[:n], v[:n], cu, cu, mm_prefix_ranges=image,
                                             mm_prefix_clamp=clamp, **layer_mode)
    error = relative_error(rows, one_pass[first:])
    no_image, _ = varlen_attention_reference(q[:n], k[:n], v[:n], cu, cu, **layer_mode)
    gap = relative_error(rows, no_image[first:])
    ok = error <= BOUND and gap > BOUND
    print(f"  {'PASS' if ok else 'FAIL'}  {name}: chunk 2 vs a one-pass prefill, rel err "
          f"{error:.3e} (<= {BOUND:g}); vs the layer without the image, rel diff {gap:.3e} "
          f"(> {BOUND:g})")
    return ok


def main():
    if not torch.cuda.is_available():
        print("this example runs on a CUDA GPU; none is visible")
        return 1
    torch.manual_seed(0)
    device = torch.device("cuda")
    total = [sum(step[b] for step in STEPS) for b in range(len(PROMPTS))]
    pages = sum(-(-n // PAGE_SIZE) for n in total) + 8
    print(f"Gemma-4 model step: image {IMAGE}, pages of {PAGE_SIZE} tokens, bf16")
    failed = False
    for index, (name, hq, hkv, d, mode) in enumerate(LAYERS):
        # Each sequence's keys, values and queries as the layer makes them.
        keys = [normed(torch.randn(n, hkv, d, device=device)) for n in total]
        values = [torch.randn(n, hkv, d, device=device, dtype=torch.bfloat16)
                  for n in total]
        queries = [normed(torch.randn(n, hq, d, device=device)) for n in total]
        layer_mode = {k: v for k, v in mode.items() if k != "clamp"}
        print(f"{name} layer: Hq {hq} / Hkv {hkv}, D {d}, {layer_mode}, "
              f"image spans {'clamped to the window' if mode['clamp'] else 'unclamped'}")
        cache = PagedCache(pages, hkv, d, len(PROMPTS), device, seed=index)
        last_chunk = None  # sequence 0's rows of its last prefill chunk
        for step, new in enumerate(STEPS):
            starts = list(cache.lengths)
            for b, n in enumerate(new):
                cache.append(b, keys[b][starts[b]:starts[b] + n],
                             values[b][starts[b]:starts[b] + n])
            lengths = cache.lengths
            q = torch.cat([queries[b][starts[b]:lengths[b]] for b in range(len(new))])
            cu_q = cu_seqlens(new, device)
            spans = image_spans(lengths, device)
            step_mode = dict(layer_mode, mm_prefix_ranges=spans,
                             mm_prefix_clamp=mode["clamp"] and spans is not None)
            try:
                out, lse = attnjit.paged_attention(
                    q, cache.k, cache.v, cache.block_table(), cu_q, cache.seqused_k(),
                    max(new), max(lengths), return_lse=True, **step_mode)
            except (attnjit.Error, ValueError) as e:  # (no kernel on this GPU, say)
                print(f"  FAIL  step {step + 1}: {e}")
                failed = True
                break
            torch.cuda.synchronize()
            k = torch.cat([keys[b][:n] for b, n in enumerate(lengths)])
            v = torch.cat([values[b][:n] for b, n in enumerate(lengths)])
            ref, ref_lse = varlen_attention_reference(
                q, k, v, cu_q, cu_seqlens(lengths, device), **step_mode)
            error, lse_err = relative_error(out, ref), lse_error(lse, ref_lse)
            ok = error <= BOUND and lse_err <= 2e-2
            failed |= not ok
            what = "prefill chunk" if max(new) > 1 else "decode"
            print(f"  {'PASS' if ok else 'FAIL'}  step {step + 1} ({what}): new tokens "
                  f"{new}, keys {lengths}: rel err {error:.3e} (<= {BOUND:g}), "
                  f"lse max err {lse_err:.2e}")
            if max(new) > 1:
                last_chunk = out[:new[0]]
        else:
            failed |= not one_pass_checks(name, queries[0], keys[0], values[0], last_chunk,
                                          layer_mode, mode["clamp"], device)
    print(f"cache {attnjit.cache_stats()}")
    print("FAILED" if failed else "PASSED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""DeepSeek-V3's MHA prefill through attnjit: query and key heads of 192
(128 of content plus 64 of rotary position), value heads of 128, causal,
one head of K and V per query head; a prompt prefilled in chunks over a
paged cache of its earlier tokens, each chunk checked against the PyTorch
reference, then the whole prompt's rows against a one-pass prefill.

attnjit takes the narrower value heads from v's shape: v (or v_cache) is
[..., 128] while q and k are [..., 192], and the output is [..., 128]
(the head_dim_v flag, sm_90a).

    python python/examples/deepseek_mha_prefill.py   (exit status 1 on failure)
"""

import sys

import torch

import attnjit
from attnjit.reference import relative_error, varlen_attention_reference

HEADS, D_QK, D_V = 16, 192, 128
PAGE_SIZE = 64
PROMPT, CHUNK = 3000, 1024       # prefilled 1024 + 1024 + 952 tokens
BOUND = 1e-2                     # bf16 (docs/semantics.md)


def cu_seqlens(lengths, device):
    return torch.tensor([0] + torch.tensor(lengths).cumsum(0).tolist(),
                        dtype=torch.int32, device=device)


def main():
    if not torch.cuda.is_available():
        print("this example runs on a CUDA GPU; none is visible")
        return 1
    torch.manual_seed(0)
    device = torch.device("cuda")
    q = torch.randn(PROMPT, HEADS, D_QK, device=device, dtype=torch.bfloat16)
    k = torch.randn(PROMPT, HEADS, D_QK, device=device, dtype=torch.bfloat16)
    v = torch.randn(PROMPT, HEADS, D_V, device=device, dtype=torch.bfloat16)
    pages = -(-PROMPT // PAGE_SIZE)
    # One sequence's pages, in reverse order; rows never written hold NaN.
    k_cache = torch.full((pages, PAGE_SIZE, HEADS, D_QK), float("nan"), device=device,
                         dtype=torch.bfloat16)
    v_cache = torch.full((pages, PAGE_SIZE, HEADS, D_V), float("nan"), device=device,
                         dtype=torch.bfloat16)
    table = torch.arange(pages - 1, -1, -1, dtype=torch.int32, device=device)[None]
    print(f"DeepSeek MHA prefill: {HEADS} heads, q/k {D_QK}, v {D_V}, causal, "
          f"chunks of {CHUNK} over pages of {PAGE_SIZE}, bf16")
    failed, done, outputs = False, 0, []
    while done < PROMPT:
        end = min(PROMPT, done + CHUNK)
        positions = torch.arange(done, end, device=device)
        rows, slots = table[0, positions // PAGE_SIZE], positions % PAGE_SIZE
        k_cache[rows, slots] = k[done:end]
        v_cache[rows, slots] = v[done:end]
        out = attnjit.paged_attention(
            q[done:end], k_cache, v_cache, table, cu_seqlens([end - done], device),
            torch.tensor([end], dtype=torch.int32, device=device), end - done, end,
            causal=True)
        torch.cuda.synchronize()
        ref, _ = varlen_attention_reference(
            q[done:end], k[:end], v[:end], cu_seqlens([end - done], device),
            cu_seqlens([end], device), causal=True)
        error = relative_error(out, ref)
        ok = out.shape[-1] == D_V and error <= BOUND
        failed |= not ok
        print(f"  {'PASS' if ok else 'FAIL'}  chunk {done}..{end - 1} over {end} keys: "
              f"out {list(out.shape)}, rel err {error:.3e} (<= {BOUND:g})")
        outputs.append(out)
        done = end
    one_pass, _ = varlen_attention_reference(q, k, v, cu_seqlens([PROMPT], device),
                                             cu_seqlens([PROMPT], device), causal=True)
    error = relative_error(torch.cat(outputs), one_pass)
    ok = error <= BOUND
    failed |= not ok
    print(f"  {'PASS' if ok else 'FAIL'}  the chunks against a one-pass prefill: "
          f"rel err {error:.3e} (<= {BOUND:g})")
    print("FAILED" if failed else "PASSED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

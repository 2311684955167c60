"""GPT-OSS sliding-window layers with attention sinks, checked against PyTorch.

GQA with 64 query heads over 8 key/value heads, D 64, causal, a window of
128 keys including the diagonal (window_size=(127, 0)), and one learned
sink logit per head that joins the softmax denominator only
(sinks_mode="null_logit"). A prefill batch of ragged prompts, then a chunked
prefill where each sequence's new queries follow a cached prefix
(bottom-right alignment).

    python python/examples/gpt_oss_sinks.py     (exit status 1 on failure)
"""

import sys

import torch

import attnjit
from attnjit.reference import (lse_error, relative_error,
                               varlen_attention_reference)

HEADS_Q, HEADS_KV, HEAD_DIM = 64, 8, 64
WINDOW = (127, 0)
BOUND = 1e-2  # bf16 (docs/semantics.md)


def cu_seqlens(lengths, device):
    return torch.tensor([0] + torch.tensor(lengths).cumsum(0).tolist(),
                        dtype=torch.int32, device=device)


def run(name, lens_q, lens_k, sinks, device):
    q = torch.randn(sum(lens_q), HEADS_Q, HEAD_DIM, device=device,
                    dtype=torch.bfloat16)
    k = torch.randn(sum(lens_k), HEADS_KV, HEAD_DIM, device=device,
                    dtype=torch.bfloat16)
    v = torch.randn_like(k)
    cu_q, cu_k = cu_seqlens(lens_q, device), cu_seqlens(lens_k, device)
    mode = dict(causal=True, window_size=WINDOW, sinks=sinks,
                sinks_mode="null_logit")
    out, lse = attnjit.varlen_attention(q, k, v, cu_q, cu_k, max(lens_q),
                                        max(lens_k), return_lse=True, **mode)
    torch.cuda.synchronize()
    ref, ref_lse = varlen_attention_reference(q, k, v, cu_q, cu_k, **mode)
    error, lse_err = relative_error(out, ref), lse_error(lse, ref_lse)
    ok = error <= BOUND and lse_err <= 2e-2
    print(f"  {'PASS' if ok else 'FAIL'}  {name}: q {lens_q}, k {lens_k}: rel "
          f"err {error:.3e} (<= {BOUND:g}), lse max err {lse_err:.2e}")
    return ok


def main():
    if not torch.cuda.is_available():
        print("this example runs on a CUDA GPU; none is visible")
        return 1
    torch.manual_seed(0)
    device = torch.device("cuda")
    sinks = torch.rand(HEADS_Q, device=device) * 4 - 1  # uniform in [-1, 3]
    print(f"GPT-OSS sliding layers: Hq {HEADS_Q} / Hkv {HEADS_KV}, D {HEAD_DIM}, "
          f"causal, window 128 (window_size={WINDOW}), null-logit sinks, bf16")
    ok = run("prefill", [1000, 37, 513, 2048, 1], [1000, 37, 513, 2048, 1],
             sinks, device)
    ok &= run("chunked prefill", [64, 200, 1], [700, 200, 129], sinks, device)
    print(f"cache {attnjit.cache_stats()}")
    print("PASSED" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""MiMo-V2.5 vision window blocks with attnjit, checked against PyTorch.

Each image is one sequence of patches (varlen). A window block lets every
patch see 64 patches on each side (window_size=(64, 64), not causal) and
adds a learned per-head sink to the score of the image's first patch
(sinks_mode="bias_key0"). Under tensor parallelism each rank owns a slice
of the heads and the matching slice of the sinks; here two simulated ranks
run their slices on their own streams, and the concatenated result must
match the full-head reference.

    python python/examples/mimo_vision_window.py     (exit status 1 on failure)
"""

import sys
import time

import torch

import attnjit
from attnjit.reference import relative_error, varlen_attention_reference

HEADS, HEAD_DIM, RANKS = 16, 80, 2
PATCHES = [1024, 576, 196, 64, 1, 300]  # several images, varlen patch counts
BOUND = 1e-2                             # bf16 (docs/semantics.md)


def main():
    if not torch.cuda.is_available():
        print("this example runs on a CUDA GPU; none is visible")
        return 1
    torch.manual_seed(0)
    device = torch.device("cuda")
    total = sum(PATCHES)
    cu = torch.tensor([0] + torch.tensor(PATCHES).cumsum(0).tolist(),
                      dtype=torch.int32, device=device)
    longest = max(PATCHES)
    q, k, v = (torch.randn(total, HEADS, HEAD_DIM, device=device,
                           dtype=torch.bfloat16) for _ in range(3))
    sinks = torch.rand(HEADS, device=device) * 4 - 1  # uniform in [-1, 3]
    mode = dict(causal=False, window_size=(64, 64), sinks_mode="bias_key0")

    start = time.perf_counter()
    full = attnjit.varlen_attention(q, k, v, cu, cu, longest, longest,
                                    sinks=sinks, **mode)
    torch.cuda.synchronize()
    first_call = time.perf_counter() - start

    # Tensor parallelism: rank r owns heads [r*H/R, (r+1)*H/R) and their sinks.
    per_rank = HEADS // RANKS
    streams = [torch.cuda.Stream() for _ in range(RANKS)]
    outputs = []
    for rank, stream in enumerate(streams):
        heads = slice(rank * per_rank, (rank + 1) * per_rank)
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            outputs.append(attnjit.varlen_attention(
                q[:, heads], k[:, heads], v[:, heads], cu, cu, longest,
                longest, sinks=sinks[heads].contiguous(), **mode))
    torch.cuda.synchronize()
    tensor_parallel = torch.cat(outputs, dim=1)

    reference, _ = varlen_attention_reference(q, k, v, cu, cu, sinks=sinks,
                                              **mode)
    other_form, _ = varlen_attention_reference(
        q, k, v, cu, cu, sinks=sinks, causal=False, window_size=(64, 64),
        sinks_mode="null_logit")

    checks = [
        ("full heads vs reference", relative_error(full, reference), "<=", BOUND),
        (f"{RANKS} TP ranks, concatenated, vs reference",
         relative_error(tensor_parallel, reference), "<=", BOUND),
        ("TP ranks vs full heads", relative_error(tensor_parallel, full.float()),
         "<=", BOUND),
        ("full heads vs the null_logit form (must differ)",
         relative_error(full, other_form), ">", BOUND),
    ]
    print(f"MiMo-V2.5 vision window: {len(PATCHES)} images {PATCHES}, "
          f"H {HEADS}, D {HEAD_DIM}, window +-64, bias_key0 sinks, bf16")
    print(f"first call (compile or cache load + launch): {first_call * 1e3:.1f} ms; "
          f"cache {attnjit.cache_stats()}")
    failed = False
    for name, error, op, bound in checks:
        ok = error <= bound if op == "<=" else error > bound
        failed |= not ok
        print(f"  {'PASS' if ok else 'FAIL'}  {name}: rel err {error:.3e} "
              f"({op} {bound:g})")
    print("FAILED" if failed else "PASSED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

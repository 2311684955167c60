"""The HBM read bandwidth the decode benchmark (bench_decode.py) measures
its rows against: the best of torch's sum and a Triton streaming read of a
large bf16 tensor, timed with CUDA events.
"""

import os

import torch
import triton
import triton.language as tl

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"


def short_error(e):
    """An exception in one line: its type and the first 100 characters."""
    return f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:100]}"


@triton.jit
def _read_kernel(x_ptr, part_ptr, n, BLOCK: tl.constexpr):
    # Each program streams one block and leaves one partial sum.
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(part_ptr + tl.program_id(0), tl.sum(x.to(tl.float32), 0))


def read_sum(x, parts, block=8192):
    """The Triton streaming read of x (one partial sum per block into parts)."""
    _read_kernel[(parts.numel(),)](x, parts, x.numel(), BLOCK=block,
                                   num_warps=1 if INTERPRET else 8)
    return parts


def measure_read_bandwidth(gib=8, reps=10):
    """Best bytes/s of streaming reads of a bf16 tensor of `gib` GiB (halved
    until it fits): torch's sum and a Triton read kernel, each timed with
    CUDA events, best of `reps` after a warmup. Returns a dict."""
    x = None
    while x is None and gib >= 1:
        try:
            x = torch.ones(gib << 29, dtype=torch.bfloat16, device="cuda")
        except torch.cuda.OutOfMemoryError:
            gib //= 2
    if x is None:
        raise RuntimeError("no room for the bandwidth measurement")
    n = x.numel()
    block = 8192
    parts = torch.empty((n + block - 1) // block, dtype=torch.float32, device="cuda")
    methods = {"torch_sum": lambda: x.sum(dtype=torch.float32),
               "triton_read": lambda: read_sum(x, parts, block)}
    result = {"bytes": float(n * 2), "gib": gib, "reps": reps}
    for name, fn in methods.items():
        try:
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            best = float("inf")
            for _ in range(reps):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(
                    enable_timing=True)
                start.record()
                fn()
                end.record()
                end.synchronize()
                best = min(best, start.elapsed_time(end) * 1e-3)
            result[name] = n * 2 / best
        except Exception as e:  # one method failing leaves the other
            result[name] = None
            result[name + "_error"] = short_error(e)
    measured = [v for k, v in result.items() if k in methods and v]
    if not measured:
        raise RuntimeError(f"bandwidth measurement failed: {result}")
    result["best"] = max(measured)
    return result

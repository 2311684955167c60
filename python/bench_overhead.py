"""Host time per Python call: attnjit.varlen_attention vs torch SDPA.

A tiny problem, so that the GPU keeps up with the host and the time measured
is the host's: the wall time of a burst of calls (not waiting for the GPU),
divided by their number; the median over bursts. The GPU is synchronized
between bursts, outside the timing.

    python python/bench_overhead.py [--json overhead.json]

Rows: torch SDPA (the target: at most 0.9x its time), attnjit.varlen_attention eager,
the same under the custom op (torch.ops.attnjit.varlen_attention, the
torch.compile path, called eagerly), and the bare extension launch (the
floor: pointers already extracted); then paged_attention's decode launches
(bf16, window + sinks, e4m3 K/V). --profile TEXT adds a cProfile of the
cases whose names hold TEXT.
"""

import argparse
import json
import os
import statistics
import sys
import time

# Run as a script, this file's folder comes first on sys.path, and it holds
# the package's sources without the built extension: use the installed one.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import attnjit  # noqa: E402
from attnjit import _varlen  # noqa: E402

BURST, BURSTS, WARMUP = 200, 30, 50


def host_us_per_call(fn):
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(BURSTS):
        start = time.perf_counter()
        for _ in range(BURST):
            fn()
        samples.append((time.perf_counter() - start) / BURST * 1e6)
        torch.cuda.synchronize()
    return statistics.median(samples), min(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--seqlen", type=int, default=128)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--profile", metavar="TEXT",
                        help="also cProfile 2000 calls of each case whose name holds TEXT")
    args = parser.parse_args()
    n, h, d = args.seqlen, args.heads, args.head_dim
    device = torch.device("cuda")
    q = torch.randn(n, h, d, device=device, dtype=torch.bfloat16)
    k, v = torch.randn_like(q), torch.randn_like(q)
    cu = torch.tensor([0, n], dtype=torch.int32, device=device)
    q4, k4, v4 = (t.transpose(0, 1).unsqueeze(0) for t in (q, k, v))
    q4, k4, v4 = q4.contiguous(), k4.contiguous(), v4.contiguous()
    out = torch.empty_like(q)
    sinks = torch.zeros(h, device=device)

    # The bare launch: what remains once the tensors are taken apart, with
    # the arguments the eager call derives (its checked call's _Prepared).
    p, _ = _varlen._checked(q, k, v, cu, cu, n, n, None, (-1, -1), None, "none",
                            None, False, 0.0, False, out, causal=True)
    kernel = _varlen._kernel((p.flags, q.get_device()))
    raw_args = (q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), 0, 0,
                cu.data_ptr(), cu.data_ptr(), 0, 0) + p.mid + (n, n) + p.tail
    assert len(raw_args) == len(attnjit._C.LAUNCH_ARGS)
    stream = torch.cuda.current_stream().cuda_stream

    # Paged: one decode query per sequence over a small page-16 cache
    # (bf16 and e4m3), the launch an engine's decode step makes.
    seqs, page = 8, 16
    pages = seqs * -(-n // page)  # each sequence's n keys, its last page part-filled
    qd = torch.randn(seqs, h, d, device=device, dtype=torch.bfloat16)
    k_cache = torch.randn(pages, page, h, d, device=device, dtype=torch.bfloat16)
    v_cache = torch.randn_like(k_cache)
    table = torch.arange(pages, dtype=torch.int32, device=device).view(seqs, -1)
    cu_q = torch.arange(seqs + 1, dtype=torch.int32, device=device)
    used = torch.full((seqs,), n, dtype=torch.int32, device=device)
    fp8 = getattr(torch, "float8_e4m3fn", None)
    k8 = k_cache.to(fp8) if fp8 is not None else None
    v8 = v_cache.to(fp8) if fp8 is not None else None
    one = torch.ones(1, device=device)
    out_d = torch.empty_like(qd)

    cases = [
        ("torch SDPA (causal)",
         lambda: F.scaled_dot_product_attention(q4, k4, v4, is_causal=True)),
        ("attnjit.varlen_attention (causal)",
         lambda: attnjit.varlen_attention(q, k, v, cu, cu, n, n, causal=True)),
        ("attnjit.varlen_attention (causal, out=)",
         lambda: attnjit.varlen_attention(q, k, v, cu, cu, n, n, causal=True,
                                          out=out)),
        ("attnjit.varlen_attention (window + sinks)",
         lambda: attnjit.varlen_attention(q, k, v, cu, cu, n, n, causal=True,
                                          window_size=(63, 0), sinks=sinks,
                                          sinks_mode="null_logit")),
        ("torch.ops.attnjit.varlen_attention (custom op)",
         lambda: torch.ops.attnjit.varlen_attention(
             q, k, v, cu, cu, n, n, None, True, -1, -1, None, "none", None,
             False, 0.0, False, False)),
        ("attnjit._C launch (floor)",
         lambda: kernel.launch(*raw_args, stream)),
        ("attnjit.paged_attention (decode, page 16)",
         lambda: attnjit.paged_attention(qd, k_cache, v_cache, table, cu_q, used, 1, n,
                                         out=out_d)),
        ("attnjit.paged_attention (decode, window + sinks)",
         lambda: attnjit.paged_attention(qd, k_cache, v_cache, table, cu_q, used, 1, n,
                                         window_size=(63, 0), sinks=sinks,
                                         sinks_mode="null_logit", out=out_d)),
    ]
    if k8 is not None:
        cases.append(("attnjit.paged_attention (decode, e4m3 K/V)",
                      lambda: attnjit.paged_attention(qd, k8, v8, table, cu_q, used, 1, n,
                                                      k_scale=one, v_scale=one, out=out_d)))
    print(f"host time per call, tiny problem: 1 x {n} tokens, H {h}, D {d}, "
          f"bf16; median (min) of {BURSTS} bursts of {BURST} calls")
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"attnjit {attnjit.__version__}")
    results = []
    width = max(len(name) for name, _ in cases)
    for name, fn in cases:
        median, best = host_us_per_call(fn)
        results.append({"case": name, "median_us": median, "min_us": best})
        print(f"  {name:<{width}}  {median:7.2f} us  ({best:.2f})")
    if args.profile:
        import cProfile
        import pstats
        for name, fn in cases:
            if args.profile not in name:
                continue
            for _ in range(WARMUP):
                fn()
            torch.cuda.synchronize()
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(2000):
                fn()
            prof.disable()
            torch.cuda.synchronize()
            print(f"\ncProfile of 2000 calls: {name}")
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)
    sdpa = results[0]["median_us"]
    ours = results[1]["median_us"]
    verdict = "meets" if ours <= 0.9 * sdpa else "misses"
    print(f"attnjit eager {ours:.2f} us vs SDPA {sdpa:.2f} us ({ours / sdpa:.2f}x): "
          f"{verdict} the target (at most 0.9x SDPA's)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"problem": {"seqlen": n, "heads": h, "head_dim": d},
                       "burst": BURST, "bursts": BURSTS, "results": results},
                      f, indent=2)


if __name__ == "__main__":
    main()

"""Where a latency-bound paged row's time goes: for one problem of
bench_paged.py / bench_decode.py, each attnjit path timed three ways (the
benchmarks' timer, which clears L2 before every repetition; back-to-back
launches with L2 warm, host-bound wherever the host is slower than the
kernel; the host's own cost per call, with no GPU wait), and
the kernels one call launches with their GPU times (torch.profiler).

    python3 bench/latency_probe.py decode_gpt_oss_8x32k_window127_null
    python3 bench/latency_probe.py decode_gpt_oss_8x32k_window127_null --fp8

--fp8 first rounds K/V as bench_decode.py does and adds its e4m3 row.
"""

import argparse

import torch

import bench_paged as bp
import bench_attention as ba
import bench_decode as bd
from paged_problems import build_data, decode_problems, engine_problems


def warm_ms(fn, reps=200):
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps


def kernels(fn):
    fn()
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        fn()
        torch.cuda.synchronize()
    rows = []
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            rows.append((e.name[:90], e.time_range.elapsed_us()))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("problem")
    ap.add_argument("--fp8", action="store_true")
    args = ap.parse_args()
    probs = {p.name: p for p in decode_problems() + engine_problems()}
    pr = probs[args.problem]
    x = build_data(pr, "cuda")
    peers = {"attnjit_paged": bp.attnjit_paged_peer, "attnjit_contig": bp.attnjit_contig_peer}
    if args.fp8:
        bd.quantize_kv(x)
        peers[bd.FP8_PEER] = bd.attnjit_fp8_peer
    want = bp.reference(pr, x)
    print(f"{pr.name}: {pr.shape()}")
    for name, build in peers.items():
        run, packed, out, note = build(pr, x)
        err = bp.check_peer(run, packed, out, want)
        print(f"  {name:<18} timer {ba.time_ms(run) * 1e3:8.1f} us   back-to-back {warm_ms(run) * 1e3:8.1f} us"
              f"   host {bd.host_us(run, reps=200):6.1f} us/call   rel err {err:.1e}  ({note})")
        for kname, us in kernels(run):
            print(f"      {us:8.1f} us  {kname}")


if __name__ == "__main__":
    main()

"""Why one kernel times differently in two benchmarks: the same attnjit
launch timed the ways bench_attention.py (triton's do_bench: L2 cleared
before each repetition, median) and kernel_bench (events around single
launches, warm L2, median of 20) do, on independent and on correlated
inputs (k = q, as kernel_bench's inputs were before 966bfa2), with the
GPU's SM clock, power and temperature sampled by nvidia-smi every 100 ms
and summarized per phase.

  python3 bench/clock_probe.py [--only causal_long_d128,causal_gqa_d128] [--out F.json]

--sustained S runs each peer (attnjit, cuDNN, SDPA flash where they can
run the problem) alone, back to back, for S seconds after the others, and
reports its time per call over the second half with the median SM clock
and power of that half, and energy per call (power x time): under
sustained load the GPU holds its power limit, so energy per useful FLOP
is what decides the time.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import threading
import time

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_attention as ba  # noqa: E402
from problems import PROBLEMS  # noqa: E402


class Sampler:
    """nvidia-smi's SM clock (MHz), power (W) and temperature (C), 10 a second."""

    def __init__(self):
        self.rows = []
        self.proc = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu",
             "--format=csv,noheader,nounits", "-lms", "100"],
            stdout=subprocess.PIPE, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            try:  # the sample's own time (local, as time.time() reads it)
                stamp, clock, power, temp = (x.strip() for x in line.split(","))
                when = datetime.datetime.strptime(stamp, "%Y/%m/%d %H:%M:%S.%f").timestamp()
                self.rows.append((when, float(clock), float(power), float(temp)))
            except ValueError:
                continue

    def between(self, t0, t1):
        got = [r for r in self.rows if t0 <= r[0] <= t1]
        if not got:
            return {}
        return {"samples": len(got), "sm_mhz": statistics.median(r[1] for r in got),
                "power_w": statistics.median(r[2] for r in got),
                "temp_c": max(r[3] for r in got)}

    def stop(self):
        self.proc.terminate()


def single_launches(fn, n=20):
    """kernel_bench's way: events around each launch, synchronized, median
    (the host's time between the first event and the launch included)."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(n):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1))
    return statistics.median(times)


def sustained(pr, q, k, v, cu, sinks, ranges, spans, sampler, seconds):
    """Each peer alone, back to back for `seconds`; its time per call (CUDA
    events around the second half's calls, over their count), and the SM
    clock and power sampled in that half."""
    name, batch, seqlen, hq, hkv, d = pr[:6]
    q4, k4, v4 = (ba.to_bhsd(x, batch, seqlen) for x in (q, k, v))
    out = torch.empty_like(q)
    fns = {"attnjit": lambda: ba.attnjit_call(pr, q, k, v, cu, sinks, ranges, seqlen, out=out)}
    for peer in ("cudnn", "flash"):
        fn = ba.sdpa_peer(pr, q4, k4, v4, peer)
        if fn is not None:
            fns["sdpa_" + peer] = fn
    flops = 4.0 * ba.useful_pairs(seqlen, pr[6], pr[7], spans) * batch * d * hq
    rows = []
    for peer, fn in fns.items():
        try:
            fn()
            torch.cuda.synchronize()
        except Exception as e:
            print(f"{name:<18} {peer:<12} failed: {type(e).__name__}: {e}", flush=True)
            continue
        start = time.time()
        while time.time() - start < seconds / 2:  # the first half: reach the steady state
            for _ in range(16):
                fn()
            torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.time()
        calls = 0
        e0.record()
        while time.time() - t0 < seconds / 2:
            for _ in range(16):  # (a synchronize every 16 calls: the queue stays short)
                fn()
            calls += 16
            torch.cuda.synchronize()
        e1.record()
        e1.synchronize()
        t1 = time.time()
        ms = e0.elapsed_time(e1) / calls
        row = {"problem": name, "phase": f"sustained {peer}", "peer": peer, "ms": ms,
               "calls": calls, "tflops": flops / (ms * 1e-3) / 1e12, **sampler.between(t0, t1)}
        if "power_w" in row:
            row["joules_per_call"] = row["power_w"] * ms * 1e-3
            row["gflop_per_joule"] = flops / 1e9 / row["joules_per_call"]
        rows.append(row)
        print(f"{name:<18} {peer:<12} {ms:8.3f} ms {row['tflops']:6.0f} TF  "
              f"{row.get('sm_mhz', float('nan')):6.0f} MHz  {row.get('power_w', float('nan')):5.0f} W  "
              f"{row.get('gflop_per_joule', float('nan')):6.0f} GFLOP/J  ({row.get('samples', 0)} samples)",
              flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="causal_long_d128,causal_gqa_d128")
    ap.add_argument("--out", default=None)
    ap.add_argument("--sustained", type=float, default=0.0,
                    help="seconds of back-to-back calls per peer (0: the timing-method phases)")
    args = ap.parse_args()
    sampler = Sampler()
    time.sleep(0.5)
    results = []
    for pr in PROBLEMS:
        name, batch, seqlen, hq, hkv, d, causal, window, sinks_mode, spans = pr
        if name not in args.only.split(","):
            continue
        span_list = ba.image_spans(seqlen) if spans else []
        q, k, v, cu, sinks, ranges = ba.make_inputs(batch, seqlen, hq, hkv, d, span_list)
        # correlated: kv head j's keys are the rows of its group's first query head
        if args.sustained > 0:
            results += sustained(pr, q, k, v, cu, sinks, ranges, span_list, sampler,
                                 args.sustained)
            continue
        kq = q.view(-1, hkv, hq // hkv, d)[:, :, 0].contiguous()
        phases = [("do_bench, independent", lambda: ba.time_ms(
                       lambda: ba.attnjit_call(pr, q, k, v, cu, sinks, ranges, seqlen))),
                  ("single launches, independent", lambda: single_launches(
                       lambda: ba.attnjit_call(pr, q, k, v, cu, sinks, ranges, seqlen))),
                  ("do_bench, k = q", lambda: ba.time_ms(
                       lambda: ba.attnjit_call(pr, q, kq, v, cu, sinks, ranges, seqlen))),
                  ("single launches, k = q", lambda: single_launches(
                       lambda: ba.attnjit_call(pr, q, kq, v, cu, sinks, ranges, seqlen))),
                  ("do_bench, independent, again", lambda: ba.time_ms(
                       lambda: ba.attnjit_call(pr, q, k, v, cu, sinks, ranges, seqlen)))]
        for label, run in phases:
            t0 = time.time()
            try:
                ms = run()
            except Exception as e:  # a phase that cannot run: reported, not timed
                print(f"{name:<18} {label:<30} failed: {type(e).__name__}: {e}", flush=True)
                continue
            t1 = time.time()
            if ms is None:
                continue
            row = {"problem": name, "phase": label, "ms": ms, **sampler.between(t0, t1)}
            results.append(row)
            print(f"{name:<18} {label:<30} {ms:8.3f} ms  "
                  f"{row.get('sm_mhz', float('nan')):6.0f} MHz  "
                  f"{row.get('power_w', float('nan')):5.0f} W  "
                  f"{row.get('temp_c', float('nan')):3.0f} C  ({row.get('samples', 0)} samples)",
                  flush=True)
    sampler.stop()
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"date": datetime.date.today().isoformat(),
                       "commit": os.environ.get("ATTNJIT_COMMIT", "unknown"),
                       "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "triton": triton.__version__, "rows": results}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

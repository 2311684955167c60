#!/usr/bin/env python3
"""attnjit against its peers on the benchmark problems (docs/device.md), side
by side in one run.

For each problem: median time (triton.testing.do_bench, L2 cleared before
each repetition; the median of three rounds in which the peers take turns,
after 1.5 s of untimed calls of them all, as the GPU's clock under
sustained load is lower than from idle), useful TFLOP/s
(4 * unmasked pairs * D, pairs counted exactly), the memory floor (q, k, v
read once and o written once at the measured copy bandwidth), and attnjit's
relative error against the fp32 PyTorch reference on a reduced instance of
the same problem (one sequence of at most 2048 tokens, every head, fresh
inputs, output poisoned with NaN first). Peers: PyTorch SDPA (flash and
cuDNN backends) where the mask is expressible, and FlexAttention (compiled;
Triton-generated), and a hand-written Triton kernel (bench/triton_peer.py,
not for spans), and FlashAttention-4 where it is importable (bench/peer_fa4.py:
its varlen entry; not for the key-0 bias or spans; its output checked
against the reference like attnjit's). Prints a table; writes JSON (--out)
and, where matplotlib is installed, the chart of bench/plot_results.py
beside it (.png).

    python3 bench/bench_attention.py --out bench/results/DATE-h200-COMMIT.json
"""

import argparse
import datetime
import json
import os
import statistics
import sys
import time

import torch
import triton.testing

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# Steady-state numbers are the specialized variants'. With tiering on
# (docs/tiers.md) a new variant's launches run its generic variant until the
# specialized one has compiled, about a second: a timing loop of 100 ms would
# measure the generic one. The benchmarks turn tiering off unless asked, and
# record how many launches the generic tier answered (steady_state_check).
os.environ.setdefault("ATTNJIT_TIERED", "0")
from plot_results import write_chart_beside  # noqa: E402
from flex_compile import compiled_flex  # noqa: E402
from peer_fa4 import fa4_call, fa4_version  # noqa: E402
from problems import PROBLEMS  # noqa: E402
from triton_peer import triton_peer  # noqa: E402

import attnjit  # noqa: E402  (pip install ./python, or PYTHONPATH=<build>/python)
from attnjit.reference import varlen_attention_reference, relative_error  # noqa: E402

COPY_BW = 4.24e12    # bytes/s, measured device copy (docs/device.md)
MATMUL = 793e12      # bf16 FLOP/s, measured matmul (docs/device.md)
ROUNDS = 3           # interleaved rounds of every peer (time_in_rounds)
HEAT_S = 1.5         # seconds of untimed calls before a problem's rounds (heat)


def image_spans(seqlen):
    """Image spans of the Gemma-4 problem (same as bench/problems.h)."""
    spans, start = [], 1024
    while start + 1280 <= seqlen:
        spans.append((start, start + 1279))
        start += 2048
    return spans


def useful_pairs(seqlen, causal, window, spans):
    p = torch.arange(seqlen, dtype=torch.int64)

    def clip_to_window(lo, hi):
        if window[0] >= 0:
            lo = torch.maximum(lo, p - window[0])
        if window[1] >= 0:
            hi = torch.minimum(hi, p + window[1])
        return lo, hi

    hi = torch.full_like(p, seqlen - 1)
    if causal:
        hi = torch.minimum(hi, p)
    lo, hi = clip_to_window(torch.zeros_like(p), hi)
    count = (hi - lo + 1).clamp(min=0)
    for r0, r1 in spans:
        # A span is bounded by the left window alone (docs/semantics.md).
        inside = (p >= r0) & (p <= r1)
        s_lo = torch.full_like(p, r0)
        if window[0] >= 0:
            s_lo = torch.maximum(s_lo, p - window[0])
        s_hi = torch.full_like(p, r1)
        span_len = (s_hi - s_lo + 1).clamp(min=0)
        overlap = (torch.minimum(s_hi, hi) - torch.maximum(s_lo, lo) + 1).clamp(min=0)
        count += torch.where(inside, span_len - overlap, 0)
    return int(count.sum())


def make_inputs(batch, seqlen, hq, hkv, d, spans, device="cuda"):
    total = batch * seqlen
    q = torch.randn(total, hq, d, device=device, dtype=torch.bfloat16)
    k = torch.randn(total, hkv, d, device=device, dtype=torch.bfloat16)
    v = torch.randn(total, hkv, d, device=device, dtype=torch.bfloat16)
    cu = torch.arange(0, total + 1, seqlen, device=device, dtype=torch.int32)
    sinks = torch.rand(hq, device=device, dtype=torch.float32) * 4 - 1
    ranges = None
    if spans:
        ranges = torch.tensor([[b, r0, r1] for b in range(batch) for r0, r1 in spans],
                              device=device, dtype=torch.int32)
    return q, k, v, cu, sinks, ranges


def to_bhsd(x, batch, seqlen):
    """[batch * seqlen, heads, d] (attnjit's varlen layout) as a contiguous
    [batch, heads, seqlen, d] (SDPA's and FlexAttention's)."""
    return x.view(batch, seqlen, x.shape[1], x.shape[2]).transpose(1, 2).contiguous()


def attnjit_call(pr, q, k, v, cu, sinks, ranges, seqlen, out=None):
    _, _, _, _, _, _, causal, window, sinks_mode, use_spans = pr
    return attnjit.varlen_attention(
        q, k, v, cu, cu, seqlen, seqlen, causal=causal, window_size=window,
        sinks=sinks if sinks_mode != "none" else None, sinks_mode=sinks_mode,
        mm_prefix_ranges=ranges if use_spans else None,
        mm_prefix_clamp=use_spans, out=out)


def check_error(pr):
    """attnjit, and FA4 where it runs the problem, against the fp32 reference
    on one sequence of <= 2048 tokens (the output poisoned first): (attnjit's
    relative error, FA4's or None)."""
    name, _, seqlen, hq, hkv, d, causal, window, sinks_mode, use_spans = pr
    n = min(seqlen, 2048)
    spans = [(a, b) for a, b in image_spans(n)] if use_spans else []
    if use_spans and not spans:
        spans = [(256, 1535)]
    q, k, v, cu, sinks, ranges = make_inputs(1, n, hq, hkv, d, spans)
    out = torch.full_like(q, float("nan"))
    attnjit_call(pr, q, k, v, cu, sinks, ranges, n, out=out)
    ref, _ = varlen_attention_reference(
        q.float(), k.float(), v.float(), cu, cu, causal=causal, window_size=window,
        sinks=sinks if sinks_mode != "none" else None, sinks_mode=sinks_mode,
        mm_prefix_ranges=ranges, mm_prefix_clamp=use_spans)
    fa4_err = None
    fa4, _ = fa4_call(pr, q, k, v, cu, sinks, n)
    if fa4 is not None:
        try:
            fa4_err = float(relative_error(fa4().float(), ref))
        except Exception as e:  # its column says why it has no time either
            print(f"    (fa4 check: {type(e).__name__}: {str(e).splitlines()[0][:100]})")
    return float(relative_error(out.float(), ref)), fa4_err


def flex_peer(pr, q4, k4, v4, sinks, spans):
    from torch.nn.attention.flex_attention import create_block_mask
    name, batch, seqlen, hq, hkv, d, causal, window, sinks_mode, use_spans = pr
    wl, wr = window
    image = torch.full((seqlen,), -1, dtype=torch.int32, device="cuda")
    for i, (r0, r1) in enumerate(spans):
        image[r0:r1 + 1] = i

    def in_window(q_idx, kv_idx):
        ok = q_idx >= 0
        if wl >= 0:
            ok = ok & (q_idx - kv_idx <= wl)
        if wr >= 0:
            ok = ok & (kv_idx - q_idx <= wr)
        return ok

    def mask_mod(b, h, q_idx, kv_idx):
        base = in_window(q_idx, kv_idx)
        if causal:
            base = base & (kv_idx <= q_idx)
        if use_spans:  # Gemma-4: (causal or same image) and q - k < W_left + 1
            same = (image[q_idx] >= 0) & (image[q_idx] == image[kv_idx])
            left = (q_idx - kv_idx <= wl) if wl >= 0 else (q_idx >= 0)
            base = base | (same & left)
        return base

    block_mask = create_block_mask(mask_mod, None, None, seqlen, seqlen, device="cuda")
    score_mod = None
    if sinks_mode == "bias_key0":
        def score_mod(score, b, h, q_idx, kv_idx):
            return torch.where(kv_idx == 0, score + sinks[h], score)
    flex = compiled_flex()
    gqa = hq != hkv

    if sinks_mode == "null_logit":
        sink_col = sinks.view(1, hq, 1)

        def run():
            o, lse = flex(q4, k4, v4, block_mask=block_mask, enable_gqa=gqa, return_lse=True)
            return o * torch.sigmoid(lse - sink_col).unsqueeze(-1).to(o.dtype)
    else:
        def run():
            return flex(q4, k4, v4, block_mask=block_mask, score_mod=score_mod, enable_gqa=gqa)
    return run


def sdpa_peer(pr, q4, k4, v4, backend):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    name, batch, seqlen, hq, hkv, d, causal, window, sinks_mode, use_spans = pr
    if window != (-1, -1) or sinks_mode != "none" or use_spans:
        return None
    be = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}[backend]
    gqa = hq != hkv
    if backend == "cudnn" and gqa:
        k4 = k4.repeat_interleave(hq // hkv, dim=1)
        v4 = v4.repeat_interleave(hq // hkv, dim=1)
        gqa = False

    def run():
        with sdpa_kernel(be):
            return torch.nn.functional.scaled_dot_product_attention(
                q4, k4, v4, is_causal=causal, enable_gqa=gqa)
    return run


def generic_launches(module):
    """Launches the generic tier has answered in this process (None without
    the compiled extension)."""
    try:
        return int(module.cache_stats()["generic_launches"])
    except Exception:
        return None


def steady_state_check(module, result):
    """Records the generic tier's launch count in result and says so when it
    is not zero: the times then mix generic and specialized variants."""
    n = generic_launches(module)
    result["generic_launches"] = n
    result["tiered"] = os.environ.get("ATTNJIT_TIERED", "")
    if n:
        print(f"WARNING: the generic tier answered {n} launches "
              f"(ATTNJIT_TIERED={result['tiered']}): attnjit times are not all "
              "the specialized variants'")


def time_ms(fn, rep=100):
    try:
        fn()
        torch.cuda.synchronize()
        return triton.testing.do_bench(fn, warmup=25, rep=rep, return_mode="median")
    except Exception as e:  # a peer that cannot run this problem
        print(f"    ({type(e).__name__}: {str(e).splitlines()[0][:100]})")
        return None


def heat(fns, seconds=HEAT_S):
    """Untimed calls of every peer in turn for `seconds`. From idle the GPU
    runs its first dense attention at a higher clock than it holds under
    sustained load (H200, 68b93e2: attnjit's full D80 read 0.702, 0.761 and
    0.857 ms in three rounds where it went first after an idle GPU, cuDNN's
    0.863, 0.857, 0.868), so a peer timed first would get a clock the
    others do not."""
    names = [p for p, fn in fns.items() if fn is not None]
    for p in list(names):  # first calls (torch.compile, Triton's JIT) before the clock
        try:
            fns[p]()
        except Exception:  # time_ms reports it
            names.remove(p)
    torch.cuda.synchronize()
    end = time.perf_counter() + seconds
    while names and time.perf_counter() < end:
        for p in list(names):
            try:
                fns[p]()
            except Exception:  # time_ms reports it
                names.remove(p)
        torch.cuda.synchronize()


def time_in_rounds(fns, rounds=ROUNDS):
    """Each peer's median time in each of `rounds` rounds, after `heat`,
    the peers taking turns within a round and each round starting one peer
    later, so that none is always timed first or last. A peer whose call
    fails in any round has no time."""
    heat(fns)
    names = [p for p, fn in fns.items() if fn is not None]
    out = {p: [] for p in fns}
    for r in range(rounds):
        for i in range(len(names)):
            p = names[(i + r) % len(names)]
            if out[p] is None:
                continue
            t = time_ms(fns[p], rep=60)
            if t is None:
                out[p] = None
            else:
                out[p].append(t)
    return {p: (ts or None) for p, ts in out.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--commit", default=os.environ.get("ATTNJIT_COMMIT", "unknown"))
    ap.add_argument("--only", default=None, help="comma-separated problem names")
    args = ap.parse_args()
    torch.manual_seed(0)
    rows = []
    for pr in PROBLEMS:
        name, batch, seqlen, hq, hkv, d, causal, window, sinks_mode, use_spans = pr
        if args.only and name not in args.only.split(","):
            continue
        spans = image_spans(seqlen) if use_spans else []
        q, k, v, cu, sinks, ranges = make_inputs(batch, seqlen, hq, hkv, d, spans)
        pairs = useful_pairs(seqlen, causal, window, spans) * batch
        flops = 4.0 * pairs * d * hq
        bytes_ = 2.0 * (2 * q.numel() + k.numel() + v.numel())
        floor_ms = max(bytes_ / COPY_BW, flops / MATMUL) * 1e3
        out = torch.empty_like(q)
        fns = {"attnjit": lambda: attnjit_call(pr, q, k, v, cu, sinks, ranges, seqlen, out=out)}
        q4, k4, v4 = (to_bhsd(x, batch, seqlen) for x in (q, k, v))
        for peer in ("flash", "cudnn"):
            fns["sdpa_" + peer] = sdpa_peer(pr, q4, k4, v4, peer)
        try:
            fns["flex"] = flex_peer(pr, q4, k4, v4, sinks, spans)
        except Exception as e:
            print(f"    (flex: {type(e).__name__}: {str(e).splitlines()[0][:100]})")
            fns["flex"] = None
        fns["triton"] = triton_peer(pr, q, k, v, sinks)
        fns["fa4"], fa4_why = fa4_call(pr, q, k, v, cu, sinks, seqlen)
        if fa4_why:
            print(f"    (fa4: {fa4_why})")
        err, fa4_err = check_error(pr)
        if fa4_err is not None and not fa4_err <= 2e-2:
            print(f"    (fa4: its output is off the reference, rel err {fa4_err:.2e}: no time)")
            fns["fa4"] = None
        rounds = time_in_rounds(fns)
        times = {p: (statistics.median(ts) if ts else None) for p, ts in rounds.items()}
        row = {"problem": name, "shape": f"{batch}x{seqlen} Hq{hq}/Hkv{hkv} D{d}",
               "useful_pairs": pairs, "useful_flops": flops, "bytes": bytes_,
               "floor_ms": floor_ms, "attnjit_rel_err": err, "fa4_rel_err": fa4_err,
               "fa4_missing": fa4_why, "ms": times, "ms_rounds": rounds,
               "tflops": {k_: (flops / (t * 1e-3) / 1e12 if t else None) for k_, t in times.items()}}
        rows.append(row)
        del q, k, v, q4, k4, v4, out
        torch.cuda.empty_cache()

    peers = ["attnjit", "sdpa_flash", "sdpa_cudnn", "flex", "triton", "fa4"]
    print(f"\n{'problem':<25}" + "".join(f"{p:>19}" for p in peers) + f"{'floor ms':>10}{'x floor':>9}{'err':>10}")
    for r in rows:
        cells = []
        for p in peers:
            t = r["ms"][p]
            cells.append(f"{'-':>19}" if t is None else f"{t:8.3f}ms {r['tflops'][p]:5.0f}TF ")
        ours = r["ms"]["attnjit"]
        print(f"{r['problem']:<25}" + "".join(cells) + f"{r['floor_ms']:10.3f}{ours / r['floor_ms']:9.2f}{r['attnjit_rel_err']:10.2e}")
    result = {"date": datetime.date.today().isoformat(), "gpu": torch.cuda.get_device_name(),
              "commit": args.commit, "torch": torch.__version__, "triton": triton.__version__,
              "fa4": fa4_version(), "copy_bw": COPY_BW, "matmul_flops": MATMUL,
              "problems": rows}
    steady_state_check(attnjit, result)
    if args.out:
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)
        print("wrote", args.out)
        write_chart_beside(result, args.out)  # the PNG beside it, with matplotlib


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""bench_decode.py's CPU self-test (`python3 bench/bench_decode_selftest.py`): the K/V byte counts against brute force, the
Triton peer's split counts, the verdicts and issue targets on made-up rows,
the e4m3 rounding of quantize_kv, and the peers that run without a GPU
(SDPA's math path, eager FlexAttention, and with TRITON_INTERPRET=1 the
Triton kernels) on small decodes against the reference.
"""

import json
import math
import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_decode import (BANDWIDTH_BOUND_US, ELEM, FP8_PEER,  # noqa: E402
                          GPT_OSS_TARGET_MS, PEERS, bench_problem, bp, build_data,
                          decode_problem, issue_problems, issue_targets, kv_bytes,
                          head_major, peer_kv_bytes, print_rows, print_sweep_grid,
                          print_targets, quantize_kv, sweep_problems,
                          triton_contig_peer,
                          triton_paged_peer, verdicts)
import bench_paged_selftest as bps  # noqa: E402
from paged_problems import Problem  # noqa: E402
from read_bandwidth import read_sum  # noqa: E402
from triton_peer import interpreting  # noqa: E402


def cpu_builders(interpret):
    """The self-test's: SDPA's math path, eager FlexAttention, the Triton
    kernel in the interpreter; attnjit needs a GPU."""
    builders = {"sdpa_cudnn": lambda pr, x: bp.sdpa_peer(pr, x, backend=None),
                "sdpa_cudnn_nhd": lambda pr, x: bp.sdpa_peer(pr, x, backend=None,
                                                             token_major=True),
                "flex": lambda pr, x: bp.flex_peer(pr, x, compile=False)}
    if interpret:
        builders["triton_splitkv_paged"] = triton_paged_peer
        builders["triton_splitkv_contig"] = triton_contig_peer
    return builders



def self_test():
    import warnings
    warnings.filterwarnings("ignore")  # eager FlexAttention's advice to compile it
    from triton_decode_peer import choose_splits
    expect = bps.Checks()

    print("K/V bytes against brute force:")
    bad = 0
    for n_k in (1, 5, 40, 130):
        for window in ((-1, -1), (0, 0), (3, 0), (127, 0), (9, 4), (-1, 2)):
            for nq in (1, 3):
                pr = Problem("t", "decode", [nq, nq], [n_k, n_k + 7], 8, 2, 64, window=window)
                keys = sum(bps._brute_counts(nq, nk, True, window, (), True)[1]
                           for nk in pr.n_k)
                bad += kv_bytes(pr) != 2 * ELEM * keys * 2 * 64
    expect(bad == 0, "every key some query sees, once per kv head")
    issue = {p.name: p for p in issue_problems()}
    expect(kv_bytes(issue["decode_8x32k_d64"]) == 2 * 2 * 8 * 32768 * 8 * 64,
           "8 x 32768 64/8 D64: 537 MB")
    expect(kv_bytes(issue["decode_gpt_oss_8x32k_window127_null"]) == 2 * 2 * 8 * 128 * 8 * 64,
           "GPT-OSS: 128 keys per sequence")
    sweep, skipped = sweep_problems()
    expect(len(sweep) == 24 and [n for n, _ in skipped] == ["sweep_b256_k131072"],
           f"sweep: 24 points, 256 x 131072 skipped ({skipped[0][1]})")

    print("the Triton peer's split counts at 132 SMs (its docstring's examples):")
    full = (-1, -1)
    for b, keys, window, want in ((8, 32768, full, 9), (64, 8192, full, 2), (256, 2048, full, 1),
                                  (1, 131072, full, 64), (8, 32768, (127, 0), 1)):
        got = choose_splits(b, 8, 1, keys, True, window, 132)
        expect(got == want, f"batch {b}, {keys} keys, window {window}: splits {got}")

    print("verdicts:")
    read_bw = 4.0e12

    def fake_row(size, times, group="sweep"):
        row = {"problem": "p", "group": group, "kv_bytes": size,
               "kv_read_us": size / read_bw * 1e6, "ms": dict(times), "notes": {},
               "pct_read_bw": {}, "gbs": {}, "rel_err": {}, "beat_cudnn": False,
               "target_ms": None}
        row["regime"] = "bandwidth" if row["kv_read_us"] >= BANDWIDTH_BOUND_US else "latency"
        for p, t in times.items():
            if t:
                row["pct_read_bw"][p] = 100.0 * size / (t * 1e-3) / read_bw
        row["verdicts"] = verdicts(row)
        return row

    big = fake_row(4e9, {"attnjit_contig": 1.1, "attnjit_paged": 1.25, "sdpa_cudnn": 1.0})
    expect(big["regime"] == "bandwidth" and big["verdicts"]["attnjit_contig"]["met"]
           and big["verdicts"]["attnjit_paged"]["met"] is False,
           "4 GB: 91% met, 80% missed")
    small = fake_row(4e7, {"attnjit_contig": 0.014, "attnjit_paged": 0.016, "sdpa_cudnn": 0.01})
    expect(small["regime"] == "latency" and small["verdicts"]["attnjit_contig"]["met"]
           and small["verdicts"]["attnjit_paged"]["met"] is False,
           "40 MB: +4 us met, +6 us missed")
    none = fake_row(4e7, {"attnjit_contig": 0.014, "sdpa_cudnn": None})
    expect(none["verdicts"]["attnjit_contig"]["met"] is None, "no cuDNN time: not measured")
    t = issue_targets([big, small], quick=False)
    expect(len(t) == 1 and t[0]["state"] == "MISSED", f"sweep target: {t[0]['detail']}")
    issue_row = fake_row(5e8, {"attnjit_contig": 0.13, "attnjit_paged": 0.15,
                               "sdpa_cudnn": 0.14}, group="issue")
    issue_row["beat_cudnn"] = True
    gpt = fake_row(2e6, {"attnjit_paged": 0.02}, group="issue")
    gpt["target_ms"] = 0.03
    states = [x["state"] for x in issue_targets([issue_row, gpt], quick=False)]
    expect(states == ["MET", "MISSED", "MET"], f"issue targets: {states}")
    fp8_row = fake_row(5e8, {"attnjit_contig": 0.13, "attnjit_paged": 0.15,
                             FP8_PEER: 0.09, "sdpa_cudnn": 0.14}, group="issue")
    fp8_row["beat_cudnn"] = True
    fp8_targets = [x for x in issue_targets([fp8_row], quick=False) if "e4m3" in x["target"]]
    expect(len(fp8_targets) == 1 and fp8_targets[0]["state"] == "MISSED",
           f"e4m3 target at 0.60x: {fp8_targets[0]['detail'] if fp8_targets else 'absent'}")
    expect(peer_kv_bytes(4e8, FP8_PEER) == 2e8 and peer_kv_bytes(4e8, "attnjit_paged") == 4e8,
           "e4m3 rows read half the bytes")

    print("e4m3 K/V (quantize_kv):")
    pr = decode_problem("decode_fp8_small", 3, 70, 8, 2, 64)
    x = build_data(pr, "cpu")
    k_before = x.k.float().clone()
    quantize_kv(x)
    seq = torch.repeat_interleave(torch.arange(pr.batch), torch.tensor(pr.n_k))
    pos = torch.arange(sum(pr.n_k)) - x.cu_k.long()[seq]
    page = x.table[seq, pos // pr.page_size].long()
    expect(torch.equal(x.k_cache[page, pos % pr.page_size], x.k)
           and torch.equal(x.v_cache[page, pos % pr.page_size], x.v),
           "the paged and contiguous copies hold the same rounded values")
    decoded = x.k_cache8.to(torch.float32) * float(x.k_scale)
    used = ~torch.isnan(x.k_cache.float())
    expect(torch.equal(decoded[used], x.k_cache.float()[used]),
           "the bf16 pool is the e4m3 pool times its scale, exactly")
    scale = float(x.k_scale)
    expect(math.log2(scale) == round(math.log2(scale)) and
           float(x.k.float().abs().max()) <= 448 * scale,
           f"a power-of-two scale ({scale}) within e4m3's range")
    rel = float((x.k.float() - k_before).norm() / k_before.norm())
    expect(0 < rel < 0.05, f"rounding error {rel:.3f} (e4m3: 3 mantissa bits)")

    print("head-major storage (the _hnd peers):")
    t = torch.randn(5, 3, 4, 8)
    h = head_major(t, 2)
    expect(torch.equal(h, t) and h.stride() == (96, 8, 24, 1),
           f"[pages, page, heads, D] values, stored [pages, heads, page, D]: strides {h.stride()}")
    h = head_major(t[0], 1)
    expect(torch.equal(h, t[0]) and h.stride() == (8, 24, 1),
           f"[tokens, heads, D] values, stored [heads, tokens, D]: strides {h.stride()}")

    print("the peers on small decodes (CPU, fp32; times are placeholders):")
    interpret = interpreting()
    torch.manual_seed(0)
    small_probs = [
        decode_problem("decode_small", 3, 70, 8, 2, 64),
        decode_problem("decode_gpt_oss_small", 2, 300, 16, 2, 64, window=(31, 0),
                       sinks="null_logit", target_ms=GPT_OSS_TARGET_MS),
        decode_problem("decode_d128_small", 2, 200, 8, 8, 128, beat_cudnn=True),
    ]
    varlen = Problem("decode_varlen_key0_small", "decode", [1] * 3, [70, 33, 100], 4, 1, 80,
                     sinks="bias_key0", page_size=16, group="issue")
    small_probs.append(varlen)
    small_probs += sweep_problems([(2, 48)])[0]
    builders = cpu_builders(interpret)
    rows = []
    for pr in small_probs:
        peers = [p for p in PEERS if p in builders]
        rows.append(bench_problem(pr, peers, read_bw, builders, device="cpu",
                                  timer=lambda run: (run(), 0.01)[1], dtype=torch.float32))
    errs = [(r["problem"], p, e) for r in rows for p, e in r["rel_err"].items()]
    expect(errs and all(e <= 1e-5 for _, _, e in errs),
           f"{len(errs)} checked rows within 1e-5 of the reference")
    expected_rows = sum(1 + 2 * (pr.window == (-1, -1) and pr.sinks == "none")
                        + (2 if interpret else 0) for pr in small_probs)
    expect(len(errs) == expected_rows, f"every peer ran ({len(errs)} of {expected_rows})")
    print_rows(rows, PEERS)
    print_sweep_grid(rows, PEERS)
    targets = issue_targets(rows, quick=False)
    print_targets(targets)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "decode.json")
        with open(path, "w") as f:
            json.dump({"problems": rows, "targets": targets}, f)
        with open(path) as f:
            expect(len(json.load(f)["problems"]) == len(rows), "rows go through JSON")
    if interpret:
        x = torch.randn(3 * 1024 + 5, dtype=torch.float16)
        parts = read_sum(x, torch.empty(4, dtype=torch.float32), block=1024)
        expect(abs(float(parts.sum()) - float(x.float().sum())) < 1e-2,
               "the bandwidth measurement's read kernel sums every element once")
    else:
        print("  (the Triton kernels run here with TRITON_INTERPRET=1)")
    print("self-test", "passed" if expect.ok else "FAILED")
    return 0 if expect.ok else 1


if __name__ == "__main__":
    sys.exit(self_test())

#!/usr/bin/env python3
"""bench_paged.py's CPU self-test: the useful pairs and needed keys against
brute force, the problems' construction (a page pool gathers back to the
contiguous tensors exactly), and the peers that run without a GPU (SDPA's
math path, eager FlexAttention, and with TRITON_INTERPRET=1 the Triton
kernel) on small problems against the reference.

    python3 bench/bench_paged_selftest.py
    TRITON_INTERPRET=1 python3 bench/bench_paged_selftest.py  # + the Triton kernel
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# (bench_paged first: it makes attnjit importable without its extension.)
from bench_paged import (ba, check_peer, flex_peer, reference, sdpa_peer,  # noqa: E402
                         triton_paged_peer)
from attnjit.reference import relative_error, varlen_attention_reference  # noqa: E402
from paged_problems import (Problem, build_data, engine_problems, paged_of,  # noqa: E402
                            problem_counts, quick_problems, sequence_counts)
from problems import PROBLEMS  # noqa: E402
from triton_paged_peer import gather_pages  # noqa: E402
from triton_peer import interpreting  # noqa: E402


def _brute_counts(n_q, n_k, causal, window, spans, clamp):
    """Pairs and needed keys by enumerating every (query, key) pair."""
    wl, wr = window
    pairs, seen = 0, set()
    for i in range(n_q):
        p = n_k - n_q + i
        for j in range(n_k):
            in_window = (wl < 0 or p - j <= wl) and (wr < 0 or j - p <= wr)
            ok = in_window and (j <= p or not causal)
            for r0, r1 in spans:
                in_left = wl < 0 or p - j <= wl
                if r0 <= p <= r1 and r0 <= j <= r1 and (in_left or not clamp):
                    ok = True
            if ok:
                pairs += 1
                seen.add(j)
    return pairs, len(seen)


class Checks:
    """A self-test's checks: expect(cond, what) prints each as ok or FAIL;
    ok says whether all passed (bench_decode_selftest.py uses it too)."""

    def __init__(self):
        self.ok = True

    def __call__(self, cond, what):
        print(f"  {'ok  ' if cond else 'FAIL'} {what}")
        self.ok = self.ok and cond


def self_test():
    import warnings
    warnings.filterwarnings("ignore")  # eager FlexAttention's advice to compile it
    expect = Checks()

    print("useful pairs and needed keys against brute force:")
    windows = [(-1, -1), (0, 0), (2, 0), (0, 3), (3, 1), (-1, 2), (5, -1), (0, -1)]
    span_sets = [(), ((2, 5),), ((0, 1), (4, 8)), ((6, 11),)]
    cases = bad = 0
    for n_k in (0, 1, 5, 9, 12):
        for n_q in sorted({0, 1, min(3, n_k), n_k}):
            for causal in (False, True):
                for window in windows:
                    for spans in span_sets:
                        spans = [(a, b) for a, b in spans if b < n_k]
                        for clamp in (True, False):
                            cases += 1
                            got = sequence_counts(n_q, n_k, causal, window, spans, clamp)
                            want = _brute_counts(n_q, n_k, causal, window, spans, clamp)
                            if got != want:
                                bad += 1
                                if bad <= 5:
                                    print(f"    n_q={n_q} n_k={n_k} causal={causal} "
                                          f"window={window} spans={spans} clamp={clamp}: "
                                          f"{got} != {want}")
    expect(bad == 0, f"{cases} tiny shapes (q shorter than k, windows, spans +-clamp)")
    same = all(sequence_counts(n, n, c, w, s)[0] == ba.useful_pairs(n, c, w, list(s))
               for n in (1, 7, 40) for c in (False, True) for w in windows
               for s in ((), ((3, 20),)) if all(b < n for _, b in s))
    expect(same, "bench_attention.useful_pairs agrees where n_q == n_k")

    print("problem counts:")
    probs = {p.name: p for p in engine_problems() + quick_problems()}
    chunk = probs["chunked_prefill_p16"]
    expect(problem_counts(chunk)[0] == 4 * (512 * 7680 + 512 * 513 // 2),
           "chunked prefill pairs = 4 * (512 * 7680 + 512 * 513 / 2)")
    mixed = problem_counts(probs["mixed_60dec_4chunk_p16"])
    expect(mixed[0] == 60 * 4096 + 4 * (1024 * 3072 + 1024 * 1025 // 2),
           "mixed batch pairs = 60 * 4096 + 4 * (1024 * 3072 + 1024 * 1025 / 2)")
    expect(mixed[2] == 2 * (2 * (60 + 4096) * 32 * 128 + 2 * 64 * 4096 * 8 * 128),
           "mixed batch bytes = q, o and every key of each kv head once")
    oss = problem_counts(probs["decode_gpt_oss_8x32k_window127_null"])
    expect(oss[0] == 8 * 128 and oss[2] == 2 * (2 * 8 * 64 * 64 + 2 * 8 * 128 * 8 * 64),
           "GPT-OSS decode: 128 keys per sequence in pairs and bytes")
    for pr in PROBLEMS:
        name, batch, seqlen, hq, hkv, d, causal, window, sinks, use_spans = pr
        spans = ba.image_spans(seqlen) if use_spans else []
        got = problem_counts(probs["paged_" + name])[0]
        expect(got == ba.useful_pairs(seqlen, causal, window, spans) * batch,
               f"paged_{name} pairs = bench_attention's count")
    for pr in probs.values():
        pairs, flops, bytes_, floor_ms = problem_counts(pr)
        print(f"    {pr.name:<38} {pairs:>13,} pairs {flops / 1e9:9.1f} GFLOP "
              f"{bytes_ / 1e6:9.1f} MB floor {floor_ms:7.3f} ms")

    print("construction and the peers' formulations on small problems (CPU, fp32):")
    interpret = interpreting()
    torch.manual_seed(0)
    gqa = next(p for p in PROBLEMS if p[0] == "causal_gqa_d128")
    small = [
        paged_of(gqa, page_size=16, batch=2, seqlen=48),
        Problem("paged_spans_small", "paged", [40, 40], [40, 40], 2, 1, 64, True, (9, 0),
                spans=[(0, 5, 20), (0, 30, 33), (1, 0, 12)], page_size=32),
        Problem("chunked_small", "chunked", [8] * 2, [40] * 2, 4, 2, 64, page_size=16),
        Problem("mixed_small", "mixed", [1] * 3 + [16] * 2, [40] * 3 + [24] * 2, 4, 2, 64,
                page_size=16),
        Problem("decode_window_null_small", "decode", [1] * 3, [70] * 3, 8, 2, 64,
                window=(9, 0), sinks="null_logit"),
        Problem("decode_key0_small", "decode", [1, 1], [20, 33], 4, 4, 80,
                sinks="bias_key0", page_size=16),
        Problem("mixed_window_key0_small", "mixed", [1, 12], [30, 30], 4, 1, 64,
                window=(6, 0), sinks="bias_key0", page_size=16),
    ]
    for pr in small:
        x = build_data(pr, "cpu", dtype=torch.float32, spare_pages=3)
        k, cu_k = gather_pages(x.k_cache, x.table, x.used_k)
        v, _ = gather_pages(x.v_cache, x.table, x.used_k)
        flat = x.table[torch.arange(x.table.shape[1])[None, :]
                       < ((x.used_k[:, None] + pr.page_size - 1) // pr.page_size)]
        built_ok = (torch.equal(k, x.k) and torch.equal(v, x.v) and torch.equal(cu_k, x.cu_k)
                    and flat.unique().numel() == flat.numel()
                    and int(torch.isnan(x.k_cache).any(-1).any(-1).all(-1).sum()) >= 3)
        want = reference(pr, x)
        theirs, _ = varlen_attention_reference(
            x.q, x.k, x.v, x.cu_q, x.cu_k, causal=pr.causal, window_size=pr.window,
            sinks=x.sinks, sinks_mode=pr.sinks, mm_prefix_ranges=x.ranges,
            mm_prefix_clamp=bool(pr.spans) and pr.clamp)
        errs = {"reference vs project's": float(relative_error(want, theirs))}
        for name, builder in (("sdpa (math)", lambda: sdpa_peer(pr, x, backend=None)),
                              ("flex (eager)", lambda: flex_peer(pr, x, compile=False)),
                              ("triton_paged (interpreter)", lambda: triton_paged_peer(pr, x))):
            if name.startswith("triton") and not interpret:
                continue
            built = builder()
            if built[0] is None:
                continue
            errs[name] = check_peer(*built[:3], want)
        good = built_ok and all(e <= 1e-5 for e in errs.values())
        expect(good, f"{pr.name} ({pr.shape()}): pool gathers back exactly: {built_ok}; "
                     + ", ".join(f"{n} {e:.1e}" for n, e in errs.items()))
    if not interpret:
        print("  (the Triton kernel runs here with TRITON_INTERPRET=1)")
    print("self-test", "passed" if expect.ok else "FAILED")
    return 0 if expect.ok else 1


if __name__ == "__main__":
    sys.exit(self_test())

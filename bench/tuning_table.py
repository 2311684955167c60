#!/usr/bin/env python3
"""Turns an autotuner run (bench/kernel_bench OUT.json --tune) into tuning
rules for specs/attention.yaml: for each problem, its best configuration as
a rule keyed by the problem's flags, and how much it gains over the rule the
spec picked in that run. The spec's table is written from this output (by
hand: rules are ordered, and general rules come last).

    python3 bench/tuning_table.py bench/results/2026-11-29-h200-autotune-pack-gqa.json
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from problems import PROBLEMS, flags_of  # noqa: E402

PROBLEM_FLAGS = {p[0]: flags_of(p) for p in PROBLEMS}
PARAMS = ["block_m", "block_n", "warps", "stages", "min_blocks", "pack_gqa", "wgmma", "split_keys"]


def yaml_value(v):
    return str(v).lower() if isinstance(v, bool) else str(v)


def main(path):
    with open(path) as f:
        runs = json.load(f)
    for run in runs:
        # (a config of --try that failed its check was not timed: no "ms")
        configs = sorted((c for c in run.get("tuning", []) if "ms" in c), key=lambda c: c["ms"])
        if not configs:
            print(f"# {run['problem']}: no tuning data")
            continue
        best = configs[0]
        when = ", ".join(f"{k}: {yaml_value(v)}" for k, v in PROBLEM_FLAGS[run["problem"]].items())
        missing = [p for p in PARAMS[:7] if p not in best]
        if missing:  # a --try override names only what it changes
            print(f"# {run['problem']}: best is a partial override ({', '.join(missing)} from "
                  f"the spec's rule), not a rule: {best['ms']:.3f} ms, rule {run['ms']:.3f} ms")
            continue
        values = ", ".join(f"{p}: {best.get(p, 0)}" for p in PARAMS)
        gain = run["ms"] / best["ms"]
        print(f"# {run['problem']}: {best['ms']:.3f} ms, spec's rule {run['ms']:.3f} ms "
              f"({gain:.2f}x), {len(configs)} configs tried")
        print(f"- {{targets: [sm_90a], when: {{{when}}}, {values}}}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "kernel_bench.json")

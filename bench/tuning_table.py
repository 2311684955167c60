#!/usr/bin/env python3
"""Turns an autotuner run (bench/kernel_bench OUT.json --tune) into tuning
rules for specs/attention.yaml: for each problem, its best configuration as
a rule keyed by the problem's flags, and how much it gains over the rule the
spec picked in that run. The spec's table is written from this output (by
hand: rules are ordered, and general rules come last).

    python3 bench/tuning_table.py bench/results/2026-11-29-h200-autotune-pack-gqa.json
"""

import json
import sys

# The flags each benchmark problem is run with (bench/problems.h).
PROBLEM_FLAGS = {
    "full_d80": {"head_dim": 80},
    "causal_gqa_d128": {"head_dim": 128, "causal": True},
    "causal_long_d128": {"head_dim": 128, "causal": True},
    "mimo_window64_key0": {"head_dim": 80, "window": True, "sinks": "bias_key0"},
    "gpt_oss_window127_null": {"head_dim": 64, "causal": True, "window": True,
                               "sinks": "null_logit"},
    "gemma4_window1023_spans": {"head_dim": 256, "causal": True, "window": True,
                                "mm_prefix": True, "mm_clamp": True},
}
PARAMS = ["block_m", "block_n", "warps", "stages", "min_blocks", "pack_gqa"]


def yaml_value(v):
    return str(v).lower() if isinstance(v, bool) else str(v)


def main(path):
    with open(path) as f:
        runs = json.load(f)
    for run in runs:
        configs = sorted(run.get("tuning", []), key=lambda c: c["ms"])
        if not configs:
            print(f"# {run['problem']}: no tuning data")
            continue
        best = configs[0]
        when = ", ".join(f"{k}: {yaml_value(v)}" for k, v in PROBLEM_FLAGS[run["problem"]].items())
        values = ", ".join(f"{p}: {best.get(p, 0)}" for p in PARAMS)
        gain = run["ms"] / best["ms"]
        print(f"# {run['problem']}: {best['ms']:.3f} ms, spec's rule {run['ms']:.3f} ms "
              f"({gain:.2f}x), {len(configs)} configs tried")
        print(f"- {{when: {{{when}}}, {values}}}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "kernel_bench.json")

#!/usr/bin/env python3
"""The chart of a bench_attention.py run: time per problem, attnjit against
each peer, the problem's floor marked.

    python3 bench/plot_results.py RESULTS.json [-o CHART.png]

Writes CHART.png (default: RESULTS.json with .png for .json). One panel per
problem, each with its own time axis (the problems span two orders of
magnitude): a bar per implementation that ran it, its time written on it,
and a dashed line at the floor (q, k, v read once and o written once at the
measured copy bandwidth, or the useful FLOPs at the measured matmul rate,
whichever is slower). bench_attention.py draws the same chart beside its
JSON (write_chart_beside). Needs matplotlib; without it this script exits 1
and says so, and bench_attention.py skips the chart with a message.
"""

import argparse
import json
import math
import os
import sys

# JSON key -> label, in the order of the bars.
IMPLEMENTATIONS = [
    ("attnjit", "attnjit"),
    ("sdpa_flash", "SDPA flash"),
    ("sdpa_cudnn", "cuDNN"),
    ("flex", "FlexAttention"),
    ("triton", "Triton"),
    ("fa4", "FA4"),
]
ATTNJIT_COLOR = "#d62728"
PEER_COLOR = "#7f7f7f"
FLOOR_COLOR = "#1f5fbf"


def chart_data(result):
    """Per problem: its name, shape, floor and the (label, ms) bars of the
    implementations that ran it. No plotting, so it can be tested without
    matplotlib."""
    panels = []
    for row in result["problems"]:
        bars = [(label, row["ms"][key]) for key, label in IMPLEMENTATIONS
                if row["ms"].get(key) is not None]
        panels.append({"problem": row["problem"], "shape": row.get("shape", ""),
                       "floor_ms": row["floor_ms"], "bars": bars})
    return panels


def title_of(result):
    parts = [result.get("gpu", "GPU"), "bf16"]
    if result.get("date"):
        parts.append(result["date"])
    if result.get("commit"):
        parts.append("commit " + result["commit"])
    return "attnjit and its peers: time per problem (" + ", ".join(parts) + ")"


def write_chart(result, png_path):
    """Draws the chart of `result` (bench_attention.py's JSON, loaded) into
    png_path. Raises ImportError when matplotlib is missing."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = chart_data(result)
    columns = min(3, len(panels)) or 1
    rows = math.ceil(len(panels) / columns) or 1
    fig, axes = plt.subplots(rows, columns, figsize=(5.2 * columns, 3.9 * rows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, panel in zip(axes.flat, panels):
        labels = [label for label, _ in panel["bars"]]
        times = [ms for _, ms in panel["bars"]]
        colors = [ATTNJIT_COLOR if label == "attnjit" else PEER_COLOR for label in labels]
        positions = range(len(times))
        ax.bar(positions, times, color=colors)
        top = max(times + [panel["floor_ms"]])
        for x, ms in zip(positions, times):
            ax.text(x, ms + 0.01 * top, f"{ms:.3g}", ha="center", va="bottom", fontsize=8)
        ax.axhline(panel["floor_ms"], color=FLOOR_COLOR, linestyle="--", linewidth=1.2)
        ax.text(len(times) - 0.55, panel["floor_ms"], f"floor {panel['floor_ms']:.3g} ms",
                ha="right", va="center", fontsize=8, color=FLOOR_COLOR,
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1})
        ax.set_xticks(list(positions))
        ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
        ax.set_ylim(0, top * 1.15)
        ax.set_ylabel("ms (lower is better)", fontsize=8)
        ax.set_title(f"{panel['problem']}\n{panel['shape']}", fontsize=9)
        ax.tick_params(axis="y", labelsize=8)
    fig.suptitle(title_of(result), fontsize=11)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(png_path)), exist_ok=True)
    fig.savefig(png_path, dpi=110)
    plt.close(fig)


def write_chart_beside(result, json_path, log=print):
    """bench_attention.py's hook: the chart beside its JSON, or a message
    when matplotlib is missing. Returns the PNG's path or None."""
    png = default_png_path(json_path)
    try:
        write_chart(result, png)
    except ImportError:
        log("chart skipped: matplotlib is not installed (pip install matplotlib, then "
            f"python3 bench/plot_results.py {json_path})")
        return None
    log("wrote " + png)
    return png


def default_png_path(json_path):
    root, ext = os.path.splitext(json_path)
    return (root if ext == ".json" else json_path) + ".png"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", help="a JSON file written by bench_attention.py --out")
    ap.add_argument("-o", "--out", help="the PNG to write (default: beside the JSON)")
    args = ap.parse_args(argv)
    try:
        with open(args.results) as f:
            result = json.load(f)
    except (OSError, ValueError) as e:
        print(f"plot_results: cannot read {args.results}: {e}", file=sys.stderr)
        return 1
    if not isinstance(result, dict) or not isinstance(result.get("problems"), list):
        print(f"plot_results: {args.results} is not a bench_attention.py result "
              "(no 'problems' list)", file=sys.stderr)
        return 1
    png = args.out or default_png_path(args.results)
    try:
        write_chart(result, png)
    except ImportError:
        print("plot_results: matplotlib is not installed (pip install matplotlib); "
              "no chart written", file=sys.stderr)
        return 1
    print("wrote", png)
    return 0


if __name__ == "__main__":
    sys.exit(main())

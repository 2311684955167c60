#!/usr/bin/env python3
"""Writes docs/performance.md, the README's peer table and bench/results/README.md
from the files in bench/results/, so every performance number has one source.

    python3 bench/performance_doc.py [ROOT]           # rewrite the three
    python3 bench/performance_doc.py --check [ROOT]   # write nothing; exit 1 when
        one of them is stale, or when a tracked .md file or a spec (specs/**/*.yaml)
        cites a bench/results/ file that is not there

Each table of docs/performance.md is read from one JSON run named in SOURCES: the
latest run that holds it. When a newer run lands, point its table at it and rerun.
The README's table is the first table of docs/performance.md, between the markers
<!-- performance-table --> and <!-- /performance-table -->. Python 3 standard
library only.
"""

import json
import os
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results_index import RESULTS, missing_citations, results_index, table  # noqa: E402

SOURCES = {
    "peers": "2026-12-04-h200-2ab177d-peers-fa4.json",
    "prefill": "2026-12-03-h200-c788c83-bench-heated.json",
    "prefill_fa4": "2026-12-05-h200-5253a25-peers-fa4.json",
    "sustained": "2026-12-03-h200-c788c83-sustained-clock.json",
    "paged": "2026-12-03-h200-7880826-paged-flexfix.json",
    "decode": "2026-12-03-h200-c788c83-decode.json",
    "decode_fp8": "2026-12-03-h200-ba9b382-decode.json",
    "user": "2026-12-05-h200-682c883-user-fa4.json",
    "user_vm": "2026-12-01-h200-36f7324-user-variants-vm.json",
    "user_kbench": "2026-12-01-h200-78e1abf-kbench-user.json",
    "jit_gpu": "2026-12-01-h200-1e0fd19-jit-costs.json",
    "jit_cpu": "2026-12-05-cpu2core-b2a5ae0-jit-costs.json",
    "launch": "2026-11-29-h200-821147a-launch.json",
    "gemma4": "2026-12-04-h200-093df5d-gemma4-bidirectional.json",
    "wide": "2026-12-05-h100-437098a-paged-wide-fa4.json",
    "wide_decode": "2026-12-05-h200-dacc150-decode-d512.json",
}

# Runs dated up to this day timed Gemma-4's image spans under the rule before
# images became bidirectional under a (W, 0) window: their Gemma-4 rows are not shown.
GEMMA4_RULE_CHANGED = "2026-12-04"
PENDING = "old rule: see the Gemma-4 table"

LABELS = {
    "full_d80": "full, 4x4096, H16, D80",
    "causal_gqa_d128": "causal GQA, 8x2048, 32/8, D128",
    "causal_long_d128": "causal, 1x16384, H32, D128",
    "causal_d256": "causal, 2x8192, H16, D256",
    "mimo_window64_key0": "MiMo window +-64 + key-0 sinks, 4x4096, H16, D80",
    "gpt_oss_window127_null": "GPT-OSS causal window 127 + null logit, 4x4096, 64/8, D64",
    "gemma4_window1023_spans": "Gemma-4 window 1023 + image spans, 2x8192, 16/8, D256",
    "decode_64x8k_d128": "decode 64x8192, 32/8, D128, paged (page 16)",
    "decode_8x32k_d64": "decode 8x32768, 64/8, D64, paged",
    "chunked_prefill_p64": "chunked prefill 4x512 over 7680 cached, 32/8, D128, page 64",
}
PEERS = {"attnjit": "attnjit", "attnjit_paged": "attnjit paged", "attnjit_contig": "attnjit contiguous",
         "sdpa_flash": "SDPA flash", "sdpa_cudnn": "cuDNN", "flex": "FlexAttention", "triton": "Triton",
         "triton_paged": "Triton paged", "fa4": "FA4"}



def load(root, key):
    with open(os.path.join(root, RESULTS, SOURCES[key])) as f:
        return json.load(f)


def cite(key):
    return f"`{RESULTS}/{SOURCES[key]}`"


def ms(v):
    if v is None:
        return "-"
    return f"{v:.3f}" if v >= 0.1 else f"{v:.4f}"


def pending(problem, run, record=None):
    """A Gemma-4 row timed under the old clamp, unless the record says its
    images were bidirectional (a window (W, -1) sees the same pairs under
    both rules)."""
    if record is not None and record.get("images_bidirectional"):
        return False
    return "gemma4" in problem and run["date"] <= GEMMA4_RULE_CHANGED


def label(problem):
    return LABELS.get(problem, problem)


# ---- the tables --------------------------------------------------------------

def peers_table(root):
    run = load(root, "peers")
    order = list(run["peers"])
    problems, unit, value, fresh = [], {}, {}, set()
    for r in run["records"]:
        if not pending(r["problem"], run, r):
            fresh.add(r["problem"])
        if r["problem"] not in unit:
            problems.append(r["problem"])
        unit[r["problem"]] = r["unit"]
        v = f"{r['value']:.3f}" if r["unit"] == "ms" else f"{r['value']:g}"
        value[r["problem"], r["peer"]] = v + (f" ({r['note']})" if "note" in r else "")
    rows = []
    for p in problems:
        if p not in fresh:
            continue
        cells = [f"{label(p)} ({unit[p]})"]
        for peer in order:
            cells.append(value.get((p, peer), "-"))
        rows.append(cells)
    if not any("gemma4" in p for p in fresh):
        rows.append([label("gemma4_window1023_spans")] + [PENDING] + [""] * (len(order) - 1))
    lines = table(["problem"] + [run["peers"][p] for p in order], rows)
    note = (f"H200, {run['dtype']}, one run, {run['date']} ({cite('peers')}; "
            f"{run['peer_versions']['fa4']}). Dense rows in useful TFLOP/s (higher is better), "
            "the others in ms (lower is better); `-`: not run.")
    return lines, textwrap.fill(note, 78, break_on_hyphens=False, break_long_words=False)


def prefill_tables(root, key="prefill"):
    run = load(root, key)
    peers = list(run["problems"][0]["ms"])
    rows = []
    for p in run["problems"]:
        if pending(p["problem"], run):
            rows.append([label(p["problem"]), PENDING] + [""] * (len(peers) + 2))
            continue
        cells = [label(p["problem"])]
        flop_bound = p["useful_flops"] / run["matmul_flops"] > p["bytes"] / run["copy_bw"]
        for peer in peers:
            t, tf = p["ms"].get(peer), p["tflops"].get(peer)
            cells.append(f"{ms(t)} ({tf:.0f} TF)" if flop_bound and tf else ms(t))
        cells += [ms(p["floor_ms"]), f"{p['ms']['attnjit'] / p['floor_ms']:.2f}x",
                  f"{p['attnjit_rel_err']:.1e}"]
        rows.append(cells)
    lines = table(["problem"] + [PEERS[x] for x in peers] + ["floor", "attnjit / floor", "attnjit error"],
                  rows)
    chart = SOURCES[key][:-len(".json")] + ".png"
    if os.path.exists(os.path.join(root, RESULTS, chart)):
        lines += ["", f"![Time per problem: attnjit beside its peers and each problem's floor]"
                      f"(../{RESULTS}/{chart})"]
    rounds = max(len(v or []) for p in run["problems"] for v in p["ms_rounds"].values())
    return lines, run, rounds


def sustained_table(root):
    run = load(root, "sustained")
    rows = [[label(r["problem"]), PEERS.get(r["peer"], r["peer"]), ms(r["ms"]), f"{r['sm_mhz']:.0f}",
             f"{r['power_w']:.0f}", f"{r['gflop_per_joule']:.0f}"] for r in run["rows"]]
    return table(["problem", "peer", "ms", "SM MHz", "W", "GFLOP/J"], rows)


def paged_tables(root):
    run = load(root, "paged")
    peers = run["peers"]
    by_kind = {}
    for p in run["problems"]:
        by_kind.setdefault(p["kind"], []).append(p)
    out = {}
    for kind, problems in by_kind.items():
        rows = []
        for p in problems:
            if pending(p["problem"], run):
                rows.append([p["shape"], PENDING] + [""] * (len(peers) + 2))
                continue
            t = p["ms"]["attnjit_paged"]
            target = p.get("target_ms")
            rows.append([p["shape"]] + [ms(p["ms"].get(x)) for x in peers] +
                        [ms(p["floor_ms"]), f"{t / p['floor_ms']:.2f}x",
                         "-" if target is None else f"< {target:g} ms: {'met' if t < target else 'missed'}"])
        out[kind] = table(["problem"] + [PEERS[x] for x in peers] +
                          ["floor", "paged / floor", "target"], rows)
    return out, run


def decode_tables(root):
    run = load(root, "decode")
    peers = run["peers"]
    rows, sweep = [], ""
    for p in run["problems"]:
        if p["group"] != "issue":
            continue
        cells = [p["shape"]]
        for x in peers:
            t, pct = p["ms"].get(x), (p.get("pct_read_bw") or {}).get(x)
            cells.append(ms(t) if t is None or p["regime"] != "bandwidth" else f"{ms(t)} ({pct:.0f}%)")
        cells.append(ms(p["kv_read_us"] / 1000))
        rows.append(cells)
    for t in run["targets"]:
        if t["target"].startswith("sweep"):
            sweep = f"{t['target'][len('sweep: '):]}: {t['detail']}."
    bw = run["read_bandwidth"]["best"] / 1e9
    main = table(["problem"] + [PEERS[x] for x in peers] + ["floor (K/V read once)"], rows)
    fp8 = load(root, "decode_fp8")
    rows = []
    for p in fp8["problems"]:
        if p["group"] == "issue" and "attnjit_paged_fp8" in p["ms"] and p["regime"] == "bandwidth":
            f8, bf = p["ms"]["attnjit_paged_fp8"], p["ms"]["attnjit_paged"]
            rows.append([p["shape"], ms(bf), ms(f8), f"{f8 / bf:.2f}x", ms(p["kv_read_us"] / 2000)])
    fp8_lines = table(["problem", "bf16 paged", "e4m3 K/V paged", "e4m3 / bf16", "floor (e4m3 bytes)"], rows)
    return main, run, bw, sweep, fp8_lines


def user_main_table(run):
    rows = []
    fa4 = any(p["ms"].get("fa4") for p in run["problems"])
    for p in run["problems"]:
        b = p["ms"].get("builtin")
        row = [p["spec"], p["shape"], ms(p["ms"]["attnjit"]), ms(p["ms"]["flex"])]
        if fa4:  # FA4's kernel, and its block mask's build apart
            row += [ms(p["ms"].get("fa4")), ms(p.get("fa4_block_mask_ms"))]
        rows.append(row + [ms(b), ms(p["floor_ms"]), f"{p['ms']['attnjit'] / p['floor_ms']:.2f}x",
                           f"{p['attnjit_first_s']:.2f} s", f"{p['flex_first_s']:.2f} s"])
    head = ["spec", "shape", "attnjit", "FlexAttention"]
    if fa4:
        head += ["FA4", "FA4 block mask"]
    return table(head + ["built-in flags", "floor", "attnjit / floor", "first call, attnjit",
                         "first call, FlexAttention"], rows)


def user_tables(root):
    run, vm, kb = load(root, "user"), load(root, "user_vm"), load(root, "user_kbench")
    main = user_main_table(run)
    rows = [[p["spec"], f"{p['attnjit_first_s']:.3f} s ({p['attnjit_first_tier']})",
             f"{p['flex_first_s']:.2f} s", f"{p['flex_first_s'] / p['attnjit_first_s']:.0f}x"]
            for p in vm["problems"]]
    vm_lines = table(["spec", "first call, attnjit", "first call, FlexAttention", "ratio"], rows)
    rows = [[r["problem"], r["builtin"], ms(r["ms"]), ms(r["builtin_ms"]),
             f"{100 * (r['ms'] / r['builtin_ms'] - 1):+.1f}%", f"{r['max_abs_diff']:g}"] for r in kb]
    kb_lines = table(["spec", "built-in problem", "spec ms", "built-in ms", "difference", "max abs diff"], rows)
    return main, run, vm_lines, vm, kb_lines


def jit_table(root):
    gpu, cpu, launch = load(root, "jit_gpu"), load(root, "jit_cpu"), load(root, "launch")

    def compile_cell(r):
        s = r["cold_compile_s"]
        return f"{r['cold_compile_ms_median']:.0f} ms ({min(s) * 1e3:.0f}-{max(s) * 1e3:.0f})"

    def first(r, key):
        return f"{r[key]:.2f} ms" if key in r else "-"

    def first_decode(r):
        return "; ".join(f"{d['problem']} {d['first_decode_s'] * 1e3:.0f} ms, {d['compiles']}"
                         for d in r.get("first_decode", [])) or "-"
    rows = [
        ["cold NVRTC compile of a warpgroup variant, median (range)", compile_cell(gpu), compile_cell(cpu)],
        ["disk-cache hit", f"{gpu['disk_hit_ms_median']:.2f} ms", f"{cpu['disk_hit_ms_median']:.2f} ms"],
        ["in-memory hit", f"{gpu['memory_hit_us_median']:.2f} us", f"{cpu['memory_hit_us_median']:.2f} us"],
        ["first call through the generic tier", first(gpu, "tiered_first_call_ms_median"),
         first(cpu, "tiered_first_call_ms_median")],
        ["first call of a spec through the expression VM", first(gpu, "user_vm_first_call_ms_median"),
         first(cpu, "user_vm_first_call_ms_median")],
        ["first paged decode in a fresh cache (page 16, tiering off), compiles", first_decode(gpu),
         first_decode(cpu)],
        ["first call in a fresh process, the variant on disk (the spec's load, get, fetch)",
         first(gpu, "fresh_process_first_call_ms_median"), first(cpu, "fresh_process_first_call_ms_median")],
        ["host launch above a bare `cuLaunchKernel`", f"{launch['overhead_us']:.2f} us", "-"],
        ["the same, new k and v at every launch (TMA maps re-encoded)",
         f"{launch['new_kv_overhead_us']:.2f} us", "-"],
    ]
    return table(["what", f"H200 ({gpu['target']})", f"2-core CPU, no GPU ({cpu['target']})"], rows)


def gemma4_table(root):
    run = load(root, "gemma4")
    rows = []
    for r in run["runs"]:
        for peer, t in r["ms"].items():
            if isinstance(t, list):
                cells = [", ".join(ms(x) for x in t), "-", "-"]
            else:
                tf = (r.get("tflops") or {}).get(peer)
                err = (r.get("rel_err") or {}).get(peer)
                cells = [ms(t), "-" if tf is None else f"{tf:.0f}", "-" if err is None else f"{err:.1e}"]
            rows.append([r["layout"], PEERS.get(peer, peer.replace("_", " ")), *cells, r["commit"]])
    return table(["K/V", "peer", "ms", "useful TFLOP/s", "error", "attnjit commit"], rows), run


def wide_tables(root):
    """Gemma-4's global heads (D 512) and DeepSeek's 192/128: bench_paged's rows
    with every peer that runs them, then the decodes against the read bandwidth."""
    run = load(root, "wide")
    peers = [x for x in run["peers"] if any(p["ms"].get(x) for p in run["problems"])]
    rows = [[p["shape"]] + [ms(p["ms"].get(x)) for x in peers] +
            [f"{p['tflops']['attnjit_paged']:.0f}", ms(p["floor_ms"]),
             f"{p['ms']['attnjit_paged'] / p['floor_ms']:.2f}x"] for p in run["problems"]]
    main = table(["problem"] + [PEERS[x] for x in peers] +
                 ["attnjit paged TFLOP/s", "floor", "paged / floor"], rows)
    dec = load(root, "wide_decode")
    rows = [[p["shape"], f"{ms(p['ms']['attnjit_paged'])} ({p['pct_read_bw']['attnjit_paged']:.0f}%)",
             ms(p["kv_read_us"] / 1000)] for p in dec["problems"] if p["ms"].get("attnjit_paged")]
    decode = table(["problem", "attnjit paged (% of read bandwidth)", "floor (K/V read once)"], rows)
    return main, run, decode, dec


# ---- docs/performance.md -----------------------------------------------------

def performance_md(root):
    peers, peers_note = peers_table(root)
    prefill, prun, rounds = prefill_tables(root)
    dense_fa4, frun, frounds = prefill_tables(root, "prefill_fa4")
    paged, grun = paged_tables(root)
    decode, drun, bw, sweep, fp8 = decode_tables(root)
    user, urun, user_vm, vrun, user_kb = user_tables(root)
    gemma, gem = gemma4_table(root)
    wide, wrun, wide_decode, wdec = wide_tables(root)
    copy_tb, mm_tf = prun["copy_bw"] / 1e12, prun["matmul_flops"] / 1e12
    out = [
        "# Performance",
        "",
        "<!-- Generated by bench/performance_doc.py from bench/results/; do not edit. -->",
        "",
        "Every number on this page is read from a results file in `bench/results/`, named",
        "above each table (`bench/results/README.md` indexes them all). The machine, its",
        "ceilings and how peers are timed are in [device.md](device.md); the problems are",
        "defined in `bench/problems.py` and `bench/paged_problems.py`.",
        "",
        "Times are medians of `triton.testing.do_bench` with L2 cleared before each",
        "repetition, bf16 unless a column says otherwise. Useful TFLOP/s count only the",
        "(query, key) pairs a mask lets through, `2 * pairs * (D + Dv)` per head (`4 * pairs *",
        "D` where v is as wide as q and k). A problem's",
        f"floor is max(bytes read and written once at {copy_tb:.2f} TB/s, useful FLOPs at",
        f"{mm_tf:.0f} TFLOP/s); a `/ floor` column says how many times its floor a time is.",
        "",
        "## Against FlashAttention-4 and the other peers",
        "",
        peers_note,
        "",
        *peers,
        "",
        "## Prefill and windowed prefill, every peer in heated rounds",
        "",
        f"{cite('prefill')}, {prun['date']}: each time is the median of",
        f"{rounds} rounds in which the peers take turns, after every peer ran untimed for",
        "1.5 s, so that each round finds the GPU at its sustained clock. The Triton",
        "column is `bench/triton_peer.py`, a FlashAttention-2-style Triton kernel with the",
        "same masks and sinks. FLOP-bound rows also in useful TFLOP/s.",
        "",
        *prefill,
        "",
        f"The dense problems again with FlashAttention-4 ({frun['fa4']}) among the peers,",
        f"{cite('prefill_fa4')}, {frun['date']}, {frun['gpu']}, {frounds} heated rounds:",
        "",
        *dense_fa4,
        "",
        f"Under sustained load ({cite('sustained')}; `bench/clock_probe.py --sustained 6`:",
        "each peer alone for 6 s, read over the second half) the GPU holds its power limit,",
        "so the kernel that spends less energy per useful FLOP is the faster one:",
        "",
        *sustained_table(root),
        "",
        "## Gemma-4 sliding layers, images bidirectional",
        "",
        f"{cite('gemma4')}, {gem['date']}: {gem['what']}. Floor {ms(gem['floor_ms'])} ms.",
        "Earlier Gemma-4 rows timed the clamp before it was Gemma-4's rule (an image's",
        "later tokens hidden under `(W, 0)`) and are not shown.",
        "",
        *gemma,
        "",
        "## Wide heads: Gemma-4's global layers (D 512) and DeepSeek's 192/128",
        "",
        f"{cite('wide')}, {wrun['date']}, {wrun['gpu']}: `bench/bench_paged.py` on the",
        "wide-head problems, every peer that runs them (FA4, cuDNN and FlexAttention stop",
        "at D 256 on Hopper where a row shows none). The DeepSeek row ran on D 192's",
        "64-key tiles; with the 128-key tiles its rule takes since, on an H200:",
        "`bench/results/2026-12-05-h200-880d01c-deepseek-tiles-try.txt` (isolated launches)",
        "and `bench/results/2026-12-05-h200-4c3efaf-deepseek-fa4.txt` (beside cuDNN and FA4).",
        "",
        *wide,
        "",
        f"Gemma-4 global decodes against the read bandwidth ({cite('wide_decode')},",
        f"{wdec['date']}, {wdec['gpu']}). e4m3 K/V at D 512 runs on the swapped decode block:",
        "`bench/results/2026-12-05-h200-c101faf-decode-wide-block.txt` (text only).",
        "",
        *wide_decode,
        "",
        "## Paged K/V cache",
        "",
        f"{cite('paged')}, {grun['date']}: `bench/bench_paged.py`, pages shuffled in the pool,",
        "every peer in one run, timed one after the other (not in heated rounds: read the",
        "dense rows against the table above). cuDNN and FlexAttention read contiguous K/V.",
        "",
        *paged["paged"],
        "",
        "## Chunked prefill and a mixed batch",
        "",
        f"The same run ({cite('paged')}): new tokens over a cached prefix, and decodes",
        "beside prefill chunks in one launch (cuDNN: an explicit mask; for the mixed batch,",
        "two launches).",
        "",
        *(paged["chunked"] + paged["mixed"][2:]),
        "",
        "## Decode",
        "",
        f"Every peer, from the same paged run ({cite('paged')}). The floor here reads the",
        "bytes at the copy bandwidth, which a decode's reads exceed; the table after this one",
        "uses the read bandwidth measured in its run.",
        "",
        *paged["decode"],
        "",
        f"Split-KV decode against the memory ({cite('decode')}, {drun['date']}):",
        f"`bench/bench_decode.py`, one query per sequence; the floor reads the K/V once at the",
        f"measured read bandwidth ({bw:.0f} GB/s in this run), and the percentages are of that",
        f"bandwidth. The batch x context sweep in the same file: {sweep}",
        "",
        *decode,
        "",
        f"fp8 (e4m3) K/V caches, converted on the way into shared memory ({cite('decode_fp8')}):",
        "",
        *fp8,
        "",
        "## User variants (spec files) against FlexAttention and FA4",
        "",
        f"{cite('user')}, {urun['date']}: `bench/bench_user_variants.py`, the specs of",
        "`specs/examples/` against FlexAttention and FlashAttention-4 with the same mask and",
        "score on the same tensors (FA4: its `mask_mod` with the block mask its",
        "`compute_block_sparsity` builds, timed apart; its two `score_mod` rows failed on the",
        "benchmark's parameter names, fixed since). A first call compiles the",
        "spec's variant with the CUDA compute cache off (`first call`); `built-in flags` is the",
        "same attention through the built-in flags where one exists (StreamingLLM's: the causal",
        "window without its sink tokens). StreamingLLM, the global band and the blocks between",
        "their runs of keys cost their non-empty tiles; strided and the dilated window are",
        "partial on every tile they visit.",
        "",
        *user,
        "",
        f"First calls through the expression VM's tier, which answers without waiting",
        f"for NVRTC ([tiers.md](tiers.md); {cite('user_vm')}):",
        "",
        *user_vm,
        "",
        f"Isolated launches (`bench/kernel_bench`) of the specs that re-express a built-in",
        f"mode, beside the built-in ({cite('user_kbench')}):",
        "",
        *user_kb,
        "",
        "## First call and JIT costs",
        "",
        f"`bench/jit_costs` and `bench/launch_overhead`, CUDA compute cache off so that no",
        f"cache answers a cold compile ({cite('jit_gpu')}, {cite('jit_cpu')},",
        f"{cite('launch')}; the runs are of different commits):",
        "",
        *jit_table(root),
        "",
    ]
    return "\n".join(out)


# ---- the README's table ------------------------------------------------------

README_BEGIN, README_END = "<!-- performance-table -->", "<!-- /performance-table -->"


def readme_with_table(root, text):
    begin, end = text.find(README_BEGIN), text.find(README_END)
    if begin < 0 or end < begin:
        raise SystemExit(f"README.md lost its {README_BEGIN} markers")
    peers, note = peers_table(root)
    block = "\n".join([README_BEGIN, *peers, "", note, ""])
    return text[:begin] + block + text[end:]


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    with open(os.path.join(root, "README.md")) as f:
        readme = f.read()
    wanted = {
        "docs/performance.md": performance_md(root),
        RESULTS + "/README.md": results_index(root, read_by_docs=set(SOURCES.values())),
        "README.md": readme_with_table(root, readme),
    }
    stale = []
    for path, text in wanted.items():
        full = os.path.join(root, path)
        current = open(full).read() if os.path.exists(full) else None
        if current == text:
            continue
        if check:
            stale.append(path)
        else:
            with open(full, "w") as f:
                f.write(text)
            print(f"wrote {path}")
    if not check:
        return 0
    missing = missing_citations(root)
    for path in stale:
        print(f"{path} is stale: run python3 bench/performance_doc.py")
    for entry in missing:
        print(f"{entry}: no such results file")
    if stale or missing:
        return 1
    print(f"ok: {', '.join(wanted)} are up to date; every cited results file exists")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

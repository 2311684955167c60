#!/usr/bin/env python3
"""What a spec's element test costs in the kernel's machine code: each
example spec's sm_90a variant compiled (`attnjit compile --emit cubin`),
disassembled with cuobjdump, and its SASS counted (instructions, calls,
divergent-branch regions, spills), against a baseline spec whose mask is
two compares. The tile step (scores -> logits -> softmax) is inlined twice
(the first key tile and the loop) and each consumer thread holds
block_m x block_n / (32 warps) scores of a tile (64 at 128 x 128 over 8
warps), so the instructions a mask adds per score are about
(N - N_baseline) / (2 x scores per thread), the baseline compiled with
the spec's tile configuration. N also holds the code that classifies key
tiles (the walk's, once per 32 tiles, and the range's trimming), which
the baseline (a mask folded into the rows' key ranges) has none of, so
the figure overstates the element test of a mask with costly classes
(document masking's sorted reads); it is a static count, for comparing a
spec's code before and after a change. 'loop/score' counts the consumers'
key loop alone (the smallest backward branch holding a tile step's
products), the spec's over the baseline's, per score of one tile: what
the element test costs in the steady state, without the classification,
the set-up and the peeled first tile. A spec that divides by a runtime arg has two
copies of the step (docs/expressions.md, "What an element test costs"):
its 'per score' is that of the copy a launch with positive divisors runs,
measured on the generated unit with divisors_positive() made `true` (the
other copy is then dead code), compiled by NVRTC with attnjit's options;
'instr' counts the variant as built, both copies. Needs no GPU; needs
libnvrtc and cuobjdump (on PATH, or --cuobjdump). Prints a table; writes
JSON (--out).

    python3 bench/element_sass.py --cli build/cli/attnjit --out bench/results/DATE-HOST-COMMIT-element-sass.json
"""

import argparse
import ctypes
import datetime
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "specs" / "examples"
# (name, spec file, preset); every preset is D128 full or causal, 128 x 128 tiles.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
SPECS = [
    ("strided", EXAMPLES / "strided.yaml", "strided"),
    ("chunked_local", EXAMPLES / "chunked_local.yaml", "llama4"),
    ("streaming_llm", EXAMPLES / "streaming_llm.yaml", "streaming_llm"),
    ("prefix_lm", EXAMPLES / "prefix_lm.yaml", None),
    ("document", EXAMPLES / "document.yaml", None),
    ("alibi", EXAMPLES / "alibi.yaml", None),
    ("global_band", EXAMPLES / "global_band.yaml", None),
    ("dilated_window", EXAMPLES / "dilated_window.yaml", None),
]
# (`p + 0`: a bare `j <= p` conjunct is folded into the rows' key ranges and
# would cost no compare; the baseline keeps two per score.)
BASELINE = """family: two_compares
extends: attention
mask: "j <= p + 0 and j + 1 != 0"
presets:
  two_compares: {head_dim: 128}
"""
TILE_STEPS = 2  # the first key tile and the loop
INSTRUCTION = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)")


def first_preset(spec):
    in_presets = False
    for line in spec.read_text().splitlines():
        if line.startswith("presets:"):
            in_presets = True
        elif in_presets and re.match(r"^\s+\w+:", line):
            return line.split(":")[0].strip()
    sys.exit(f"element_sass: {spec} has no preset")


ADDRESSED = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)(.*)")


def sass_of(cuobjdump, cubin):
    return subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True,
                          check=True).stdout


def opcodes(cuobjdump, cubin):
    sass = sass_of(cuobjdump, cubin)
    return [m.group(2).split(".")[0] for m in map(INSTRUCTION.match, sass.splitlines()) if m]


def key_loop_instructions(sass):
    """Instructions of the consumers' key loop: the smallest backward
    branch's span that holds a tile step's products (HGMMA; the loops
    around it are larger, the waits' spin loops hold none), from its target
    to the branch."""
    ins = [(int(m.group(1), 16), m.group(3), m.group(4))
           for m in map(ADDRESSED.match, sass.splitlines()) if m]
    best = None
    for address, op, rest in ins:
        target = re.search(r"0x([0-9a-f]+)", rest) if op.startswith("BRA") else None
        if not target or int(target.group(1), 16) >= address:
            continue
        span = [o for a, o, _ in ins if int(target.group(1), 16) <= a <= address]
        key = (any(o.startswith("HGMMA") for o in span), -len(span))
        if best is None or key > best[0]:
            best = (key, len(span))
    return best[1] if best else 0


POSITIVE = re.compile(r"(static bool divisors_positive\(const P& prm\) \{\n    return ).*?;")


def positive_copy(cli, cuobjdump, spec, preset, work):
    """Instructions of the variant with only the positive-divisor copy of
    the tile step: its generated unit, divisors_positive() returning true,
    compiled by NVRTC (attnjit's options) to a cubin."""
    from nvrtc_phases import load_nvrtc  # noqa: PLC0415
    base = [cli, "compile", "--spec", str(spec), "--preset", preset]
    unit = work / f"{preset}-positive"
    unit.mkdir()
    source = subprocess.run(base + ["--emit", "source"], capture_output=True, text=True,
                            check=True).stdout
    params = next(line.split('"')[1] for line in source.splitlines()
                  if line.startswith('#include "') and line.endswith('_params.h"'))
    (unit / params).write_text(subprocess.run(base + ["--emit", "params"], capture_output=True,
                                              text=True, check=True).stdout)
    source, n = POSITIVE.subn(r"\1true;", source)
    assert n == 1, "divisors_positive not found in the generated unit"
    lib = load_nvrtc()
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"unit.cu", 0, None,
                                  None) == 0
    options = ["--gpu-architecture=sm_90a", "--std=c++17", "--use_fast_math",
               f"-I{ROOT / 'templates'}", f"-I{unit}"]
    args = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
    if lib.nvrtcCompileProgram(prog, len(options), args):
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        sys.exit(f"element_sass: the positive copy of {spec} did not compile:\n"
                 f"{log.value.decode()[-2000:]}")
    size = ctypes.c_size_t()
    lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
    cubin = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetCUBIN(prog, cubin)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    path = unit / "positive.cubin"
    path.write_bytes(cubin.raw)
    sass = sass_of(cuobjdump, path)
    return (sum(1 for line in sass.splitlines() if INSTRUCTION.match(line)),
            key_loop_instructions(sass))


def census(cli, cuobjdump, spec, preset, work, tuning=None):
    cubin = work / f"{preset}.cubin"
    extra = ["--tuning", tuning] if tuning else []
    out = subprocess.run([cli, "compile", "--spec", str(spec), "--preset", preset,
                          "--emit", "cubin", "-o", str(cubin), "--no-cache"] + extra,
                         capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"element_sass: compiling {spec} failed:\n{out.stderr}")
    resources = re.search(r"(\d+) registers.*spills (\d+) B stores / (\d+) B loads", out.stdout)
    sass = sass_of(cuobjdump, cubin)
    ops = [m.group(2).split(".")[0] for m in map(INSTRUCTION.match, sass.splitlines()) if m]
    source = subprocess.run([cli, "compile", "--spec", str(spec), "--preset", preset,
                             "--emit", "source"], capture_output=True, text=True).stdout
    divides = "has_divisors = true" in source
    tile = {k: int(v) for k, v in re.findall(r"\b(block_m|block_n|warps)=(\d+)", out.stdout)}
    return {
        "tuning": re.search(r"\|([^\]]*)\]", out.stdout).group(1),
        "tile": f"{tile['block_m']}x{tile['block_n']}/{tile['warps']}w",
        "scores_per_thread": tile["block_m"] * tile["block_n"] // (32 * tile["warps"]),
        "step_copies": 2 if divides else 1,
        **dict(zip(("positive_copy_instructions", "key_loop_instructions"),
                   positive_copy(cli, cuobjdump, spec, preset, work) if divides
                   else (len(ops), key_loop_instructions(sass)))),
        "instructions": len(ops),
        "calls": ops.count("CALL"),
        "branch_regions": ops.count("BSSY"),
        "global_loads": ops.count("LDG"),
        "registers": int(resources.group(1)),
        "spill_bytes": int(resources.group(2)) + int(resources.group(3)),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cli", default=str(ROOT / "build/cli/attnjit"))
    ap.add_argument("--cuobjdump", default=shutil.which("cuobjdump"))
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args()
    if not args.cuobjdump:
        sys.exit("element_sass: cuobjdump not found (put it on PATH or pass --cuobjdump)")
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        base_spec = work / "two_compares.yaml"
        base_spec.write_text(BASELINE)
        base = census(args.cli, args.cuobjdump, base_spec, "two_compares", work)
        baselines = {base["tuning"]: base}
        rows = []
        for name, spec, preset in SPECS:
            row = census(args.cli, args.cuobjdump, spec, preset or first_preset(spec), work)
            if row["tuning"] not in baselines:
                baselines[row["tuning"]] = census(args.cli, args.cuobjdump, base_spec,
                                                  "two_compares", work, row["tuning"])
            row["name"] = name
            row["baseline_instructions"] = baselines[row["tuning"]]["instructions"]
            row["per_score_over_baseline"] = round(
                (row["positive_copy_instructions"] - row["baseline_instructions"]) /
                (row["scores_per_thread"] * TILE_STEPS), 1)
            row["baseline_key_loop_instructions"] = baselines[row["tuning"]]["key_loop_instructions"]
            row["key_loop_per_score_over_baseline"] = round(
                (row["key_loop_instructions"] - row["baseline_key_loop_instructions"]) /
                row["scores_per_thread"], 1)
            rows.append(row)
    header = f"{'spec':<16}{'tile':>14}{'instr':>8}{'copies':>8}{'per score':>11}{'loop/score':>11}{'CALL':>6}{'BSSY':>6}{'LDG':>6}{'regs':>6}{'spill B':>9}"
    print(f"baseline (two compares, 128x128/8w): {base['instructions']} instructions, "
          f"{base['branch_regions']} BSSY, key loop {base['key_loop_instructions']}")
    print(header)
    for r in rows:
        print(f"{r['name']:<16}{r['tile']:>14}{r['instructions']:>8}{r['step_copies']:>8}"
              f"{r['per_score_over_baseline']:>11}{r['key_loop_per_score_over_baseline']:>11}"
              f"{r['calls']:>6}{r['branch_regions']:>6}{r['global_loads']:>6}{r['registers']:>6}"
              f"{r['spill_bytes']:>9}")
    if args.out:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
        pathlib.Path(args.out).write_text(json.dumps({
            "benchmark": "element_sass", "date": datetime.date.today().isoformat(),
            "commit": commit, "target": "sm_90a", "baseline": base, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()

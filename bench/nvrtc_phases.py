#!/usr/bin/env python3
"""Where a cold compile's time goes: NVRTC's own per-phase timing (its
`--time` option: the C++ front end, the NVVM optimizer, PTX translation to
SASS by ptxas) for a few variants, each compiled from the unit `attnjit
compile --emit source` generates, with the options attnjit uses, and the
same with NVRTC's automatic precompiled headers (`--pch`; the second
compile reuses the header the first one wrote), and with NVRTC's
`--Ofast-compile=mid|max` (less optimization for a faster compile: a
candidate for a first tier, whose kernels' speed must then be measured on
the GPU). Needs no GPU. Prints a table; writes JSON (--out).

    python3 bench/nvrtc_phases.py --cli build/cli/attnjit --out bench/results/DATE-HOST-COMMIT-nvrtc-phases.json
"""

import argparse
import ctypes
import ctypes.util
import datetime
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
# (name, spec, flag arguments of `attnjit compile`)
VARIANTS = [
    ("causal_d128", "attention", ["--preset", "llm_causal"]),
    ("gpt_oss_window_d64", "attention", ["--preset", "gpt_oss_sliding"]),
    ("paged_fp8_split_d128", "attention",
     ["--flags", "head_dim=128,causal=true,kv_layout=paged,kv_dtype=fp8_e4m3,split_kv=true"]),
    ("chunked_local_d128", str(ROOT / "specs/examples/chunked_local.yaml"), ["--preset", "llama4"]),
]
PHASES = ("CUDA C++ Frontend", "NVVM Optimizer", "PTX Translation")


def load_nvrtc():
    for name in ("libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
                 ctypes.util.find_library("nvrtc")):
        if not name:
            continue
        for prefix in ("", "/usr/local/cuda/lib64/"):
            try:
                return ctypes.CDLL(prefix + name)
            except OSError:
                pass
    sys.exit("nvrtc_phases: libnvrtc not found")


def compile_unit(lib, source, options):
    """(seconds, {phase: ms}, log) of one nvrtcCompileProgram."""
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"unit.cu", 0, None, None):
        raise RuntimeError("nvrtcCreateProgram failed")
    args = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
    t0 = time.perf_counter()
    rc = lib.nvrtcCompileProgram(prog, len(options), args)
    seconds = time.perf_counter() - t0
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    buf = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, buf)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    log = buf.value.decode(errors="replace")
    if rc:
        raise RuntimeError(f"compile failed ({rc}):\n{log[-2000:]}")
    phases = {}
    for line in log.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 4 and parts[1] in PHASES and parts[3] == "ms":
            phases[parts[1]] = float(parts[2])
    return seconds, phases, log


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cli", default=str(ROOT / "build/cli/attnjit"))
    ap.add_argument("--target", default="sm_90a")
    ap.add_argument("--out", default=None)
    ap.add_argument("--commit", default=os.environ.get("ATTNJIT_COMMIT", "unknown"))
    args = ap.parse_args()
    lib = load_nvrtc()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, spec, flags in VARIANTS:
            unit = pathlib.Path(tmp) / name
            unit.mkdir()
            base = [args.cli, "compile", "--spec", spec, "--target", args.target] + flags
            subprocess.run(base + ["--emit", "source", "-o", str(unit / "unit.cu")], check=True,
                           capture_output=True)
            subprocess.run(base + ["--emit", "params", "-o", str(unit / "params.h")], check=True,
                           capture_output=True)
            source = (unit / "unit.cu").read_text()
            # The generated params header under the name the unit includes.
            params = next(line.split('"')[1] for line in source.splitlines()
                          if line.startswith('#include "') and line.endswith('_params.h"'))
            (unit / params).write_text((unit / "params.h").read_text())
            (unit / "pch").mkdir()
            # attnjit's options, less --ptxas-options=-v (with it NVRTC
            # leaves its timing table out of the log).
            options = [f"--gpu-architecture={args.target}", "--std=c++17", "--use_fast_math",
                       f"-I{ROOT / 'templates'}", f"-I{unit}", "--time=-"]
            row = {"variant": name, "runs": {}}
            for label, extra in (("plain", []), ("plain again", []),
                                 ("pch create", ["--pch", f"--pch-dir={unit / 'pch'}"]),
                                 ("pch use", ["--pch", f"--pch-dir={unit / 'pch'}"]),
                                 ("fast mid", ["--Ofast-compile=mid"]),
                                 ("fast max", ["--Ofast-compile=max"])):
                seconds, phases, _ = compile_unit(lib, source, options + extra)
                row["runs"][label] = {"seconds": seconds, "phases_ms": phases}
            rows.append(row)
    print(f"\n{'variant':<24}{'run':<13}{'total':>9}" + "".join(f"{p:>20}" for p in PHASES))
    for row in rows:
        for label, run in row["runs"].items():
            cells = "".join(f"{run['phases_ms'].get(p, float('nan')):>18.0f}ms" for p in PHASES)
            print(f"{row['variant']:<24}{label:<13}{run['seconds'] * 1000:>7.0f}ms{cells}")
    if args.out:
        doc = {"date": datetime.date.today().isoformat(), "commit": args.commit,
               "target": args.target, "host_cpus": os.cpu_count(), "rows": rows}
        pathlib.Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

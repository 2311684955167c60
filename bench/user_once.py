"""One user variant (bench_user_variants.py's problems) run by one system
a few times, then once more between cudaProfilerStart and Stop: the
process ncu profiles (`--profile-from-start off`) to set attnjit's kernel
beside FA4's block-sparse one on the same mask (bench/device_run.sh, stage
user_profile).

    python bench/user_once.py streaming_llm attnjit
    python bench/user_once.py strided fa4 --runs 3
"""
import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "python"))
from bench_user_variants import EXAMPLES, PROBLEMS, inputs  # noqa: E402


def runner(pr, system):
    """The problem's steady call by `system`, or exits saying why not."""
    q, k, v, cu = inputs(pr, pr.batch, pr.seqlen, "cuda", seed=1)
    own, _, _ = pr.mods("cuda", pr.batch, pr.seqlen, pr.hq)
    s = pr.seqlen
    if system == "attnjit":
        import attnjit  # noqa: PLC0415
        spec = attnjit.load_spec(os.path.join(EXAMPLES, pr.spec + ".yaml"))
        out = torch.empty_like(q)
        spec(q, k, v, cu, cu, s, s, **pr.flags, **own, out=out)
        attnjit.wait_specialized()
        return lambda: spec(q, k, v, cu, cu, s, s, **pr.flags, **own, out=out)
    from peer_fa4 import fa4_user_runner  # noqa: PLC0415
    q4, k4, v4 = (x.view(pr.batch, s, x.shape[1], x.shape[2]) for x in (q, k, v))
    fa4, why = fa4_user_runner(pr.name, own, q4, k4, v4)
    if fa4 is None:
        sys.exit(f"user_once: FA4 cannot run {pr.name}: {why}")
    return fa4["run"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problem", choices=[p.name for p in PROBLEMS])
    ap.add_argument("system", choices=["attnjit", "fa4"])
    ap.add_argument("--runs", type=int, default=3, help="warm-up calls before the profiled one")
    args = ap.parse_args()
    pr = next(p for p in PROBLEMS if p.name == args.problem)
    run = runner(pr, args.system)
    for _ in range(args.runs):
        run()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    run()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
    print(f"{args.problem}: {args.runs} + 1 calls of {args.system}")


if __name__ == "__main__":
    main()

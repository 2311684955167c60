"""One peer's kernel on one problem of the peer table, run a few times and
nothing else: the process ncu profiles to set a peer's counters beside
attnjit's (bench/device_run.sh, stage peer_profile).

    python bench/peer_once.py causal_gqa_d128 cudnn --runs 4
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_attention import make_inputs, sdpa_peer, to_bhsd  # noqa: E402
from problems import PROBLEMS  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problem", choices=[p[0] for p in PROBLEMS])
    ap.add_argument("peer", choices=["flash", "cudnn"])
    ap.add_argument("--runs", type=int, default=4)
    args = ap.parse_args()
    pr = next(p for p in PROBLEMS if p[0] == args.problem)
    _, batch, seqlen, hq, hkv, d, _, _, _, spans = pr
    q, k, v, _, _, _ = make_inputs(batch, seqlen, hq, hkv, d, [] if spans else None)
    q4, k4, v4 = (to_bhsd(x, batch, seqlen) for x in (q, k, v))
    run = sdpa_peer(pr, q4, k4, v4, args.peer)
    if run is None:
        sys.exit(f"peer_once: SDPA {args.peer} has no kernel for {args.problem}'s mask")
    for _ in range(args.runs):
        run()
    torch.cuda.synchronize()
    print(f"{args.problem}: {args.runs} runs of SDPA {args.peer}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Variants written in a spec (specs/examples, attnjit.load_spec) against
FlexAttention and FlashAttention-4 with the same masks and scores on the
same tensors (FlexAttention: mask_mod / score_mod with its block mask; FA4:
its CuTe DSL mask_mod / score_mod with the block mask its
compute_block_sparsity builds, bench/peer_fa4.py, where FA4 is installed),
and the re-expressed built-ins against their flags, side by side in one
run.

For each problem: the first call (attnjit: NVRTC compile and load with an
empty kernel cache; FlexAttention: create_block_mask plus torch.compile of
a new mask/score), then the median time of later calls
(triton.testing.do_bench), useful TFLOP/s (4 * unmasked pairs * D * Hq,
pairs counted exactly from the mask), and the floor (max of the FLOPs at
the measured bf16 matmul rate and q, k, v, o moved once at the copy
bandwidth). FA4's first call is its block mask's build plus its first
call; its block mask's build is timed on its own too (FA4's kernel time
does not include it). Before timing, attnjit's output (poisoned with NaN first) is
checked against the fp32 PyTorch reference with the example's mask and
score written as PyTorch code, on a reduced instance (one sequence of at
most 2048 tokens, fresh inputs), and against FlexAttention on the full
problem. Prints a table; writes JSON (--out).

    python3 bench/bench_user_variants.py --out bench/results/DATE-h200-COMMIT-user.json
    python3 bench/bench_user_variants.py --self-test   # CPU: masks and pair counts
"""

import argparse
import datetime
import json
import math
import os
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "specs", "examples")
COPY_BW = 4.24e12    # bytes/s, measured device copy (docs/device.md)
MATMUL = 793e12      # bf16 FLOP/s, measured matmul (docs/device.md)


class Problem:
    """One example on one shape. mods(device, batch, seqlen, hq) gives
    (the spec's args, mask_mod, score_mod); the mods take (b, h, p, j) as
    FlexAttention does (here the query's position p is its index: every
    sequence has n_q == n_k) and broadcast over tensors. builtin: the
    varlen_attention flags of the same attention, or None."""

    def __init__(self, name, spec, batch, seqlen, hq, hkv, d, mods,
                 flags=None, builtin=None):
        self.name, self.spec = name, spec
        self.batch, self.seqlen, self.hq, self.hkv, self.d = (
            batch, seqlen, hq, hkv, d)
        self.mods, self.flags, self.builtin = mods, flags or {}, builtin


def _chunked(device, batch, seqlen, hq):
    chunk = 1024

    def mask(b, h, p, j):
        return (p // chunk == j // chunk) & (j <= p)
    return dict(chunk=chunk), mask, None


def _prefix_lm(device, batch, seqlen, hq):
    prefix = torch.tensor([(seqlen // 4) * (1 + b % 3) for b in range(batch)],
                          dtype=torch.int32, device=device)

    def mask(b, h, p, j):
        return (j < prefix[b]) | (j <= p)
    return dict(prefix=prefix), mask, None


def _document(device, batch, seqlen, hq):
    g = torch.Generator().manual_seed(0)
    rows = []
    for _ in range(batch):  # documents of 128 to 2048 tokens
        ids, n = [], 0
        while len(ids) < seqlen:
            ids += [n] * int(torch.randint(128, 2049, (1,), generator=g))
            n += 1
        rows.append(ids[:seqlen])
    doc2d = torch.tensor(rows, dtype=torch.int32, device=device)

    def mask(b, h, p, j):
        return (doc2d[b, p] == doc2d[b, j]) & (j <= p)
    return dict(doc=doc2d.reshape(-1)), mask, None


def _alibi(device, batch, seqlen, hq):
    slopes = torch.tensor([2 ** (-8 * (i + 1) / hq) for i in range(hq)],
                          device=device)

    def mask(b, h, p, j):
        return j <= p

    def score(s, b, h, p, j):
        return s - slopes[h] * (p - j).abs()
    return dict(slopes=slopes), mask, score


def _causal(device, batch, seqlen, hq):
    return {}, (lambda b, h, p, j: j <= p), None


def _window(device, batch, seqlen, hq):
    window = 1023

    def mask(b, h, p, j):
        return (j <= p) & (p - j <= window)
    return dict(window=window), mask, None


def _key0_bias(device, batch, seqlen, hq):
    radius = 64
    bias = torch.linspace(-1, 2, hq, device=device)

    def mask(b, h, p, j):
        return (p - j).abs() <= radius

    def score(s, b, h, p, j):
        return torch.where(j == 0, s + bias[h], s)
    return dict(radius=radius, key0_bias=bias), mask, score


def _streaming(device, batch, seqlen, hq):
    sink_tokens, window = 4, 1023

    def mask(b, h, p, j):
        return (j <= p) & ((j < sink_tokens) | (p - j <= window))
    return dict(sink_tokens=sink_tokens, window=window), mask, None


def _strided(device, batch, seqlen, hq):
    stride = 8

    def mask(b, h, p, j):
        return (j <= p) & ((p - j) % stride == 0)
    return dict(stride=stride), mask, None


def _global_band(device, batch, seqlen, hq):
    global_tokens, band = 64, 256

    def mask(b, h, p, j):
        return (j < global_tokens) | (p < global_tokens) | ((p - j).abs() <= band)
    return dict(global_tokens=global_tokens, band=band), mask, None


def _dilated(device, batch, seqlen, hq):
    window, dilation = 4095, 4

    def mask(b, h, p, j):
        return (j <= p) & (p - j <= window) & ((p - j) % dilation == 0)
    return dict(window=window, dilation=dilation), mask, None


PROBLEMS = [
    Problem("llama4_chunked_local", "chunked_local", 2, 8192, 32, 8, 128,
            _chunked, flags=dict(causal=True)),
    Problem("prefix_lm", "prefix_lm", 4, 4096, 32, 8, 128, _prefix_lm),
    Problem("document_mask", "document", 4, 4096, 32, 8, 128, _document),
    Problem("alibi_causal", "alibi", 4, 4096, 32, 8, 128, _alibi,
            flags=dict(causal=True)),
    Problem("causal_expr", "causal_expr", 8, 2048, 32, 8, 128, _causal,
            builtin=dict(causal=True)),
    Problem("sliding_window_expr", "sliding_window_expr", 8, 4096, 64, 8, 64,
            _window, builtin=dict(causal=True, window_size=(1023, 0))),
    Problem("key0_bias_expr", "key0_bias_expr", 4, 4096, 16, 16, 80,
            _key0_bias, builtin=dict(window_size=(64, 64),
                                     sinks_mode="bias_key0")),
    # Masks nobody tuned for: two intervals per query tile (sink tokens and
    # a window; the built-in causal window is the comparable rate), and
    # every tile partial.
    Problem("streaming_llm", "streaming_llm", 4, 8192, 32, 8, 128,
            _streaming, builtin=dict(causal=True, window_size=(1023, 0))),
    Problem("strided", "strided", 2, 8192, 32, 8, 128, _strided),
    # Two more of each kind, as a user writes them: Longformer's global
    # tokens and band (two runs of keys per query tile), and its dilated
    # window (every tile of the window partial).
    Problem("longformer_global_band", "global_band", 4, 8192, 32, 8, 128, _global_band),
    Problem("dilated_window", "dilated_window", 4, 8192, 32, 8, 128, _dilated),
]


def useful_pairs(mask, batch, seqlen, hq, device, rows=512):
    """Unmasked (query, key) pairs of all heads, counted from the mask in
    blocks of query rows."""
    total = 0
    j = torch.arange(seqlen, device=device)[None, None, :]
    h = torch.arange(hq, device=device)[:, None, None]
    for b in range(batch):
        for r0 in range(0, seqlen, rows):
            p = torch.arange(r0, min(seqlen, r0 + rows), device=device)
            m = mask(b, h, p[None, :, None], j)
            total += int(m.expand(hq, p.shape[0], seqlen).sum())
    return total


def inputs(pr, batch, seqlen, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    total = batch * seqlen

    def rand(*shape):
        return torch.randn(*shape, generator=g, device=device).to(
            torch.bfloat16)

    q, k, v = (rand(total, pr.hq, pr.d), rand(total, pr.hkv, pr.d),
               rand(total, pr.hkv, pr.d))
    cu = torch.arange(0, total + 1, seqlen, device=device, dtype=torch.int32)
    return q, k, v, cu


def flex_runner(pr, q, k, v, mask, score):
    """(first-call seconds, the steady call) of FlexAttention."""
    from torch.nn.attention.flex_attention import create_block_mask

    from flex_compile import compiled_flex
    b, s = pr.batch, pr.seqlen
    q4 = q.view(b, s, pr.hq, pr.d).transpose(1, 2).contiguous()
    k4 = k.view(b, s, pr.hkv, pr.d).transpose(1, 2).contiguous()
    v4 = v.view(b, s, pr.hkv, pr.d).transpose(1, 2).contiguous()
    torch.cuda.synchronize()
    start = time.perf_counter()
    block_mask = create_block_mask(mask, b, None, s, s, device="cuda")
    flex = compiled_flex()

    def run():
        o = flex(q4, k4, v4, block_mask=block_mask, score_mod=score,
                 enable_gqa=pr.hq != pr.hkv)
        return o.transpose(1, 2).reshape(b * s, pr.hq, pr.d)
    run()
    torch.cuda.synchronize()
    return time.perf_counter() - start, run


def check_reference(pr, attnjit, spec, reference):
    """attnjit vs the fp32 reference with the example's mods on one
    sequence of at most 2048 tokens (fresh inputs, output poisoned)."""
    n = min(pr.seqlen, 2048)
    q, k, v, cu = inputs(pr, 1, n, "cuda", seed=7)
    own, mask, score = pr.mods("cuda", 1, n, pr.hq)
    out = torch.full_like(q, math.nan)
    spec(q, k, v, cu, cu, n, n, **pr.flags, **own, out=out)
    ref, _ = reference.varlen_attention_reference(
        q, k, v, cu, cu, **pr.flags, mask_mod=mask, score_mod=score)
    return reference.relative_error(out, ref)


def time_ms(fn):
    import triton.testing
    fn()
    torch.cuda.synchronize()
    return triton.testing.do_bench(fn, warmup=25, rep=100,
                                   return_mode="median")


def vm_flags(pr):
    """The variant flags of a problem's calls (as attnjit's launch keys
    them), for prebuilding the expression VM's variant."""
    left, right = pr.flags.get("window_size", (-1, -1))
    return {"dtype": "bf16", "head_dim": pr.d,
            "causal": bool(pr.flags.get("causal", False)),
            "window": left != -1 or right != -1, "sinks": "none",
            "mm_prefix": False, "mm_clamp": False, "softcap": False,
            "return_lse": False}


def run_problem(pr, attnjit, reference, user_vm=False):
    spec = attnjit.load_spec(os.path.join(EXAMPLES, pr.spec + ".yaml"))
    if user_vm:
        # The VM's variant of these flags cached first (untimed), as
        # `attnjit build-cache --user-vm` leaves it: the first call then
        # runs the spec's expressions on it while its own variant compiles.
        attnjit._C.build_user_vm(spec._spec, vm_flags(pr))
    launches_before = attnjit.cache_stats()["generic_launches"]
    q, k, v, cu = inputs(pr, pr.batch, pr.seqlen, "cuda", seed=1)
    own, mask, score = pr.mods("cuda", pr.batch, pr.seqlen, pr.hq)
    s = pr.seqlen
    out = torch.empty_like(q)

    def ours():
        return spec(q, k, v, cu, cu, s, s, **pr.flags, **own, out=out)
    before = attnjit.cache_stats()["compiles"]
    torch.cuda.synchronize()
    start = time.perf_counter()
    ours()
    torch.cuda.synchronize()
    first = time.perf_counter() - start
    compiled = attnjit.cache_stats()["compiles"] - before
    first_tier = ("vm" if attnjit.cache_stats()["generic_launches"] > launches_before
                  else "specialized")
    # Later calls are timed on the spec's own variant.
    attnjit.wait_specialized()
    row = {"problem": pr.name, "spec": pr.spec,
           "shape": f"{pr.batch}x{s} Hq{pr.hq}/Hkv{pr.hkv} D{pr.d}",
           "attnjit_first_s": first, "attnjit_first_compiled": compiled,
           "attnjit_first_tier": first_tier,
           "rel_err_reference": check_reference(pr, attnjit, spec, reference)}
    pairs = useful_pairs(mask, pr.batch, s, pr.hq, "cuda")
    row["useful_pairs"] = pairs
    flops = 4.0 * pairs * pr.d
    bytes_ = 2.0 * (2 * q.numel() + k.numel() + v.numel())
    row["floor_ms"] = max(flops / MATMUL, bytes_ / COPY_BW) * 1e3
    times = {"attnjit": time_ms(ours)}
    if pr.builtin is not None:
        extra = {}
        if pr.builtin.get("sinks_mode") == "bias_key0":
            extra["sinks"] = own["key0_bias"]
        builtin_out = torch.empty_like(q)

        def builtin():
            return attnjit.varlen_attention(q, k, v, cu, cu, s, s,
                                            **pr.builtin, **extra,
                                            out=builtin_out)
        times["builtin"] = time_ms(builtin)
        row["rel_err_builtin"] = reference.relative_error(ours(),
                                                          builtin().float())
    try:
        flex_first, flex = flex_runner(pr, q, k, v, mask, score)
        row["flex_first_s"] = flex_first
        times["flex"] = time_ms(flex)
        row["rel_err_flex"] = reference.relative_error(ours(), flex().float())
    except Exception as e:  # noqa: BLE001  (a peer that cannot run it)
        print(f"    (flex: {type(e).__name__}: {str(e).splitlines()[0][:100]})")
        times["flex"] = None
    try:
        from peer_fa4 import fa4_user_runner  # noqa: PLC0415
        b = pr.batch
        q4, k4, v4 = (x.view(b, s, x.shape[1], x.shape[2]) for x in (q, k, v))
        fa4, why = fa4_user_runner(pr.name, own, q4, k4, v4)
    except Exception as e:  # noqa: BLE001  (a peer that cannot run it)
        fa4, why = None, f"{type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''}"
    if fa4 is None:
        print(f"    (fa4: {why})")
        times["fa4"] = None
        row["fa4_why"] = why
    else:
        row["fa4_first_s"] = fa4["first_s"]
        row["fa4_tile"] = list(fa4["tile"])
        row["fa4_blocks_partial_full_total"] = fa4["blocks"]
        row["fa4_block_mask_ms"] = time_ms(fa4["build"])
        times["fa4"] = time_ms(fa4["run"])
        got = fa4["run"]().reshape(b * s, pr.hq, pr.d).float()
        row["rel_err_fa4"] = reference.relative_error(ours(), got)
    row["ms"] = times
    row["tflops"] = {n: (flops / (t * 1e-3) / 1e12 if t else None)
                     for n, t in times.items()}
    return row


def print_table(rows):
    print(f"\n{'problem':<22}{'attnjit':>18}{'builtin':>18}{'flex':>18}{'fa4':>18}"
          f"{'fa4 mask':>9}{'floor':>8}{'x fl':>6}{'1st ours':>10}{'1st flex':>10}"
          f"{'1st fa4':>9}{'err ref':>9}{'err flex':>9}{'err fa4':>9}")
    for r in rows:
        cells = []
        for peer in ("attnjit", "builtin", "flex", "fa4"):
            t = r["ms"].get(peer)
            cells.append(f"{'-':>18}" if t is None else
                         f"{t:8.3f}ms {r['tflops'][peer]:5.0f}TF ")
        ours = r["ms"]["attnjit"]
        flex_first = r.get("flex_first_s")
        fa4_first = r.get("fa4_first_s")
        fa4_mask = r.get("fa4_block_mask_ms")
        print(f"{r['problem']:<22}" + "".join(cells)
              + (f"{fa4_mask:7.3f}ms" if fa4_mask else f"{'-':>9}")
              + f"{r['floor_ms']:8.3f}{ours / r['floor_ms']:6.2f}"
              + f"{r['attnjit_first_s']:8.2f}s"
              + ("v" if r.get("attnjit_first_tier") == "vm" else " ")
              + (f"{flex_first:9.2f}s" if flex_first else f"{'-':>10}")
              + (f"{fa4_first:8.2f}s" if fa4_first else f"{'-':>9}")
              + f"{r['rel_err_reference']:9.1e}"
              + f"{r.get('rel_err_flex', math.nan):9.1e}"
              + f"{r.get('rel_err_fa4', math.nan):9.1e}")


def self_test():
    """CPU: each problem's mods against an element-by-element evaluation,
    and the pair counter against a brute-force count."""
    for pr in PROBLEMS:
        batch, seqlen, hq = 2, 40, 4
        own, mask, score = pr.mods("cpu", batch, seqlen, hq)
        got = useful_pairs(mask, batch, seqlen, hq, "cpu", rows=17)
        want = sum(bool(mask(b, torch.tensor(h), torch.tensor(p),
                             torch.tensor(j)))
                   for b in range(batch) for h in range(hq)
                   for p in range(seqlen) for j in range(seqlen))
        assert got == want, (pr.name, got, want)
        if score is not None:
            s = torch.zeros(hq, 3, 3)
            h = torch.arange(hq)[:, None, None]
            p = torch.arange(3)[None, :, None]
            j = torch.arange(3)[None, None, :]
            assert score(s, 0, h, p, j).shape == (hq, 3, 3), pr.name
        for name in own:
            assert name.isidentifier(), (pr.name, name)
        assert os.path.isfile(os.path.join(EXAMPLES, pr.spec + ".yaml"))
    from peer_fa4 import FA4_USER_PROBLEMS  # noqa: PLC0415
    assert sorted(FA4_USER_PROBLEMS) == sorted(p.name for p in PROBLEMS), \
        "every problem has its FA4 mods (bench/peer_fa4.py) and no other does"
    print(f"self-test: {len(PROBLEMS)} problems, masks and pair counts agree, each with FA4 mods")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--commit",
                    default=os.environ.get("ATTNJIT_COMMIT", "unknown"))
    ap.add_argument("--only", default=None, help="comma-separated names")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--user-vm", action="store_true",
                    help="first calls through the expression VM's tier "
                         "(ATTNJIT_USER_VM=1, its variant prebuilt untimed)")
    args = ap.parse_args()
    if args.self_test:
        self_test()
        return
    # First calls compile: an empty kernel cache of this run's own.
    os.environ["ATTNJIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="attnjit-bench-")
    # ... with the CUDA compute cache off (set before CUDA starts): after
    # the GPU tests in the same device call, first calls came back in
    # 0.06-0.12 s without it and 0.55-1.45 s with it (85123c5, d6f6354),
    # so some cache below NVRTC answered. FlexAttention's first calls get
    # empty Inductor and Triton caches of their own likewise.
    os.environ["CUDA_CACHE_DISABLE"] = "1"
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-bench-")
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-bench-")
    # The built-in rows' times are their specialized variants' (tiering would
    # answer their first second of launches with the generic variant).
    os.environ.setdefault("ATTNJIT_TIERED", "0")
    if args.user_vm:
        # The user tier needs tiering on; the built-in rows stay specialized
        # (no generic variant is in this run's fresh cache, and every row
        # waits for its specialized variant before it is timed).
        os.environ["ATTNJIT_TIERED"] = "1"
        os.environ["ATTNJIT_USER_VM"] = "1"
    import attnjit  # noqa: E402  (reads ATTNJIT_CACHE_DIR when first used)
    import attnjit.reference as reference
    rows = []
    for pr in PROBLEMS:
        if args.only and pr.name not in args.only.split(","):
            continue
        print(f"{pr.name} ...", flush=True)
        rows.append(run_problem(pr, attnjit, reference, args.user_vm))
        torch.cuda.empty_cache()
    print_table(rows)
    import triton
    result = {"date": datetime.date.today().isoformat(),
              "gpu": torch.cuda.get_device_name(), "commit": args.commit,
              "torch": torch.__version__, "triton": triton.__version__,
              "copy_bw": COPY_BW, "matmul_flops": MATMUL, "problems": rows,
              "user_vm": args.user_vm,
              "cuda_compute_cache": "disabled (CUDA_CACHE_DISABLE=1)",
              "flex_caches": "fresh TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR"}
    result["generic_launches"] = int(attnjit.cache_stats()["generic_launches"])
    if result["generic_launches"] and not args.user_vm:
        print(f"WARNING: the generic tier answered {result['generic_launches']} launches")
    if args.out:
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)
        print("wrote", args.out)
    sys.exit(0 if all(r["rel_err_reference"] <= 1e-2 for r in rows) else 1)


if __name__ == "__main__":
    main()

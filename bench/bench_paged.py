#!/usr/bin/env python3
"""attnjit's paged K/V cache (kv_layout: paged) against its peers on an
engine's problems, side by side in one run.

Problems:
  * paged_<name>: bench/problems.py's problems with the same tensors gathered
    into a shuffled page pool (page size 64), next to the contiguous attnjit
    time of the same problem; the target is that paging costs nothing
    (paged / contiguous within 5%);
  * chunked prefill: 4 sequences of 512 new tokens over 7680 cached keys,
    32/8 heads, D128, causal, page size 16 and 64 (target < 0.45 ms);
  * a mixed batch: 60 decodes over 4096 keys and 4 chunks of 1024 new tokens
    over 3072 cached keys in one launch, page size 16 (target < 0.6 ms), and
    with --only its parts alone (paged_problems.py mixed_parts:
    mixed_part_chunks_p16, mixed_part_decodes_p16);
  * DeepSeek-V3's MHA prefill: 4 x 4096, 32 heads, q/k 192 and v 128
    (head_dim_v), causal, page 64 (the issue's target: ahead of FA4);
  * Gemma-4's global layers (D512, 32/4, page 16): a prefill of 2 x 8192
    tokens with two 1100-token images each, unclamped (the issue's 550
    TFLOP/s), and the chunked prefill above at D512 (500 TFLOP/s);
  * decodes (one query per sequence, page size 16): 8 x 32768 keys 64/8 D64,
    64 x 8192 32/8 D128, 256 x 2048 32/8 D128, GPT-OSS's 8 x 32768 64/8 D64
    with a causal window of 127 and null-logit sinks, and Gemma-4's global
    64 x 8192 32/4 D512 and 16 x 8192 16/2 D512.

Peers, each checked first against the fp32 reference (gather the pages, then
a dense masked softmax; outputs written by the peer are poisoned with NaN
first) and then timed (median of triton.testing.do_bench):
  attnjit_paged   attnjit.paged_attention (skipped with a message if absent)
  attnjit_contig  attnjit.varlen_attention on the contiguous K/V
  triton_paged    bench/triton_paged_peer.py (block-table loads per key tile)
  sdpa_cudnn      PyTorch SDPA, cuDNN backend, on the contiguous equivalent
  flex            FlexAttention (compiled) on the contiguous equivalent
Useful FLOPs count unmasked (query, key) pairs only; bytes are q and o once
plus the K/V rows some query can see, each kv head's once; the floor is
max(bytes at 4.24 TB/s, FLOPs at 793 TFLOP/s); "% floor" is floor / time.

    python3 bench/bench_paged.py --out bench/results/DATE-h200-COMMIT-paged.json
    python3 bench/bench_paged.py --quick       # one small problem of each kind
    python3 bench/bench_paged.py --self-test   # CPU: counts, construction, peers
    TRITON_INTERPRET=1 python3 bench/bench_paged.py --self-test  # + the Triton kernel
"""

import argparse
import datetime
import json
import os
import sys
import types

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _import_attnjit():
    """attnjit, or (without its compiled extension) a bare package from which
    only attnjit.reference imports, so that bench_attention.py's helpers and
    the CPU self-test still load. Returns (module, why it is missing)."""
    try:
        import attnjit
        return attnjit, None
    except ImportError as e:
        stub = types.ModuleType("attnjit")
        stub.__path__ = [os.path.join(HERE, "..", "python", "attnjit")]
        sys.modules["attnjit"] = stub
        return stub, f"{type(e).__name__}: {e}"


attnjit, ATTNJIT_MISSING = _import_attnjit()
import bench_attention as ba  # noqa: E402
from problems import PROBLEMS  # noqa: E402
from triton_paged_peer import (dense_reference, gather_pages,  # noqa: E402
                               paged_attention_triton)
from attnjit.reference import relative_error, varlen_attention_reference  # noqa: E402
from peer_fa4 import fa4_varlen  # noqa: E402
from paged_problems import (Problem, build_data, engine_problems,  # noqa: E402
                            mixed_parts, paged_of, problem_counts, quick_problems,
                            sequence_counts)

PEERS = ["attnjit_paged", "attnjit_contig", "triton_paged", "sdpa_cudnn", "flex", "fa4"]
OWN = ("attnjit_paged", "attnjit_contig", "triton_paged")  # a failed check fails the run
ERROR_BOUND = 2e-2


def reference(pr, x):
    return dense_reference(x.q, x.k, x.v, x.cu_q, x.cu_k, causal=pr.causal,
                           window_size=pr.window, sinks=x.sinks, sinks_mode=pr.sinks,
                           mm_prefix_ranges=x.ranges, mm_prefix_clamp=bool(pr.spans) and pr.clamp)


# --- peers --------------------------------------------------------------------
# Each builder returns (run, packed, out, note) or (None, reason): run() is
# what is timed; packed(result of run) gives [total_q, Hq, D] for the check;
# out is the buffer run() writes (poisoned before the check) or None.

def attnjit_paged_peer(pr, x):
    if not hasattr(attnjit, "paged_attention"):
        return None, ("attnjit.paged_attention is missing (not merged yet)" if not ATTNJIT_MISSING
                      else f"attnjit unavailable ({ATTNJIT_MISSING})")
    out = x.q.new_empty((x.q.shape[0], pr.hq, pr.dv))  # o takes v's head dim

    def run():
        return attnjit.paged_attention(
            x.q, x.k_cache, x.v_cache, x.table, x.cu_q, x.used_k, x.max_q, x.max_k,
            causal=pr.causal, window_size=pr.window, sinks=x.sinks, sinks_mode=pr.sinks,
            mm_prefix_ranges=x.ranges, mm_prefix_clamp=bool(pr.spans) and pr.clamp, out=out)
    return run, lambda r: out, out, f"page {pr.page_size}"


def attnjit_contig_peer(pr, x):
    if not hasattr(attnjit, "varlen_attention"):
        return None, f"attnjit unavailable ({ATTNJIT_MISSING})"
    out = x.q.new_empty((x.q.shape[0], pr.hq, pr.dv))  # o takes v's head dim

    def run():
        return attnjit.varlen_attention(
            x.q, x.k, x.v, x.cu_q, x.cu_k, x.max_q, x.max_k, causal=pr.causal,
            window_size=pr.window, sinks=x.sinks, sinks_mode=pr.sinks,
            mm_prefix_ranges=x.ranges, mm_prefix_clamp=bool(pr.spans) and pr.clamp, out=out)
    return run, lambda r: out, out, "contiguous K/V (varlen_attention)"


def triton_paged_peer(pr, x):
    if pr.spans:
        return None, "no multimodal spans in the Triton kernel"
    if pr.dv != pr.d:
        return None, "one head dim for q, k and v in the Triton kernel"
    out = x.q.new_empty((x.q.shape[0], pr.hq, pr.dv))  # o takes v's head dim

    def run():
        return paged_attention_triton(
            x.q, x.k_cache, x.v_cache, x.table, x.cu_q, x.used_k, x.max_q, x.max_k,
            causal=pr.causal, window_size=pr.window, sinks=x.sinks, sinks_mode=pr.sinks,
            out=out)
    return run, lambda r: out, out, f"page {pr.page_size}"


def _batched(t, count, length, copy=True):
    """[count * length, H, D] packed rows -> [count, H, length, D], stored
    so (copy), or as a strided view of the token-major rows."""
    view = t.view(count, length, t.shape[1], t.shape[2]).transpose(1, 2)
    return view.contiguous() if copy else view


def _groups(pr):
    """Sequences grouped by (n_q, n_k), in order: ((n_q, n_k), [sequences])."""
    groups = {}
    for b, key in enumerate(zip(pr.n_q, pr.n_k)):
        groups.setdefault(key, []).append(b)
    return list(groups.items())


def _rows(cu, seqs, device):
    return torch.cat([torch.arange(int(cu[b]), int(cu[b + 1])) for b in seqs]).to(device)


def sdpa_peer(pr, x, backend="cudnn", token_major=False):
    """SDPA on the contiguous equivalent: one call per group of equal-shaped
    sequences ([G, H, n_q, D] against [G, H, n_k, D]). Bottom-right causal
    for 1 < n_q < n_k is an explicit boolean mask (SDPA's is_causal is
    top-left). backend None: whatever SDPA picks (the CPU self-test).
    token_major: the [G, H, n, D] tensors are strided views of token-major
    rows ([G, n, H, D] storage, the layout attnjit's K/V have), not copies."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    if pr.window != (-1, -1) or pr.sinks != "none" or pr.spans:
        return None, "window, sinks and spans are not expressible"
    if pr.base is not None and backend is not None and not token_major:
        # A bench/problems.py problem: exactly bench_attention.py's peer.
        _, batch, seqlen = pr.base[:3]
        fn = ba.sdpa_peer(pr.base, _batched(x.q, batch, seqlen), _batched(x.k, batch, seqlen),
                          _batched(x.v, batch, seqlen), backend)
        if fn is None:
            return None, "not expressible"
        note = "contiguous" + ("; K/V repeated per query head" if pr.hq != pr.hkv else "")
        return fn, lambda o: o.transpose(1, 2).reshape(-1, pr.hq, pr.dv), None, note
    cu_q, cu_k = x.cu_q.tolist(), x.cu_k.tolist()
    calls, notes = [], ["token-major strided views" if token_major else "contiguous equivalent"]
    for (nq, nk), seqs in _groups(pr):
        rq, rk = _rows(cu_q, seqs, x.q.device), _rows(cu_k, seqs, x.q.device)
        copy = not token_major
        q4 = _batched(x.q.index_select(0, rq), len(seqs), nq, copy)
        k4 = _batched(x.k.index_select(0, rk), len(seqs), nk, copy)
        v4 = _batched(x.v.index_select(0, rk), len(seqs), nk, copy)
        mask, is_causal = None, False
        if pr.causal and nq == nk:
            is_causal = nq > 1
        elif pr.causal and nq > 1:
            i = torch.arange(nq, device=x.q.device)[:, None] + (nk - nq)
            mask = torch.arange(nk, device=x.q.device)[None, :] <= i
            if "explicit mask" not in " ".join(notes):
                notes.append("explicit bottom-right mask (SDPA's causal is top-left): "
                             "not the causal fast path")
        calls.append([q4, k4, v4, mask, is_causal, rq])
    if len(calls) > 1:
        notes.append(f"{len(calls)} launches")
    gqa = pr.hq != pr.hkv

    def launch(c, enable_gqa):
        q4, k4, v4, mask, is_causal, _ = c
        return torch.nn.functional.scaled_dot_product_attention(
            q4, k4, v4, attn_mask=mask, is_causal=is_causal, enable_gqa=enable_gqa)

    def run_with(enable_gqa):
        if backend is None:
            return [launch(c, enable_gqa) for c in calls]
        be = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}[backend]
        with sdpa_kernel(be):
            return [launch(c, enable_gqa) for c in calls]

    if gqa and backend is not None:
        try:
            run_with(True)
        except Exception:  # no GQA in this backend: repeat K/V per query head
            for c in calls:
                c[1] = c[1].repeat_interleave(pr.hq // pr.hkv, dim=1)
                c[2] = c[2].repeat_interleave(pr.hq // pr.hkv, dim=1)
            gqa = False
            notes.append("K/V repeated per query head")

    def packed(outs):
        o = x.q.new_empty((x.q.shape[0], pr.hq, pr.dv))
        for c, r in zip(calls, outs):
            o.index_copy_(0, c[5], r.transpose(1, 2).reshape(-1, pr.hq, pr.dv))
        return o
    return (lambda: run_with(gqa)), packed, None, "; ".join(notes)


def flex_peer(pr, x, compile=True):
    """FlexAttention on the contiguous equivalent: batched [B, H, n, D] with a
    bottom-right mask_mod when every sequence has one shape, else every
    sequence packed into one row of the batch with a document mask."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    if pr.base is not None and compile:
        # A bench/problems.py problem: exactly bench_attention.py's peer.
        _, batch, seqlen = pr.base[:3]
        spans = ba.image_spans(seqlen) if pr.spans else []
        fn = ba.flex_peer(pr.base, _batched(x.q, batch, seqlen), _batched(x.k, batch, seqlen),
                          _batched(x.v, batch, seqlen), x.sinks, spans)
        return fn, lambda o: o.transpose(1, 2).reshape(-1, pr.hq, pr.dv), None, "contiguous"
    if pr.spans:
        return None, "spans: see bench_attention.py"
    dev = x.q.device
    wl, wr = pr.window
    groups = _groups(pr)
    uniform = len(groups) == 1
    if uniform:
        (nq, nk), _ = groups[0]
        q4, k4, v4 = (_batched(x.q, pr.batch, nq), _batched(x.k, pr.batch, nk),
                      _batched(x.v, pr.batch, nk))
        q_len, kv_len, offset = nq, nk, nk - nq
        note = "contiguous equivalent"

        def unpack(o):
            return o.transpose(1, 2).reshape(-1, pr.hq, pr.dv)

        def locate(q_idx, kv_idx):  # (same sequence, query position, key position)
            return None, q_idx + offset, kv_idx
        needs_mask = pr.window != (-1, -1) or (pr.causal and nq > 1)
    else:
        q4 = x.q.transpose(0, 1).unsqueeze(0).contiguous()
        k4 = x.k.transpose(0, 1).unsqueeze(0).contiguous()
        v4 = x.v.transpose(0, 1).unsqueeze(0).contiguous()
        n_q = torch.tensor(pr.n_q, device=dev)
        n_k = torch.tensor(pr.n_k, device=dev)
        q_seq = torch.repeat_interleave(torch.arange(pr.batch, device=dev), n_q)
        k_seq = torch.repeat_interleave(torch.arange(pr.batch, device=dev), n_k)
        q_pos = (torch.arange(q_seq.numel(), device=dev) - x.cu_q.long()[q_seq]
                 + (n_k - n_q)[q_seq])
        k_pos = torch.arange(k_seq.numel(), device=dev) - x.cu_k.long()[k_seq]
        q_len, kv_len = q_seq.numel(), k_seq.numel()
        note = "contiguous equivalent, sequences packed with a document mask"

        def unpack(o):
            return o[0].transpose(0, 1)

        def locate(q_idx, kv_idx):
            return q_seq[q_idx] == k_seq[kv_idx], q_pos[q_idx], k_pos[kv_idx]
        needs_mask = True

    def mask_mod(b, h, q_idx, kv_idx):
        same, p, j = locate(q_idx, kv_idx)
        ok = (p >= 0) if same is None else same
        if pr.causal:
            ok = ok & (j <= p)
        if wl >= 0:
            ok = ok & (p - j <= wl)
        if wr >= 0:
            ok = ok & (j - p <= wr)
        return ok

    # Compiled mask creation (on the GPU) does not materialize the dense
    # [q_len, kv_len] mask, which for a packed batch is large.
    block_mask = (create_block_mask(mask_mod, None, None, q_len, kv_len, device=dev,
                                    _compile=compile)
                  if needs_mask else None)
    score_mod = None
    if pr.sinks == "bias_key0":
        sinks = x.sinks

        def key0_bias(score, b, h, q_idx, kv_idx):
            return torch.where(locate(q_idx, kv_idx)[2] == 0, score + sinks[h], score)
        score_mod = key0_bias
    flex = ba.compiled_flex() if compile else flex_attention
    gqa = pr.hq != pr.hkv
    if pr.sinks == "null_logit":
        sink_col = x.sinks.view(1, pr.hq, 1)

        def run():
            o, lse = flex(q4, k4, v4, block_mask=block_mask, enable_gqa=gqa, return_lse=True)
            return o * torch.sigmoid(lse - sink_col).unsqueeze(-1).to(o.dtype)
    else:
        def run():
            return flex(q4, k4, v4, block_mask=block_mask, score_mod=score_mod,
                        enable_gqa=gqa)
    return run, unpack, None, note


def fa4_peer(pr, x):
    """FlashAttention-4 (bench/peer_fa4.py) on the contiguous equivalent:
    its varlen entry over x's q, k and v (v may be narrower), where it can
    be imported and the problem has no spans or key-0 bias."""
    if pr.spans:
        return None, "no image-span argument (a mask_mod would be one)"
    run, why = fa4_varlen(x.q, x.k, x.v, x.cu_q, x.cu_k, x.max_q, x.max_k, pr.causal, pr.window,
                          pr.sinks, x.sinks)
    if run is None:
        return None, why
    return run, lambda r: r, None, "contiguous K/V (its varlen entry)"


BUILDERS = {"attnjit_paged": attnjit_paged_peer, "attnjit_contig": attnjit_contig_peer,
            "triton_paged": triton_paged_peer, "sdpa_cudnn": sdpa_peer, "flex": flex_peer,
            "fa4": fa4_peer}


def check_peer(run, packed, out, want):
    """Relative error of one peer's output (the buffer poisoned with NaN
    before the checked call; a first call compiles or tunes)."""
    run()
    if out is not None:
        out.fill_(float("nan"))
    got = packed(run())
    return float(relative_error(got.float(), want))


# --- the benchmark --------------------------------------------------------------

def bench_problem(pr, peers):
    pairs, flops, bytes_, floor_ms = problem_counts(pr)
    x = build_data(pr, "cuda")
    want = reference(pr, x)
    row = {"problem": pr.name, "kind": pr.kind, "shape": pr.shape(), "page_size": pr.page_size,
           "useful_pairs": pairs, "useful_flops": flops, "bytes": bytes_, "floor_ms": floor_ms,
           "target_ms": pr.target_ms, "ms": {}, "tflops": {}, "gbs": {}, "pct_floor": {},
           "rel_err": {}, "notes": {}}
    print(f"\n{pr.name}: {pr.shape()}", flush=True)
    for name in peers:
        try:
            built = BUILDERS[name](pr, x)
        except Exception as e:  # a peer that cannot be set up for this problem
            built = (None, f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:100]}")
        if built[0] is None:
            row["ms"][name], row["notes"][name] = None, built[1]
            print(f"  {name:<15} - ({built[1]})", flush=True)
            continue
        run, packed, out, note = built
        row["notes"][name] = note
        try:
            err = check_peer(run, packed, out, want)
        except Exception as e:
            row["ms"][name] = None
            why = (str(e).splitlines() or [""])[0][:100]
            row["notes"][name] = f"{note}; failed: {type(e).__name__}: {why}"
            print(f"  {name:<15} - ({row['notes'][name]})", flush=True)
            continue
        t = ba.time_ms(run)
        row["rel_err"][name], row["ms"][name] = err, t
        if t:
            row["tflops"][name] = flops / (t * 1e-3) / 1e12
            row["gbs"][name] = bytes_ / (t * 1e-3) / 1e9
            row["pct_floor"][name] = 100.0 * floor_ms / t
        flag = "  CHECK FAILED" if not err <= ERROR_BOUND else ""
        print(f"  {name:<15} {t if t else float('nan'):8.3f} ms  rel err {err:.2e}{flag}  ({note})",
              flush=True)
        del run, packed, out, built
    paged, contig = row["ms"].get("attnjit_paged"), row["ms"].get("attnjit_contig")
    row["paged_over_contig"] = paged / contig if paged and contig else None
    del x, want
    torch.cuda.empty_cache()
    return row


def print_table(rows, peers):
    print(f"\n{'problem / peer':<40}{'ms':>9}{'TFLOP/s':>9}{'GB/s':>8}{'% floor':>9}"
          f"{'rel err':>10}  note")
    for r in rows:
        print(f"{r['problem']} ({r['shape']}): floor {r['floor_ms']:.3f} ms, "
              f"{r['useful_flops'] / 1e9:.1f} GFLOP, {r['bytes'] / 1e6:.1f} MB")
        for p in peers:
            t = r["ms"].get(p)
            if t is None:
                print(f"  {p:<38}{'-':>9}{'':>36}  {r['notes'].get(p, '')}")
                continue
            print(f"  {p:<38}{t:9.3f}{r['tflops'][p]:9.1f}{r['gbs'][p]:8.0f}"
                  f"{r['pct_floor'][p]:8.0f}%{r['rel_err'][p]:10.2e}  {r['notes'].get(p, '')}")
        verdicts = []
        if r["paged_over_contig"] is not None:
            ok = r["paged_over_contig"] <= 1.05
            verdicts.append(f"paged/contiguous attnjit {r['paged_over_contig']:.3f} "
                            f"(target <= 1.05: {'met' if ok else 'MISSED'})")
        if r["target_ms"] is not None and r["ms"].get("attnjit_paged"):
            ok = r["ms"]["attnjit_paged"] < r["target_ms"]
            verdicts.append(f"attnjit_paged {r['ms']['attnjit_paged']:.3f} ms "
                            f"(target < {r['target_ms']} ms: {'met' if ok else 'MISSED'})")
        for v in verdicts:
            print(f"  -> {v}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--commit", default=os.environ.get("ATTNJIT_COMMIT", "unknown"))
    ap.add_argument("--only", default=None, help="comma-separated problem names")
    ap.add_argument("--peers", default=",".join(PEERS), help="comma-separated peers")
    ap.add_argument("--quick", action="store_true", help="one small problem of each kind")
    ap.add_argument("--self-test", action="store_true",
                    help="CPU checks of counting, construction and the peers' formulations")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    import triton
    peers = [p for p in args.peers.split(",") if p]
    if ATTNJIT_MISSING:
        print(f"attnjit is not importable ({ATTNJIT_MISSING}): its rows are skipped")
    elif not hasattr(attnjit, "paged_attention"):
        print("attnjit.paged_attention is missing (not merged yet): the attnjit_paged rows "
              "are skipped")
    torch.manual_seed(0)
    probs = quick_problems() if args.quick else engine_problems()
    if args.only:
        probs = [p for p in probs + mixed_parts() if p.name in args.only.split(",")]
    rows = [bench_problem(pr, peers) for pr in probs]
    print_table(rows, peers)
    result = {"date": datetime.date.today().isoformat(), "gpu": torch.cuda.get_device_name(),
              "commit": args.commit, "torch": torch.__version__, "triton": triton.__version__,
              "copy_bw": ba.COPY_BW, "matmul_flops": ba.MATMUL, "quick": args.quick,
              "attnjit_paged": hasattr(attnjit, "paged_attention"), "peers": peers,
              "problems": rows}
    ba.steady_state_check(attnjit, result)
    if args.out:
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)
        print("wrote", args.out)
    failed = [(r["problem"], p) for r in rows for p in OWN
              if p in r["rel_err"] and not r["rel_err"][p] <= ERROR_BOUND]
    if failed:
        print("check failed:", ", ".join(f"{a}/{b}" for a, b in failed))
    return 1 if failed else 0


# --- the CPU self-test ------------------------------------------------------------

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
    interpret = os.environ.get("TRITON_INTERPRET") == "1"
    if interpret:
        from triton_peer import _interpreter_scalar_index
        _interpreter_scalar_index()
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
    sys.exit(main())

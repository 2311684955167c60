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

Its CPU self-test (counts, construction, the peers' formulations):
bench/bench_paged_selftest.py.
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
    the CPU self-tests still load. Returns (module, why it is missing)."""
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
from triton_paged_peer import dense_reference, paged_attention_triton  # noqa: E402
from attnjit.reference import relative_error  # noqa: E402
from peer_fa4 import fa4_varlen  # noqa: E402
from paged_problems import (build_data, engine_problems, mixed_parts,  # noqa: E402
                            problem_counts, quick_problems)

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
    args = ap.parse_args()
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


if __name__ == "__main__":
    sys.exit(main())

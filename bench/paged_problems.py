"""The paged benchmark's problems (bench_paged.py): their shapes, the useful
(query, key) pairs and bytes each one moves, and its inputs in a shuffled
page pool. bench_paged.py imports this after making attnjit importable
(bench_attention.py, whose helpers this uses, imports it).
"""

import torch

import bench_attention as ba
from problems import PROBLEMS


class Problem:
    """One batch of an engine: sequence b has n_q[b] new tokens over n_k[b]
    keys (cached prefix + new); spans are (sequence, start, end) rows."""

    def __init__(self, name, kind, n_q, n_k, hq, hkv, d, causal=True, window=(-1, -1),
                 sinks="none", spans=(), page_size=16, base=None, target_ms=None,
                 beat_cudnn=False, group=None, clamp=True, dv=None):
        self.name, self.kind = name, kind
        self.n_q, self.n_k = list(n_q), list(n_k)
        self.hq, self.hkv, self.d = hq, hkv, d
        self.causal, self.window, self.sinks = causal, tuple(window), sinks
        self.spans = list(spans)
        self.clamp = clamp          # spans bounded by the left window (mm_prefix_clamp)
        self.dv = dv or d           # v's and o's head dim (narrower: head_dim_v)
        self.page_size = page_size
        self.base = base            # the bench/problems.py tuple of a paged_* problem
        self.target_ms = target_ms
        self.beat_cudnn = beat_cudnn  # issue 13: at least as fast as cuDNN contiguous
        self.group = group            # bench_decode.py: "issue" or "sweep"
        self.context = max(self.n_k, default=0)

    @property
    def batch(self):
        return len(self.n_q)

    def shape(self):
        groups = []
        for nq, nk in zip(self.n_q, self.n_k):
            if groups and groups[-1][1:] == [nq, nk]:
                groups[-1][0] += 1
            else:
                groups.append([1, nq, nk])
        seqs = " + ".join(f"{c}x({nq} new/{nk} keys)" for c, nq, nk in groups)
        extra = []
        if self.window != (-1, -1):
            extra.append(f"window {self.window}")
        if self.sinks != "none":
            extra.append(self.sinks)
        if self.spans:
            extra.append(f"{len(self.spans)} spans")
        return (f"{seqs} H{self.hq}/{self.hkv} D{self.d}{' causal' if self.causal else ''}"
                f"{' ' + ' '.join(extra) if extra else ''} page {self.page_size}")


def paged_of(pr, page_size=64, batch=None, seqlen=None):
    """The paged form of a bench/problems.py problem (optionally smaller)."""
    name, b0, s0, hq, hkv, d, causal, window, sinks, use_spans = pr
    suffix = "" if (batch or b0, seqlen or s0) == (b0, s0) else "_small"
    batch, seqlen = batch or b0, seqlen or s0
    pr = (name, batch, seqlen, hq, hkv, d, causal, window, sinks, use_spans)
    spans = ([(b, r0, r1) for b in range(batch) for r0, r1 in ba.image_spans(seqlen)]
             if use_spans else [])
    return Problem("paged_" + name + suffix, "paged", [seqlen] * batch, [seqlen] * batch,
                   hq, hkv, d, causal, window, sinks, spans, page_size, base=pr)


# The mixed batch (engine_problems) and its parts (mixed_parts): decodes
# and chunks of new tokens, all over MIXED_KEYS keys; heads (Hq, Hkv, D).
MIXED_DECODES, MIXED_CHUNKS, MIXED_CHUNK, MIXED_KEYS = 60, 4, 1024, 4096
MIXED_HEADS = (32, 8, 128)


def engine_problems():
    probs = [paged_of(pr) for pr in PROBLEMS]
    for page in (16, 64):
        probs.append(Problem(f"chunked_prefill_p{page}", "chunked", [512] * 4, [8192] * 4,
                             32, 8, 128, page_size=page, target_ms=0.45))
    probs.append(Problem("mixed_60dec_4chunk_p16", "mixed",
                         [1] * MIXED_DECODES + [MIXED_CHUNK] * MIXED_CHUNKS,
                         [MIXED_KEYS] * (MIXED_DECODES + MIXED_CHUNKS), *MIXED_HEADS,
                         page_size=16, target_ms=0.6))
    return probs + wide_head_prefills() + decode_problems()


# Gemma-4's global layers (head dim 512, GQA 8, causal; images bidirectional
# and unclamped, as no window bounds them): a prefill of two 8192-token
# sequences with two 1100-token images each, and a chunked prefill of 512
# new tokens over 7680 cached (page 16). Their decodes: decode_problems().
GEMMA4_GLOBAL_IMAGES = ((1024, 2123), (4096, 5195))


def wide_head_prefills():
    spans = [(b, r0, r1) for b in range(2) for r0, r1 in GEMMA4_GLOBAL_IMAGES]
    return [
        # DeepSeek-V3's MHA prefill: q and k of 192, v of 128 (head_dim_v),
        # through a paged cache and (attnjit_contig) contiguous.
        Problem("paged_deepseek_mha_4x4k_d192_dv128", "paged", [4096] * 4, [4096] * 4,
                32, 32, 192, dv=128, page_size=64),
        Problem("paged_gemma4_global_2x8k_d512_images", "paged", [8192] * 2, [8192] * 2,
                32, 4, 512, spans=spans, page_size=16, clamp=False),
        Problem("chunked_prefill_d512_p16", "chunked", [512] * 4, [8192] * 4, 32, 4, 512,
                page_size=16),
    ]


def mixed_parts():
    """The mixed batch's two kinds alone, on the variant the batch runs
    (bench_paged.py --only names them; not in the default run): its 4
    chunks, and its 60 decodes with one 17-query sequence beside them, which
    keeps the launch off the split-KV variant (17 x 4 packed rows > 64), as
    in the mixed batch. Their sum against the mixed time says whether the
    two kinds overlap in one launch or take turns on the SMs; the extra
    sequence adds one sequence's K/V and 17 query rows (about 1.6% of the
    decodes' bytes) to the decodes' part."""
    return [
        Problem("mixed_part_chunks_p16", "mixed", [MIXED_CHUNK] * MIXED_CHUNKS,
                [MIXED_KEYS] * MIXED_CHUNKS, *MIXED_HEADS, page_size=16),
        Problem("mixed_part_decodes_p16", "mixed", [1] * MIXED_DECODES + [17],
                [MIXED_KEYS] * (MIXED_DECODES + 1), *MIXED_HEADS, page_size=16),
    ]


def decode_problem(name, batch, keys, hq, hkv, d, window=(-1, -1), sinks="none",
                   target_ms=None, beat_cudnn=False, group="issue"):
    """One query per sequence over `keys` cached keys, page 16."""
    return Problem(name, "decode", [1] * batch, [keys] * batch, hq, hkv, d, causal=True,
                   window=window, sinks=sinks, page_size=16, target_ms=target_ms,
                   beat_cudnn=beat_cudnn, group=group)


GPT_OSS_DECODE_TARGET_MS = 0.03


def decode_problems():
    """Issue 13's decode problems (bench_paged.py and bench_decode.py)."""
    return [
        decode_problem("decode_8x32k_d64", 8, 32768, 64, 8, 64, beat_cudnn=True),
        decode_problem("decode_64x8k_d128", 64, 8192, 32, 8, 128, beat_cudnn=True),
        decode_problem("decode_256x2k_d128", 256, 2048, 32, 8, 128, beat_cudnn=True),
        decode_problem("decode_gpt_oss_8x32k_window127_null", 8, 32768, 64, 8, 64,
                       window=(127, 0), sinks="null_logit",
                       target_ms=GPT_OSS_DECODE_TARGET_MS),
        # Gemma-4's global layers (D 512): the engine's and a smaller batch.
        decode_problem("decode_gemma4_global_64x8k_d512", 64, 8192, 32, 4, 512),
        decode_problem("decode_gemma4_global_16x8k_d512", 16, 8192, 16, 2, 512),
        # Gemma-4's sliding layers (D 256, window 1024 keys).
        decode_problem("decode_gemma4_sliding_64x8k_d256", 64, 8192, 32, 16, 256,
                       window=(1023, 0)),
    ]


def quick_problems():
    """One small problem of each kind (a fast device check)."""
    gqa = next(pr for pr in PROBLEMS if pr[0] == "causal_gqa_d128")
    return [
        paged_of(gqa, batch=2, seqlen=1024),
        Problem("chunked_prefill_small_p16", "chunked", [256] * 2, [2048] * 2, 32, 8, 128),
        Problem("mixed_12dec_2chunk_small_p16", "mixed", [1] * 12 + [256] * 2, [1024] * 14,
                32, 8, 128),
        Problem("decode_gpt_oss_4x4k_window127_null", "decode", [1] * 4, [4096] * 4, 64, 8, 64,
                window=(127, 0), sinks="null_logit"),
    ]


# --- counting -----------------------------------------------------------------

def sequence_counts(n_q, n_k, causal, window, spans=(), clamp=True):
    """(useful pairs, keys some query sees) of one sequence of n_q new tokens
    over n_k keys; spans are (start, end) key positions."""
    if n_q == 0 or n_k == 0:
        return 0, 0
    wl, wr = window
    p = torch.arange(n_q, dtype=torch.int64) + (n_k - n_q)

    def clip(lo, hi):
        if wl >= 0:
            lo = torch.maximum(lo, p - wl)
        if wr >= 0:
            hi = torch.minimum(hi, p + wr)
        return lo, hi

    hi = torch.full_like(p, n_k - 1)
    if causal:
        hi = torch.minimum(hi, p)
    lo, hi = clip(torch.zeros_like(p), hi)
    count = (hi - lo + 1).clamp(min=0)
    intervals = [(lo, hi)]
    for r0, r1 in spans:  # a row inside a span also sees the span's keys
        inside = (p >= r0) & (p <= r1)
        s_lo, s_hi = torch.full_like(p, r0), torch.full_like(p, min(r1, n_k - 1))
        if clamp and wl >= 0:  # the left window alone bounds a span
            s_lo = torch.maximum(s_lo, p - wl)
        span_len = (s_hi - s_lo + 1).clamp(min=0)
        overlap = (torch.minimum(s_hi, hi) - torch.maximum(s_lo, lo) + 1).clamp(min=0)
        count += torch.where(inside, span_len - overlap, 0)
        intervals.append((torch.where(inside, s_lo, 1), torch.where(inside, s_hi, 0)))
    marks = torch.zeros(n_k + 1, dtype=torch.int64)
    for a, b in intervals:
        keep = b >= a
        marks.index_add_(0, a[keep], torch.ones_like(a[keep]))
        marks.index_add_(0, b[keep] + 1, -torch.ones_like(b[keep]))
    needed = int((marks.cumsum(0)[:n_k] > 0).sum())
    return int(count.sum()), needed


def problem_counts(pr):
    """(useful pairs, useful FLOPs, bytes, floor ms) of a problem."""
    spans_of = [[] for _ in range(pr.batch)]
    for b, r0, r1 in pr.spans:
        spans_of[b].append((r0, r1))
    pairs = keys = 0
    memo = {}
    for b in range(pr.batch):
        key = (pr.n_q[b], pr.n_k[b], tuple(spans_of[b]))
        if key not in memo:
            memo[key] = sequence_counts(pr.n_q[b], pr.n_k[b], pr.causal, pr.window,
                                        spans_of[b], clamp=pr.clamp)
        pairs += memo[key][0]
        keys += memo[key][1]
    flops = 2.0 * pairs * (pr.d + pr.dv) * pr.hq  # Q K^T over D, P V over Dv
    elem = 2  # bf16
    bytes_ = float(elem * (sum(pr.n_q) * pr.hq * (pr.d + pr.dv) + keys * pr.hkv * (pr.d + pr.dv)))
    floor_ms = max(bytes_ / ba.COPY_BW, flops / ba.MATMUL) * 1e3
    return pairs, flops, bytes_, floor_ms


# --- inputs -------------------------------------------------------------------

class Data:
    pass


def build_data(pr, device, dtype=torch.bfloat16, spare_pages=None):
    """Random q, contiguous k/v, and the same K/V scattered into a shuffled
    page pool; spare pages and rows past a sequence's keys hold NaN."""
    x = Data()
    n_q = torch.tensor(pr.n_q, dtype=torch.int64)
    n_k = torch.tensor(pr.n_k, dtype=torch.int64)
    total_q, total_k = int(n_q.sum()), int(n_k.sum())
    x.q = torch.randn(total_q, pr.hq, pr.d, device=device, dtype=dtype)
    x.k = torch.randn(total_k, pr.hkv, pr.d, device=device, dtype=dtype)
    x.v = torch.randn(total_k, pr.hkv, pr.dv, device=device, dtype=dtype)
    x.cu_q = torch.cat([n_q.new_zeros(1), n_q.cumsum(0)]).to(torch.int32).to(device)
    x.cu_k = torch.cat([n_k.new_zeros(1), n_k.cumsum(0)]).to(torch.int32).to(device)
    x.used_k = n_k.to(torch.int32).to(device)
    x.max_q, x.max_k = int(n_q.max()), int(n_k.max())
    x.sinks = (torch.rand(pr.hq, device=device) * 4 - 1 if pr.sinks != "none" else None)
    x.ranges = (torch.tensor(pr.spans, dtype=torch.int32, device=device) if pr.spans else None)

    ps = pr.page_size
    pages_of = (n_k + ps - 1) // ps
    used = int(pages_of.sum())
    spare = spare_pages if spare_pages is not None else max(8, used // 50)
    num_pages = used + spare
    perm = torch.randperm(num_pages, device=device).to(torch.int32)
    x.table = torch.zeros(pr.batch, int(pages_of.max()), dtype=torch.int32, device=device)
    owned = torch.arange(x.table.shape[1])[None, :] < pages_of[:, None]
    x.table[owned.to(device)] = perm[:used]  # row-major: each sequence's pages in order
    shape = (num_pages, ps, pr.hkv, pr.d)
    x.k_cache = torch.full(shape, float("nan"), device=device, dtype=dtype)
    x.v_cache = torch.full(shape[:3] + (pr.dv,), float("nan"), device=device, dtype=dtype)
    seq = torch.repeat_interleave(torch.arange(pr.batch), n_k).to(device)
    pos = torch.arange(total_k, device=device) - x.cu_k.long()[seq]
    phys = x.table[seq, pos // ps].long()
    x.k_cache[phys, pos % ps] = x.k
    x.v_cache[phys, pos % ps] = x.v
    return x

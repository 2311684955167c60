"""A plain PyTorch reference of docs/semantics.md, in fp32, for tests and examples
(a paged cache is gathered into varlen tensors first).

It loops over sequences and materializes each score matrix [Hq, n_q, n_k],
so it is meant for checking, not for speed. It reads cu_seqlens and the
spans on the host.
"""

import math

import torch


def _spans_by_sequence(mm_prefix_ranges, num_seqs):
    spans = [[] for _ in range(num_seqs)]
    if mm_prefix_ranges is not None:
        for seq, start, end in mm_prefix_ranges.tolist():
            if 0 <= seq < num_seqs:
                spans[seq].append((start, end))
    return spans


def varlen_attention_reference(q, k, v, cu_seqlens_q, cu_seqlens_k,
                               softmax_scale=None, causal=False,
                               window_size=(-1, -1), sinks=None,
                               sinks_mode="none", mm_prefix_ranges=None,
                               mm_prefix_clamp=False, softcap=0.0,
                               mask_mod=None, score_mod=None):
    """Returns (out [total_q, Hq, D] fp32, lse [Hq, total_q] fp32).

    mask_mod(b, h, p, j) and score_mod(s, b, h, p, j), for a user spec's
    mask and score written by hand: b the sequence (an int), h [Hq, 1, 1]
    the query heads, p [1, n_q, 1] the queries' positions, j [1, 1, n_k]
    the keys' positions (int64 tensors); s [Hq, n_q, n_k] the scores after
    scale and softcap. The mask is ANDed with what the flags leave visible;
    the score runs before the sinks' bias on key 0."""
    total_q, heads_q, head_dim = q.shape
    heads_kv = k.shape[1]
    group = heads_q // heads_kv
    scale = softmax_scale if softmax_scale is not None else 1 / math.sqrt(head_dim)
    window_left, window_right = window_size
    cu_q = cu_seqlens_q.tolist()
    cu_k = cu_seqlens_k.tolist()
    num_seqs = len(cu_q) - 1
    spans = _spans_by_sequence(mm_prefix_ranges, num_seqs)
    out = torch.zeros(total_q, heads_q, v.shape[2], dtype=torch.float32,
                      device=q.device)
    lse = torch.full((heads_q, total_q), -math.inf, dtype=torch.float32,
                     device=q.device)
    sink = sinks.float() if sinks is not None else None
    for b in range(num_seqs):
        q0, q1, k0, k1 = cu_q[b], cu_q[b + 1], cu_k[b], cu_k[b + 1]
        n_q, n_k = q1 - q0, k1 - k0
        if n_q == 0:
            continue
        if n_k == 0:
            if sinks_mode == "null_logit":
                lse[:, q0:q1] = sink[:, None]
            continue
        qb = q[q0:q1].float()                                   # [n_q, Hq, D]
        kb = k[k0:k1].float().repeat_interleave(group, dim=1)   # [n_k, Hq, D]
        vb = v[k0:k1].float().repeat_interleave(group, dim=1)
        s = torch.einsum("ihd,jhd->hij", qb, kb) * scale        # [Hq, n_q, n_k]
        if softcap > 0:
            s = softcap * torch.tanh(s / softcap)
        p = (torch.arange(n_q, device=q.device) + (n_k - n_q))[:, None]
        j = torch.arange(n_k, device=q.device)[None, :]
        h = torch.arange(heads_q, device=q.device)[:, None, None]
        if score_mod is not None:
            s = score_mod(s, b, h, p[None], j[None]).float()
        in_window = torch.ones(n_q, n_k, dtype=torch.bool, device=q.device)
        if window_left >= 0:
            in_window &= p - j <= window_left
        if window_right >= 0:
            in_window &= j - p <= window_right
        visible = in_window & (j <= p) if causal else in_window.clone()
        if mm_prefix_ranges is not None:
            # The clamp bounds a span by the left window alone (Gemma-4's
            # q - k < sliding_window); the right bound never applies.
            in_left = (p - j <= window_left if window_left >= 0
                       else torch.ones_like(in_window))
            for start, end in spans[b]:
                same = ((p >= start) & (p <= end)) & ((j >= start) & (j <= end))
                visible |= same & in_left if mm_prefix_clamp else same
        if mask_mod is not None:
            visible = visible & mask_mod(b, h, p[None], j[None])
        else:
            visible = visible.expand(heads_q, n_q, n_k)
        if sinks_mode == "bias_key0":
            s[:, :, 0] += sink[:, None]
        s = s.masked_fill(~visible, -math.inf)
        if sinks_mode == "null_logit":
            extra = sink[:, None, None].expand(heads_q, n_q, 1)
            row_lse = torch.logsumexp(torch.cat([s, extra], dim=-1), dim=-1)
        else:
            row_lse = torch.logsumexp(s, dim=-1)                # -inf if none
        weights = torch.where(visible, torch.exp(s - row_lse[..., None]),
                              torch.zeros((), device=q.device))
        out[q0:q1] = torch.einsum("hij,jhd->ihd", weights, vb)
        lse[:, q0:q1] = row_lse
    return out, lse


def gather_paged(k_cache, v_cache, block_table, seqused_k):
    """A paged cache's keys and values as contiguous varlen tensors: (k, v
    [sum of seqused_k, Hkv, D], cu_seqlens_k int32 [B+1]). Key position j
    of sequence b is row j % page_size of page block_table[b, j //
    page_size]; only those entries of block_table are read."""
    page_size = k_cache.shape[1]
    used = seqused_k.tolist()
    ks, vs = [], []
    for b, n_k in enumerate(used):
        j = torch.arange(n_k, device=k_cache.device)
        pages = block_table[b].to(k_cache.device, torch.long)[j // page_size]
        ks.append(k_cache[pages, j % page_size])
        vs.append(v_cache[pages, j % page_size])
    empty = k_cache.new_empty((0, *k_cache.shape[2:]))
    cu = [0]
    for n_k in used:
        cu.append(cu[-1] + n_k)
    return (torch.cat(ks) if ks else empty, torch.cat(vs) if vs else empty,
            torch.tensor(cu, dtype=torch.int32, device=k_cache.device))


def paged_attention_reference(q, k_cache, v_cache, block_table, cu_seqlens_q,
                              seqused_k, softmax_scale=None, causal=True,
                              window_size=(-1, -1), sinks=None,
                              sinks_mode="none", mm_prefix_ranges=None,
                              mm_prefix_clamp=False, softcap=0.0):
    """paged_attention's result: the varlen reference over the gathered
    keys. Returns (out [total_q, Hq, D] fp32, lse [Hq, total_q] fp32)."""
    k, v, cu_seqlens_k = gather_paged(k_cache, v_cache, block_table, seqused_k)
    return varlen_attention_reference(
        q, k, v, cu_seqlens_q, cu_seqlens_k, softmax_scale=softmax_scale,
        causal=causal, window_size=window_size, sinks=sinks,
        sinks_mode=sinks_mode, mm_prefix_ranges=mm_prefix_ranges,
        mm_prefix_clamp=mm_prefix_clamp, softcap=softcap)


def relative_error(actual, reference):
    """||actual - reference|| / ||reference||; inf if actual has a NaN."""
    actual = actual.float()
    reference = reference.float()
    if torch.isnan(actual).any():
        return math.inf
    norm = torch.linalg.vector_norm(reference).item()
    diff = torch.linalg.vector_norm(actual - reference).item()
    return diff / norm if norm > 0 else diff


def lse_error(actual, reference):
    """Max |actual - reference| where the reference is finite; inf when the
    -inf entries differ or actual has a NaN."""
    finite = torch.isfinite(reference)
    if not torch.equal(torch.isneginf(actual), torch.isneginf(reference)):
        return math.inf
    if torch.isnan(actual).any():
        return math.inf
    if not finite.any():
        return 0.0
    return (actual[finite] - reference[finite]).abs().max().item()

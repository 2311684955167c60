// docs/semantics.md, literally: every (query, key) pair is tested with the
// visibility rule as written, in fp64, with no tiling and no shortcuts.
#include "attnjit/reference.h"

#include <cassert>
#include <cmath>
#include <limits>

namespace attnjit {
namespace {

struct Sequence {
  int b, q_begin, n_q, k_begin, n_k;
  std::vector<std::pair<int, int>> spans;
};

bool in_window(const ReferenceProblem& pr, int p, int j) {
  return (pr.window_left < 0 || p - j <= pr.window_left) &&
         (pr.window_right < 0 || j - p <= pr.window_right);
}

bool visible(const ReferenceProblem& pr, const Sequence& seq, int p, int j) {
  return key_visible(pr, seq.spans, p, j);
}

Sequence sequence(const ReferenceProblem& pr, int b) {
  Sequence s;
  s.b = b;
  s.q_begin = pr.cu_seqlens_q[b];
  s.n_q = pr.cu_seqlens_q[b + 1] - s.q_begin;
  s.k_begin = pr.cu_seqlens_k[b];
  s.n_k = pr.cu_seqlens_k[b + 1] - s.k_begin;
  if (pr.mm_prefix) {
    for (int i = pr.mm_span_offsets[b]; i < pr.mm_span_offsets[b + 1]; ++i) {
      s.spans.emplace_back(pr.mm_spans[2 * i], pr.mm_spans[2 * i + 1]);
    }
  }
  return s;
}

}  // namespace

bool key_visible(const ReferenceProblem& pr, const std::vector<std::pair<int, int>>& spans, int p,
                 int j) {
  const bool base = (!pr.causal || j <= p) && in_window(pr, p, j);
  if (base) return true;
  if (!pr.mm_prefix) return false;
  for (const auto& [r0, r1] : spans) {
    if (r0 <= p && p <= r1 && r0 <= j && j <= r1) {
      // The clamp bounds a span by the left window only (Gemma-4's
      // q - k < sliding_window); the right bound never applies to a span.
      return !pr.mm_clamp || pr.window_left < 0 || p - j <= pr.window_left;
    }
  }
  return false;
}

namespace {

int value_dim(const ReferenceProblem& pr) {
  return pr.head_dim_v > 0 ? pr.head_dim_v : pr.head_dim;
}

// One query row of one head: fills o (D_v values) and returns the LSE.
double attend_row(const ReferenceProblem& pr, const Sequence& seq, int h, int i, double* o) {
  const int D = pr.head_dim;
  const int Dv = value_dim(pr);
  const int hk = h / (pr.num_heads_q / pr.num_heads_kv);
  const double scale = pr.scale > 0 ? pr.scale : 1.0 / std::sqrt(double(D));
  const float* q = &pr.q[(size_t(seq.q_begin + i) * pr.num_heads_q + h) * D];
  const int p = i + seq.n_k - seq.n_q;
  const double sink = pr.sinks.empty() ? 0.0 : pr.sinks[h];

  std::vector<double> logits;
  std::vector<int> keys;
  for (int j = 0; j < seq.n_k; ++j) {
    if (!visible(pr, seq, p, j)) continue;
    if (pr.user_mask && !pr.user_mask(seq.b, h, hk, p, j, seq.n_q, seq.n_k)) continue;
    const float* k = &pr.k[(size_t(seq.k_begin + j) * pr.num_heads_kv + hk) * D];
    double dot = 0;
    for (int d = 0; d < D; ++d) dot += double(q[d]) * double(k[d]);
    double s = scale * dot;
    if (pr.softcap > 0) s = pr.softcap * std::tanh(s / pr.softcap);
    if (pr.user_score) s = pr.user_score(s, seq.b, h, hk, p, j, seq.n_q, seq.n_k);
    if (pr.sink_mode == ReferenceProblem::Sinks::kBiasKey0 && j == 0) {
      s += sink;
    }
    logits.push_back(s);
    keys.push_back(j);
  }
  const bool null_logit = pr.sink_mode == ReferenceProblem::Sinks::kNullLogit;
  for (int d = 0; d < Dv; ++d) o[d] = 0;
  if (logits.empty()) {
    return null_logit ? sink : -std::numeric_limits<double>::infinity();
  }
  double m = null_logit ? sink : -std::numeric_limits<double>::infinity();
  for (double s : logits) m = std::max(m, s);
  double denom = null_logit ? std::exp(sink - m) : 0.0;
  for (size_t n = 0; n < logits.size(); ++n) {
    const double w = std::exp(logits[n] - m);
    denom += w;
    const float* v = &pr.v[(size_t(seq.k_begin + keys[n]) * pr.num_heads_kv + hk) * Dv];
    for (int d = 0; d < Dv; ++d) o[d] += w * double(v[d]);
  }
  for (int d = 0; d < Dv; ++d) o[d] /= denom;
  return m + std::log(denom);
}

}  // namespace

ReferenceResult reference_attention(const ReferenceProblem& pr) {
  assert(pr.num_heads_kv > 0 && pr.num_heads_q % pr.num_heads_kv == 0);
  assert(int(pr.cu_seqlens_q.size()) == pr.num_seqs + 1);
  assert(value_dim(pr) <= pr.head_dim);
  const int total_q = pr.cu_seqlens_q.back();
  const int Dv = value_dim(pr);
  ReferenceResult out;
  out.o.assign(size_t(total_q) * pr.num_heads_q * Dv, 0.0);
  out.lse.assign(size_t(pr.num_heads_q) * total_q, 0.0);
  for (int b = 0; b < pr.num_seqs; ++b) {
    const Sequence seq = sequence(pr, b);
    for (int h = 0; h < pr.num_heads_q; ++h) {
      for (int i = 0; i < seq.n_q; ++i) {
        const size_t row = size_t(seq.q_begin + i);
        double* o = &out.o[(row * pr.num_heads_q + h) * Dv];
        out.lse[size_t(h) * total_q + row] = attend_row(pr, seq, h, i, o);
      }
    }
  }
  return out;
}

ReferenceProblem gather_paged(ReferenceProblem pr, const PagedKv& paged) {
  const size_t row = size_t(pr.num_heads_kv) * pr.head_dim;  // one token of one page
  const size_t row_v = size_t(pr.num_heads_kv) * value_dim(pr);
  pr.cu_seqlens_k.assign(1, 0);
  pr.k.clear();
  pr.v.clear();
  for (int b = 0; b < pr.num_seqs; ++b) {
    const int n_k = paged.seqused_k[b];
    for (int j = 0; j < n_k; ++j) {
      const int page = paged.block_table[size_t(b) * paged.max_pages + j / paged.page_size];
      assert(page >= 0 && page < paged.num_pages);
      const size_t slot = size_t(page) * paged.page_size + j % paged.page_size;
      pr.k.insert(pr.k.end(), paged.k_cache.begin() + slot * row,
                  paged.k_cache.begin() + (slot + 1) * row);
      pr.v.insert(pr.v.end(), paged.v_cache.begin() + slot * row_v,
                  paged.v_cache.begin() + (slot + 1) * row_v);
    }
    pr.cu_seqlens_k.push_back(pr.cu_seqlens_k.back() + n_k);
  }
  return pr;
}

double relative_error(const std::vector<double>& a, const std::vector<double>& b) {
  assert(a.size() == b.size());
  double num = 0, den = 0;
  for (size_t n = 0; n < a.size(); ++n) {
    if (std::isnan(a[n])) return std::numeric_limits<double>::quiet_NaN();
    const double d = a[n] - b[n];
    num += d * d;
    den += b[n] * b[n];
  }
  if (den == 0) return num == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return std::sqrt(num / den);
}

}  // namespace attnjit

// The CPU reference: docs/semantics.md implemented literally, fp64 accumulation.
// Inputs are float copies of the device's bf16/fp16 values.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

// The public C++ API: exported from libattnjit.so (the build hides the rest).
#pragma GCC visibility push(default)

namespace attnjit {

struct ReferenceProblem {
  int num_seqs = 0, num_heads_q = 0, num_heads_kv = 0, head_dim = 0;
  int head_dim_v = 0;  // D_v, the width of v and o (<= head_dim); 0: head_dim
  std::vector<int32_t> cu_seqlens_q, cu_seqlens_k;  // [B+1]
  std::vector<float> q, k, v;                       // [total, H, D] (v: D_v), contiguous
  std::vector<float> sinks;                         // [Hq] or empty
  enum class Sinks { kNone, kNullLogit, kBiasKey0 } sink_mode = Sinks::kNone;
  bool causal = false;
  int window_left = -1, window_right = -1;  // -1: unbounded
  bool mm_prefix = false, mm_clamp = false;
  std::vector<int32_t> mm_span_offsets;  // [B+1]
  std::vector<int32_t> mm_spans;         // [R, 2] inclusive key positions
  double scale = 0;                      // <= 0: 1/sqrt(D)
  double softcap = 0;                    // > 0: enabled
  // A spec's own expressions (docs/expressions.md), when it has them: the
  // mask ANDed with the rules above, the score applied after scale and
  // soft-cap (before a key-0 bias). Arguments: sequence b, query head h,
  // its kv head, query position p, key position j, n_q, n_k (and s).
  std::function<bool(int, int, int, int, int, int, int)> user_mask;
  std::function<double(double, int, int, int, int, int, int, int)> user_score;
};

struct ReferenceResult {
  std::vector<double> o;    // [total_q, Hq, D_v]
  std::vector<double> lse;  // [Hq, total_q]
};

ReferenceResult reference_attention(const ReferenceProblem& problem);

// A paged K/V cache (docs/semantics.md, "Paged K/V"): key position j of
// sequence b is row j % page_size of page block_table[b * max_pages + j /
// page_size]. Pages may be shared and in any order; entries past a
// sequence's last page are never read.
struct PagedKv {
  int page_size = 0, num_pages = 0, max_pages = 0;
  std::vector<float> k_cache, v_cache;  // [num_pages, page_size, Hkv, D (v: D_v)], contiguous
  std::vector<int32_t> block_table;     // [B, max_pages]
  std::vector<int32_t> seqused_k;       // [B]: n_k(b)
};

// The contiguous problem the paged one stands for: each sequence's keys
// gathered from its pages into `problem.k` / `problem.v`, cu_seqlens_k
// from seqused_k. `problem` holds everything else (q, cu_seqlens_q, modes).
ReferenceProblem gather_paged(ReferenceProblem problem, const PagedKv& paged);

// docs/semantics.md "Visibility", literally: may the query at key position p of a
// sequence see key j of it (0 <= j < n_k)? spans: that sequence's inclusive
// [r0, r1] pairs (used only with mm_prefix). The reference and the tests of
// the kernels' mask arithmetic share it.
bool key_visible(const ReferenceProblem& rule, const std::vector<std::pair<int, int>>& spans, int p,
                 int j);

// ||a - b|| / ||b|| over all elements; NaN if any element of a is NaN.
double relative_error(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace attnjit

#pragma GCC visibility pop

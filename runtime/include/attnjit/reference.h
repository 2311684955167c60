// The CPU reference: docs/semantics.md implemented literally, fp64 accumulation.
// Inputs are float copies of the device's bf16/fp16 values.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace attnjit {

struct ReferenceProblem {
  int num_seqs = 0, num_heads_q = 0, num_heads_kv = 0, head_dim = 0;
  std::vector<int32_t> cu_seqlens_q, cu_seqlens_k;  // [B+1]
  std::vector<float> q, k, v;                       // [total, H, D], contiguous
  std::vector<float> sinks;                         // [Hq] or empty
  enum class Sinks { kNone, kNullLogit, kBiasKey0 } sink_mode = Sinks::kNone;
  bool causal = false;
  int window_left = -1, window_right = -1;  // -1: unbounded
  bool mm_prefix = false, mm_clamp = false;
  std::vector<int32_t> mm_span_offsets;  // [B+1]
  std::vector<int32_t> mm_spans;         // [R, 2] inclusive key positions
  double scale = 0;                      // <= 0: 1/sqrt(D)
  double softcap = 0;                    // > 0: enabled
};

struct ReferenceResult {
  std::vector<double> o;    // [total_q, Hq, D]
  std::vector<double> lse;  // [Hq, total_q]
};

ReferenceResult reference_attention(const ReferenceProblem& problem);

// docs/semantics.md "Visibility", literally: may the query at key position p of a
// sequence see key j of it (0 <= j < n_k)? spans: that sequence's inclusive
// [r0, r1] pairs (used only with mm_prefix). The reference and the tests of
// the kernels' mask arithmetic share it.
bool key_visible(const ReferenceProblem& rule, const std::vector<std::pair<int, int>>& spans, int p,
                 int j);

// ||a - b|| / ||b|| over all elements; NaN if any element of a is NaN.
double relative_error(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace attnjit

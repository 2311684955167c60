// The benchmark problems of the peer table (docs/device.md), shared by the C++
// kernel benchmark and (mirrored) bench/bench_attention.py.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "attnjit/attention.h"

namespace attnjit::bench {

struct Problem {
  std::string name;
  int batch, seqlen, heads_q, heads_kv, head_dim;
  bool causal = false;
  int window_left = -1, window_right = -1;  // window flag iff either >= 0
  SinkMode sinks = SinkMode::kNone;
  bool spans = false;  // image spans, clamped to the window
};

inline std::vector<Problem> peer_problems() {
  return {
      {"full_d80", 4, 4096, 16, 16, 80},
      {"causal_gqa_d128", 8, 2048, 32, 8, 128, true},
      {"causal_long_d128", 1, 16384, 32, 32, 128, true},
      {"mimo_window64_key0", 4, 4096, 16, 16, 80, false, 64, 64, SinkMode::kBiasKey0},
      {"gpt_oss_window127_null", 4, 4096, 64, 8, 64, true, 127, 0, SinkMode::kNullLogit},
      {"gemma4_window1023_spans", 2, 8192, 16, 8, 256, true, 1023, 0, SinkMode::kNone, true},
  };
}

// Image spans of the Gemma-4 problem: 1280 tokens (longer than the window)
// starting every 2048 tokens at offset 1024, per sequence.
inline std::vector<std::pair<int, int>> image_spans(int seqlen) {
  std::vector<std::pair<int, int>> spans;
  for (int start = 1024; start + 1280 <= seqlen; start += 2048) {
    spans.emplace_back(start, start + 1279);
  }
  return spans;
}

}  // namespace attnjit::bench

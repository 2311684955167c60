// The benchmark problems of the peer table (docs/device.md), shared by the C++
// kernel benchmark and (mirrored) bench/bench_attention.py.
#pragma once

#include <algorithm>
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
  bool spans = false;  // image spans, bounded by the left window
  int seqlen_q = 0;    // new tokens per sequence (0: seqlen, a prefill); keys: seqlen
  bool kv_fp8 = false;  // K/V as e4m3 with per-tensor scales (kv_dtype fp8_e4m3)
  int page_size = 0;    // > 0: a paged cache of such pages, in shuffled order (kv_layout paged)
  int head_dim_v = 0;   // D of v and o where narrower than head_dim (0: head_dim)
};

// DeepSeek-V3's MHA prefill: query and key heads of 192, value heads of 128.
inline Problem deepseek_prefill() {
  Problem pr{"deepseek_d192_v128", 4, 4096, 32, 32, 192, true};
  pr.head_dim_v = 128;
  return pr;
}

inline std::vector<Problem> peer_problems() {
  return {
      {"full_d80", 4, 4096, 16, 16, 80},
      {"causal_gqa_d128", 8, 2048, 32, 8, 128, true},
      {"causal_long_d128", 1, 16384, 32, 32, 128, true},
      {"causal_d256", 2, 8192, 16, 16, 256, true},
      {"mimo_window64_key0", 4, 4096, 16, 16, 80, false, 64, 64, SinkMode::kBiasKey0},
      {"gpt_oss_window127_null", 4, 4096, 64, 8, 64, true, 127, 0, SinkMode::kNullLogit},
      {"gemma4_window1023_spans", 2, 8192, 16, 8, 256, true, 1023, 0, SinkMode::kNone, true},
      // The built-in causal window at D 128, wide (StreamingLLM's shape, no sinks) and narrow:
      // the two ends of the window tile rule's choice.
      {"window1023_d128", 4, 8192, 32, 8, 128, true, 1023, 0},
      {"window127_d128", 4, 4096, 32, 8, 128, true, 127, 0},
      deepseek_prefill(),
      // Gemma-4's global layers (D 512, two warpgroups splitting D), without the image spans.
      {"causal_d512_gqa", 2, 8192, 32, 4, 512, true},
  };
}

// Decode (issue 13): one query per sequence over a long context; run on
// the split-KV variant (the library routes decode-shaped launches there).
inline std::vector<Problem> decode_problems() {
  std::vector<Problem> out = {
      {"decode_8x32k_d64", 8, 32768, 64, 8, 64, true},
      {"decode_64x8k_d128", 64, 8192, 32, 8, 128, true},
      {"decode_256x2k_d128", 256, 2048, 32, 8, 128, true},
      {"decode_gpt_oss_8x32k", 8, 32768, 64, 8, 64, true, 127, 0, SinkMode::kNullLogit},
  };
  // GQA 16 (64/4 heads): two 8-row tiles per kv head in the swapped decode
  // block, one 64-row tile in the others; fp8 only, where the rules differ.
  Problem gqa16{"decode_32x8k_d128_gqa16_fp8", 32, 8192, 64, 4, 128, true};
  gqa16.kv_fp8 = true;
  // The same over an fp8 (e4m3) cache (issue 13: at most 0.55x the bf16
  // time); with --try, the tile configurations of the fp8 decode block
  // (decode_mma) checked and timed beside the default.
  for (size_t i = 0; i < 3; ++i) {
    Problem fp8 = out[i];
    fp8.name += "_fp8";
    fp8.kv_fp8 = true;
    out.push_back(fp8);
  }
  // And over a paged cache of 16-token pages (the engines' small pages),
  // bf16 and fp8: what bench_decode.py times, here for --try.
  for (const char* name :
       {"decode_8x32k_d64", "decode_64x8k_d128", "decode_8x32k_d64_fp8", "decode_64x8k_d128_fp8"}) {
    Problem paged =
        *std::find_if(out.begin(), out.end(), [&](const Problem& pr) { return pr.name == name; });
    paged.name += "_p16";
    paged.page_size = 16;
    out.push_back(paged);
  }
  out.push_back(gqa16);
  for (Problem& pr : out) pr.seqlen_q = 1;
  return out;
}

// A user spec of specs/examples beside the built-in flags it re-expresses,
// on the same tensors (issue: within 5% of the flags, the same key tiles).
// kernel_bench times both in isolated launches and compares their outputs;
// bench/bench_user_variants.py times them through Python beside
// FlexAttention.
struct UserProblem {
  std::string name;  // the spec's family (specs/examples/<name>.yaml)
  Problem builtin;   // the shape and the built-in flags
  bool causal = false;                              // the user variant's own flags
  std::vector<std::pair<std::string, int>> ints;    // int32 args
  std::vector<std::pair<std::string, float>> per_head;  // float [Hq] tensors, one value
};

inline std::vector<UserProblem> user_problems() {
  return {
      {"causal_expr", {"causal_gqa_d128", 8, 2048, 32, 8, 128, true}, false, {}, {}},
      {"sliding_window_expr",
       {"sliding_window1023_d64", 8, 4096, 64, 8, 64, true, 1023, 0},
       false,
       {{"window", 1023}},
       {}},
      {"key0_bias_expr",
       {"mimo_window64_key0", 4, 4096, 16, 16, 80, false, 64, 64, SinkMode::kBiasKey0},
       false,
       {{"radius", 64}},
       {{"key0_bias", 1.f}}},  // the built-in's sinks are 1 per head
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

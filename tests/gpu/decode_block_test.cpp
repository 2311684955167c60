// The decode block (tuning param decode_mma, templates/attention/
// decode_sm90.cuh) on every flag it serves: split-KV variants over e4m3
// and 16-bit K/V at D 64 and 128 (256, 384 and 512 swapped), contiguous
// and paged, bf16 and fp16 q, causal or not, windows, both sink modes,
// soft-cap, LSE and multimodal spans with and without the clamp, each on
// the standard shapes (decodes with splits forced to 1, 2 and the most,
// ragged batches, pages of 16, rows of one and of several row groups)
// against the reference, swapped (decode_mma 2) too, in the ring depths
// and key tiles a rule may give (the fp8 split rules at D 64, 128, 384 and
// 512 take the block; a ring's stages round up to a multiple of the warps,
// so the D 64 rule's 2 stages are the same ring as 3 here).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include <fmt/format.h>

#include "attnjit/selfcheck.h"
#include "gpu/gpu_test_util.h"

namespace attnjit {
namespace {

// Every case is a split variant (the decode block serves only those).
const Schedule kSplit{true, false};

struct DecodeCase {
  AttentionFlags flags;
  std::map<std::string, int64_t> tuning;
};

// The flag sets every head dim is run with: causal; GPT-OSS's window and
// null logit; clamped spans with the key-0 bias; open spans with LSE; and
// fp16 q, soft-cap, LSE and the null logit without causal.
std::vector<AttentionFlags> flag_sets_of(int d, KvDType kv, KvLayout layout) {
  AttentionFlags base;
  base.head_dim = d;
  base.kv_dtype = kv;
  base.kv_layout = layout;
  AttentionFlags plain = base;
  plain.causal = true;
  AttentionFlags oss = plain;
  oss.window = true;
  oss.sinks = SinkMode::kNullLogit;
  AttentionFlags spans = plain;
  spans.window = spans.mm_prefix = spans.mm_clamp = true;
  spans.sinks = SinkMode::kBiasKey0;
  AttentionFlags open = spans;
  open.mm_clamp = false;
  open.sinks = SinkMode::kNone;
  open.return_lse = true;
  AttentionFlags cap = base;
  cap.dtype = DType::kFP16;
  cap.softcap = cap.return_lse = true;
  cap.sinks = SinkMode::kNullLogit;
  return {plain, oss, spans, open, cap};
}

std::vector<DecodeCase> decode_cases() {
  std::vector<DecodeCase> cases;
  for (const KvDType kv : {KvDType::kFp8E4M3, KvDType::kSame}) {
    for (const KvLayout layout : {KvLayout::kContiguous, KvLayout::kPaged}) {
      for (const int d : {64, 128}) {
        for (const AttentionFlags& f : flag_sets_of(d, kv, layout)) {
          // The ring and key tile a rule would take, and a shallower ring
          // (3 stages round up to 4, a multiple of the four warps). D 128 at
          // 64-key tiles spills (tests/compiler/attention_compile_test.cpp).
          // 16-bit K/V at one block per SM (two spill; the compile test).
          const int block_n = d == 64 ? 64 : 32;
          const int blocks = kv == KvDType::kSame ? 1 : 2;
          for (const int stages : {8, 3}) {
            cases.push_back({f,
                             {{"decode_mma", 1},
                              {"block_m", 64},
                              {"block_n", block_n},
                              {"stages", stages},
                              {"min_blocks", blocks}}});
          }
          // Swapped (decode_mma 2: keys as M, the <= 8 rows of a work tile
          // of block_m 8 as N; DecodeSwapLayout), at the rule's ring.
          cases.push_back({f,
                           {{"decode_mma", 2},
                            {"block_m", 8},
                            {"block_n", block_n},
                            {"stages", 8},
                            {"min_blocks", blocks}}});
          // Swapped in groups of 8 rows, up to four in a tile (GQA 16, the
          // 3-query decode of the shapes, the prefill shapes' 32-row tiles).
          cases.push_back({f,
                           {{"decode_mma", 2},
                            {"block_m", 32},
                            {"block_n", block_n},
                            {"stages", 8},
                            {"min_blocks", blocks}}});
        }
      }
    }
  }
  // Heads past 128 take the swapped block only (its O^T is D / 4 floats
  // per thread): Gemma-4's sliding (256) and global (512) layers and 384,
  // one and four row groups, at the rules' rings (fp8; 16-key tiles past
  // 256) and, for 16-bit K/V (no rule takes the block there), the deepest
  // that fits.
  for (const KvDType kv : {KvDType::kFp8E4M3, KvDType::kSame}) {
    for (const KvLayout layout : {KvLayout::kContiguous, KvLayout::kPaged}) {
      for (const int d : {256, 384, 512}) {
        const int block_n = d > 256 ? 16 : 32;
        const int stages = kv == KvDType::kSame ? 4 : 8;
        for (const AttentionFlags& f : flag_sets_of(d, kv, layout)) {
          for (const int rows : {8, 32}) {
            cases.push_back({f,
                             {{"decode_mma", 2},
                              {"block_m", rows},
                              {"warps", 4},
                              {"block_n", block_n},
                              {"stages", stages},
                              {"min_blocks", 1}}});
          }
        }
      }
    }
  }
  for (const KvDType kv : {KvDType::kFp8E4M3, KvDType::kSame}) {
    AttentionFlags f;
    f.head_dim = 128;
    f.causal = f.window = true;
    f.sinks = SinkMode::kNullLogit;
    f.kv_dtype = kv;
    f.kv_layout = KvLayout::kPaged;
    // Eight warps (128 rows of 16 per warp): the block takes them too.
    cases.push_back({f,
                     {{"decode_mma", 1},
                      {"block_m", 128},
                      {"warps", 8},
                      {"block_n", 32},
                      {"stages", 8},
                      {"min_blocks", 1}}});
    // The paged swapped block at the rules' 32-row tiles of 64 keys.
    cases.push_back({f,
                     {{"decode_mma", 2},
                      {"block_m", 32},
                      {"block_n", 64},
                      {"stages", 4},
                      {"min_blocks", 2}}});
  }
  return cases;
}

// gtest's "GetParam() = ..." reads as the flags and the tuning values.
void PrintTo(const DecodeCase& c, std::ostream* os) {
  PrintTo(c.flags, os, kSplit);
  std::string tuning;
  for (const auto& [param, value] : c.tuning) {
    tuning += (tuning.empty() ? "" : ",") + param + "=" + std::to_string(value);
  }
  *os << " | " << tuning;
}

class DecodeBlock : public ::testing::TestWithParam<DecodeCase> {};

TEST_P(DecodeBlock, MatchesTheReferenceOnEveryShape) {
  ATTNJIT_REQUIRE_GPU();
  if (current_device_target() != parse_target("sm_90a")) {
    GTEST_SKIP() << "the decode block is an sm_90a (warpgroup path) tuning";
  }
  const DecodeCase& c = GetParam();
  std::string config;
  for (const auto& [k, v] : c.tuning) config += fmt::format("{}={} ", k, v);
  // The decode block, not a fallback to the warpgroup path: its consumer
  // warps and one producer warp.
  const auto warps = c.tuning.find("warps");
  const unsigned threads = 32u * unsigned(warps == c.tuning.end() ? 4 : warps->second) + 32u;
  auto kernel =
      AttentionKernel::get(c.flags.to_flag_set(kSplit), KernelCache::global(), nullptr, c.tuning);
  kernel->wait_specialized();
  ASSERT_EQ(kernel->kernel().threads(), threads)
      << testing::flags_name(c.flags, kSplit) << " [" << config << "] is not the decode block";
  for (const CheckShape& shape : standard_check_shapes(c.flags)) {
    const uint64_t seed = testing::fresh_seed();
    const CheckResult r =
        check_attention(c.flags, shape, seed, KernelCache::global(), std::nullopt, c.tuning,
                        CheckTier::kSpecialized, kSplit);
    const std::string line =
        fmt::format("{} [{}] {:<22} o_err={:.3e} lse_err={:.3e} written={} seed={}",
                    testing::flags_name(c.flags, kSplit), config, shape.name, r.o_error, r.lse_error,
                    r.output_written, seed);
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
    EXPECT_TRUE(r.passed(error_bound(c.flags.dtype))) << line;
  }
}

INSTANTIATE_TEST_SUITE_P(Kv, DecodeBlock, ::testing::ValuesIn(decode_cases()),
                         [](const ::testing::TestParamInfo<DecodeCase>& info) {
                           const auto& t = info.param.tuning;
                           const auto warps = t.find("warps");
                           return testing::flags_name(info.param.flags, kSplit) + "_n" +
                                  std::to_string(t.at("block_n")) + "_s" +
                                  std::to_string(t.at("stages")) +
                                  (warps == t.end() ? "" : "_w" + std::to_string(warps->second)) +
                                  (t.at("decode_mma") == 2 ? "_swapped" : "") +
                                  (t.at("decode_mma") == 2 && t.at("block_m") > 8
                                       ? "_m" + std::to_string(t.at("block_m"))
                                       : "");
                         });

}  // namespace
}  // namespace attnjit

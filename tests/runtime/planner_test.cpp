// The launch planner (runtime/src/planner.h) alone: its choices from a
// variant's shape and a launch's arguments, with no kernel, cache or
// device. tests/runtime/split_plan_test.cpp checks the same through real
// variants' tile configurations.
#include <gtest/gtest.h>

#include <stdexcept>

#include "planner.h"

namespace attnjit {
namespace {

AttentionArgs batch(int seqs, int q_len, int keys, int hq, int hkv) {
  AttentionArgs a;
  a.num_seqs = seqs;
  a.num_heads_q = hq;
  a.num_heads_kv = hkv;
  a.total_q = seqs * q_len;
  a.max_seqlen_q = q_len;
  a.max_seqlen_k = keys;
  return a;
}

const auto kH200 = [] { return 132; };

VariantShape split_shape() {
  VariantShape v;
  v.block_m = 64;
  v.block_n = 64;
  v.pack_gqa = true;
  v.split_keys = 512;
  v.min_blocks = 2;
  return v;
}

TEST(Planner, DecodeShapedBatchesGoToTheSplitSibling) {
  VariantShape v = split_shape();
  EXPECT_TRUE(wants_split(v, batch(8, 1, 4096, 32, 8)));   // 4 packed rows
  EXPECT_TRUE(wants_split(v, batch(8, 16, 4096, 32, 8)));  // 64 packed rows
  EXPECT_FALSE(wants_split(v, batch(8, 17, 4096, 32, 8)));  // 68: a prefill
  AttentionArgs forced = batch(1, 512, 4096, 8, 8);
  forced.num_splits = 4;  // asked for: even a prefill-shaped batch
  EXPECT_TRUE(wants_split(v, forced));
  AttentionArgs never = batch(8, 1, 4096, 32, 8);
  never.num_splits = 1;  // ruled out
  EXPECT_FALSE(wants_split(v, never));
  v.split_kv = true;  // already the split variant
  EXPECT_FALSE(wants_split(v, batch(8, 1, 4096, 32, 8)));
}

TEST(Planner, PagesThatAreTheSiblingsVBlocksTakeSmallPages) {
  VariantShape v = split_shape();
  v.block_n = 128;
  v.small_pages_rows = 16;
  AttentionArgs a = batch(4, 512, 8192, 32, 8);
  for (int page : {16, 48, 80}) {  // 16 mod 32
    a.page_size = page;
    EXPECT_TRUE(wants_small_pages(v, a)) << page;
  }
  for (int page : {32, 64, 256}) {
    a.page_size = page;
    EXPECT_FALSE(wants_small_pages(v, a)) << page;
  }
  a.page_size = 16;
  v.small_pages = true;  // already the sibling
  EXPECT_FALSE(wants_small_pages(v, a));
  v.small_pages = false;
  v.small_pages_rows = 0;  // a variant without such a sibling
  EXPECT_FALSE(wants_small_pages(v, a));
}

TEST(Planner, SplitsFillTheGpuAndOnlyDecodesSplit) {
  AttentionFlags flags;
  flags.head_dim = 128;
  flags.causal = true;
  VariantShape v = split_shape();
  v.split_kv = true;
  // (A variant that does not split plans one part.)
  VariantShape whole = split_shape();
  EXPECT_EQ(plan_splits(whole, flags, batch(8, 1, 32768, 64, 8), kH200).num_splits, 1);
  // 8 sequences x 8 kv heads = 64 slots on 132 SMs x 2: split until the
  // waves fill; the parts and their workspace follow.
  const SplitPlan few = plan_splits(v, flags, batch(8, 1, 32768, 64, 8), kH200);
  EXPECT_GT(few.num_splits, 1);
  EXPECT_GT(few.workspace_bytes, 0u);
  EXPECT_EQ(few.lse_offset % 256, 0u);
  EXPECT_GT(few.o_offset, few.lse_offset);
  // Enough slots to fill the GPU: no split, no workspace.
  const SplitPlan full = plan_splits(v, flags, batch(256, 1, 2048, 32, 8), kH200);
  EXPECT_EQ(full.num_splits, 1);
  EXPECT_EQ(full.workspace_bytes, 0u);
  // A prefill (more than 8 query tiles) never splits, even when asked.
  AttentionArgs prefill = batch(1, 1024, 32768, 64, 8);
  prefill.num_splits = 4;
  EXPECT_EQ(plan_splits(v, flags, prefill, kH200).num_splits, 1);
  // Asked for: that many, capped by the keys' parts (32768 / 512 = 64).
  AttentionArgs forced = batch(8, 1, 32768, 64, 8);
  forced.num_splits = 5;
  EXPECT_EQ(plan_splits(v, flags, forced, kH200).num_splits, 5);
  forced.num_splits = 100;
  EXPECT_EQ(plan_splits(v, flags, forced, kH200).num_splits, 64);
  // A launch that names its splits asks no device for its SM count.
  const auto no_device = []() -> int { throw std::runtime_error("no device asked for"); };
  EXPECT_EQ(plan_splits(v, flags, forced, no_device).num_splits, 64);
  // Fewer SMs fill sooner: no more splits than with more SMs.
  const auto few_sms = [] { return 16; };
  EXPECT_LE(plan_splits(v, flags, batch(8, 1, 32768, 64, 8), few_sms).num_splits,
            few.num_splits);
}

// A launch's whole plan: the variant's schedule, its splits, and the grid
// (x query tiles times the splits, y kv heads when packing GQA, z
// sequences), with the SM count given (no device asked).
TEST(Planner, ALaunchPlanIsTheScheduleTheSplitsAndTheGrid) {
  VariantShape v = split_shape();
  v.split_kv = true;
  const AttentionFlags flags;
  const LaunchPlan decode = plan_launch(v, flags, batch(8, 1, 32768, 64, 8), 132);
  EXPECT_EQ(decode.schedule, (Schedule{true, false}));
  EXPECT_GT(decode.split.num_splits, 1);
  EXPECT_EQ(decode.grid.x, unsigned(decode.split.num_splits));  // one query tile each
  EXPECT_EQ(decode.grid.y, 8u);
  EXPECT_EQ(decode.grid.z, 8u);
  v.split_kv = false;
  v.pack_gqa = false;
  const LaunchPlan prefill = plan_launch(v, flags, batch(2, 1000, 1000, 16, 4), 132);
  EXPECT_EQ(prefill.schedule, (Schedule{false, false}));
  EXPECT_EQ(prefill.split.num_splits, 1);
  EXPECT_EQ(prefill.split.workspace_bytes, 0u);
  EXPECT_EQ(prefill.grid.x, 16u);  // 1000 rows in tiles of 64
  EXPECT_EQ(prefill.grid.y, 16u);  // query heads
  EXPECT_EQ(prefill.grid.z, 2u);
}

}  // namespace
}  // namespace attnjit

// Split-KV on the host (the planner, AttentionKernel::schedule_for and
// plan), no GPU: which launches run the split sibling, how many splits a
// decode gets on a 132-SM GPU, the workspace they need and the grid. The
// kernels compile through NVRTC for sm_90a into memory-only caches;
// nothing is launched.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "attnjit/attention.h"
#include "attnjit/cache.h"
#include "attnjit/target.h"

namespace attnjit {
namespace {

constexpr int kSms = 132;  // an H200

AttentionArgs decode_args(int batch, int keys, int hq, int hkv) {
  AttentionArgs a;
  a.num_seqs = batch;
  a.num_heads_q = hq;
  a.num_heads_kv = hkv;
  a.total_q = batch;
  a.max_seqlen_q = 1;
  a.max_seqlen_k = keys;
  return a;
}

// The flags of a causal variant of head dim d (its split sibling:
// split_kernel).
AttentionFlags split_flags(int d) {
  AttentionFlags flags;
  flags.head_dim = d;
  flags.causal = true;
  return flags;
}

class SplitPlanTest : public ::testing::Test {
 protected:
  SplitPlanTest() : cache_(CacheConfig{}), target_(parse_target("sm_90a")) {}
  std::shared_ptr<AttentionKernel> kernel(AttentionFlags flags,
                                          const std::map<std::string, int64_t>& tuning = {}) {
    return AttentionKernel::get(flags, cache_, &target_, tuning);
  }
  // The split variant of `flags` (a schedule only a FlagSet names).
  std::shared_ptr<AttentionKernel> split_kernel(const AttentionFlags& flags,
                                                const std::map<std::string, int64_t>& tuning = {}) {
    return AttentionKernel::get(flags.to_flag_set(Schedule{true, false}), cache_, &target_,
                                tuning);
  }
  KernelCache cache_;
  Target target_;
};

TEST_F(SplitPlanTest, DecodeSplitsWhereTheGpuWouldIdleAndNowhereElse) {
  auto k = split_kernel(split_flags(64));
  // 8 sequences x 8 kv heads = 64 blocks on 264 slots: split, enough to
  // fill most of a wave, each part at least split_keys long.
  const SplitPlan few = k->plan(decode_args(8, 32768, 64, 8), kSms).split;
  EXPECT_GT(few.num_splits, 1);
  EXPECT_GE(64 * few.num_splits, 0.8 * 2 * kSms * 0.95);
  EXPECT_LE(few.num_splits, 32768 / 512);
  // The workspace: counters [B, Hkv], then lse and o parts, 256-aligned.
  const size_t parts = size_t(few.num_splits) * 8 * 64;
  EXPECT_EQ(few.counters_offset, 0u);
  EXPECT_EQ(few.lse_offset, 256u);
  EXPECT_EQ(few.o_offset, few.lse_offset + (parts * 4 + 255) / 256 * 256);
  EXPECT_EQ(few.workspace_bytes, few.o_offset + parts * 64 * 4);
  // 256 x 8 blocks already fill the GPU several times: no split.
  EXPECT_EQ(k->plan(decode_args(256, 2048, 32, 8), kSms).split.num_splits, 1);
  EXPECT_EQ(k->plan(decode_args(256, 2048, 32, 8), kSms).split.workspace_bytes, 0u);
  // Too few keys for two parts of split_keys.
  EXPECT_EQ(k->plan(decode_args(1, 700, 64, 8), kSms).split.num_splits, 1);
  // Rows past one query tile (16 queries x 8 heads: two tiles of 64 per
  // kv head, 16 blocks): each tile splits; the counters are per tile.
  AttentionArgs chunk = decode_args(1, 32768, 64, 8);
  chunk.max_seqlen_q = 16;
  chunk.total_q = 16;
  const SplitPlan two_tiles = k->plan(chunk, kSms).split;
  EXPECT_GT(two_tiles.num_splits, 1);
  EXPECT_GE(16 * two_tiles.num_splits, 0.8 * 2 * kSms * 0.95);
  EXPECT_EQ(two_tiles.lse_offset, 256u);  // 1 x 8 x 2 counters
  // A prefill chunk's tiles fill the GPU (1024 x 8 / 64 x 8 = 1024 blocks): no split.
  chunk.max_seqlen_q = chunk.total_q = 1024;
  EXPECT_EQ(k->plan(chunk, kSms).split.num_splits, 1);
  // Nor when the caller forces a count (an engine's graph bucket): a 32k
  // prefill's parts would take a gigabyte.
  AttentionArgs prefill = chunk;
  prefill.max_seqlen_q = prefill.total_q = 32768;
  prefill.num_splits = 2;
  EXPECT_EQ(k->plan(prefill, kSms).split.num_splits, 1);
  EXPECT_EQ(k->plan(prefill, kSms).split.workspace_bytes, 0u);
  // Counters for every tile of the grid: 128 sequences of 16 queries over
  // 8 kv heads, two tiles each, forced to two splits: 2048 counters.
  AttentionArgs many = decode_args(128, 32768, 64, 8);
  many.max_seqlen_q = 16;
  many.total_q = 128 * 16;
  many.num_splits = 2;
  const SplitPlan counted = k->plan(many, kSms).split;
  EXPECT_EQ(counted.num_splits, 2);
  EXPECT_EQ(counted.lse_offset, 128u * 8 * 2 * 4);
  // Forced: at most the count asked for; 1 means none.
  AttentionArgs forced = decode_args(8, 32768, 64, 8);
  forced.num_splits = 2;
  EXPECT_EQ(k->plan(forced, kSms).split.num_splits, 2);
  forced.num_splits = 1;
  EXPECT_EQ(k->plan(forced, kSms).split.num_splits, 1);
}

// A decode is bound by the bytes its resident blocks pull: the split count
// leaves at most 5% of a wave's slots idle where a count up to the most
// allowed fills them all. One query over 131072 keys at 32/8 heads (8
// blocks before splitting, 264 slots): 32 splits (256 blocks), not the 29
// (232 blocks, 12% idle) an 85% bar took.
TEST_F(SplitPlanTest, ALongDecodeLeavesFewSlotsIdle) {
  auto k = split_kernel(split_flags(128));
  EXPECT_EQ(k->plan(decode_args(1, 131072, 32, 8), kSms).split.num_splits, 32);
  // 4 x 8 = 32 blocks: 8 splits fill 256 of 264.
  EXPECT_EQ(k->plan(decode_args(4, 32768, 32, 8), kSms).split.num_splits, 8);
  // 16 x 8 = 128: 2 (256 of 264), as before.
  EXPECT_EQ(k->plan(decode_args(16, 8192, 32, 8), kSms).split.num_splits, 2);
}

// A short decode is bound by one block's chain of key tiles: D128's rules
// split down to 128 keys a part (4 key tiles of 32), so one query over
// 2048 keys at 32/8 heads runs 16 parts per kv head, and over 512 keys 4
// (at 512 keys a part: 4 and 1).
TEST_F(SplitPlanTest, AShortDecodeSplitsIntoShortChains) {
  auto k = split_kernel(split_flags(128));
  EXPECT_EQ(k->plan(decode_args(1, 2048, 32, 8), kSms).split.num_splits, 16);
  EXPECT_EQ(k->plan(decode_args(1, 512, 32, 8), kSms).split.num_splits, 4);
  // Fewer keys than two parts: none.
  EXPECT_EQ(k->plan(decode_args(1, 200, 32, 8), kSms).split.num_splits, 1);
}

// The swapped decode block at 8-row tiles: GQA 16 or two queries at GQA 8
// take two tiles per kv head, and each splits, with a counter per tile.
TEST_F(SplitPlanTest, TheSwappedBlocksTilesEachSplit) {
  AttentionFlags flags = split_flags(128);
  flags.kv_dtype = KvDType::kFp8E4M3;
  auto k = split_kernel(flags, {{"block_m", 8}});
  ASSERT_EQ(k->block_m(), 8);
  // 32 sequences x 4 kv heads x 2 tiles (64/4 heads) = 256 blocks before
  // splitting, on 264 slots: little to gain.
  const SplitPlan gqa16 = k->plan(decode_args(32, 8192, 64, 4), kSms).split;
  // 8 x 4 x 2 = 64: split, counters 8 x 4 x 2 x 4 B = 256 B.
  const SplitPlan few = k->plan(decode_args(8, 8192, 64, 4), kSms).split;
  EXPECT_GT(few.num_splits, 1);
  EXPECT_GE(64 * few.num_splits, 0.8 * 2 * kSms * 0.95);
  EXPECT_EQ(few.lse_offset, 256u);
  // Two queries per sequence, 64 sequences over 8 kv heads, forced to 2
  // splits: the counters are 64 x 8 x the tiles.
  AttentionArgs two_queries = decode_args(64, 8192, 32, 8);
  two_queries.max_seqlen_q = 2;
  two_queries.total_q = 128;
  two_queries.num_splits = 2;
  const SplitPlan forced = k->plan(two_queries, kSms).split;
  EXPECT_EQ(forced.num_splits, 2);
  EXPECT_EQ(forced.lse_offset, 64u * 8 * 1 * 4);  // GQA 4 x 2 queries: one 8-row tile
  two_queries.num_heads_q = 64;                   // GQA 8 x 2 queries: two
  EXPECT_EQ(k->plan(two_queries, kSms).split.lse_offset, 64u * 8 * 2 * 4);
  EXPECT_LE(gqa16.num_splits, 2);
}

// The fp8 rules' swapped block takes 32-row tiles (four groups of 8): GQA
// 16 and two queries at GQA 8 are one tile per kv head, so a kv head's K/V
// is read once, and the tile splits as a GQA-8 decode's does.
TEST_F(SplitPlanTest, TheRulesSwappedTilesHoldAKvHeadsRows) {
  AttentionFlags flags = split_flags(128);
  flags.kv_dtype = KvDType::kFp8E4M3;
  auto k = split_kernel(flags);
  ASSERT_EQ(k->block_m(), 32);
  // 8 x 4 kv heads x 1 tile = 32 slots: split to fill most of a wave.
  const SplitPlan gqa16 = k->plan(decode_args(8, 8192, 64, 4), kSms).split;
  EXPECT_GT(gqa16.num_splits, 1);
  EXPECT_GE(32 * gqa16.num_splits, 0.8 * 2 * kSms * 0.95);
  AttentionArgs two_queries = decode_args(64, 8192, 64, 8);  // GQA 8 x 2 queries
  two_queries.max_seqlen_q = 2;
  two_queries.total_q = 128;
  two_queries.num_splits = 2;
  EXPECT_EQ(k->plan(two_queries, kSms).split.lse_offset, 64u * 8 * 1 * 4);  // one tile
  two_queries.max_seqlen_q = 5;  // 40 rows: two 32-row tiles
  two_queries.total_q = 320;
  EXPECT_EQ(k->plan(two_queries, kSms).split.lse_offset, 64u * 8 * 2 * 4);
}

TEST_F(SplitPlanTest, AWindowBoundsTheKeysThatCountForSplitting) {
  AttentionFlags flags = split_flags(64);
  flags.window = true;
  flags.sinks = SinkMode::kNullLogit;
  auto k = split_kernel(flags);
  AttentionArgs a = decode_args(8, 32768, 64, 8);
  a.window_left = 127;
  a.window_right = 0;
  EXPECT_EQ(k->plan(a, kSms).split.num_splits, 1);  // 128 keys: one part
  a.window_left = -1;
  const int unbounded = k->plan(a, kSms).split.num_splits;
  EXPECT_GT(unbounded, 1);
  // A window wider than any sequence counts as the sequence (its width
  // plus the queries is not computed in int: it overflowed to one part).
  a.window_left = std::numeric_limits<int32_t>::max();
  EXPECT_EQ(k->plan(a, kSms).split.num_splits, unbounded);
}

TEST_F(SplitPlanTest, DecodeShapedLaunchesRunTheSplitSibling) {
  AttentionFlags flags;
  flags.head_dim = 128;
  flags.causal = true;
  auto k = kernel(flags);
  AttentionArgs a = decode_args(64, 8192, 32, 8);
  EXPECT_EQ(k->schedule_for(a), (Schedule{true, false}));
  // Planned from the split sibling's signature before it is fetched, and the
  // same once it is.
  const SplitPlan planned = k->plan(a, kSms).split;
  Kernel& split = k->kernel_for(a);
  EXPECT_EQ(k->plan(a, kSms).split.num_splits, planned.num_splits);
  EXPECT_EQ(k->plan(a, kSms).split.workspace_bytes, planned.workspace_bytes);
  // The whole plan: 64 rows (one query x 32 heads packed over 8 kv heads:
  // 4 rows each) are one query tile per kv head and sequence, x counting
  // its splits.
  const LaunchPlan launch = k->plan(a, kSms);
  EXPECT_EQ(launch.schedule, (Schedule{true, false}));
  EXPECT_EQ(launch.split.num_splits, planned.num_splits);
  EXPECT_EQ(launch.grid.x, unsigned(planned.num_splits > 1 ? planned.num_splits : 1));
  EXPECT_EQ(launch.grid.y, 8u);
  EXPECT_EQ(launch.grid.z, 64u);
  auto own = split_kernel(flags);
  EXPECT_EQ(&own->kernel(), &split);  // one variant for both kernels
  EXPECT_EQ(own->block_m(), 64);
  EXPECT_TRUE(own->pack_gqa());
  EXPECT_EQ(&k->kernel_for(a), &split);  // fetched once
  a.max_seqlen_q = 17;                    // 17 x 4 rows: a prefill tile
  EXPECT_EQ(k->schedule_for(a), (Schedule{false, false}));
  EXPECT_EQ(k->plan(a, kSms).schedule, (Schedule{false, false}));
  EXPECT_EQ(k->plan(a, kSms).split.num_splits, 1);
  a.max_seqlen_q = 1;
  a.num_splits = 1;  // never split: the variant itself
  EXPECT_EQ(k->schedule_for(a), (Schedule{false, false}));
  EXPECT_EQ(k->plan(a, kSms).split.num_splits, 1);
}

}  // namespace
}  // namespace attnjit

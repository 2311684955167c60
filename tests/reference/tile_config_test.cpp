// The tile configuration (templates/attention/tile_config.h), compiled for
// the host: for every tile rule of specs/attention.yaml on sm_80 and
// sm_90a, and a few autotuner configs, the threads, dynamic shared memory
// and setmaxnreg counts are those the compiled kernels report (`attnjit
// compile --target ...` resources and PTX); the TMA box follows the swizzle
// chunk; a register cap turns rebalancing off; the grid is the runtime's.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "attention/tile_config.h"
#include "attnjit/attention.h"

namespace attnjit {
namespace {

using attention::GridShape;
using attention::make_tile_config;
using attention::TileConfig;
using attention::TileShape;
// Shapes by named fields (TileShape's own defaults for the rest).
using Shape = attention::TileShapeBuilder;

// Shapes the tests below start from, naming the fields they change.
// sm_90a's D 128 rule: three warpgroups of 64 rows, GQA packed.
constexpr TileShape kWarpgroups3 = Shape()
                                       .head_dim(128)
                                       .block_m(192)
                                       .block_n(64)
                                       .warps(12)
                                       .stages(3)
                                       .min_blocks(1)
                                       .pack_gqa(1)
                                       .wgmma(true);
// Two warpgroups of 64 rows, GQA packed, two stages (the shape of
// sm_90a's D 192 rule).
constexpr TileShape kWarpgroups2 = Shape(kWarpgroups3).block_m(128).warps(8).stages(2);
// Split-KV over fp8 pages: one warpgroup of 64 rows, two stages, two
// blocks asked for, on an H100.
constexpr TileShape kFp8SplitKv = Shape()
                                      .block_m(64)
                                      .warps(4)
                                      .stages(2)
                                      .min_blocks(2)
                                      .pack_gqa(1)
                                      .wgmma(true)
                                      .kv_fp8(true)
                                      .split_kv(true)
                                      .smem_per_sm(attention::smem_per_sm(90));
// The decode block's shape with 16-bit K/V (decode_mma not yet asked).
constexpr TileShape kDecode16 = Shape()
                                    .head_dim(128)
                                    .block_m(32)
                                    .block_n(64)
                                    .warps(4)
                                    .stages(4)
                                    .min_blocks(2)
                                    .pack_gqa(1)
                                    .wgmma(true)
                                    .split_kv(true);

// Usable in constant expressions, as the kernels use it.
static_assert(make_tile_config(kWarpgroups3).threads == 512);

struct Expected {
  TileShape shape;
  int threads;
  unsigned smem_bytes;
  int m_tiles;
  bool q_in_registers;
  bool rebalance;
  int producer_registers, consumer_registers;  // after setmaxnreg, when rebalancing
};

// What `attnjit compile` printed for these configs before TileConfig
// existed (the kernels computed them themselves).
// clang-format off: each shape's fields, then what it is expected to give
const Expected kExpected[] = {
    // sm_90a rules: warpgroups of 64 rows plus the producer warpgroup.
    {Shape(kWarpgroups2).head_dim(256), 384, 197696, 1, false, true, 24, 240},
    {Shape(kWarpgroups2).head_dim(192), 384, 148544, 1, false, true, 24, 240},
    {Shape().head_dim(64).block_m(64).block_n(32).warps(4).stages(2).min_blocks(4).wgmma(true), 256,
     25664, 1, false, true, 40, 88},
    {Shape().head_dim(80).block_m(64).block_n(64).warps(4).stages(3).min_blocks(1).wgmma(true), 256,
     72800, 1, false, false, 0, 0},
    {Shape().head_dim(128).block_m(64).block_n(64).warps(4).stages(3).min_blocks(1).wgmma(true),
     256, 115808, 1, false, false, 0, 0},
    {kWarpgroups3, 512, 148576, 1, false, true, 32, 160},
    {Shape().head_dim(80).block_m(192).block_n(80).warps(12).stages(2).min_blocks(1).wgmma(true),
     512, 83008, 1, false, true, 32, 160},
    {Shape().head_dim(64).block_m(192).block_n(64).warps(12).stages(2).min_blocks(1).wgmma(true),
     512, 58432, 1, false, true, 32, 160},
    {Shape().head_dim(96).block_m(192).block_n(64).warps(12).stages(2).min_blocks(1).wgmma(true),
     512, 87104, 1, false, true, 32, 160},
    // Heads wider than 256: two warpgroups split D over 64 rows (no m16
    // tiles of their own), Q and two stages of 32-key K and V, then the
    // scores' exchange, [2 parities][2 warpgroups] x 64 x 32 fp32.
    {Shape(kWarpgroups2).head_dim(512).block_m(64).block_n(32),
     384, 1024 + 65536 + 4 * 32768 + 32768 + 64, 0, false, true, 24, 240},
    {Shape(kWarpgroups2).head_dim(384).block_m(64).block_n(32),
     384, 1024 + 49152 + 4 * 24576 + 32768 + 64, 0, false, true, 24, 240},
    // Autotuner configs on sm_90a.
    {Shape().head_dim(96).block_m(64).block_n(64).warps(4).stages(2).min_blocks(2).wgmma(true), 256,
     62528, 1, false, true, 40, 216},
    {Shape().head_dim(80).block_m(128).block_n(48).warps(8).stages(4).min_blocks(1).wgmma(true),
     384, 83072, 1, false, true, 24, 240},
    {Shape().head_dim(128).block_m(192).block_n(64).warps(12).stages(3).min_blocks(1).pack_gqa(1),
     384, 156672, 1, true, false, 0, 0},
    // sm_80 rules (mma.sync).
    {Shape().head_dim(256).block_m(64).block_n(32).warps(4).stages(2).min_blocks(1), 128, 101376, 1,
     false, false, 0, 0},
    {Shape().head_dim(192).block_m(64).block_n(32).warps(4).stages(2).min_blocks(1), 128, 76800, 1,
     false, false, 0, 0},
    {Shape().head_dim(64).block_m(128).block_n(32).warps(8).stages(2).min_blocks(2).pack_gqa(1),
     256, 36864, 1, true, false, 0, 0},
    {Shape().head_dim(80).block_m(64).block_n(64).warps(2).stages(2).min_blocks(1), 64, 56320, 2,
     false, false, 0, 0},
    {Shape().head_dim(128).block_m(64).block_n(64).warps(2).stages(2).min_blocks(1), 64, 87040, 2,
     false, false, 0, 0},
    {Shape().head_dim(128).block_m(128).block_n(64).warps(4).stages(2).min_blocks(2), 128, 104448,
     2, false, false, 0, 0},
    {Shape().head_dim(64).block_m(128).block_n(64).warps(4).stages(3).min_blocks(1), 128, 73728, 2,
     true, false, 0, 0},
    {Shape().head_dim(80).block_m(128).block_n(64).warps(4).stages(3).min_blocks(1), 128, 90112, 2,
     false, false, 0, 0},
    {Shape().head_dim(96).block_m(128).block_n(64).warps(4).stages(3).min_blocks(1), 128, 106496, 2,
     false, false, 0, 0},
    // sm_86 / sm_89 rules and an autotuner config.
    {Shape().head_dim(256).block_m(64).block_n(16).warps(4).stages(2).min_blocks(1), 128, 67584, 1,
     false, false, 0, 0},
    {Shape().head_dim(96).block_m(64).block_n(32).warps(4).stages(2).min_blocks(1), 128, 39936, 1,
     true, false, 0, 0},
    {Shape().head_dim(192).block_m(128).block_n(32).warps(4).stages(2).min_blocks(1), 128, 102400,
     2, false, false, 0, 0},
};
// clang-format on

std::string describe(const TileShape& s) {
  return "D" + std::to_string(s.head_dim) + " " + std::to_string(s.block_m) + "x" +
         std::to_string(s.block_n) + " warps " + std::to_string(s.warps) + " stages " +
         std::to_string(s.stages) + " min_blocks " + std::to_string(s.min_blocks) +
         (s.wgmma ? " wgmma" : " mma.sync");
}

TEST(TileConfig, SpecRulesMatchWhatTheKernelsReport) {
  for (const Expected& e : kExpected) {
    SCOPED_TRACE(describe(e.shape));
    const TileConfig c = make_tile_config(e.shape);
    EXPECT_EQ(c.threads, e.threads);
    EXPECT_EQ(c.consumer_threads, e.shape.warps * 32);
    EXPECT_EQ(c.smem_bytes, e.smem_bytes);
    EXPECT_EQ(c.m_tiles, e.m_tiles);
    EXPECT_EQ(c.q_in_registers, e.q_in_registers);
    EXPECT_EQ(c.smem_row_stride, e.shape.head_dim + 8);
    EXPECT_EQ(c.rebalance, e.rebalance);
    if (e.rebalance) {
      EXPECT_EQ(c.producer_registers, e.producer_registers);
      EXPECT_EQ(c.consumer_registers, e.consumer_registers);
    } else {
      EXPECT_EQ(c.consumer_registers, c.launch_registers);
    }
    EXPECT_EQ(c.launch_registers, std::min(255, 65536 / (c.threads * e.shape.min_blocks) / 8 * 8));
    if (e.shape.wgmma) {
      EXPECT_EQ(c.warpgroups, e.shape.warps / 4);
      EXPECT_EQ(c.d_split, e.shape.head_dim > 256 ? 2 : 1);
      EXPECT_EQ(c.shape.block_m, 64 * c.warpgroups / c.d_split);
      // The barriers sit past the tiles (or the staged output), 32 bytes
      // per stage (and 8 per raw fp8 stage), after 1024 bytes of slack.
      EXPECT_EQ(c.smem_bytes,
                1024 + c.barrier_offset + 32u * unsigned(e.shape.stages) + 8u * c.raw_stages);
    }
  }
}

// Value heads narrower than the key heads (head_dim_v): V's ring holds
// tiles of Dv columns, the staged output rows of Dv; Q and K keep D. What
// `attnjit compile` reports for D 192 / Dv 128 (132160 bytes).
TEST(TileConfig, NarrowValueHeadsShrinkVsRingAndTheOutput) {
  TileShape s = Shape(kWarpgroups2).head_dim(192);
  s.head_dim_v = 128;
  const TileConfig c = make_tile_config(s);
  EXPECT_EQ(c.dv, 128);
  EXPECT_EQ(c.kv_tile_bytes, 64u * 192 * 2);
  EXPECT_EQ(c.v_tile_bytes, 64u * 128 * 2);
  EXPECT_EQ(c.smem_bytes, 1024u + 128 * 192 * 2 + 2 * (64 * 192 * 2 + 64 * 128 * 2) + 32 * 2);
  s.head_dim_v = 0;  // 0: head_dim
  const TileConfig same = make_tile_config(s);
  EXPECT_EQ(same.dv, 192);
  EXPECT_EQ(same.v_tile_bytes, same.kv_tile_bytes);
}

// Blocks per SM: min_blocks where the shared memory holds that many, else
// as many as it holds (the split epilogue's static flag and the driver's
// reserve counted); the launch share of registers follows.
TEST(TileConfig, BlocksPerSmKeepToTheSharedMemory) {
  const int h100 = attention::smem_per_sm(90), a100 = attention::smem_per_sm(80);
  EXPECT_EQ(h100, 233472);
  EXPECT_EQ(a100, 167936);
  EXPECT_EQ(attention::smem_per_sm(86), 102400);
  // A converting-producer config's blocks per SM, producer warpgroups,
  // launch share and consumer registers (rebalanced: the launch share is
  // under 232).
  const auto expect_converting = [](const TileConfig& t, int blocks, int producers, int launch,
                                    int consumers) {
    EXPECT_FALSE(t.mma_decode);
    EXPECT_EQ(t.blocks_per_sm, blocks);
    EXPECT_EQ(t.producer_warpgroups, producers);
    EXPECT_EQ(t.threads, t.consumer_threads + 128 * producers);
    EXPECT_EQ(t.launch_registers, launch);
    EXPECT_TRUE(t.rebalance);
    EXPECT_EQ(t.consumer_registers, consumers);
  };
  // The converting producer (decode_mma 0, every rule's today). D 128 over
  // fp8 pages, 64-key tiles, 2 stages: 115792 B; two blocks would need
  // 235680 B with the flag and the reserve: one fits. Its registers leave
  // room for a second converting producer warpgroup: 384 threads of 168,
  // consumers rebalanced to 256.
  TileShape fp8_d128 = Shape(kFp8SplitKv).head_dim(128).block_n(64);
  TileConfig c = make_tile_config(fp8_d128);
  EXPECT_EQ(c.smem_bytes, 115792u);
  EXPECT_EQ(c.raw_stages, 2);
  EXPECT_EQ(c.threads, 384);
  expect_converting(c, 1, 2, 168, 256);
  // The same with 32-key tiles (the fp8 paged rule): two fit, 128 each;
  // two producer warpgroups would leave 80, under the 96 that ptxas needs
  // for D 128's wgmma of O: one.
  fp8_d128.block_n = 32;
  c = make_tile_config(fp8_d128);
  EXPECT_EQ(c.blocks_per_sm, 2);
  EXPECT_EQ(c.producer_warpgroups, 1);
  EXPECT_EQ(c.launch_registers, 128);
  // D 64 (its fp8 paged rule: 64-key tiles, two blocks): two producer
  // warpgroups at 80 registers, the consumers at 112.
  TileShape fp8_d64 = Shape(kFp8SplitKv).head_dim(64).block_n(64);
  expect_converting(make_tile_config(fp8_d64), 2, 2, 80, 112);
  // D 256 over fp8 pages, 64-key tiles, 2 stages: one block; two producer
  // warpgroups of the 384 threads' 168 registers, consumers at 256.
  TileShape fp8_paged = Shape(kFp8SplitKv).head_dim(256).block_n(64);
  c = make_tile_config(fp8_paged);
  EXPECT_EQ(c.raw_stages, 2);
  expect_converting(c, 1, 2, 168, 256);
  // D 96 with 32-key tiles, two blocks: two producer warpgroups at 80
  // registers, the consumers at 112.
  TileShape fp8_d96 = Shape(kFp8SplitKv).head_dim(96).block_n(32);
  c = make_tile_config(fp8_d96);
  EXPECT_EQ(c.smem_bytes, 50256u);
  expect_converting(c, 2, 2, 80, 112);
  // Not split-KV (prefill-shaped): one producer warpgroup always.
  fp8_d96.split_kv = false;
  EXPECT_EQ(make_tile_config(fp8_d96).producer_warpgroups, 1);
  // Unknown capacity (0): min_blocks as asked.
  fp8_d96.smem_per_sm = 0;
  EXPECT_EQ(make_tile_config(fp8_d96).blocks_per_sm, 2);
  // Every spec-shaped config: never more than min_blocks, at least one,
  // and what it says fits does fit.
  for (const Expected& e : kExpected) {
    for (const int capacity : {h100, a100, attention::smem_per_sm(89)}) {
      for (const bool split : {false, true}) {
        TileShape shape = e.shape;
        shape.split_kv = split;
        shape.smem_per_sm = capacity;
        const TileConfig t = make_tile_config(shape);
        EXPECT_GE(t.blocks_per_sm, 1);
        EXPECT_LE(t.blocks_per_sm, std::max(1, shape.min_blocks));
        const int per_block = int(t.smem_bytes) + (split ? (shape.wgmma ? 1024 : 128) : 0) +
                              attention::kReservedSmemPerBlock;
        if (per_block <= capacity) EXPECT_LE(t.blocks_per_sm * per_block, capacity);
      }
    }
  }
}

// The decode block (tuning param decode_mma; split-KV at D 64 and 128 on
// the warpgroup path, fp8 or 16-bit K/V):
// four consumer warps and a producer warp, no rebalancing, a ring of raw
// tiles of D bytes per row (a swizzled box wide) whose stages round up to
// a multiple of the warps, the warps' Q tiles past it, their parts over
// both at the end, and two barriers per stage.
TEST(TileConfig, Fp8DecodeBlock) {
  const int h100 = attention::smem_per_sm(90);
  struct Case {
    int d, block_n, stages, raw_stages;
    unsigned smem;
  };
  for (const Case& k : {Case{128, 32, 8, 8, 83072u}, Case{128, 32, 2, 4, 50240u},
                        Case{64, 64, 8, 8, 74880u}, Case{64, 64, 3, 4, 42048u}}) {
    SCOPED_TRACE("D" + std::to_string(k.d) + " stages " + std::to_string(k.stages));
    TileShape shape = Shape(kFp8SplitKv).head_dim(k.d).block_n(k.block_n).stages(k.stages);
    shape.decode_mma = true;
    // 16-bit K/V: twice the ring, the standard TMA boxes (swizzle chunks of
    // D in 16-bit elements).
    TileShape wide = shape;
    wide.kv_fp8 = false;
    const TileConfig w = make_tile_config(wide);
    EXPECT_TRUE(w.mma_decode);
    EXPECT_EQ(w.kv_tile_bytes, unsigned(k.block_n * k.d * 2));
    EXPECT_EQ(w.tma_chunk, attention::swizzle_chunk(k.d));
    EXPECT_EQ(w.swizzle_bytes, 2 * attention::swizzle_chunk(k.d));
    EXPECT_EQ(w.barrier_offset,
              std::max(2u * unsigned(w.raw_stages) * w.kv_tile_bytes + 4u * w.q_tile_bytes,
                       4u * attention::decode_part_bytes(k.d)));
    const TileConfig c = make_tile_config(shape);
    EXPECT_TRUE(c.mma_decode);
    EXPECT_EQ(c.threads, 160);
    EXPECT_EQ(c.producer_warpgroups, 0);
    EXPECT_FALSE(c.rebalance);
    EXPECT_EQ(c.blocks_per_sm, 2);
    // Ten warps on four schedulers: three on some quarter of the registers.
    EXPECT_EQ(c.launch_registers, 168);
    EXPECT_EQ(c.raw_stages, k.raw_stages);
    EXPECT_EQ(c.raw_stages % 4, 0);
    EXPECT_EQ(c.tma_chunk, k.d);
    EXPECT_EQ(c.swizzle_bytes, k.d);
    EXPECT_EQ(c.tma_box_bytes, unsigned(k.block_n * k.d));
    EXPECT_EQ(c.kv_tile_bytes, unsigned(k.block_n * k.d));
    EXPECT_EQ(c.q_tile_bytes, unsigned(16 * k.d * 2));
    const unsigned ring = 2u * unsigned(c.raw_stages) * c.kv_tile_bytes + 4u * c.q_tile_bytes;
    EXPECT_EQ(c.barrier_offset, std::max(ring, 4u * attention::decode_part_bytes(k.d)));
    EXPECT_EQ(c.smem_bytes, k.smem);
    EXPECT_EQ(c.smem_bytes, 1024u + c.barrier_offset + 16u * unsigned(c.raw_stages));
  }
  // Not unless asked (decode_mma), at other head dims, nor without
  // split-KV, fp8 K/V or wgmma.
  TileShape other = Shape(kFp8SplitKv).head_dim(128).block_n(32);
  EXPECT_FALSE(make_tile_config(other).mma_decode);
  other.decode_mma = true;
  other.head_dim = 96;
  EXPECT_FALSE(make_tile_config(other).mma_decode);
  other.head_dim = 128;
  EXPECT_TRUE(make_tile_config(other).mma_decode);
  other.split_kv = false;
  EXPECT_FALSE(make_tile_config(other).mma_decode);
  other.split_kv = true;
  other.wgmma = false;
  EXPECT_FALSE(make_tile_config(other).mma_decode);
  other.wgmma = true;
  // Only 16-row warps, four or eight of them (the phases must divide the
  // ring for every count of row groups): another block_m is a mismatch,
  // which the kernel makes a compile error (prefill.cuh).
  other.block_m = 128;
  EXPECT_FALSE(make_tile_config(other).mma_decode);
  EXPECT_TRUE(make_tile_config(other).decode_rows_mismatch);
  other.warps = 8;
  EXPECT_TRUE(make_tile_config(other).mma_decode);
  EXPECT_FALSE(make_tile_config(other).decode_rows_mismatch);
  // Swapped: groups of 8 rows, 8 .. 8 x warps of them.
  TileShape swapped = other;
  swapped.decode_swap = true;
  for (const int rows : {8, 16, 32, 64}) {
    swapped.block_m = rows;
    EXPECT_TRUE(make_tile_config(swapped).mma_decode_swap) << rows;
    EXPECT_FALSE(make_tile_config(swapped).decode_rows_mismatch) << rows;
  }
  for (const int rows : {4, 12, 72, 128}) {
    swapped.block_m = rows;
    EXPECT_FALSE(make_tile_config(swapped).mma_decode) << rows;
    EXPECT_TRUE(make_tile_config(swapped).decode_rows_mismatch) << rows;
  }
  // Where the block does not apply (no split), no mismatch either.
  swapped.split_kv = false;
  EXPECT_FALSE(make_tile_config(swapped).decode_rows_mismatch);
  other.block_m = 192;
  other.warps = 12;
  EXPECT_FALSE(make_tile_config(other).mma_decode);
}

// The decode block past D 128, swapped only (O^T holds D / 4 floats per
// thread): e4m3 rows of several 128-byte boxes, and each warp's region for
// the epilogue's staged rows past the parts (the combine passes over 128
// columns at a time and still reads the parts while it stages).
TEST(TileConfig, WideDecodeBlock) {
  // The fp8 rules' block at 32-key tiles, 4 stages, one block per SM.
  const TileShape wide =
      Shape(kFp8SplitKv).block_m(32).block_n(32).stages(4).min_blocks(1).decode_mma(true);
  for (const int d : {256, 384, 512}) {
    SCOPED_TRACE("D" + std::to_string(d));
    EXPECT_FALSE(make_tile_config(Shape(wide).head_dim(d)).mma_decode);  // not the standard block
    const TileConfig c = make_tile_config(Shape(wide).head_dim(d).decode_swap(true));
    ASSERT_TRUE(c.mma_decode);
    EXPECT_EQ(c.tma_chunk, 128);
    EXPECT_EQ(c.swizzle_bytes, 128);
    EXPECT_EQ(c.tma_box_bytes, 32u * 128u);
    EXPECT_EQ(attention::decode_out_slice(d), 128);
    EXPECT_EQ(attention::decode_stage_bytes(d), unsigned(16 * (d + 8) * 2));
    const unsigned ring = 2u * 4u * unsigned(32 * d) + 4u * unsigned(16 * d * 2);
    const unsigned parts =
        4u * (attention::decode_part_bytes(d) + attention::decode_stage_bytes(d));
    EXPECT_EQ(c.barrier_offset, std::max(ring, parts));
    EXPECT_LE(c.smem_bytes, attention::kMaxSmemPerBlockSm90);
  }
  EXPECT_EQ(attention::decode_stage_bytes(128), 0u);  // one pass: stages over its own part
  EXPECT_FALSE(make_tile_config(Shape(wide).head_dim(192).decode_swap(true)).mma_decode);
}

TEST(TileConfig, TmaBoxIsOneSwizzleChunkOfBlockNRows) {
  const int dims[][2] = {{64, 64}, {80, 16}, {96, 32}, {128, 64}, {192, 64}, {256, 64}};
  for (const auto& [d, chunk] : dims) {
    const TileConfig c = make_tile_config(
        Shape().head_dim(d).block_m(192).block_n(80).warps(12).stages(2).min_blocks(1).wgmma(true));
    EXPECT_EQ(c.tma_chunk, chunk) << "D " << d;
    EXPECT_EQ(attention::swizzle_chunk(d), chunk) << "D " << d;
    EXPECT_EQ(c.swizzle_bytes, 2 * chunk) << "D " << d;
    EXPECT_EQ(c.tma_box_rows, 80) << "D " << d;
    EXPECT_EQ(c.tma_box_bytes, unsigned(80 * 2 * chunk)) << "D " << d;
    EXPECT_EQ(c.kv_tile_bytes, unsigned(80 * d * 2)) << "D " << d;
  }
}

TEST(TileConfig, RegisterCapTurnsRebalancingOff) {
  const TileConfig free_share = make_tile_config(kWarpgroups3);
  const TileConfig capped = make_tile_config(Shape(kWarpgroups3).register_cap(true));
  EXPECT_TRUE(free_share.rebalance);
  EXPECT_FALSE(capped.rebalance);
  EXPECT_EQ(capped.smem_bytes, free_share.smem_bytes);
  EXPECT_EQ(capped.threads, free_share.threads);
  EXPECT_FALSE(make_tile_config(
                   Shape().head_dim(128).block_m(128).block_n(64).warps(4).stages(2).min_blocks(2))
                   .rebalance);
}

// small_pages' V in blocks of 16 keys: on the warpgroup path where D spans
// two or more swizzle chunks (a box per block then replaces D / chunk
// boxes), and nowhere else; the rest of the configuration is unchanged.
TEST(TileConfig, SmallPagesBlockVWhereDSpansSeveralChunks) {
  const auto with = [](TileShape s) {
    s.small_pages = true;
    return make_tile_config(s);
  };
  for (const int d : {96, 128, 192, 256}) {
    const TileShape s = Shape(kWarpgroups2).head_dim(d);
    const TileConfig plain = make_tile_config(s), small = with(s);
    EXPECT_EQ(plain.v_block_rows, 64) << "D " << d;
    EXPECT_EQ(small.v_block_rows, 16) << "D " << d;
    EXPECT_EQ(small.smem_bytes, plain.smem_bytes) << "D " << d;
    EXPECT_EQ(small.tma_box_rows, plain.tma_box_rows) << "D " << d;
    EXPECT_EQ(small.consumer_registers, plain.consumer_registers) << "D " << d;
  }
  // The decode block, with 16-bit K/V.
  TileShape decode = kDecode16;
  decode.decode_mma = decode.decode_swap = true;
  ASSERT_TRUE(make_tile_config(decode).mma_decode);
  for (const auto& [what, s] : std::vector<std::pair<const char*, TileShape>>{
           {"D 64, one chunk", Shape(kWarpgroups2).head_dim(64).block_n(128)},
           {"D 80, chunks of 16", Shape(kWarpgroups2).head_dim(80).block_n(128).pack_gqa(0)},
           {"mma.sync",
            Shape().head_dim(128).block_m(128).block_n(64).warps(4).stages(2).min_blocks(1)},
           {"fp8 K/V", Shape(kWarpgroups3).kv_fp8(true)},
           {"16-key tiles", Shape(kWarpgroups2).block_m(64).warps(4).block_n(16)},
           {"decode block", decode}}) {
    EXPECT_EQ(with(s).v_block_rows, s.block_n) << what;
  }
}

// Two producer warps (K from one, V from the other) where the tuning asks
// on the warpgroup path, except with fp8 K/V and the decode block, which
// keep one; nothing else of the configuration moves.
TEST(TileConfig, TwoProducerWarpsOnlyWhereTheyApply) {
  const auto with = [](TileShape s, int warps) {
    s.producer_warps = warps;
    return make_tile_config(s);
  };
  const TileShape wgmma = Shape(kWarpgroups2).block_n(128);
  EXPECT_EQ(make_tile_config(wgmma).producer_warps, 1);
  EXPECT_EQ(with(wgmma, 2).producer_warps, 2);
  EXPECT_EQ(with(wgmma, 2).threads, make_tile_config(wgmma).threads);
  EXPECT_EQ(with(wgmma, 2).producer_registers, make_tile_config(wgmma).producer_registers);
  EXPECT_EQ(with(wgmma, 2).smem_bytes, make_tile_config(wgmma).smem_bytes);
  // The decode block with 16-bit K/V (fp8 is refused on its own account).
  TileShape decode = kDecode16;
  decode.decode_mma = decode.decode_swap = true;
  ASSERT_TRUE(make_tile_config(decode).mma_decode);
  for (const auto& [what, s] : std::vector<std::pair<const char*, TileShape>>{
           {"mma.sync",
            Shape().head_dim(128).block_m(128).block_n(64).warps(4).stages(2).min_blocks(1)},
           {"fp8 K/V", Shape(kWarpgroups3).kv_fp8(true)},
           {"decode block", decode}}) {
    EXPECT_EQ(with(s, 2).producer_warps, 1) << what;
  }
}

// A paged tile's TMA boxes (paged_box_rows): for every key tile and page
// size the kernels may meet (multiples of 16), the boxes cover the tile's
// rows exactly, and each lies inside one page, wherever the tile starts.
TEST(TileConfig, PagedBoxesTileAKeyTileInsidePages) {
  for (int bn = 16; bn <= 256; bn += 16) {
    for (int page = 16; page <= 4096; page += 16) {
      const int rows = attention::paged_box_rows(bn, page);
      ASSERT_GE(rows, 16) << bn << " " << page;
      ASSERT_EQ(bn % rows, 0) << bn << " " << page;
      ASSERT_EQ(page % rows, 0) << bn << " " << page;
      for (int kt = 0; kt < 3 * page / bn + 2; ++kt) {
        for (int b = 0; b < bn / rows; ++b) {
          const int j = kt * bn + b * rows;
          ASSERT_EQ(j / page, (j + rows - 1) / page) << bn << " " << page << " tile " << kt;
        }
      }
    }
  }
  EXPECT_EQ(attention::paged_box_rows(128, 192), 64);
  EXPECT_EQ(attention::paged_box_rows(64, 16), 16);
  EXPECT_EQ(attention::paged_box_rows(64, 256), 64);
}

TEST(TileConfig, GridShapeIsTheRuntimeLaunchGrid) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    const int block_m = 64 << int(rng() % 3);
    const int pack = int(rng() % 2);
    const TileConfig c = make_tile_config(Shape()
                                              .head_dim(128)
                                              .block_m(block_m)
                                              .block_n(64)
                                              .warps(4)
                                              .stages(2)
                                              .min_blocks(1)
                                              .pack_gqa(pack));
    AttentionArgs args;
    args.num_heads_kv = 1 + int(rng() % 8);
    args.num_heads_q = args.num_heads_kv * (1 + int(rng() % 8));
    args.num_seqs = 1 + int(rng() % 16);
    args.max_seqlen_q = int(rng() % 100000);
    const LaunchGrid want = attention_grid(args, block_m, pack);
    const GridShape got = attention::grid_shape(c, args.max_seqlen_q, args.num_heads_q,
                                                args.num_heads_kv, args.num_seqs);
    ASSERT_EQ(got.x, want.x) << trial;
    ASSERT_EQ(got.y, want.y) << trial;
    ASSERT_EQ(got.z, want.z) << trial;
  }
  // 2^31 packed rows do not overflow the row count.
  const TileConfig c = make_tile_config(
      Shape().head_dim(128).block_m(64).block_n(64).warps(4).stages(2).min_blocks(1).pack_gqa(1));
  EXPECT_EQ(attention::grid_shape(c, 1 << 28, 8, 1, 1).x, (1u << 31) / 64);
}

}  // namespace
}  // namespace attnjit

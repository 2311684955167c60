// Tile configurations the spec's rules may not pick today but the autotuner
// can: GQA packing, two m16 tiles per warp, narrow and wide key tiles,
// three pipeline stages, and on sm_90a the warpgroup path's shapes. Each runs the standard shapes
// against the reference, so a tuning-table change can never select an untested path.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "attnjit/selfcheck.h"
#include "gpu/gpu_test_util.h"

namespace attnjit {
namespace {

struct Case {
  AttentionFlags flags;
  std::map<std::string, int64_t> tuning;
  Schedule schedule;  // the small_pages variant itself, on every shape
};

// The flag sets the tile configurations run with: the GPT-OSS window,
// MiMo's window with its key-0 bias, spans clamped to a window with LSE,
// fp16 soft-cap with LSE and sinks, and D256 with spans and a window.
struct Families {
  AttentionFlags oss, mimo, spans, cap, wide;
};

Families families() {
  Families f;
  f.oss.head_dim = 64;
  f.oss.causal = f.oss.window = true;
  f.oss.sinks = SinkMode::kNullLogit;
  f.mimo.head_dim = 80;
  f.mimo.window = true;
  f.mimo.sinks = SinkMode::kBiasKey0;
  f.spans.head_dim = 128;
  f.spans.causal = f.spans.window = f.spans.mm_prefix = f.spans.mm_clamp = true;
  f.spans.return_lse = true;
  f.cap.dtype = DType::kFP16;
  f.cap.head_dim = 96;
  f.cap.softcap = f.cap.return_lse = true;
  f.cap.sinks = SinkMode::kNullLogit;
  f.wide.head_dim = 256;
  f.wide.causal = f.wide.mm_prefix = f.wide.window = true;
  return f;
}

std::vector<Case> cases() {
  const auto [oss, mimo, spans, cap, wide] = families();
  // A paged cache (mixed decodes and chunks among its shapes), bf16 and fp8.
  AttentionFlags paged;
  paged.head_dim = 128;
  paged.causal = paged.return_lse = true;
  paged.kv_layout = KvLayout::kPaged;
  // ... V in blocks of 16 keys (small_pages), every page size of the shapes.
  const AttentionFlags paged_small = paged;
  const Schedule small{false, true};
  AttentionFlags paged_fp8 = paged;
  paged_fp8.head_dim = 64;
  paged_fp8.kv_dtype = KvDType::kFp8E4M3;
  paged_fp8.sinks = SinkMode::kNullLogit;
  // One tile configuration: block_m rows over `warps` warps, block_n keys,
  // `stages` buffers, GQA packing, and the path (wgmma 0: mma.sync).
  auto tiles = [](int bm, int warps, int bn, int stages, int pack, int wgmma) {
    return std::map<std::string, int64_t>{{"block_m", bm},    {"warps", warps},  {"block_n", bn},
                                          {"stages", stages}, {"min_blocks", 1}, {"pack_gqa", pack},
                                          {"wgmma", wgmma}};
  };
  const auto packed64 = tiles(64, 4, 32, 2, 1, 0);
  const auto packed128 = tiles(128, 4, 64, 3, 1, 0);
  const auto two_tiles = tiles(64, 2, 128, 2, 0, 0);
  const auto one_tile = tiles(128, 8, 32, 3, 0, 0);
  // The sm_90a warpgroup path: one to four warpgroups (64 rows each), key
  // tiles of 16 to 176 (N not a power of two), two to eight stages, packing,
  // a paged cache (bf16 and fp8).
  auto wg = [&](int bm, int bn, int stages, int pack) {
    return tiles(bm, bm / 16, bn, stages, pack, 1);
  };
  // A configuration with one more tuning value set.
  auto with = [](const char* param, int64_t value) {
    return [=](std::map<std::string, int64_t> t) {
      t[param] = value;
      return t;
    };
  };
  // ... K and V copied by two producer warps.
  const auto two_producers = with("producer_warps", 2);
  std::vector<Case> hopper = {{oss, wg(64, 128, 3, 1)},
                              {oss, wg(192, 64, 2, 0)},
                              {mimo, wg(192, 32, 2, 0)},
                              {mimo, wg(128, 16, 3, 0)},
                              {cap, wg(128, 96, 3, 0)},
                              {spans, wg(128, 176, 2, 0)},
                              {spans, wg(64, 64, 2, 1)},
                              {wide, wg(64, 32, 2, 0)},
                              {wide, wg(128, 64, 2, 1)},
                              {oss, wg(64, 32, 6, 1)},
                              {mimo, wg(64, 16, 8, 0)},
                              {spans, wg(128, 128, 2, 0)},
                              {oss, wg(192, 64, 2, 1)},
                              {mimo, wg(192, 80, 2, 0)},
                              {oss, wg(256, 32, 2, 0)},
                              {paged, wg(192, 64, 2, 1)},
                              {paged, wg(128, 128, 2, 0)},
                              {paged_fp8, wg(128, 64, 2, 0)},
                              {paged_small, wg(128, 64, 4, 1), small},
                              {paged_small, wg(192, 64, 2, 1), small},
                              {paged_small, wg(64, 32, 2, 1), small},
                              {paged_small, two_producers(wg(128, 128, 3, 1)), small},
                              {paged, wg(128, 128, 2, 1)},
                              {paged_small, wg(128, 128, 3, 1), small},
                              {paged_small, two_producers(wg(128, 64, 4, 1)), small},
                              {paged, two_producers(wg(128, 128, 2, 1))},
                              {oss, two_producers(wg(64, 64, 3, 1))},
                              {spans, two_producers(wg(128, 128, 2, 0))},
                              {mimo, two_producers(wg(192, 32, 2, 0))}};
  std::vector<Case> all = {{oss, packed64},
                           {oss, packed128},
                           {mimo, packed64},
                           {mimo, two_tiles},
                           {spans, packed64},
                           {spans, one_tile},
                           {cap, packed128},
                           {cap, two_tiles},
                           {wide, tiles(64, 4, 32, 2, 1, 0)},
                           // The Ampere/Ada rules of the spec (no such GPU to run them on).
                           {wide, tiles(64, 4, 16, 2, 0, 0)},
                           {spans, tiles(64, 4, 32, 2, 0, 0)}};
  if (current_device_target() == parse_target("sm_90a")) {
    all.insert(all.end(), hopper.begin(), hopper.end());
  }
  return all;
}

// Every check shape of one case, the output checked against the reference.
void check_case(const Case& c, const std::string& config) {
  for (const CheckShape& shape : standard_check_shapes(c.flags)) {
    const uint64_t seed = testing::fresh_seed();
    // Written before the launch and flushed: a kernel that hangs (a
    // barrier protocol bug) leaves its config and shape as the log's
    // last line when the run is killed.
    std::printf("running %s [%s] %s\n", testing::flags_name(c.flags, c.schedule).c_str(),
                config.c_str(),
                shape.name.c_str());
    std::fflush(stdout);
    const CheckResult r =
        check_attention(c.flags, shape, seed, KernelCache::global(), std::nullopt, c.tuning,
                        CheckTier::kSpecialized, c.schedule);
    const std::string line = fmt::format("{} [{}] {:<22} o_err={:.3e} lse_err={:.3e} seed={}",
                                         testing::flags_name(c.flags, c.schedule), config,
                                         shape.name,
                                         r.o_error, r.lse_error, seed);
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
    EXPECT_TRUE(r.passed(error_bound(c.flags.dtype))) << line;
  }
}

TEST(TileConfigs, EveryConfigMatchesTheReference) {
  ATTNJIT_REQUIRE_GPU();
  for (const Case& c : cases()) {
    std::string config;
    for (const auto& [k, v] : c.tuning) config += fmt::format("{}={} ", k, v);
    check_case(c, config);
  }
}

// With ATTNJIT_SMALL_PAGES=0 a paged launch at pages of 16 keys runs the
// variant itself (its per-page-and-chunk boxes), which is also what serves
// where the small_pages sibling cannot be had: the matrix's paged variants
// run their siblings at those pages, so these cases keep the variants'
// own page-16 path checked.
TEST(TileConfigs, PagesOfSixteenWithoutTheSmallPagesSibling) {
  ATTNJIT_REQUIRE_GPU();
  setenv("ATTNJIT_SMALL_PAGES", "0", 1);
  struct Unset {
    ~Unset() { unsetenv("ATTNJIT_SMALL_PAGES"); }
  } unset;
  AttentionFlags paged;
  paged.head_dim = 128;
  paged.causal = paged.return_lse = true;
  paged.kv_layout = KvLayout::kPaged;
  AttentionFlags spans;
  spans.head_dim = 256;
  spans.causal = spans.window = spans.mm_prefix = spans.mm_clamp = true;
  spans.kv_layout = KvLayout::kPaged;
  for (const AttentionFlags& flags : {paged, spans}) {
    // What ran: the variant, or for a decode its split sibling; never a
    // small_pages one.
    const std::string own = AttentionKernel::get(flags)->kernel().name();
    const std::string split_own =
        AttentionKernel::get(flags.to_flag_set(Schedule{true, false}))->kernel().name();
    for (const CheckShape& shape : standard_check_shapes(flags)) {
      const uint64_t seed = testing::fresh_seed();
      const CheckResult r = check_attention(flags, shape, seed, KernelCache::global());
      EXPECT_TRUE(r.passed(error_bound(flags.dtype)))
          << testing::flags_name(flags) << " " << shape.name << " seed " << seed
          << " o_err=" << r.o_error << " lse_err=" << r.lse_error;
      EXPECT_TRUE(r.variant == own || r.variant == split_own) << shape.name << " ran " << r.variant;
    }
  }
}

}  // namespace
}  // namespace attnjit

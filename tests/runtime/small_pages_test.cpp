// Which paged launches go to the small_pages sibling (runtime/src/
// split_kv.cpp, AttentionKernel::for_args), no GPU: pages of 16 keys on
// the variants whose V it changes (TileConfig::v_block_rows), from the
// prefill variant and from its split sibling alike. The kernels compile
// through NVRTC for sm_90a into a memory-only cache; nothing is launched.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "attnjit/attention.h"
#include "attnjit/cache.h"
#include "attnjit/error.h"
#include "attnjit/spec.h"
#include "attnjit/target.h"

namespace attnjit {
namespace {

AttentionArgs paged_args(int batch, int queries, int keys, int page_size) {
  AttentionArgs a;
  a.num_seqs = batch;
  a.num_heads_q = 32;
  a.num_heads_kv = 8;
  a.total_q = batch * queries;
  a.max_seqlen_q = queries;
  a.max_seqlen_k = keys;
  a.page_size = page_size;
  return a;
}

AttentionFlags paged_flags(int d) {
  AttentionFlags flags;
  flags.head_dim = d;
  flags.causal = true;
  flags.kv_layout = KvLayout::kPaged;
  return flags;
}

class SmallPagesTest : public ::testing::Test {
 protected:
  SmallPagesTest() : cache_(CacheConfig{}), target_(parse_target("sm_90a")) {}
  std::shared_ptr<AttentionKernel> kernel(const AttentionFlags& flags) {
    return AttentionKernel::get(flags, cache_, &target_);
  }
  KernelCache cache_;
  Target target_;
};

TEST_F(SmallPagesTest, PagesOfSixteenKeysGoToTheSibling) {
  auto k = kernel(paged_flags(128));
  AttentionArgs chunk = paged_args(4, 512, 8192, 16);
  AttentionKernel& small = k->for_args(chunk);
  ASSERT_NE(&small, k.get());
  EXPECT_TRUE(small.schedule().small_pages);
  EXPECT_FALSE(small.schedule().split_kv);
  EXPECT_EQ(small.block_m(), k->block_m());
  EXPECT_EQ(&k->for_args(chunk), &small);  // fetched once
  // Tiles of 16-row boxes: 16 mod 32.
  chunk.page_size = 48;
  EXPECT_EQ(&k->for_args(chunk), &small);
  // Boxes of 32 rows or more: V's boxes are as few already.
  for (const int page : {32, 64, 256}) {
    chunk.page_size = page;
    EXPECT_EQ(&k->for_args(chunk), k.get()) << "page " << page;
  }
  // A decode at page 16: the split sibling's own small_pages sibling.
  AttentionArgs decode = paged_args(64, 1, 8192, 16);
  AttentionKernel& runs = k->for_args(decode);
  EXPECT_TRUE(runs.schedule().split_kv);
  EXPECT_TRUE(runs.schedule().small_pages);
  decode.page_size = 64;
  EXPECT_TRUE(k->for_args(decode).schedule().split_kv);
  EXPECT_FALSE(k->for_args(decode).schedule().small_pages);
  // The sibling itself launches as it is.
  EXPECT_EQ(&small.for_args(paged_args(4, 512, 8192, 16)), &small);
}

// A first decode at pages of 16 keys fetches the one kernel it runs (the
// split sibling's small_pages sibling, planned from the split sibling's
// signature), not the split sibling on the way: one compile, not two.
TEST_F(SmallPagesTest, AFirstDecodeCompilesOnlyTheKernelItRuns) {
  auto k = kernel(paged_flags(128));
  const uint64_t before = cache_.stats().compiles;
  AttentionKernel& runs = k->for_args(paged_args(64, 1, 8192, 16));
  EXPECT_TRUE(runs.schedule().split_kv);
  EXPECT_TRUE(runs.schedule().small_pages);
  EXPECT_EQ(cache_.stats().compiles, before + 1);
  // Pages of 64: the split sibling itself, fetched now.
  AttentionKernel& split = k->for_args(paged_args(64, 1, 8192, 64));
  EXPECT_TRUE(split.schedule().split_kv);
  EXPECT_FALSE(split.schedule().small_pages);
  EXPECT_EQ(cache_.stats().compiles, before + 2);
  // The planned choice and the fetched sibling's own agree: a page-16
  // decode still runs the same kernel now that the split sibling exists.
  EXPECT_EQ(&k->for_args(paged_args(64, 1, 8192, 16)), &runs);
  EXPECT_EQ(&split.for_args(paged_args(64, 1, 8192, 16)), &runs);
  EXPECT_EQ(cache_.stats().compiles, before + 2);
}

TEST_F(SmallPagesTest, VariantsItWouldNotChangeKeepTheirOwnKernel) {
  // D 64 is one swizzle chunk: a page of 16 keys is one box of V already.
  auto d64 = kernel(paged_flags(64));
  EXPECT_EQ(&d64->for_args(paged_args(4, 512, 8192, 16)), d64.get());
  // The contiguous layout has no pages (page_size 0 there).
  AttentionFlags contiguous = paged_flags(128);
  contiguous.kv_layout = KvLayout::kContiguous;
  auto c = kernel(contiguous);
  AttentionArgs a = paged_args(4, 512, 8192, 0);
  EXPECT_EQ(&c->for_args(a), c.get());
  // small_pages needs the paged layout.
  EXPECT_THROW(AttentionKernel::get(contiguous.to_flag_set(Schedule{false, true}), cache_,
                                    &target_),
               Error);
}

// A variant got with tuning overrides (the autotuner's, the tile-config
// tests') has its sibling run the same tiles, not the rule's; a user
// spec's variant gets its sibling from its own spec; ATTNJIT_SMALL_PAGES=0
// keeps every launch on the variant itself.
TEST_F(SmallPagesTest, TheSiblingKeepsTheOverridesAndTheUserSpec) {
  const std::map<std::string, int64_t> tiles = {
      {"block_m", 64}, {"warps", 4}, {"block_n", 64}, {"stages", 4}, {"pack_gqa", 1}};
  auto k = AttentionKernel::get(paged_flags(128), cache_, &target_, tiles);
  const AttentionArgs chunk = paged_args(4, 512, 8192, 16);
  AttentionKernel& small = k->for_args(chunk);
  ASSERT_NE(&small, k.get());
  EXPECT_TRUE(small.schedule().small_pages);
  EXPECT_EQ(small.block_m(), 64);  // the rule's is 128
  setenv("ATTNJIT_SMALL_PAGES", "0", 1);
  auto other = kernel(paged_flags(128));
  EXPECT_EQ(&other->for_args(chunk), other.get());
  unsetenv("ATTNJIT_SMALL_PAGES");
  EXPECT_TRUE(other->for_args(chunk).schedule().small_pages);

  const auto spec = std::make_shared<const Spec>(
      load_spec_file(std::string(ATTNJIT_SOURCE_DIR) + "/specs/examples/causal_expr.yaml"));
  const FlagSet flags = resolve_flags(*spec, {{"head_dim", FlagValue(int64_t{128})},
                                              {"kv_layout", FlagValue(std::string("paged"))}});
  auto user = AttentionKernel::get_user(spec, flags, cache_, &target_);
  AttentionKernel& user_small = user->for_args(chunk);
  ASSERT_NE(&user_small, user.get());
  EXPECT_TRUE(user_small.schedule().small_pages);
  EXPECT_EQ(user_small.user_spec(), spec.get());
}

// Only a schedule: with the JIT off and no cache holding the sibling, the
// variant serves pages of 16 itself (it is correct at every page size),
// and does not look for the sibling again.
TEST_F(SmallPagesTest, WithoutTheJitAMissingSiblingLeavesTheVariantServing) {
  char path[] = "/tmp/attnjit-small-pages-XXXXXX";
  ASSERT_NE(mkdtemp(path), nullptr);
  CacheConfig config;
  config.user_dir = path;
  {
    KernelCache builder(config);
    AttentionKernel::get(paged_flags(128), builder, &target_);
  }
  config.no_jit = true;
  KernelCache cache(config);
  auto k = AttentionKernel::get(paged_flags(128), cache, &target_);
  const AttentionArgs chunk = paged_args(4, 512, 8192, 16);
  EXPECT_EQ(&k->for_args(chunk), k.get());
  EXPECT_EQ(&k->for_args(chunk), k.get());
  EXPECT_EQ(cache.stats().compiles, 0u);
  // Its sibling compiled into the directory: a variant got afresh finds it.
  {
    config.no_jit = false;
    KernelCache builder(config);
    AttentionKernel::get(paged_flags(128).to_flag_set(Schedule{false, true}), builder, &target_);
  }
  config.no_jit = true;
  KernelCache later(config);
  auto again = AttentionKernel::get(paged_flags(128), later, &target_);
  EXPECT_TRUE(again->for_args(chunk).schedule().small_pages);
  std::filesystem::remove_all(path);
}

}  // namespace
}  // namespace attnjit

// Which paged launches run the small_pages sibling of a kernel's variant
// (AttentionKernel::schedule_for, the planner's wants_small_pages), no GPU:
// pages of 16 keys on the variants whose V it changes
// (TileConfig::v_block_rows), from the prefill variant and from its split
// sibling alike, and what each fetch compiles. The kernels compile through
// NVRTC for sm_90a into a memory-only cache; nothing is launched.
#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>

#include "attnjit/attention.h"
#include "attnjit/cache.h"
#include "attnjit/error.h"
#include "attnjit/spec.h"
#include "attnjit/target.h"
#include "runtime/cache_test_support.h"

namespace attnjit {
namespace {

using testing::TempDir;

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
  // Compiles each of `flags` into a cache over `dir`, as build-cache leaves it.
  void build(const TempDir& dir, std::initializer_list<FlagSet> flags) {
    CacheConfig config;
    config.user_dir = dir.path();
    KernelCache builder(config);
    for (const FlagSet& f : flags) AttentionKernel::get(f, builder, &target_)->wait_specialized();
  }
  // A cache over `dir` that never compiles.
  static CacheConfig no_jit(const TempDir& dir) {
    CacheConfig config;
    config.user_dir = dir.path();
    config.no_jit = true;
    return config;
  }
  KernelCache cache_;
  Target target_;
};

constexpr Schedule kPlain{false, false}, kSmall{false, true}, kSplit{true, false},
    kSplitSmall{true, true};

TEST_F(SmallPagesTest, PagesOfSixteenKeysGoToTheSmallPagesSibling) {
  auto k = kernel(paged_flags(128));
  AttentionArgs chunk = paged_args(4, 512, 8192, 16);
  EXPECT_EQ(k->schedule_for(chunk), kSmall);
  Kernel& small = k->kernel_for(chunk);
  EXPECT_NE(&small, &k->kernel());
  EXPECT_EQ(&k->kernel_for(chunk), &small);  // fetched once
  // Tiles of 16-row boxes: 16 mod 32.
  chunk.page_size = 48;
  EXPECT_EQ(k->schedule_for(chunk), kSmall);
  EXPECT_EQ(&k->kernel_for(chunk), &small);
  // Boxes of 32 rows or more: V's boxes are as few already.
  for (const int page : {32, 64, 256}) {
    chunk.page_size = page;
    EXPECT_EQ(k->schedule_for(chunk), kPlain) << "page " << page;
    EXPECT_EQ(&k->kernel_for(chunk), &k->kernel()) << "page " << page;
  }
  // A decode at page 16: the split sibling's small_pages sibling.
  AttentionArgs decode = paged_args(64, 1, 8192, 16);
  EXPECT_EQ(k->schedule_for(decode), kSplitSmall);
  decode.page_size = 64;
  EXPECT_EQ(k->schedule_for(decode), kSplit);
  // A kernel got with the small_pages schedule launches as it is, and runs
  // the same variant (one per signature and cache in the process).
  auto own = AttentionKernel::get(paged_flags(128).to_flag_set(kSmall), cache_, &target_);
  EXPECT_EQ(own->schedule_for(paged_args(4, 512, 8192, 16)), kSmall);
  EXPECT_EQ(&own->kernel_for(paged_args(4, 512, 8192, 16)), &small);
}

// get() compiles nothing, and a first decode at pages of 16 keys fetches
// the one variant it runs (the split sibling's small_pages sibling, planned from
// the tile configurations of the signatures on the way): one compile. Each
// sibling compiles on the first launch that runs it, once for every kernel.
TEST_F(SmallPagesTest, AFirstDecodeCompilesOnlyTheKernelItRuns) {
  const uint64_t before = cache_.stats().compiles;
  auto k = kernel(paged_flags(128));
  EXPECT_EQ(cache_.stats().compiles, before);
  Kernel& runs = k->kernel_for(paged_args(64, 1, 8192, 16));
  EXPECT_EQ(k->schedule_for(paged_args(64, 1, 8192, 16)), kSplitSmall);
  EXPECT_EQ(cache_.stats().compiles, before + 1);
  // Pages of 64: the split sibling itself, fetched now.
  Kernel& split = k->kernel_for(paged_args(64, 1, 8192, 64));
  EXPECT_NE(&split, &runs);
  EXPECT_EQ(cache_.stats().compiles, before + 2);
  // The planned choice and the fetched variant's own agree: a page-16
  // decode still runs the same kernel now that the split sibling is here, and
  // so does a kernel got with the split schedule.
  EXPECT_EQ(&k->kernel_for(paged_args(64, 1, 8192, 16)), &runs);
  auto split_kernel = AttentionKernel::get(paged_flags(128).to_flag_set(kSplit), cache_, &target_);
  EXPECT_EQ(&split_kernel->kernel_for(paged_args(64, 1, 8192, 16)), &runs);
  EXPECT_EQ(&split_kernel->kernel(), &split);
  EXPECT_EQ(cache_.stats().compiles, before + 2);
  // The kernel's own variant, on the first call that needs it.
  k->kernel();
  EXPECT_EQ(cache_.stats().compiles, before + 3);
}

TEST_F(SmallPagesTest, VariantsItWouldNotChangeKeepTheirOwnKernel) {
  // D 64 is one swizzle chunk: a page of 16 keys is one box of V already.
  auto d64 = kernel(paged_flags(64));
  EXPECT_EQ(d64->schedule_for(paged_args(4, 512, 8192, 16)), kPlain);
  // The contiguous layout has no pages (page_size 0 there).
  AttentionFlags contiguous = paged_flags(128);
  contiguous.kv_layout = KvLayout::kContiguous;
  auto c = kernel(contiguous);
  EXPECT_EQ(c->schedule_for(paged_args(4, 512, 8192, 0)), kPlain);
  // small_pages needs the paged layout.
  EXPECT_THROW(AttentionKernel::get(contiguous.to_flag_set(kSmall), cache_, &target_), Error);
}

// A kernel got with tuning overrides (the autotuner's, the tile-config
// tests') has its small_pages sibling run the same tiles, not the rule's; a
// user spec's kernel gets that sibling from its own spec; ATTNJIT_SMALL_PAGES=0
// keeps every launch on the variant without it.
TEST_F(SmallPagesTest, TheSmallPagesSiblingKeepsTheOverridesAndTheUserSpec) {
  const std::map<std::string, int64_t> tiles = {
      {"block_m", 64}, {"warps", 4}, {"block_n", 64}, {"stages", 4}, {"pack_gqa", 1}};
  auto k = AttentionKernel::get(paged_flags(128), cache_, &target_, tiles);
  const AttentionArgs chunk = paged_args(4, 512, 8192, 16);
  EXPECT_EQ(k->schedule_for(chunk), kSmall);
  const std::string small = k->kernel_for(chunk).entry().canonical_signature;
  EXPECT_NE(small.find("small_pages=true"), std::string::npos) << small;
  EXPECT_NE(small.find("block_m=64"), std::string::npos) << small;  // the rule's is 128
  setenv("ATTNJIT_SMALL_PAGES", "0", 1);
  auto other = kernel(paged_flags(128));
  EXPECT_EQ(other->schedule_for(chunk), kPlain);
  unsetenv("ATTNJIT_SMALL_PAGES");
  EXPECT_EQ(other->schedule_for(chunk), kSmall);

  const auto spec = std::make_shared<const Spec>(
      load_spec_file(std::string(ATTNJIT_SOURCE_DIR) + "/specs/examples/causal_expr.yaml"));
  const FlagSet flags = resolve_flags(*spec, {{"head_dim", FlagValue(int64_t{128})},
                                              {"kv_layout", FlagValue(std::string("paged"))}});
  auto user = AttentionKernel::get_user(spec, flags, cache_, &target_);
  EXPECT_EQ(user->schedule_for(chunk), kSmall);
  const std::string user_small = user->kernel_for(chunk).entry().canonical_signature;
  EXPECT_EQ(user_small.rfind(spec->family + "[", 0), 0u) << user_small;
  EXPECT_NE(user_small.find("small_pages=true"), std::string::npos) << user_small;
}

// Only a schedule: with the JIT off and no cache holding the small_pages
// sibling, the variant without it serves pages of 16 (it is correct at every
// page size), and the sibling is not looked for again.
TEST_F(SmallPagesTest, WithoutTheJitAMissingSiblingLeavesTheVariantServing) {
  TempDir dir;
  build(dir, {paged_flags(128).to_flag_set()});
  KernelCache cache(no_jit(dir));
  auto k = AttentionKernel::get(paged_flags(128), cache, &target_);
  const AttentionArgs chunk = paged_args(4, 512, 8192, 16);
  EXPECT_EQ(k->schedule_for(chunk), kSmall);  // planned: nothing looked up yet
  EXPECT_EQ(&k->kernel_for(chunk), &k->kernel());
  EXPECT_EQ(k->schedule_for(chunk), kPlain);  // not looked for again
  EXPECT_EQ(&k->kernel_for(chunk), &k->kernel());
  EXPECT_EQ(cache.stats().compiles, 0u);
  // The sibling compiled into the directory: a kernel got afresh finds it.
  build(dir, {paged_flags(128).to_flag_set(kSmall)});
  KernelCache later(no_jit(dir));
  auto again = AttentionKernel::get(paged_flags(128), later, &target_);
  EXPECT_NE(&again->kernel_for(chunk), &again->kernel());
  EXPECT_EQ(again->schedule_for(chunk), kSmall);
  EXPECT_EQ(later.stats().compiles, 0u);
}

// A tier cached for the small_pages sibling (the generic variant without
// small_pages, as the main job leaves it) does not answer for it: while the
// sibling compiles the variant without it serves (faster than a tier), and
// where it never lands (the JIT off) that one serves from then on.
TEST_F(SmallPagesTest, WhileTheSiblingCompilesTheVariantServesNotATier) {
  TempDir dir;
  build(dir, {paged_flags(128).to_flag_set(), generic_flags(paged_flags(128)).to_flag_set()});
  setenv("ATTNJIT_TIERED", "1", 1);
  KernelCache cache(no_jit(dir));
  auto k = AttentionKernel::get(paged_flags(128), cache, &target_);
  const AttentionArgs chunk = paged_args(4, 512, 8192, 16);
  EXPECT_EQ(k->schedule_for(chunk), kSmall);
  EXPECT_EQ(&k->kernel_for(chunk), &k->kernel());  // the variant, not the generic tier
  EXPECT_EQ(k->tier(), AttentionKernel::Tier::kSpecialized);
  // The sibling's background compile fails (no JIT): no error for the
  // kernel, and the sibling is not asked for again.
  EXPECT_NO_THROW(k->wait_specialized());
  EXPECT_EQ(k->schedule_for(chunk), kPlain);
  EXPECT_EQ(&k->kernel_for(chunk), &k->kernel());
  EXPECT_EQ(cache.stats().compiles, 0u);
  unsetenv("ATTNJIT_TIERED");
}

}  // namespace
}  // namespace attnjit

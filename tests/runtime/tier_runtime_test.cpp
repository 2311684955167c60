// The generic tier in AttentionKernel::get (runtime/src/attention_tier.cpp),
// no GPU: which kernel answers, when the specialized one takes over, and
// when tiering stays out of the way. Kernels compile through NVRTC for
// sm_90a into memory-only caches; nothing is launched (launches through
// the generic tier run in the GPU suite).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <string>
#include <thread>
#include <vector>

#include "attnjit/attention.h"
#include "attnjit/cache.h"
#include "attnjit/error.h"
#include "attnjit/target.h"
#include "runtime/fake_args.h"

namespace attnjit {
namespace {

using Tier = AttentionKernel::Tier;

class TierTest : public ::testing::Test {
 protected:
  TierTest() : cache_(CacheConfig{}), target_(parse_target("sm_90a")) {
    setenv("ATTNJIT_TIERED", "1", 1);
  }
  ~TierTest() override { unsetenv("ATTNJIT_TIERED"); }
  std::shared_ptr<AttentionKernel> get(const AttentionFlags& flags) {
    return AttentionKernel::get(flags, cache_, &target_);
  }
  static AttentionFlags causal_d64() {
    AttentionFlags f;
    f.head_dim = 64;
    f.causal = true;
    return f;
  }
  KernelCache cache_;
  Target target_;
};

TEST_F(TierTest, AnUncachedVariantIsAnsweredByItsGenericOneUntilItLands) {
  const AttentionFlags f = causal_d64();
  // The generic variant in the cache first, as build-cache leaves it; it
  // answers for itself.
  auto generic = get(generic_flags(f));
  EXPECT_EQ(generic->tier(), Tier::kSpecialized);
  const uint64_t compiles = cache_.stats().compiles;
  auto k = get(f);
  EXPECT_EQ(k->flags().canonical_text(), f.canonical_text());
  // Returned before its own compile (hundreds of milliseconds) finished:
  // the generic kernel is the one a launch would run.
  EXPECT_EQ(k->tier(), Tier::kGeneric);
  EXPECT_EQ(k->kernel().name(), generic->kernel().name());
  EXPECT_EQ(k->block_m(), generic->block_m());
  k->wait_specialized();
  EXPECT_EQ(k->tier(), Tier::kSpecialized);
  EXPECT_NE(k->kernel().name(), generic->kernel().name());
  EXPECT_EQ(cache_.stats().compiles, compiles + 1);
  // Memoized: the same object, now specialized.
  EXPECT_EQ(get(f).get(), k.get());
  // Its split sibling goes through the same tiering (compiled here, as
  // nothing cached the generic split variant).
  const AttentionArgs decode = testing::decode_shape();
  EXPECT_TRUE(k->schedule_for(decode).split_kv);
  EXPECT_NE(k->kernel_for(decode).entry().canonical_signature.find("split_kv=true"),
            std::string::npos);
  EXPECT_EQ(cache_.stats().compiles, compiles + 2);
}

// Each sibling of a variant is tiered on its own: a first decode is answered
// at once by the generic split variant while the split sibling compiles in the
// background, and the kernel's own variant (a decode never runs it) is not
// compiled at all.
TEST_F(TierTest, AFirstDecodeIsAnsweredByTheGenericSplitVariant) {
  AttentionFlags f = causal_d64();
  f.head_dim = 256;
  const Schedule split{true, false};
  get(generic_flags(f))->wait_specialized();
  AttentionKernel::get(generic_flags(f).to_flag_set(split), cache_, &target_)->wait_specialized();
  const uint64_t compiles = cache_.stats().compiles;
  auto k = get(f);
  const AttentionArgs decode = testing::decode_shape();
  EXPECT_EQ(k->schedule_for(decode), split);
  const std::string generic_split =
      AttentionKernel::get(generic_flags(f).to_flag_set(split), cache_, &target_)
          ->kernel()
          .entry()
          .canonical_signature;
  EXPECT_EQ(k->kernel_for(decode).entry().canonical_signature, generic_split);
  k->wait_specialized();  // the variants launches fetched: the split one
  const std::string landed = k->kernel_for(decode).entry().canonical_signature;
  EXPECT_NE(landed, generic_split);
  EXPECT_NE(landed.find("split_kv=true"), std::string::npos) << landed;
  EXPECT_EQ(cache_.stats().compiles, compiles + 1);
}

TEST_F(TierTest, CallersRacingForOneVariantShareOneKernelAndOneCompile) {
  AttentionFlags f = causal_d64();
  f.head_dim = 80;
  get(generic_flags(f))->wait_specialized();
  const uint64_t compiles = cache_.stats().compiles;
  std::vector<std::shared_ptr<AttentionKernel>> got(8);
  std::vector<std::thread> callers;
  // Each caller fetches the variant too (a tier answers, one compile starts).
  for (auto& slot : got) {
    callers.emplace_back([&] {
      slot = get(f);
      slot->kernel();
    });
  }
  for (std::thread& t : callers) t.join();
  for (const auto& k : got) EXPECT_EQ(k.get(), got[0].get());
  got[0]->wait_specialized();
  EXPECT_EQ(cache_.stats().compiles, compiles + 1);
}

TEST_F(TierTest, WithoutItsGenericVariantCachedAVariantCompilesAsAlways) {
  AttentionFlags f = causal_d64();
  f.sinks = SinkMode::kBiasKey0;
  auto k = get(f);
  EXPECT_EQ(k->tier(), Tier::kSpecialized);
  k->wait_specialized();  // nothing to wait for
}

TEST_F(TierTest, AVariantOnDiskIsNeverTiered) {
  // One cache compiles the generic variant and the variant into a user
  // directory; a second cache over that directory (a new process, say)
  // finds the variant there and loads it, with tiering on.
  char dir_template[] = "/tmp/attnjit-tier-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  CacheConfig config;
  config.user_dir = dir_template;
  const AttentionFlags f = causal_d64();
  {
    KernelCache first(config);
    AttentionKernel::get(generic_flags(f), first, &target_)->wait_specialized();
    setenv("ATTNJIT_TIERED", "0", 1);
    AttentionKernel::get(f, first, &target_)->wait_specialized();
    setenv("ATTNJIT_TIERED", "1", 1);
  }
  KernelCache second(config);
  auto k = AttentionKernel::get(f, second, &target_);
  EXPECT_EQ(k->tier(), Tier::kSpecialized);
  EXPECT_EQ(k->source(), EntrySource::kDisk);
  EXPECT_EQ(second.stats().compiles, 0u);
  std::error_code ignored;  // a leftover temporary directory fails nothing
  std::filesystem::remove_all(dir_template, ignored);
}

// Python launches with the GIL held only through launch_if_ready: it
// checks the args as launch does, and where the variant is not compiled
// yet it launches nothing, fetches nothing and says so.
TEST_F(TierTest, LaunchIfReadyNeverFetches) {
  AttentionFlags f = causal_d64();
  f.head_dim = 64;
  auto k = get(f);
  const uint64_t compiles = cache_.stats().compiles;
  AttentionArgs a = testing::fake_args(64);
  EXPECT_FALSE(k->launch_if_ready(a, nullptr, {}));
  AttentionArgs decode = a;  // one query: the split sibling's launch
  decode.total_q = decode.max_seqlen_q = 1;
  EXPECT_FALSE(k->launch_if_ready(decode, nullptr, {}));
  EXPECT_EQ(cache_.stats().compiles, compiles);
  a.q = nullptr;
  EXPECT_THROW(k->launch_if_ready(a, nullptr, {}), Error);
}

TEST_F(TierTest, TieringIsOnByDefault) {
  unsetenv("ATTNJIT_TIERED");
  AttentionFlags f = causal_d64();
  f.head_dim = 96;
  get(generic_flags(f))->wait_specialized();
  auto k = get(f);
  EXPECT_EQ(k->tier(), Tier::kGeneric);
  k->wait_specialized();
  EXPECT_EQ(k->tier(), Tier::kSpecialized);
}

TEST_F(TierTest, ZeroTurnsTieringOff) {
  setenv("ATTNJIT_TIERED", "0", 1);
  AttentionFlags f = causal_d64();
  f.head_dim = 128;
  get(generic_flags(f))->wait_specialized();
  auto k = get(f);
  EXPECT_EQ(k->tier(), Tier::kSpecialized);
  EXPECT_EQ(k->flags().canonical_text(), f.canonical_text());
}

}  // namespace
}  // namespace attnjit

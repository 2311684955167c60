// AttentionKernel::get's memo and the per-thread record of recent hits in
// front of it (attention.cpp RecentHits): a repeat returns the memo's
// kernel, and nothing the memo tells apart (the cache, the flags, the
// target, the compile options read from the environment) is mixed up by
// the by-value record; $ATTNJIT_TUNING applies to the built-in variants its
// entries match and keys the memo.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "attnjit/attention.h"
#include "attnjit/cache.h"
#include "attnjit/error.h"
#include "attnjit/target.h"

namespace attnjit {
namespace {

TEST(KernelMemo, RecentHitsTellCachesFlagsTargetsAndOptionsApart) {
  setenv("ATTNJIT_TIERED", "0", 1);
  KernelCache a{CacheConfig{}}, b{CacheConfig{}};
  const Target sm90a = parse_target("sm_90a"), sm80 = parse_target("sm_80");
  AttentionFlags f;
  f.head_dim = 64;
  f.causal = true;
  const auto k = AttentionKernel::get(f, a, &sm90a);
  EXPECT_EQ(AttentionKernel::get(f, a, &sm90a), k);
  EXPECT_EQ(AttentionKernel::get(f, a, &sm90a), k);  // from the record now
  EXPECT_NE(AttentionKernel::get(f, b, &sm90a), k);
  EXPECT_NE(AttentionKernel::get(f, a, &sm80), k);
  AttentionFlags other = f;
  other.return_lse = true;
  const auto k_lse = AttentionKernel::get(other, a, &sm90a);
  EXPECT_NE(k_lse, k);
  EXPECT_EQ(k_lse->flags().canonical_text(), other.canonical_text());
  setenv("ATTNJIT_MAXRREG", "128", 1);
  const auto capped = AttentionKernel::get(f, a, &sm90a);
  unsetenv("ATTNJIT_MAXRREG");
  EXPECT_NE(capped, k);
  EXPECT_EQ(AttentionKernel::get(f, a, &sm90a), k);
  // Another thread has its own record and finds the one memo's kernel.
  std::shared_ptr<AttentionKernel> from_thread;
  std::thread([&] { from_thread = AttentionKernel::get(f, a, &sm90a); }).join();
  EXPECT_EQ(from_thread, k);
  // More variants than the record holds: the oldest fall out of it and
  // still come back from the memo.
  for (int d : {80, 96, 128, 192, 256, 64}) {
    AttentionFlags g = f;
    g.head_dim = d;
    EXPECT_EQ(AttentionKernel::get(g, a, &sm90a)->flags().canonical_text(), g.canonical_text());
  }
  EXPECT_EQ(AttentionKernel::get(f, a, &sm90a), k);
  unsetenv("ATTNJIT_TIERED");
}

// A cache's kernels leave the process memo with forget_cache (a C context
// calls it as it goes); a thread's record of one does not keep it.
TEST(KernelMemo, ForgetCacheLetsItsKernelsGo) {
  const Target sm90a = parse_target("sm_90a");
  AttentionFlags f;
  std::weak_ptr<AttentionKernel> gone, kept;
  KernelCache other{CacheConfig{}};
  kept = AttentionKernel::get(f, other, &sm90a);
  {
    KernelCache cache{CacheConfig{}};
    auto k = AttentionKernel::get(f, cache, &sm90a);
    EXPECT_EQ(AttentionKernel::get(f, cache, &sm90a), k);  // remembered by this thread too
    gone = k;
    k.reset();
    EXPECT_FALSE(gone.expired());  // the memo holds it
    AttentionKernel::forget_cache(cache);
  }
  EXPECT_TRUE(gone.expired());
  EXPECT_FALSE(kept.expired());  // another cache's stays
  EXPECT_EQ(AttentionKernel::get(f, other, &sm90a), kept.lock());
}

// Flags outside the record's packing (a value head of 1024) are not taken
// for a remembered kernel: they reach the spec's error, after a hit too.
TEST(KernelMemo, FlagsOutsideTheRecordsPackingGetTheSpecsError) {
  KernelCache cache{CacheConfig{}};
  const Target sm90a = parse_target("sm_90a");
  AttentionFlags good;
  AttentionFlags bad = good;
  bad.head_dim_v = 1024;
  EXPECT_THROW(AttentionKernel::get(bad, cache, &sm90a), Error);
  ASSERT_NE(AttentionKernel::get(good, cache, &sm90a), nullptr);
  EXPECT_THROW(AttentionKernel::get(bad, cache, &sm90a), Error);
  bad.head_dim_v = 1024 + 128;  // the old packing kept 128 of it
  EXPECT_THROW(AttentionKernel::get(bad, cache, &sm90a), Error);
}

// $ATTNJIT_TUNING is read once per process: each case runs in a fresh
// child (threadsafe death tests re-execute the binary).
TEST(EnvTuning, AppliesToEveryVariantAndKeysIt) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto child = [] {
    setenv("ATTNJIT_TUNING", "stages=3,min_blocks=1", 1);
    KernelCache cache{CacheConfig{}};
    const Target target = parse_target("sm_90a");
    AttentionFlags f;
    f.head_dim = 64;
    f.causal = true;
    auto k = AttentionKernel::get(f, cache, &target);
    const std::string& sig = k->kernel().entry().canonical_signature;
    const bool ok = sig.find("stages=3") != std::string::npos &&
                    sig.find("min_blocks=1") != std::string::npos &&
                    AttentionKernel::get(f, cache, &target).get() == k.get();  // memoized
    std::exit(ok ? 0 : 1);
  };
  EXPECT_EXIT(child(), ::testing::ExitedWithCode(0), "");
}

// Entries scoped by flags: a variant takes the first entry whose flags it
// has (here the split sibling one config, the prefill variant another,
// D 64 nothing), so a split-only param can be timed through the benchmarks
// without reaching the variant they get first.
TEST(EnvTuning, AScopedEntryAppliesOnlyToTheVariantsWithItsFlags) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto child = [] {
    setenv("ATTNJIT_TUNING",
           "split_kv=true,head_dim=128:stages=5;head_dim=128:stages=3,min_blocks=1", 1);
    KernelCache cache{CacheConfig{}};
    const Target target = parse_target("sm_90a");
    AttentionFlags f;
    f.head_dim = 128;
    f.causal = true;
    const auto sig_of = [&](const AttentionFlags& flags) {
      return AttentionKernel::get(flags, cache, &target)->kernel().entry().canonical_signature;
    };
    const auto split_sig_of = [&](const AttentionFlags& flags) {
      return AttentionKernel::get(flags.to_flag_set(Schedule{true, false}), cache, &target)
          ->kernel()
          .entry()
          .canonical_signature;
    };
    const std::string prefill = sig_of(f);
    const std::string split = split_sig_of(f);
    f.head_dim = 64;
    const std::string other = split_sig_of(f);
    const bool ok = prefill.find("stages=3") != std::string::npos &&
                    prefill.find("min_blocks=1") != std::string::npos &&
                    split.find("stages=5") != std::string::npos &&
                    split.find("min_blocks=1") == std::string::npos &&
                    other.find("stages=5") == std::string::npos &&
                    other.find("stages=3") == std::string::npos;
    if (!ok) std::fprintf(stderr, "%s\n%s\n%s\n", prefill.c_str(), split.c_str(), other.c_str());
    std::exit(ok ? 0 : 1);
  };
  EXPECT_EXIT(child(), ::testing::ExitedWithCode(0), "");
}

// In a child process: gets a variant under $ATTNJIT_TUNING = `value`;
// exits 2 with the error's message on stderr, 0 without an error.
void get_under_env_tuning(const char* value) {
  setenv("ATTNJIT_TUNING", value, 1);
  KernelCache cache{CacheConfig{}};
  const Target target = parse_target("sm_90a");
  try {
    AttentionKernel::get(AttentionFlags{}, cache, &target);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    std::exit(2);
  }
  std::exit(0);
}

TEST(EnvTuning, AnUnknownFlagInAScopeIsAnErrorNamingTheVariable) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(get_under_env_tuning("causl=true:stages=3"), ::testing::ExitedWithCode(2),
              "ATTNJIT_TUNING: 'causl=true': .*causl");
}

TEST(EnvTuning, AMalformedValueIsAnErrorNamingTheVariable) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(get_under_env_tuning("stages"), ::testing::ExitedWithCode(2),
              "ATTNJIT_TUNING: 'stages' is not name=integer");
  EXPECT_EXIT(get_under_env_tuning("split_kv=true:stages"), ::testing::ExitedWithCode(2),
              "ATTNJIT_TUNING: 'stages' is not name=integer");
  // An entry that sets nothing would hide the ones after it.
  EXPECT_EXIT(get_under_env_tuning("split_kv=true:;stages=3"), ::testing::ExitedWithCode(2),
              "ATTNJIT_TUNING: 'split_kv=true:' sets no tuning values");
  // A name no param has is an error even in an entry no variant matches.
  EXPECT_EXIT(get_under_env_tuning("stages=3;head_dim=256:stagse=4"),
              ::testing::ExitedWithCode(2), "ATTNJIT_TUNING: unknown tuning param 'stagse'");
}

// The params of deleted schedules are unknown names, in any entry.
TEST(EnvTuning, AParamOfADeletedScheduleIsAnErrorNamingIt) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(get_under_env_tuning("pingpong=0"), ::testing::ExitedWithCode(2),
              "ATTNJIT_TUNING: unknown tuning param 'pingpong'");
  EXPECT_EXIT(get_under_env_tuning("split_kv=true:persistent=1"), ::testing::ExitedWithCode(2),
              "ATTNJIT_TUNING: unknown tuning param 'persistent'");
  EXPECT_EXIT(get_under_env_tuning("kv_layout=paged:uniform_boxes=0"),
              ::testing::ExitedWithCode(2), "ATTNJIT_TUNING: unknown tuning param 'uniform_boxes'");
  EXPECT_EXIT(get_under_env_tuning("stages=3,cluster=2"), ::testing::ExitedWithCode(2),
              "ATTNJIT_TUNING: unknown tuning param 'cluster'");
}

// Blanks around the values and empty entries are allowed.
TEST(EnvTuning, BlanksAndEmptyEntriesAreAllowed) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(get_under_env_tuning("split_kv=true: stages=3 , min_blocks=1 ;;"),
              ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace attnjit

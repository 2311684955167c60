// AttentionKernel::get's memo and the per-thread record of recent hits in
// front of it (attention.cpp RecentHits): a repeat returns the memo's
// kernel, and nothing the memo tells apart (the cache, the flags, the
// target, the compile options read from the environment) is mixed up by
// the by-value record.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <thread>

#include "attnjit/attention.h"
#include "attnjit/cache.h"
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

}  // namespace
}  // namespace attnjit

// The generic tier on the GPU (docs/tiers.md): matrix variants launched
// through their generic variant (generic_flags, generic_args) against the
// reference of the requested flags, on the standard shapes. One cache
// compiles the generic variants (and their split siblings) into a shared
// directory; each test then reads that directory through a cache that may
// not compile, so the variant's own compile fails in the background and
// every launch is the generic tier's (generic_launches() counts them).
#include <gtest/gtest.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "attnjit/error.h"
#include "gpu/gpu_test_util.h"

namespace attnjit {
namespace {

const std::string& generic_dir() {
  static const std::string dir = [] {
    char path[] = "/tmp/attnjit-generic-tier-XXXXXX";
    if (mkdtemp(path) == nullptr) return std::string();
    return std::string(path);
  }();
  return dir;
}

// The generic variant of `flags` and its split sibling (and on a paged
// cache the small_pages siblings of both), compiled into the shared
// directory once.
void build_generic(const testing::Variant& v) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  CacheConfig config;
  config.user_dir = generic_dir();
  KernelCache builder(config);
  const AttentionFlags generic = generic_flags(v.flags);
  for (bool split : {false, true}) {
    for (bool small : {false, true}) {
      if (small && generic.kv_layout != KvLayout::kPaged) continue;
      const Schedule schedule{split, small || v.schedule.small_pages};
      AttentionKernel::get(generic.to_flag_set(schedule), builder)->wait_specialized();
    }
  }
}

// Every variant of the matrix (contiguous and paged, each dtype, head dim
// and K/V storage) whose generic variant differs from it; the split and
// small_pages siblings come through the launches' own schedules. 113 tests (2.2 s each on the H200): shard by dtype
// on the device (--gtest_filter='Matrix/GenericTier.*/bf16*').
std::vector<testing::Variant> tiered_variants() {
  std::vector<testing::Variant> out;
  for (const testing::Variant& v : testing::spec_variants()) {
    if (v.schedule.split_kv) continue;
    if (generic_flags(v.flags).canonical_text() == v.flags.canonical_text()) continue;
    out.push_back(v);
  }
  return out;
}

class GenericTier : public ::testing::TestWithParam<testing::Variant> {
 protected:
  // Tiering on for this test alone (read when a kernel's variant slot is made).
  void SetUp() override { setenv("ATTNJIT_TIERED", "1", 1); }
  void TearDown() override { unsetenv("ATTNJIT_TIERED"); }
};

TEST_P(GenericTier, MatchesTheReferenceOfTheRequestedFlags) {
  ATTNJIT_REQUIRE_GPU();
  ASSERT_FALSE(generic_dir().empty());
  const testing::Variant v = GetParam();
  if (const std::string why = testing::no_kernel_here(v); !why.empty()) GTEST_SKIP() << why;
  build_generic(v);
  CacheConfig config;
  config.user_dir = generic_dir();
  config.no_jit = true;  // the variant itself never lands: every launch is generic
  KernelCache cache(config);
  const uint64_t before = AttentionKernel::generic_launches();
  testing::expect_matches_reference_on_every_shape(v, cache, " via generic",
                                                   CheckTier::kAsLaunched);
  EXPECT_GT(AttentionKernel::generic_launches(), before);
  // The background compile failed (no JIT) and said so; the kernel keeps
  // answering through the generic variant.
  auto kernel = AttentionKernel::get(v.flags.to_flag_set(v.schedule), cache);
  EXPECT_EQ(kernel->tier(), AttentionKernel::Tier::kGeneric);
  EXPECT_THROW(kernel->wait_specialized(), Error);
}

INSTANTIATE_TEST_SUITE_P(Matrix, GenericTier, ::testing::ValuesIn(tiered_variants()),
                         [](const ::testing::TestParamInfo<testing::Variant>& info) {
                           return testing::variant_name(info.param);
                         });

}  // namespace
}  // namespace attnjit

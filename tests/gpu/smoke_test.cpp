// The pipeline's GPU smoke test: one preset through spec -> codegen ->
// NVRTC -> cache -> launch, checked against the CPU reference.
#include <gtest/gtest.h>

#include "attnjit/selfcheck.h"
#include "gpu/gpu_test_util.h"

namespace attnjit {
namespace {

TEST(GpuSmoke, CausalPresetMatchesReference) {
  ATTNJIT_REQUIRE_GPU();
  const AttentionFlags flags =
      AttentionFlags::from_flag_set(resolve_preset(attention_spec(), "llm_causal"));
  const CheckShape shape{"smoke", {100, 300}, {100, 300}, 4, 2, -1, -1, {}, 0.f};
  const uint64_t seed = testing::fresh_seed();
  const CheckResult r = check_attention(flags, shape, seed);
  std::printf("smoke %s o_err=%.3e seed=%llu\n", r.variant.c_str(), r.o_error,
              static_cast<unsigned long long>(seed));
  EXPECT_TRUE(r.passed(error_bound(flags.dtype))) << r.o_error;
}

TEST(GpuSmoke, SecondGetIsAMemoryHit) {
  ATTNJIT_REQUIRE_GPU();
  AttentionFlags flags;
  auto a = AttentionKernel::get(flags);
  auto b = AttentionKernel::get(flags);
  EXPECT_EQ(a.get(), b.get());
}

}  // namespace
}  // namespace attnjit

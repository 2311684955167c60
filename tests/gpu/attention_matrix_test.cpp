// The spec-driven GPU matrix: every combination of the attention spec's
// `matrix` and presets, each on the standard shapes, against the reference.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "attnjit/selfcheck.h"
#include "gpu/gpu_test_util.h"

namespace attnjit {
namespace {

class AttentionMatrix : public ::testing::TestWithParam<AttentionFlags> {};

TEST_P(AttentionMatrix, MatchesReferenceOnEveryShape) {
  ATTNJIT_REQUIRE_GPU();
  const AttentionFlags flags = GetParam();
  const double bound = error_bound(flags.dtype);
  for (const CheckShape& shape : standard_check_shapes(flags)) {
    const uint64_t seed = testing::fresh_seed();
    const CheckResult r = check_attention(flags, shape, seed);
    const std::string line =
        fmt::format("{} {:<22} o_err={:.3e} lse_err={:.3e} written={} guard={} seed={}",
                    testing::flags_name(flags), shape.name, r.o_error, r.lse_error,
                    r.output_written, r.guard_intact, seed);
    std::printf("%s\n", line.c_str());
    EXPECT_TRUE(r.passed(bound)) << line;
  }
}

INSTANTIATE_TEST_SUITE_P(Spec, AttentionMatrix, ::testing::ValuesIn(testing::spec_variants()),
                         [](const ::testing::TestParamInfo<AttentionFlags>& info) {
                           return testing::flags_name(info.param);
                         });

}  // namespace
}  // namespace attnjit

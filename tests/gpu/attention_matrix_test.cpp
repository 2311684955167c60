// The spec-driven GPU matrix: every combination of the attention spec's
// `matrix` and presets, each on the standard shapes, against the reference.
#include <gtest/gtest.h>

#include "gpu/gpu_test_util.h"

namespace attnjit {
namespace {

class AttentionMatrix : public ::testing::TestWithParam<testing::Variant> {};

TEST_P(AttentionMatrix, MatchesReferenceOnEveryShape) {
  ATTNJIT_REQUIRE_GPU();
  testing::expect_matches_reference_on_every_shape(GetParam(), KernelCache::global());
}

INSTANTIATE_TEST_SUITE_P(Spec, AttentionMatrix, ::testing::ValuesIn(testing::spec_variants()),
                         [](const ::testing::TestParamInfo<testing::Variant>& info) {
                           return testing::variant_name(info.param);
                         });

}  // namespace
}  // namespace attnjit

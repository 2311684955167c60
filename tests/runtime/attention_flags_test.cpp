// The typed flags' canonical text is the spec's: AttentionKernel::get finds
// a memo hit by AttentionFlags::canonical_text() without resolving the
// flags, and stores kernels under FlagSet::str(), so the two must spell
// every variant alike (a flag added to the spec and not to the typed view
// fails here, not as a silent memo miss).
#include <gtest/gtest.h>

#include "attnjit/attention.h"

namespace attnjit {
namespace {

TEST(AttentionFlags, CanonicalTextIsTheResolvedFlagSetsText) {
  const std::vector<FlagSet> variants = matrix_and_presets(attention_spec());
  ASSERT_GT(variants.size(), 50u);
  for (const FlagSet& flags : variants) {
    const AttentionFlags typed = AttentionFlags::from_flag_set(flags);
    EXPECT_EQ(typed.canonical_text(), flags.str());
    EXPECT_EQ(typed.to_flag_set().str(), flags.str());
  }
}

TEST(AttentionFlags, DefaultsSpellTheSpecsDefaults) {
  EXPECT_EQ(AttentionFlags{}.canonical_text(), resolve_flags(attention_spec(), {}).str());
}

}  // namespace
}  // namespace attnjit

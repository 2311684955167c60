// The typed flags' canonical text is the spec's: AttentionKernel::get finds
// a memo hit by AttentionFlags::canonical_text() without resolving the
// flags, and stores kernels under FlagSet::str(), so the two must spell
// every variant alike (a flag added to the spec and not to the typed view
// fails here, not as a silent memo miss).
#include <gtest/gtest.h>

#include "attnjit/attention.h"
#include "attnjit/error.h"

namespace attnjit {
namespace {

TEST(AttentionFlags, CanonicalTextIsTheResolvedFlagSetsText) {
  const std::vector<FlagSet> variants = matrix_and_presets(attention_spec());
  ASSERT_GT(variants.size(), 50u);
  for (const FlagSet& flags : variants) {
    const AttentionFlags typed = AttentionFlags::from_flag_set(flags);
    const Schedule schedule = Schedule::of(flags);
    EXPECT_EQ(typed.canonical_text(schedule), flags.str());
    EXPECT_EQ(typed.to_flag_set(schedule).str(), flags.str());
    if (schedule == Schedule{}) EXPECT_EQ(typed.canonical_text(), flags.str());
  }
}

// The typed flags carry no schedule: the planner's split and small-pages
// choices are the FlagSet's alone (Schedule), and the typed view of a
// split variant is the typed view of the variant it splits.
TEST(AttentionFlags, TheScheduleIsNotAFlag) {
  std::map<std::string, FlagValue> map = AttentionFlags{}.to_flag_map();
  EXPECT_EQ(map.count("split_kv"), 0u);
  EXPECT_EQ(map.count("small_pages"), 0u);
  AttentionFlags paged;
  paged.kv_layout = KvLayout::kPaged;
  const FlagSet both = paged.to_flag_set(Schedule{true, true});
  EXPECT_TRUE(Schedule::of(both) == (Schedule{true, true}));
  EXPECT_EQ(AttentionFlags::from_flag_set(both).canonical_text(), paged.canonical_text());
  EXPECT_NE(paged.canonical_text(Schedule{true, false}), paged.canonical_text());
  // small_pages still needs the paged layout.
  EXPECT_THROW(AttentionFlags{}.to_flag_set(Schedule{false, true}), Error);
}

TEST(AttentionFlags, DefaultsSpellTheSpecsDefaults) {
  EXPECT_EQ(AttentionFlags{}.canonical_text(), resolve_flags(attention_spec(), {}).str());
}

}  // namespace
}  // namespace attnjit

#include <gtest/gtest.h>

#include "attnjit/target.h"
#include "test_support.h"

namespace attnjit {
namespace {

TEST(Target, ParseAndName) {
  for (const char* name : {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"}) {
    EXPECT_EQ(parse_target(name).name(), name);
  }
  EXPECT_EQ(parse_target("sm_90a").sm, 90);
  EXPECT_TRUE(parse_target("sm_90a").arch_specific);
  EXPECT_FALSE(parse_target("sm_90").arch_specific);
  EXPECT_EQ(parse_target("sm_90a").virtual_arch(), "compute_90a");
  EXPECT_EQ(parse_target("sm_86").virtual_arch(), "compute_86");
  EXPECT_NE(parse_target("sm_90"), parse_target("sm_90a"));
}

TEST(Target, UnsupportedNamesListTheSupportedOnes) {
  for (const char* name : {"sm_75", "sm_100a", "compute_90", "SM_90", "", "sm_90 "}) {
    EXPECT_EQ(testing::error_message([&] { parse_target(name); }, ErrorKind::kFlags),
              "unsupported target '" + std::string(name) +
                  "' (supported: sm_80, sm_86, sm_89, sm_90, sm_90a)");
  }
}

TEST(Target, Supported) {
  std::vector<std::string> names;
  for (const Target& target : supported_targets()) names.push_back(target.name());
  EXPECT_EQ(names, (std::vector<std::string>{"sm_80", "sm_86", "sm_89", "sm_90a"}));
}

TEST(Target, ForDevice) {
  EXPECT_EQ(target_for_device(8, 0).name(), "sm_80");
  EXPECT_EQ(target_for_device(8, 6).name(), "sm_86");
  EXPECT_EQ(target_for_device(8, 7).name(), "sm_86");
  EXPECT_EQ(target_for_device(8, 9).name(), "sm_89");
  EXPECT_EQ(target_for_device(9, 0).name(), "sm_90a");
  EXPECT_EQ(target_for_device(10, 0).name(), "sm_90");
  EXPECT_EQ(target_for_device(12, 0).name(), "sm_90");
  EXPECT_EQ(testing::error_message([] { target_for_device(7, 5); }, ErrorKind::kFlags),
            "compute capability 7.5 is not supported (attnjit needs 8.0 or newer)");
}

}  // namespace
}  // namespace attnjit

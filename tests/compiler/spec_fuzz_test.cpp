// Mutated specs: parse_spec() either accepts them or throws Error(kSpec) with
// a position; it never crashes, never lets another exception out, and a spec
// it accepts still only holds checked names.
#include <gtest/gtest.h>

#include <random>

#include "attnjit/codegen.h"
#include "attnjit/signature.h"
#include "attnjit/spec.h"
#include "test_support.h"

namespace attnjit {
namespace {

std::string mutate(std::string text, std::mt19937& random) {
  static const std::string kAlphabet = "{}[]:,-#'\"\n *&!|>%@`\\;()0123456789abcdefxyz_";
  const int edits = 1 + static_cast<int>(random() % 3);
  for (int i = 0; i < edits && !text.empty(); ++i) {
    const std::size_t at = random() % text.size();
    const char c = kAlphabet[random() % kAlphabet.size()];
    switch (random() % 3) {
      case 0:
        text.erase(at, 1 + random() % 4);
        break;
      case 1:
        text.insert(at, 1, c);
        break;
      default:
        text[at] = c;
        break;
    }
  }
  return text;
}

void check_accepted_spec(const Spec& spec) {
  // Code generation re-checks every name; for an accepted spec it must agree.
  const std::map<std::string, FlagValue> none;
  FlagSet flags;
  try {
    flags = resolve_flags(spec, none);
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kFlags);
    return;
  }
  try {
    CompileOptions options;
    const Signature signature = make_signature(spec, flags, options);
    generate_source(spec, signature);
  } catch (const Error& error) {
    // Only a template this build does not embed, or tuning left unset.
    EXPECT_TRUE(error.kind() == ErrorKind::kFlags ||
                std::string(error.what()).find("is not embedded") != std::string::npos)
        << error.what();
  }
}

TEST(SpecFuzz, MutatedSpecsFailCleanly) {
  const std::vector<std::string> seeds = {*find_embedded_spec("attention"),
                                          testing::read_text(testing::axpy_spec_path())};
  std::mt19937 random(20261129);
  int accepted = 0;
  int rejected = 0;
  for (int round = 0; round < 300; ++round) {
    const std::string text = mutate(seeds[round % seeds.size()], random);
    try {
      check_accepted_spec(parse_spec(text, "fuzz.yaml"));
      ++accepted;
    } catch (const Error& error) {
      ++rejected;
      ASSERT_EQ(error.kind(), ErrorKind::kSpec) << error.what();
      ASSERT_EQ(std::string(error.what()).rfind("fuzz.yaml:", 0), 0u) << error.what();
      ASSERT_EQ(std::string(error.what()).find('\n'), std::string::npos) << error.what();
    }
  }
  // Both outcomes must occur, or the mutations test nothing.
  EXPECT_GT(accepted, 20);
  EXPECT_GT(rejected, 20);
}

}  // namespace
}  // namespace attnjit

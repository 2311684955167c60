// The seed evidence (docs/semantics.md "Sinks"): on the MiMo window problem and
// the GPT-OSS problem, each kernel sink mode against each reference. The
// matching pair lands at bf16 noise; the crossed pairs, and the kernel with
// its sinks dropped, land far from it.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "attnjit/selfcheck.h"
#include "gpu/gpu_test_util.h"

namespace attnjit {
namespace {

struct Problem {
  const char* name;
  AttentionFlags flags;
  CheckShape shape;
};

std::vector<Problem> problems() {
  AttentionFlags mimo;
  mimo.head_dim = 80;
  mimo.window = true;
  mimo.sinks = SinkMode::kBiasKey0;
  AttentionFlags oss;
  oss.head_dim = 64;
  oss.causal = true;
  oss.window = true;
  oss.sinks = SinkMode::kNullLogit;
  return {
      {"mimo_window64_key0", mimo,
       CheckShape{"mimo", {256, 256}, {256, 256}, 4, 4, 64, 64, {}, 0.f}},
      {"gpt_oss_window127_null", oss,
       CheckShape{"gpt_oss", {384, 384}, {384, 384}, 8, 1, 127, 0, {}, 0.f}},
  };
}

TEST(SinkEvidence, EachModeMatchesOnlyItsOwnReference) {
  ATTNJIT_REQUIRE_GPU();
  const SinkMode modes[] = {SinkMode::kNone, SinkMode::kNullLogit, SinkMode::kBiasKey0};
  for (const Problem& pr : problems()) {
    std::printf("%s: rows = kernel mode, columns = reference mode\n", pr.name);
    std::printf("%-12s %12s %12s %12s\n", "", "none", "null_logit", "bias_key0");
    double err[3][3];
    for (int km = 0; km < 3; ++km) {
      AttentionFlags f = pr.flags;
      f.sinks = modes[km];
      for (int rm = 0; rm < 3; ++rm) {
        // One seed per cell is fine: each cell draws the same way, and the
        // kernel reads the same sinks in every mode.
        const uint64_t seed = testing::fresh_seed();
        err[km][rm] = check_attention(f, pr.shape, seed, KernelCache::global(), modes[rm]).o_error;
      }
      std::printf("%-12s %12.3e %12.3e %12.3e\n", to_string(modes[km]), err[km][0], err[km][1],
                  err[km][2]);
    }
    int own = pr.flags.sinks == SinkMode::kNullLogit ? 1 : 2;
    for (int km = 0; km < 3; ++km) {
      EXPECT_LE(err[km][km], 1e-2) << pr.name << " matching pair " << km;
    }
    // The problem's own mode: every other reference (and the kernel with
    // its sinks dropped) is at least 5x farther than bf16 noise.
    for (int other = 0; other < 3; ++other) {
      if (other == own) continue;
      EXPECT_GT(err[own][other], 5 * err[own][own]) << pr.name;
      EXPECT_GT(err[other][own], 5 * err[own][own]) << pr.name;
    }
  }
}

}  // namespace
}  // namespace attnjit

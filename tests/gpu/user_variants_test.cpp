// User-defined variants on the GPU (issue 14): the example specs
// (specs/examples/, the built-in causal, window and key-0 bias re-expressed
// among them) with their
// own mask or score expressions, on the standard shapes (ragged batches,
// GQA, decodes), against the CPU reference evaluating the same expression
// trees; each spec's args get values that make its mask or score matter
// (chunks shorter than the sequences, prefixes inside them, several
// documents per sequence, distinct slopes per head).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "attnjit/attention.h"
#include "attnjit/cache.h"
#include "attnjit/expr.h"
#include "attnjit/selfcheck.h"
#include "attnjit/spec.h"
#include "gpu/gpu_test_util.h"

namespace attnjit {
namespace {

std::shared_ptr<const Spec> example(const std::string& file) {
  return std::make_shared<const Spec>(
      load_spec_file(std::string(ATTNJIT_SOURCE_DIR) + "/specs/examples/" + file));
}

// Values for a spec's own args on one shape.
std::vector<UserCheckArg> user_values(const std::string& family, const CheckShape& shape,
                                      std::mt19937_64& rng) {
  std::vector<UserCheckArg> out;
  if (family == "chunked_local") {
    UserCheckArg chunk;
    chunk.name = "chunk";
    chunk.int_value = 37;  // off the tile, shorter than the sequences
    out.push_back(chunk);
  } else if (family == "prefix_lm") {
    UserCheckArg prefix;
    prefix.name = "prefix";
    for (int n_k : shape.seqlens_k) prefix.ints.push_back(n_k > 0 ? int(rng() % (n_k + 1)) : 0);
    out.push_back(prefix);
  } else if (family == "document_mask") {
    UserCheckArg doc;
    doc.name = "doc";
    for (int n_k : shape.seqlens_k) {
      int id = 0;
      for (int j = 0; j < n_k; ++j) {
        if (rng() % 23 == 0) ++id;  // documents of about 23 tokens
        doc.ints.push_back(id);
      }
    }
    if (doc.ints.empty()) doc.ints.push_back(0);
    out.push_back(doc);
  } else if (family == "streaming_llm") {
    UserCheckArg sinks, window;
    sinks.name = "sink_tokens";
    sinks.int_value = 1 + int(rng() % 6);
    window.name = "window";
    window.int_value = int(rng() % 90);  // windows shorter and longer than a tile
    out.push_back(sinks);
    out.push_back(window);
  } else if (family == "strided") {
    UserCheckArg stride;
    stride.name = "stride";
    stride.int_value = 1 + int(rng() % 9);
    out.push_back(stride);
  } else if (family == "global_band") {
    UserCheckArg global_tokens, band;
    global_tokens.name = "global_tokens";
    global_tokens.int_value = int(rng() % 40);  // none, and more than a tile
    band.name = "band";
    band.int_value = int(rng() % 70);
    out.push_back(global_tokens);
    out.push_back(band);
  } else if (family == "dilated_window") {
    UserCheckArg window, dilation;
    window.name = "window";
    window.int_value = int(rng() % 200);
    dilation.name = "dilation";
    dilation.int_value = 1 + int(rng() % 6);
    out.push_back(window);
    out.push_back(dilation);
  } else if (family == "sliding_window_expr") {
    UserCheckArg window;
    window.name = "window";
    window.int_value = 50;
    out.push_back(window);
  } else if (family == "key0_bias_expr") {
    UserCheckArg radius, bias;
    radius.name = "radius";
    radius.int_value = 64;
    bias.name = "key0_bias";
    for (int h = 0; h < shape.num_heads_q; ++h) bias.floats.push_back(-1.f + float(h % 5));
    out.push_back(radius);
    out.push_back(bias);
  } else if (family == "alibi") {
    UserCheckArg slopes;
    slopes.name = "slopes";
    for (int h = 0; h < shape.num_heads_q; ++h) slopes.floats.push_back(1.f / float(2 << (h % 8)));
    out.push_back(slopes);
  }
  return out;
}

// A spec's variant of D128, causal off and on, over 16-bit and e4m3 K/V
// (whose decodes are the decode block's, by the spec's rules: the user's
// expressions in its fragments), on the standard shapes against the
// reference of its expressions; values(shape, rng) gives its args.
template <class Values>
void check_on_standard_shapes(const std::shared_ptr<const Spec>& spec, const Values& values) {
  for (const KvDType kv : {KvDType::kSame, KvDType::kFp8E4M3}) {
    for (const bool causal : {false, true}) {
      AttentionFlags flags;
      flags.head_dim = 128;
      flags.causal = causal;
      flags.kv_dtype = kv;
      for (const CheckShape& shape : standard_check_shapes(flags)) {
        const uint64_t seed = testing::fresh_seed();
        std::mt19937_64 rng(seed);
        const CheckResult r = check_user_attention(spec, flags, shape, seed, values(shape, rng));
        const std::string line =
            fmt::format("{} causal={} kv={} {:<22} o_err={:.3e} written={} seed={}", spec->family,
                        causal, to_string(kv), shape.name, r.o_error, r.output_written, seed);
        std::printf("%s\n", line.c_str());
        EXPECT_TRUE(r.passed(error_bound(flags.dtype))) << line;
      }
    }
  }
}

class UserVariants : public ::testing::TestWithParam<std::string> {};

TEST_P(UserVariants, MatchesTheReferenceOfTheSameExpressions) {
  ATTNJIT_REQUIRE_GPU();
  const auto spec = example(GetParam());
  check_on_standard_shapes(spec, [&](const CheckShape& shape, std::mt19937_64& rng) {
    return user_values(spec->family, shape, rng);
  });
}

// The same through the expression VM's tier (ATTNJIT_USER_VM=1): the VM
// variants of the flags (and their split siblings, for the decode shapes)
// compiled into a directory first; each example then reads it through a
// cache that may not compile, so its own variant never lands and every
// launch runs its expressions on the VM.
class UserVariantsViaVm : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { setenv("ATTNJIT_USER_VM", "1", 1); }
  void TearDown() override { unsetenv("ATTNJIT_USER_VM"); }
};

const std::string& vm_dir() {
  static const std::string dir = [] {
    char path[] = "/tmp/attnjit-user-vm-XXXXXX";
    return mkdtemp(path) == nullptr ? std::string() : std::string(path);
  }();
  return dir;
}

TEST_P(UserVariantsViaVm, MatchesTheReferenceOfTheSameExpressions) {
  ATTNJIT_REQUIRE_GPU();
  ASSERT_FALSE(vm_dir().empty());
  const auto spec = example(GetParam());
  const Spec& vm = expression_vm_spec();
  const std::shared_ptr<const Spec> vm_ptr(std::shared_ptr<const Spec>(), &vm);
  for (const bool causal : {false, true}) {
    AttentionFlags flags;
    flags.head_dim = 128;
    flags.causal = causal;
    {
      CacheConfig config;
      config.user_dir = vm_dir();
      KernelCache builder(config);
      for (const bool split : {false, true}) {
        AttentionKernel::get_user(vm_ptr, resolve_flags(vm, flags.to_flag_map(Schedule{split, false})),
                                  builder)
            ->wait_specialized();
      }
    }
    CacheConfig config;
    config.user_dir = vm_dir();
    config.no_jit = true;  // the example's own variant never lands
    KernelCache cache(config);
    const uint64_t before = AttentionKernel::generic_launches();
    for (const CheckShape& shape : standard_check_shapes(flags)) {
      const uint64_t seed = testing::fresh_seed();
      std::mt19937_64 rng(seed);
      const auto values = user_values(spec->family, shape, rng);
      const CheckResult r =
          check_user_attention(spec, flags, shape, seed, values, cache, CheckTier::kAsLaunched);
      const std::string line = fmt::format("{} via VM causal={} {:<22} o_err={:.3e} written={} "
                                           "seed={}",
                                           spec->family, causal, shape.name, r.o_error,
                                           r.output_written, seed);
      std::printf("%s\n", line.c_str());
      EXPECT_TRUE(r.passed(error_bound(flags.dtype))) << line;
    }
    EXPECT_GT(AttentionKernel::generic_launches(), before) << "the VM answered";
  }
}

// A score that is the identity on some key tiles only, by the heads, the
// positions and the keys together: WorkTile::score_tile's head range
// (packed GQA rows cycle through a group's heads), its rows' positions and
// its key tile, against the reference of the same expressions. The tiles
// with h % 3 != 1 for every head of the tile, p >= 40 and keys past 200
// skip the score; the others run it.
TEST(UserScores, IdentityTilesOfHeadsPositionsAndKeys) {
  const auto spec = std::make_shared<const Spec>(parse_spec(
      "family: score_identity_probe\n"
      "description: a score that is the identity on some key tiles only\n"
      "extends: attention\n"
      "args:\n"
      "  - {name: bias, type: \"const float*\", per: head, doc: \"[Hq]\"}\n"
      "score: \"s + select(h % 3 == 1 or p < 40, bias[h], 0.0) + "
      "select(j > 200, 0.0, 0.25 * bias[h])\"\n",
      "score_identity_probe.yaml"));
  // Not vacuous: the analysis finds identity tiles and tiles that are not.
  ASSERT_TRUE(spec->score.has_value());
  const Expr& score = *spec->score;
  ExprEnv env;
  env.num_heads_q = 8;
  env.num_heads_kv = 2;
  env.n_q = env.n_k = 512;
  env.tensors.resize(1);
  env.tensors[0].floats.assign(8, 1.f);
  ASSERT_TRUE(score_is_identity(score, ExprTile{0, 0, 100, 150, 256, 383}, env));
  ASSERT_FALSE(score_is_identity(score, ExprTile{0, 3, 100, 150, 256, 383}, env));
  ASSERT_FALSE(score_is_identity(score, ExprTile{0, 0, 0, 150, 256, 383}, env));
  ASSERT_FALSE(score_is_identity(score, ExprTile{0, 0, 100, 150, 128, 255}, env));
  ATTNJIT_REQUIRE_GPU();  // (the analysis above runs on every machine)
  check_on_standard_shapes(spec, [](const CheckShape& shape, std::mt19937_64&) {
    UserCheckArg bias;
    bias.name = "bias";
    for (int h = 0; h < shape.num_heads_q; ++h) bias.floats.push_back(-1.5f + 0.75f * float(h % 5));
    return std::vector<UserCheckArg>{bias};
  });
}

INSTANTIATE_TEST_SUITE_P(Examples, UserVariantsViaVm,
                         ::testing::Values("chunked_local.yaml", "prefix_lm.yaml", "document.yaml",
                                           "alibi.yaml", "causal_expr.yaml",
                                           "sliding_window_expr.yaml", "key0_bias_expr.yaml",
                                           "streaming_llm.yaml", "strided.yaml",
                                           "global_band.yaml", "dilated_window.yaml"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param.substr(0, info.param.find('.'));
                         });

INSTANTIATE_TEST_SUITE_P(Examples, UserVariants,
                         ::testing::Values("chunked_local.yaml", "prefix_lm.yaml", "document.yaml",
                                           "alibi.yaml", "causal_expr.yaml",
                                           "sliding_window_expr.yaml", "key0_bias_expr.yaml",
                                           "streaming_llm.yaml", "strided.yaml",
                                           "global_band.yaml", "dilated_window.yaml"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param.substr(0, info.param.find('.'));
                         });

}  // namespace
}  // namespace attnjit

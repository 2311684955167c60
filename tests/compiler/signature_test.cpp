// Signatures: canonical text, display names, tuning rules, overrides.
#include <gtest/gtest.h>

#include "attnjit/sha256.h"
#include "attnjit/signature.h"
#include "test_support.h"

namespace attnjit {
namespace {

using testing::error_message;

CompileOptions options_for(const std::string& target) {
  CompileOptions options;
  options.target = parse_target(target);
  return options;
}

Signature attention_signature(const std::map<std::string, FlagValue>& given,
                              const CompileOptions& options) {
  const Spec spec = load_embedded_spec("attention");
  return make_signature(spec, resolve_flags(spec, given), options);
}

Signature axpy_signature(const std::map<std::string, FlagValue>& given,
                         const CompileOptions& options,
                         const std::map<std::string, int64_t>& overrides = {}) {
  const Spec spec = testing::axpy_spec();
  return make_signature(spec, resolve_flags(spec, given), options, overrides);
}

TEST(Signature, CanonicalGolden) {
  const Signature signature =
      axpy_signature({{"mode", std::string("clamp")}}, options_for("sm_90a"));
  EXPECT_EQ(signature.canonical(),
            "axpy[dtype=f32,vec=1,accumulate=true,stage_in_smem=false,mode=clamp|block_threads=256]"
            "@sm_90a{emit_ptx=true,fast_math=true,line_info=false,max_registers=0}");
  EXPECT_EQ(signature.family, "axpy");
  EXPECT_EQ(signature.entry, "axpy");
}

TEST(Signature, CanonicalShapeOfAttention) {
  const Signature signature = attention_signature({{"causal", true}}, options_for("sm_90a"));
  const std::string canonical = signature.canonical();
  EXPECT_EQ(
      canonical.rfind("attention_prefill[dtype=bf16,head_dim=128,head_dim_v=0,causal=true,window=false,", 0), 0u)
      << canonical;
  EXPECT_NE(canonical.find("|block_m="), std::string::npos) << canonical;
  const std::string options =
      "]@sm_90a{emit_ptx=true,fast_math=true,line_info=false,max_registers=0}";
  EXPECT_EQ(canonical.substr(canonical.size() - options.size()), options);
}

TEST(Signature, DisplayName) {
  const Signature signature = attention_signature({}, options_for("sm_90a"));
  const std::string name = signature.display_name();
  EXPECT_EQ(name, "attention_prefill_" + sha256_hex(signature.canonical()).substr(0, 8));
  EXPECT_NE(name, attention_signature({{"causal", true}}, options_for("sm_90a")).display_name());
  EXPECT_EQ(axpy_signature({}, options_for("sm_80")).display_name(), "axpy_ee8da1eb");
}

TEST(Signature, TuningRulesFirstMatchWins) {
  const Spec spec = parse_spec(
      "family: f\ntemplate: testing/axpy.cuh\nentry: f\n"
      "flags:\n  d: {type: int, values: [64, 128, 256], default: 64}\n"
      "tuning:\n  params: [bm]\n  rules:\n"
      "    - {when: {d: [128, 256]}, bm: 32}\n"
      "    - {when: {d: 256}, bm: 16}\n"
      "    - {bm: 64}\n",
      "f.yaml");
  const auto bm = [&](int64_t d) {
    return make_signature(spec, resolve_flags(spec, {{"d", d}}), options_for("sm_80"))
        .tuning_value("bm");
  };
  EXPECT_EQ(bm(64), 64);
  EXPECT_EQ(bm(128), 32);
  EXPECT_EQ(bm(256), 32);
}

TEST(Signature, TuningRulesFilterByTarget) {
  EXPECT_EQ(axpy_signature({}, options_for("sm_90a")).tuning_value("block_threads"), 256);
  EXPECT_EQ(axpy_signature({}, options_for("sm_80")).tuning_value("block_threads"), 128);
  EXPECT_EQ(axpy_signature({}, options_for("sm_90")).tuning_value("block_threads"), 128);
  EXPECT_EQ(
      axpy_signature({{"vec", int64_t{4}}}, options_for("sm_90a")).tuning_value("block_threads"),
      128);
}

TEST(Signature, OverridesWin) {
  EXPECT_EQ(axpy_signature({}, options_for("sm_90a"), {{"block_threads", 64}})
                .tuning_value("block_threads"),
            64);
  EXPECT_EQ(error_message(
                [&] {
                  axpy_signature({}, options_for("sm_90a"), {{"block_thread", 64}});
                },
                ErrorKind::kFlags),
            "unknown tuning param 'block_thread' (did you mean 'block_threads'?)");
  EXPECT_EQ(error_message(
                [&] {
                  axpy_signature({}, options_for("sm_90a"), {{"block_threads", 1LL << 40}});
                },
                ErrorKind::kFlags),
            "tuning param 'block_threads': 1099511627776 is out of range for a 32-bit int");
}

// A param declared with a default ({name: value} in `params`) takes it in a
// rule that does not set it; a rule's value and an override win over it.
TEST(Signature, ParamsWithDefaults) {
  const Spec spec = parse_spec(
      "family: f\ntemplate: testing/axpy.cuh\nentry: f\n"
      "flags:\n  k: {type: int, values: [1, 2], default: 1}\n"
      "tuning:\n  params: [bm, {bn: 16}]\n  rules:\n    - {when: {k: 1}, bm: 64}\n"
      "    - {bm: 32, bn: 8}\n",
      "f.yaml");
  EXPECT_EQ(spec.tuning.params, (std::vector<std::string>{"bm", "bn"}));
  EXPECT_EQ(spec.tuning.defaults, (std::map<std::string, int64_t>{{"bn", 16}}));
  const auto tuning = [&](int64_t k, const std::map<std::string, int64_t>& overrides) {
    return make_signature(spec, resolve_flags(spec, {{"k", k}}), options_for("sm_80"), overrides)
        .tuning;
  };
  using Tuning = std::vector<std::pair<std::string, int64_t>>;
  EXPECT_EQ(tuning(1, {}), (Tuning{{"bm", 64}, {"bn", 16}}));
  EXPECT_EQ(tuning(2, {}), (Tuning{{"bm", 32}, {"bn", 8}}));
  EXPECT_EQ(tuning(1, {{"bn", 4}}), (Tuning{{"bm", 64}, {"bn", 4}}));
  // No rule matches: overrides for the params without a default, the
  // default for the rest.
  const Spec partial = parse_spec(
      "family: f\ntemplate: testing/axpy.cuh\nentry: f\n"
      "flags:\n  k: {type: int, values: [1, 2], default: 1}\n"
      "tuning:\n  params: [bm, {bn: 16}]\n  rules:\n    - {when: {k: 1}, bm: 64}\n",
      "f.yaml");
  EXPECT_EQ(make_signature(partial, resolve_flags(partial, {{"k", int64_t{2}}}),
                           options_for("sm_80"), {{"bm", 32}})
                .tuning,
            (Tuning{{"bm", 32}, {"bn", 16}}));
}

TEST(Signature, UnsetParamsAreErrors) {
  const Spec spec = parse_spec(
      "family: f\ntemplate: testing/axpy.cuh\nentry: f\n"
      "flags:\n  k: {type: int, values: [1, 2], default: 1}\n"
      "tuning:\n  params: [bm, bn]\n  rules:\n    - {when: {k: 1}, bm: 64}\n",
      "f.yaml");
  EXPECT_EQ(
      error_message([&] { make_signature(spec, resolve_flags(spec, {}), options_for("sm_80")); },
                    ErrorKind::kFlags),
      "tuning param 'bn' is not set by the tuning rule at f.yaml:9:7 and has no override");
  const FlagSet two = resolve_flags(spec, {{"k", int64_t{2}}});
  EXPECT_EQ(
      error_message([&] { make_signature(spec, two, options_for("sm_80")); }, ErrorKind::kFlags),
      "no tuning rule of 'f' matches k=2 on sm_80 and tuning param 'bm' has no override");
  const Signature overridden =
      make_signature(spec, two, options_for("sm_80"), {{"bm", 32}, {"bn", 16}});
  EXPECT_EQ(
      overridden.canonical(),
      "f[k=2|bm=32,bn=16]@sm_80{emit_ptx=true,fast_math=true,line_info=false,max_registers=0}");
}

TEST(Signature, RejectsAFlagSetOfAnotherSpec) {
  const Spec attention = load_embedded_spec("attention");
  const FlagSet foreign = resolve_flags(attention, {});
  EXPECT_EQ(
      error_message([&] { make_signature(testing::axpy_spec(), foreign, options_for("sm_80")); },
                    ErrorKind::kFlags),
      "flag set has " + std::to_string(attention.flags.size()) + " flags, spec 'axpy' declares 5");
  FlagSet reordered = resolve_flags(testing::axpy_spec(), {});
  std::swap(reordered.values[0], reordered.values[1]);
  EXPECT_EQ(
      error_message([&] { make_signature(testing::axpy_spec(), reordered, options_for("sm_80")); },
                    ErrorKind::kFlags),
      "flag set does not match spec 'axpy' at flag 'dtype'; build it with resolve_flags()");
}

}  // namespace
}  // namespace attnjit

// parse_spec() on well-formed specs: the embedded attention spec and the
// axpy test family.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

#include "attnjit/signature.h"
#include "attnjit/spec.h"
#include "attnjit/target.h"
#include "test_support.h"

namespace attnjit {
namespace {

using testing::axpy_spec;

TEST(SpecParse, EmbeddedSpecNamesDropTheExtension) {
  const std::vector<std::string> names = embedded_spec_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "attention"), names.end());
  ASSERT_NE(find_embedded_spec("attention"), nullptr);
  EXPECT_NE(find_embedded_spec("attention")->find("family: attention_prefill"), std::string::npos);
  EXPECT_EQ(find_embedded_spec("attention.yaml"), nullptr);
}

TEST(SpecParse, UnknownEmbeddedSpec) {
  const std::string message =
      testing::error_message([] { load_embedded_spec("atention"); }, ErrorKind::kSpec);
  EXPECT_EQ(message.rfind("unknown embedded spec 'atention' (known: ", 0), 0u) << message;
}

// The attention spec belongs to its template's authors and evolves with
// it, so these tests pin its public flags and the parser's reading of it, and
// find positions in the embedded text rather than hard-coding them.
std::string attention_at(const std::string& needle) {
  return "specs/attention.yaml:" + testing::position_of(*find_embedded_spec("attention"), needle);
}

TEST(SpecParse, AttentionTopLevel) {
  const Spec spec = load_embedded_spec("attention");
  EXPECT_EQ(spec.family, "attention_prefill");
  EXPECT_EQ(spec.entry, "attention_prefill");
  EXPECT_EQ(spec.template_path, "attention/prefill.cuh");
  EXPECT_EQ(spec.template_loc.str(), attention_at("attention/prefill.cuh"));
  EXPECT_EQ(spec.source_name, "specs/attention.yaml");
  EXPECT_EQ(spec.description.rfind("Varlen multi-head attention", 0), 0u);
  EXPECT_NE(spec.description.back(), '\n');
}

TEST(SpecParse, AttentionFlags) {
  const Spec spec = load_embedded_spec("attention");
  for (const char* name : {"dtype", "head_dim", "causal", "window", "sinks", "mm_prefix",
                           "mm_clamp", "softcap", "return_lse"}) {
    EXPECT_NE(spec.find_flag(name), nullptr) << name;
  }
  const FlagDecl& dtype = *spec.find_flag("dtype");
  EXPECT_EQ(dtype.type, FlagType::kType);
  EXPECT_EQ(dtype.enum_values, (std::vector<std::string>{"bf16", "fp16"}));
  EXPECT_EQ(dtype.default_value, FlagValue(std::string("bf16")));
  EXPECT_EQ(dtype.loc.str(), attention_at("dtype:"));
  const FlagDecl& head_dim = *spec.find_flag("head_dim");
  EXPECT_EQ(head_dim.type, FlagType::kInt);
  EXPECT_EQ(head_dim.int_values, (std::vector<int64_t>{64, 80, 96, 128, 192, 256, 384, 512}));
  EXPECT_EQ(head_dim.doc, "D of q, k and v (384 and 512 on sm_90a only)");
  const FlagDecl& sinks = *spec.find_flag("sinks");
  EXPECT_EQ(sinks.type, FlagType::kEnum);
  EXPECT_EQ(sinks.enum_values, (std::vector<std::string>{"none", "null_logit", "bias_key0"}));
  EXPECT_EQ(spec.find_flag("causal")->type, FlagType::kBool);
  EXPECT_EQ(spec.find_flag("causal")->default_value, FlagValue(false));
  EXPECT_EQ(spec.find_flag("causl"), nullptr);
}

TEST(SpecParse, AttentionConstraintsPutExplicitOnesFirst) {
  const Spec spec = load_embedded_spec("attention");
  ASSERT_GE(spec.constraints.size(), 2u);
  ASSERT_GE(spec.constraints.size(), 3u);
  const Constraint& explicit_one = spec.constraints.front();
  EXPECT_EQ(explicit_one.when, (std::map<std::string, FlagValue>{{"mm_clamp", true}}));
  EXPECT_EQ(explicit_one.require, (std::map<std::string, FlagValue>{{"mm_prefix", true}}));
  EXPECT_EQ(explicit_one.why,
            "the clamp acts on multimodal-prefix spans, which only mm_prefix enables");
  EXPECT_EQ(explicit_one.loc.str(), attention_at("{if: {mm_clamp: true}"));
  const Constraint& second = spec.constraints[1];
  EXPECT_EQ(second.require, (std::map<std::string, FlagValue>{{"window", true}}));
  EXPECT_EQ(second.why, "the clamp bounds spans by the sliding window's left side");
  const Constraint& sugar = spec.constraints.back();
  EXPECT_EQ(sugar.when, (std::map<std::string, FlagValue>{{"mm_clamp", true}}));
  EXPECT_EQ(sugar.require,
            (std::map<std::string, FlagValue>{{"mm_prefix", true}, {"window", true}}));
  EXPECT_TRUE(sugar.forbid.empty());
  EXPECT_TRUE(sugar.why.empty());
  EXPECT_EQ(sugar.loc.str(), attention_at("requires: [mm_prefix, window]"));
}

TEST(SpecParse, AttentionTuningCoversTheMatrixOnEveryTarget) {
  const Spec spec = load_embedded_spec("attention");
  ASSERT_FALSE(spec.tuning.params.empty());
  ASSERT_FALSE(spec.tuning.rules.empty());
  EXPECT_EQ(spec.tuning.params.front(), "block_m");
  const TuningRule& first = spec.tuning.rules.front();
  EXPECT_EQ(first.when.at("head_dim"), (std::vector<FlagValue>{int64_t{384}, int64_t{512}}));
  EXPECT_TRUE(spec.tuning.rules.back().when.empty()) << "the last rule catches everything";
  // Every variant resolves on every target, but where a rule says the
  // target has no kernel for it: heads wider than 256, and value heads
  // narrower than the key heads, off sm_90a, there only.
  for (const FlagSet& flags : expand_matrix(spec).variants) {
    const bool wide = std::get<int64_t>(flags.at("head_dim")) > 256 ||
                      std::get<int64_t>(flags.at("head_dim_v")) != 0;
    for (const Target& target : supported_targets()) {
      CompileOptions options;
      options.target = target;
      const bool has_kernel = !wide || target.name() == "sm_90a";
      EXPECT_EQ(unsupported_reason(spec, flags, target).empty(), has_kernel)
          << flags.str() << " on " << target.name();
      if (has_kernel) {
        EXPECT_NO_THROW(make_signature(spec, flags, options));
      } else {
        EXPECT_THROW(make_signature(spec, flags, options), Error);
      }
    }
  }
}

// A rule that says `unsupported` marks its flags as having no kernel on
// its targets: make_signature throws its text (kFlags), unsupported_reason
// returns it, the other targets fall through to later rules; such a rule
// sets no params and says why.
TEST(SpecParse, UnsupportedRuleRejectsItsFlagsOnItsTargets) {
  const std::string head =
      "family: f\ntemplate: testing/axpy.cuh\nentry: f\n"
      "flags:\n  wide: {type: bool, default: false}\ntuning:\n  params: [bm]\n  rules:\n";
  const Spec spec = parse_spec(
      head + "    - {targets: [sm_80], when: {wide: true}, unsupported: \"too wide here\"}\n"
             "    - {bm: 32}\n",
      "u.yaml");
  ASSERT_EQ(spec.tuning.rules.size(), 2u);
  EXPECT_EQ(spec.tuning.rules[0].unsupported, "too wide here");
  EXPECT_TRUE(spec.tuning.rules[0].values.empty());
  const FlagSet wide = resolve_flags(spec, {{"wide", true}});
  const FlagSet narrow = resolve_flags(spec, {});
  const Target sm80 = parse_target("sm_80"), sm90a = parse_target("sm_90a");
  const std::string why = unsupported_reason(spec, wide, sm80);
  EXPECT_NE(why.find("has no kernel for wide=true on sm_80: too wide here (the tuning rule at "
                     "u.yaml:9:7)"),
            std::string::npos)
      << why;
  EXPECT_TRUE(unsupported_reason(spec, wide, sm90a).empty());
  EXPECT_TRUE(unsupported_reason(spec, narrow, sm80).empty());
  try {
    make_signature(spec, wide, CompileOptions::from_environment(sm80));
    ADD_FAILURE() << "an unsupported variant resolved";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kFlags);
    EXPECT_EQ(std::string(e.what()), why);
  }
  EXPECT_EQ(make_signature(spec, wide, CompileOptions::from_environment(sm90a)).tuning_value("bm"),
            32);
  EXPECT_EQ(testing::spec_error(head + "    - {bm: 64, unsupported: \"no\"}\n"),
            "t.yaml:9:7: tuning rule: a rule that says `unsupported` sets no params");
  EXPECT_EQ(testing::spec_error(head + "    - {unsupported: \"\"}\n"),
            "t.yaml:9:21: tuning rule: unsupported says why");
}

TEST(SpecParse, TuningRuleWhyIsReadAndMisspeltKeysStillFail) {
  const std::string head =
      "family: f\ntemplate: testing/axpy.cuh\nentry: f\ntuning:\n  params: [bm]\n  rules:\n";
  const Spec spec = parse_spec(
      head + "    - {bm: 64, why: \"bench/results/2026-12-01-h200-ab3f253-tiles-try.txt\"}\n"
             "    - {bm: 32}\n",
      "w.yaml");
  ASSERT_EQ(spec.tuning.rules.size(), 2u);
  EXPECT_EQ(spec.tuning.rules[0].why, "bench/results/2026-12-01-h200-ab3f253-tiles-try.txt");
  EXPECT_EQ(spec.tuning.rules[0].values, (std::map<std::string, int64_t>{{"bm", 64}}))
      << "why is not a param";
  EXPECT_TRUE(spec.tuning.rules[1].why.empty());
  EXPECT_EQ(testing::spec_error(head + "    - {bm: 64, wyh: \"bench/results/x.txt\"}\n"),
            "t.yaml:7:16: unknown key 'wyh' in tuning rule (did you mean 'why'?)");
  // The attention spec's rules cite their results files there.
  const Spec attention = load_embedded_spec("attention");
  EXPECT_TRUE(std::any_of(attention.tuning.rules.begin(), attention.tuning.rules.end(),
                          [](const TuningRule& rule) { return !rule.why.empty(); }));
}

TEST(SpecParse, AttentionArgs) {
  const Spec spec = load_embedded_spec("attention");
  const auto arg = [&](const std::string& name) -> const ArgDecl& {
    for (const ArgDecl& decl : spec.args) {
      if (decl.name == name) return decl;
    }
    throw std::runtime_error("no arg " + name);
  };
  ASSERT_FALSE(spec.args.empty());
  EXPECT_EQ(spec.args.front().name, "q");
  EXPECT_EQ(arg("q").type, ArgType::kConstElemPtr);
  EXPECT_EQ(arg("q").elem_flag, "dtype");
  EXPECT_TRUE(arg("q").no_alias);
  EXPECT_EQ(arg("o").type, ArgType::kElemPtr);
  EXPECT_EQ(arg("lse").type, ArgType::kF32Ptr);
  EXPECT_EQ(arg("sinks").type, ArgType::kConstF32Ptr);
  EXPECT_EQ(arg("cu_seqlens_q").type, ArgType::kConstI32Ptr);
  EXPECT_EQ(arg("q_row_stride").type, ArgType::kI64);
  EXPECT_EQ(arg("window_left").type, ArgType::kI32);
  EXPECT_EQ(arg("scale").type, ArgType::kF32);
  EXPECT_EQ(arg("scale").doc, "softmax scale");
  EXPECT_EQ(arg("k_map").type, ArgType::kTensorMap);
}

TEST(SpecParse, AttentionPresetsAndMatrix) {
  const Spec spec = load_embedded_spec("attention");
  for (const char* name : {"mimo_v2_5_vision_window", "gemma4_sliding_images", "gpt_oss_sliding"}) {
    EXPECT_NE(spec.find_preset(name), nullptr) << name;
  }
  const Preset* gemma = spec.find_preset("gemma4_sliding_images");
  ASSERT_NE(gemma, nullptr);
  EXPECT_EQ(gemma->flags.at("head_dim"), FlagValue(int64_t{256}));
  EXPECT_EQ(gemma->flags.count("doc"), 0u);
  EXPECT_EQ(gemma->doc, "Gemma-4 sliding layers with image spans bounded by the left window");
  EXPECT_EQ(gemma->loc.str(), attention_at("gemma4_sliding_images:"));
  ASSERT_FALSE(spec.matrix.empty());
  EXPECT_EQ(spec.matrix.front().loc.str(), attention_at("{split_kv: [false, true], dtype: ["));
}

TEST(SpecParse, AxpyFamily) {
  const Spec spec = axpy_spec();
  EXPECT_EQ(spec.family, "axpy");
  EXPECT_EQ(spec.template_path, "testing/axpy.cuh");
  ASSERT_EQ(spec.flags.size(), 5u);
  EXPECT_EQ(spec.find_flag("mode")->enum_values,
            (std::vector<std::string>{"plain", "clamp", "scratch"}));
  ASSERT_EQ(spec.constraints.size(), 2u);
  EXPECT_EQ(spec.constraints[0].forbid, (std::map<std::string, FlagValue>{{"vec", int64_t{4}}}));
  EXPECT_EQ(spec.constraints[1].require, (std::map<std::string, FlagValue>{{"accumulate", true}}));
  EXPECT_EQ(spec.tuning.rules[1].targets, (std::vector<std::string>{"sm_90a"}));
  ASSERT_EQ(spec.args.size(), 4u);
  EXPECT_EQ(spec.args[3].type, ArgType::kI64);
  EXPECT_EQ(spec.presets.size(), 2u);
  EXPECT_EQ(spec.find_preset("spill")->doc, "");
  ASSERT_EQ(spec.matrix.size(), 3u);
  // A scalar axis is a list of one.
  EXPECT_EQ(spec.matrix[1].axes.at("dtype"), (std::vector<FlagValue>{std::string("f32")}));
}

TEST(SpecParse, LoadSpecFileNamesTheFileInMessages) {
  const Spec spec = load_spec_file(testing::axpy_spec_path());
  EXPECT_EQ(spec.source_name, testing::axpy_spec_path());
  EXPECT_EQ(spec.flags[0].loc.str(), testing::axpy_spec_path() + ":9:3");
  const std::string message =
      testing::error_message([] { load_spec_file("/nonexistent/x.yaml"); }, ErrorKind::kSpec);
  EXPECT_EQ(message, "/nonexistent/x.yaml: cannot read the spec file: No such file or directory");
}

TEST(SpecParse, MinimalSpecNeedsOnlyFamilyTemplateAndEntry) {
  const Spec spec = parse_spec("family: f\ntemplate: testing/axpy.cuh\nentry: f\n", "m.yaml");
  EXPECT_TRUE(spec.flags.empty());
  EXPECT_TRUE(spec.args.empty());
  EXPECT_TRUE(spec.tuning.params.empty());
}

TEST(SpecParse, AliasesAndQuotedNamesAreAccepted) {
  const Spec spec = parse_spec(
      "family: f\ntemplate: testing/axpy.cuh\nentry: f\n"
      "flags:\n  \"k\": {type: int, values: &dims [1, 2], default: 1}\n"
      "matrix:\n  - {k: *dims}\n",
      "m.yaml");
  EXPECT_EQ(spec.matrix[0].axes.at("k").size(), 2u);
}

}  // namespace
}  // namespace attnjit

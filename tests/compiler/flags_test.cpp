// resolve_flags(), presets, command-line assignments and matrix expansion.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "attnjit/spec.h"
#include "test_support.h"

namespace attnjit {
namespace {

using testing::error_message;

std::string flags_error(const Spec& spec, const std::map<std::string, FlagValue>& given) {
  return error_message([&] { resolve_flags(spec, given); }, ErrorKind::kFlags);
}

std::string text_of(const FlagSet& flags) {
  std::string text;
  for (const auto& [name, value] : flags.values) text += name + "=" + to_string(value) + " ";
  return text;
}

TEST(ResolveFlags, FillsDefaultsInSpecOrder) {
  const FlagSet flags = resolve_flags(testing::axpy_spec(), {{"vec", int64_t{2}}});
  EXPECT_EQ(text_of(flags), "dtype=f32 vec=2 accumulate=true stage_in_smem=false mode=plain ");
  EXPECT_EQ(flags.get_int("vec"), 2);
  EXPECT_TRUE(flags.get_bool("accumulate"));
  EXPECT_EQ(flags.get_name("mode"), "plain");
  EXPECT_EQ(flags.get_name("dtype"), "f32");
  const Spec attention = load_embedded_spec("attention");
  const FlagSet causal = resolve_flags(attention, {{"causal", true}});
  ASSERT_EQ(causal.values.size(), attention.flags.size());
  for (std::size_t i = 0; i < causal.values.size(); ++i) {
    EXPECT_EQ(causal.values[i].first, attention.flags[i].name);
  }
  EXPECT_TRUE(causal.get_bool("causal"));
  EXPECT_FALSE(causal.get_bool("window"));
  EXPECT_EQ(causal.get_name("sinks"), "none");
  EXPECT_EQ(causal.get_name("dtype"), "bf16");
}

TEST(ResolveFlags, Errors) {
  const Spec spec = load_embedded_spec("attention");
  EXPECT_EQ(flags_error(spec, {{"causl", true}}), "unknown flag 'causl' (did you mean 'causal'?)");
  EXPECT_EQ(flags_error(spec, {{"zzz", true}}), "unknown flag 'zzz'");
  EXPECT_EQ(flags_error(spec, {{"head_dim", int64_t{72}}}),
            "flag 'head_dim': 72 is not one of 64, 80, 96, 128, 192, 256, 384, 512");
  EXPECT_EQ(flags_error(spec, {{"causal", int64_t{1}}}), "flag 'causal' expects a bool");
  EXPECT_EQ(flags_error(spec, {{"head_dim", std::string("128")}}),
            "flag 'head_dim' expects an int");
  EXPECT_EQ(flags_error(spec, {{"sinks", true}}),
            "flag 'sinks' expects one of none, null_logit, bias_key0");
  EXPECT_EQ(flags_error(spec, {{"sinks", std::string("null_logits")}}),
            "flag 'sinks': 'null_logits' is not one of none, null_logit, bias_key0 (did you mean "
            "'null_logit'?)");
  EXPECT_EQ(flags_error(spec, {{"dtype", std::string("fp32")}}),
            "flag 'dtype': 'fp32' is not one of bf16, fp16 (did you mean 'fp16'?)");
}

TEST(ResolveFlags, Constraints) {
  const Spec spec = load_embedded_spec("attention");
  EXPECT_EQ(flags_error(spec, {{"mm_clamp", true}, {"mm_prefix", true}}),
            "mm_clamp=true requires window=true: the clamp bounds spans by the sliding window's left side");
  EXPECT_EQ(
      flags_error(spec, {{"mm_clamp", true}, {"window", true}}),
      "mm_clamp=true requires mm_prefix=true: the clamp acts on multimodal-prefix spans, which "
      "only mm_prefix enables");
  EXPECT_NO_THROW(resolve_flags(spec, {{"mm_clamp", true}, {"window", true}, {"mm_prefix", true}}));
}

TEST(ResolveFlags, ConstraintForms) {
  const Spec spec = parse_spec(
      "family: f\ntemplate: testing/axpy.cuh\nentry: f\nflags:\n"
      "  a: {type: bool, default: false, excludes: [b]}\n"
      "  b: {type: bool, default: false}\n"
      "  c: {type: bool, default: false, requires: [a]}\n"
      "  k: {type: int, values: [1, 2], default: 1}\n"
      "constraints:\n"
      "  - {forbid: {k: 2}, why: \"not yet\"}\n"
      "  - {require: {k: 1}}\n"
      "  - {if: {a: true, b: false}, forbid: {k: 2}}\n",
      "f.yaml");
  EXPECT_EQ(flags_error(spec, {{"k", int64_t{2}}}), "k=2 is not allowed: not yet");
  EXPECT_EQ(flags_error(spec, {{"a", true}, {"b", true}}), "a=true forbids b=true");
  EXPECT_EQ(flags_error(spec, {{"c", true}}), "c=true requires a=true");
  const Spec with_requirement = parse_spec(
      "family: f\ntemplate: testing/axpy.cuh\nentry: f\nflags:\n"
      "  k: {type: int, values: [1, 2], default: 2}\n"
      "constraints:\n  - {require: {k: 1}}\n",
      "f.yaml");
  EXPECT_EQ(flags_error(with_requirement, {}), "k=1 is required");
}

TEST(ResolveFlags, FlagWithoutDefaultMustBeGiven) {
  const Spec spec = parse_spec(
      "family: f\ntemplate: testing/axpy.cuh\nentry: f\nflags:\n  k: {type: int, values: [1, 2]}\n",
      "f.yaml");
  EXPECT_EQ(flags_error(spec, {}), "flag 'k' has no default and must be given");
  EXPECT_EQ(resolve_flags(spec, {{"k", int64_t{2}}}).get_int("k"), 2);
}

TEST(ResolvePreset, KnownAndUnknown) {
  const Spec spec = load_embedded_spec("attention");
  const FlagSet gemma = resolve_preset(spec, "gemma4_sliding_images");
  EXPECT_EQ(gemma.get_int("head_dim"), 256);
  EXPECT_TRUE(gemma.get_bool("mm_clamp"));
  EXPECT_TRUE(gemma.get_bool("window"));
  EXPECT_FALSE(gemma.get_bool("softcap"));  // not named: its default
  EXPECT_EQ(text_of(resolve_preset(testing::axpy_spec(), "wide")),
            "dtype=f32 vec=4 accumulate=true stage_in_smem=false mode=plain ");
  EXPECT_EQ(resolve_preset(spec, "gpt_oss_sliding").get_name("sinks"), "null_logit");
  EXPECT_EQ(error_message([&] { resolve_preset(spec, "x"); }, ErrorKind::kFlags),
            "unknown preset 'x'");
  EXPECT_EQ(error_message([&] { resolve_preset(spec, "llm_casual"); }, ErrorKind::kFlags),
            "unknown preset 'llm_casual' (did you mean 'llm_causal'?)");
}

TEST(FlagAssignments, TypedByTheSpec) {
  const Spec spec = load_embedded_spec("attention");
  const auto given =
      parse_flag_assignments(spec, "causal=true,head_dim=128, sinks = null_logit ,dtype=fp16");
  EXPECT_EQ(given, (std::map<std::string, FlagValue>{{"causal", true},
                                                     {"head_dim", int64_t{128}},
                                                     {"sinks", std::string("null_logit")},
                                                     {"dtype", std::string("fp16")}}));
  EXPECT_EQ(parse_flag_assignments(spec, "causal=1,window=0"),
            (std::map<std::string, FlagValue>{{"causal", true}, {"window", false}}));
  EXPECT_TRUE(parse_flag_assignments(spec, "").empty());
  EXPECT_TRUE(parse_flag_assignments(spec, "  ").empty());
}

TEST(FlagAssignments, Errors) {
  const Spec spec = load_embedded_spec("attention");
  const auto assignment_error = [&](const std::string& text) {
    return error_message([&] { parse_flag_assignments(spec, text); }, ErrorKind::kFlags);
  };
  EXPECT_EQ(assignment_error("causal=yes"),
            "flag 'causal' expects a bool (true, false, 1 or 0), got 'yes'");
  EXPECT_EQ(
      assignment_error("causal=ture"),
      "flag 'causal' expects a bool (true, false, 1 or 0), got 'ture' (did you mean 'true'?)");
  EXPECT_EQ(assignment_error("head_dim=abc"),
            "flag 'head_dim' expects an int (one of 64, 80, 96, 128, 192, 256, 384, 512), got 'abc'");
  EXPECT_EQ(assignment_error("head_dim=99999999999999999999"),
            "flag 'head_dim': '99999999999999999999' is out of range (one of 64, 80, 96, 128, 192, "
            "256, 384, 512)");
  EXPECT_EQ(assignment_error("head_dim=72"),
            "flag 'head_dim': 72 is not one of 64, 80, 96, 128, 192, 256, 384, 512");
  EXPECT_EQ(assignment_error("causl=true"), "unknown flag 'causl' (did you mean 'causal'?)");
  EXPECT_EQ(assignment_error("causal"), "expected name=value, got 'causal' in 'causal'");
  EXPECT_EQ(assignment_error("causal=true,"), "expected name=value, got '' in 'causal=true,'");
  EXPECT_EQ(assignment_error("causal=true,causal=false"), "flag 'causal' is given twice");
  EXPECT_EQ(assignment_error("sinks=x;y"),
            "flag 'sinks': 'x;y' is not one of none, null_logit, bias_key0");
}

// Every value a flag can take, in declaration order.
std::vector<FlagValue> domain_of(const FlagDecl& decl) {
  if (decl.type == FlagType::kBool) return {false, true};
  std::vector<FlagValue> values;
  for (int64_t value : decl.int_values) values.emplace_back(value);
  for (const std::string& value : decl.enum_values) values.emplace_back(value);
  return values;
}

bool entry_covers(const Spec& spec, const MatrixEntry& entry, const FlagSet& flags) {
  for (std::size_t i = 0; i < spec.flags.size(); ++i) {
    const auto axis = entry.axes.find(spec.flags[i].name);
    const FlagValue& value = flags.values[i].second;
    if (axis == entry.axes.end()) {
      if (value != *spec.flags[i].default_value) return false;
    } else if (std::find(axis->second.begin(), axis->second.end(), value) == axis->second.end()) {
      return false;
    }
  }
  return true;
}

// An independent count: walk the whole flag space and ask, for each point,
// which matrix entries cover it and whether it is legal.
TEST(ExpandMatrix, AttentionMatchesABruteForceCount) {
  const Spec spec = load_embedded_spec("attention");
  std::vector<std::vector<FlagValue>> domains;
  for (const FlagDecl& decl : spec.flags) domains.push_back(domain_of(decl));
  std::set<std::string> expected;
  int expected_dropped = 0;
  std::vector<std::size_t> position(domains.size(), 0);
  for (bool done = false; !done;) {
    FlagSet point;
    for (std::size_t i = 0; i < domains.size(); ++i) {
      point.values.emplace_back(spec.flags[i].name, domains[i][position[i]]);
    }
    bool legal = true;
    try {
      std::map<std::string, FlagValue> given(point.values.begin(), point.values.end());
      resolve_flags(spec, given);
    } catch (const Error&) {
      legal = false;
    }
    for (const MatrixEntry& entry : spec.matrix) {
      if (!entry_covers(spec, entry, point)) continue;
      if (legal) expected.insert(text_of(point));
      if (!legal) ++expected_dropped;
    }
    done = true;
    for (std::size_t i = domains.size(); i-- > 0;) {
      if (++position[i] < domains[i].size()) {
        done = false;
        break;
      }
      position[i] = 0;
    }
  }
  const MatrixExpansion expansion = expand_matrix(spec);
  std::set<std::string> produced;
  for (const FlagSet& flags : expansion.variants) {
    EXPECT_TRUE(produced.insert(text_of(flags)).second) << "repeated: " << text_of(flags);
  }
  EXPECT_EQ(produced, expected);
  EXPECT_EQ(expansion.dropped_illegal, expected_dropped);
  EXPECT_GE(expansion.variants.size(), 24u);
}

TEST(ExpandMatrix, AxpyDropsIllegalAndDuplicateCombinations) {
  const MatrixExpansion expansion = expand_matrix(testing::axpy_spec());
  // Entry 1: 2 * 3 * 2 = 12, of which vec=4 with mode=scratch (2) are illegal.
  // Entry 2 repeats a variant of entry 1. Entry 3: accumulate=false is illegal
  // with stage_in_smem=true.
  EXPECT_EQ(expansion.variants.size(), 11u);
  EXPECT_EQ(expansion.dropped_illegal, 3);
  EXPECT_EQ(text_of(expansion.variants.back()),
            "dtype=f32 vec=1 accumulate=true stage_in_smem=true mode=plain ");
}

TEST(ExpandMatrix, FirstEntryComesFirstLastFlagFastest) {
  const MatrixExpansion expansion = expand_matrix(testing::axpy_spec());
  ASSERT_GE(expansion.variants.size(), 3u);
  EXPECT_EQ(text_of(expansion.variants[0]),
            "dtype=f32 vec=1 accumulate=true stage_in_smem=false mode=plain ");
  EXPECT_EQ(text_of(expansion.variants[1]),
            "dtype=f32 vec=1 accumulate=true stage_in_smem=false mode=scratch ");
  EXPECT_EQ(text_of(expansion.variants[2]),
            "dtype=f32 vec=2 accumulate=true stage_in_smem=false mode=plain ");
}

TEST(ExpandMatrix, StableAcrossCalls) {
  const Spec spec = load_embedded_spec("attention");
  const MatrixExpansion first = expand_matrix(spec);
  const MatrixExpansion second = expand_matrix(spec);
  ASSERT_EQ(first.variants.size(), second.variants.size());
  for (std::size_t i = 0; i < first.variants.size(); ++i) {
    EXPECT_EQ(text_of(first.variants[i]), text_of(second.variants[i]));
  }
}

}  // namespace
}  // namespace attnjit

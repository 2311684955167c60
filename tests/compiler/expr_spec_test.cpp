// The spec keys that carry expressions (docs/expressions.md, specs/README.md):
// extends, args with per, mask, score and tune_as, their positions in the
// file and their errors, and the example specs. The language itself:
// expr_test.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "attnjit/codegen.h"
#include "attnjit/error.h"
#include "attnjit/nvrtc.h"
#include "attnjit/signature.h"
#include "attnjit/spec.h"
#include "test_support.h"

namespace attnjit {
namespace {

using testing::spec_error;

const std::string kUserHead =
    "family: user_variant\n"   // 1
    "extends: attention\n"     // 2
    "args:\n"                  // 3
    "  - {name: chunk, type: int32}\n"                                  // 4
    "  - {name: doc, type: \"const int32*\", per: key_token}\n";      // 5

TEST(ExprSpec, ExtendsAndExpressions) {
  const Spec spec = parse_spec(kUserHead + "mask: \"p / chunk == j / chunk\"\n", "u.yaml");
  const Spec base = load_embedded_spec("attention");
  EXPECT_EQ(spec.family, "user_variant");
  EXPECT_EQ(spec.extends, "attention");
  EXPECT_EQ(spec.entry, base.entry);
  EXPECT_EQ(spec.template_path, base.template_path);
  EXPECT_EQ(spec.flags.size(), base.flags.size());
  // Its two args, then the hidden field of the division by chunk.
  ASSERT_EQ(spec.args.size(), base.args.size() + 3);
  EXPECT_EQ(spec.args[base.args.size() + 1].name, "doc");
  EXPECT_EQ(spec.args.back().name, "attnjit_div_chunk");
  EXPECT_EQ(spec.args.back().divisor_of, "chunk");
  EXPECT_EQ(spec.args.back().type, ArgType::kI64);
  ASSERT_TRUE(spec.mask);
  EXPECT_FALSE(spec.score);
  EXPECT_TRUE(spec.presets.empty());
  const ExprContext ctx = expr_context(spec);
  EXPECT_TRUE(ctx.has_head_counts);
  ASSERT_EQ(ctx.tensors.size(), 1u);
  EXPECT_EQ(ctx.tensors[0].name, "doc");

  CompileOptions options;
  options.target = parse_target("sm_90a");
  const Signature sig = make_signature(spec, resolve_flags(spec, {}), options);
  const std::string text = generate_source(spec, sig).text;
  EXPECT_NE(text.find("#include \"attention/prefill.cuh\"\n#include \"attention/user_expr.cuh\"\n\n"
                      "// The spec's expressions (docs/expressions.md), in canonical form:\n"
                      "// mask: (p / chunk) == (j / chunk)\nstruct attnjit_user {\n"),
            std::string::npos)
      << text;
  EXPECT_LT(text.find("struct attnjit_user"), text.find("struct attnjit_config"));
  EXPECT_NE(text.find("  using user = attnjit_user;\n};\n"), std::string::npos);
  // The params struct has the added args at the end.
  EXPECT_NE(generate_source(spec, sig).headers.at(0).contents.find(
                "  int chunk;\n  const int* __restrict__ doc;\n  long long attnjit_div_chunk;\n};"),
            std::string::npos);
  // Another expression, another unit (and so another cache key).
  const Spec other = parse_spec(kUserHead + "mask: \"p / chunk != j / chunk\"\n", "u.yaml");
  EXPECT_NE(generate_source(other, make_signature(other, resolve_flags(other, {}), options)).text,
            text);
  // The attention spec's own unit has none of it.
  const std::string plain =
      generate_source(base, make_signature(base, resolve_flags(base, {}), options)).text;
  EXPECT_EQ(plain.find("attnjit_user"), std::string::npos);
  EXPECT_EQ(plain.find("user_expr"), std::string::npos);
}

TEST(ExprSpec, ExpressionPositionsInTheFile) {
  // Plain, double-quoted and single-quoted scalars: columns are the file's.
  EXPECT_EQ(spec_error(kUserHead + "mask: p < chunkk\n"),
            "t.yaml:6:11: unknown name 'chunkk' (did you mean 'chunk'?)");
  EXPECT_EQ(spec_error(kUserHead + "mask: \"p < chunkk\"\n"),
            "t.yaml:6:12: unknown name 'chunkk' (did you mean 'chunk'?)");
  EXPECT_EQ(spec_error(kUserHead + "mask:    'p < chunkk'\n"),
            "t.yaml:6:15: unknown name 'chunkk' (did you mean 'chunk'?)");
  EXPECT_EQ(spec_error(kUserHead + "score: \"s + p < 1\"\n"),
            "t.yaml:6:9: score must be float, got bool");
  EXPECT_EQ(spec_error(kUserHead + "mask: \"doc[p] == doc[j] &&\"\n"),
            "t.yaml:6:25: unexpected character '&' (use 'and')");
  // What cannot be mapped back to the file is refused.
  const std::string rule = "must be written on one line, plain or in double quotes, without escapes";
  EXPECT_EQ(spec_error(kUserHead + "mask: |\n  p < j\n"), "t.yaml:6:7: mask " + rule);
  EXPECT_EQ(spec_error(kUserHead + "mask: p <\n  j\n"), "t.yaml:6:7: mask " + rule);
  EXPECT_EQ(spec_error(kUserHead + "mask: \"p < \\x6a\"\n"), "t.yaml:6:7: mask " + rule);
  EXPECT_EQ(spec_error(kUserHead + "score: [s]\n"), "t.yaml:6:8: score " + rule);
  EXPECT_EQ(spec_error(kUserHead + "mask:\n"), "t.yaml:6:1: mask needs an expression");
  EXPECT_EQ(spec_error(kUserHead + "mask: \"\"\n"), "t.yaml:6:8: mask is empty");
}

TEST(ExprSpec, Errors) {
  EXPECT_EQ(spec_error("family: f\nextends: attenton\n"),
            "t.yaml:2:10: extends names 'attenton', which is no embedded spec (did you mean "
            "'attention'?) (embedded: attention)");
  EXPECT_EQ(spec_error("family: f\nextends: attention\nflags: {}\n"),
            "t.yaml:3:1: 'flags' comes from the extended spec 'attention' and cannot be given "
            "with extends");
  EXPECT_EQ(spec_error("family: f\nextends: attention\nentry: e\n"),
            "t.yaml:3:1: 'entry' comes from the extended spec 'attention' and cannot be given "
            "with extends");
  EXPECT_EQ(spec_error("family: f\nextends: attention\nargs:\n  - {name: scale, type: float}\n"),
            "t.yaml:4:5: arg 'scale' is already an arg of the extended spec 'attention'");
  EXPECT_EQ(spec_error("family: f\nextends: attention\nargs:\n  - {name: x, type: int32, per: head}\n"),
            "t.yaml:4:28: arg 'x': per makes an expression tensor, which must be \"const int32*\" "
            "or \"const float*\"");
  EXPECT_EQ(spec_error("family: f\nextends: attention\nargs:\n"
                       "  - {name: x, type: \"const int32*\", per: token}\n"),
            "t.yaml:4:42: arg 'x': unknown per 'token' (expected key_token, query_token, "
            "sequence, head, kv_head, table)");
  EXPECT_EQ(spec_error("family: f\nextends: attention\nargs:\n"
                       "  - {name: x, type: \"const int32*\", per: table}\n"),
            "t.yaml:4:42: arg 'x': per: table needs size (a number of elements, or the name of an "
            "int32 arg that holds it)");
  EXPECT_EQ(spec_error("family: f\nextends: attention\nargs:\n"
                       "  - {name: x, type: \"const int32*\", per: head, size: 3}\n"),
            "t.yaml:4:48: arg 'x': size applies only with per: table");
  EXPECT_EQ(spec_error("family: f\nextends: attention\nargs:\n"
                       "  - {name: x, type: \"const float*\", per: head, sorted: true}\n"),
            "t.yaml:4:48: arg 'x': sorted applies only to \"const int32*\" tensors (a float's "
            "value is not used by tile classification)");
  EXPECT_EQ(spec_error("family: f\nextends: attention\nargs:\n"
                       "  - {name: x, type: \"const int32*\", per: sequence, sorted: true}\n"),
            "t.yaml:4:52: arg 'x': sorted does not apply to per: sequence (its only index is b)");
  EXPECT_EQ(spec_error("family: f\nextends: attention\nargs:\n"
                       "  - {name: x, type: \"const int32*\", sorted: true}\n"),
            "t.yaml:4:37: arg 'x': sorted applies only to an expression tensor (with per)");
  EXPECT_EQ(spec_error("family: f\nextends: attention\nargs:\n"
                       "  - {name: x, type: \"const int32*\", per: head, sorted: maybe}\n"),
            "t.yaml:4:56: arg 'x': sorted must be true or false, got 'maybe'");
  EXPECT_EQ(spec_error("family: f\nextends: attention\nargs:\n"
                       "  - {name: x, type: \"const int32*\", per: table, size: nope}\n"),
            "t.yaml:4:5: arg 'x' (per: table): size 'nope' is not an int32 arg");
  EXPECT_EQ(spec_error("family: f\nextends: attention\nargs:\n"
                       "  - {name: hk, type: int32}\nmask: p < j\n"),
            "t.yaml:4:5: arg 'hk' has the name of an expression variable (p, j, b, h, hk, n_q, "
            "n_k, s)");
  // A family without the varlen args has no key-token tensors.
  EXPECT_EQ(spec_error("family: f\ntemplate: testing/axpy.cuh\nentry: f\nargs:\n"
                       "  - {name: x, type: \"const float*\", per: key_token}\n"),
            "t.yaml:5:5: arg 'x' (per: key_token) needs the const int32* arg 'cu_seqlens_k' "
            "(each sequence's first key row)");
  EXPECT_EQ(spec_error("family: f\ntemplate: testing/axpy.cuh\nentry: f\n"
                       "flags:\n  user: {type: bool, default: false}\nmask: p < j\n"),
            "t.yaml:5:3: flag name 'user' is taken by the generated config of a spec with mask "
            "or score (using user = attnjit_user)");
}

// tune_as: the tuning rules see the named mask-shape flags as given, and
// nothing else changes (the flags, the code, the args).
TEST(ExprSpec, TuneAsPicksTheTilesOfTheNamedFlags) {
  const std::string band = kUserHead + "mask: \"abs(p - j) <= chunk\"\n";
  const Spec plain = parse_spec(band, "u.yaml");
  const Spec tuned = parse_spec(band + "tune_as: {window: true}\n", "u.yaml");
  ASSERT_EQ(tuned.tune_as.size(), 1u);
  EXPECT_EQ(tuned.tune_as.at("window"), FlagValue{true});
  const Spec base = load_embedded_spec("attention");
  CompileOptions options;
  options.target = parse_target("sm_90a");
  const std::map<std::string, FlagValue> given = {{"head_dim", int64_t{80}}};
  const Signature as_plain = make_signature(plain, resolve_flags(plain, given), options);
  const Signature as_window = make_signature(tuned, resolve_flags(tuned, given), options);
  std::map<std::string, FlagValue> windowed = given;
  windowed["window"] = true;
  const Signature builtin = make_signature(base, resolve_flags(base, windowed), options);
  EXPECT_EQ(as_window.tuning, builtin.tuning);
  EXPECT_NE(as_plain.tuning, builtin.tuning);
  EXPECT_EQ(as_window.flags.get_bool("window"), false);  // the variant's own flags stay
  EXPECT_NE(as_window.canonical(), as_plain.canonical());
}

TEST(ExprSpec, TuneAsErrors) {
  const std::string band = kUserHead + "mask: \"abs(p - j) <= chunk\"\n";
  EXPECT_EQ(spec_error(kUserHead + "tune_as: {window: true}\n"),
            "t.yaml:6:1: tune_as needs a mask: it says which built-in mask the mask is shaped "
            "like");
  EXPECT_EQ(spec_error(band + "tune_as: {head_dim: 64}\n"),
            "t.yaml:7:11: tune_as may name only the mask-shape flags (causal, window), not "
            "'head_dim'");
  EXPECT_EQ(spec_error(band + "tune_as: {windw: true}\n"),
            "t.yaml:7:11: unknown flag 'windw' in tune_as (did you mean 'window'?)");
  EXPECT_EQ(spec_error(band + "tune_as: {window: [true]}\n"),
            "t.yaml:7:19: tune_as: flag 'window' takes a single value");
  EXPECT_EQ(spec_error(band + "tune_as: {window: maybe}\n").substr(0, 13), "t.yaml:7:19: ");
}

// A spec's own tuning rules come before the extended spec's: the first
// that matches wins, and a variant none of them matches takes the extended
// spec's rule as before. tune_as applies to both.
// Every param of the attention spec's tuning without a default, as a rule
// of a user spec gives them (192 x 64 tiles on the warpgroup path), and as
// YAML.
const std::vector<std::pair<std::string, int64_t>> kEveryParamValues = {
    {"block_m", 192}, {"block_n", 64},   {"warps", 12},     {"stages", 3},
    {"min_blocks", 1}, {"pack_gqa", 1},  {"wgmma", 1},      {"split_keys", 0}};
const std::string kEveryParam = [] {
  std::string yaml;
  for (const auto& [param, value] : kEveryParamValues) {
    yaml += (yaml.empty() ? "" : ", ") + param + ": " + std::to_string(value);
  }
  return yaml;
}();

TEST(ExprSpec, OwnTuningRulesComeFirst) {
  const Spec base = load_embedded_spec("attention");
  const Spec own = parse_spec(kUserHead + "mask: \"j <= p\"\ntuning:\n  rules:\n"
                              "    - {targets: [sm_90a], when: {head_dim: [128], split_kv: false}, " +
                                  kEveryParam + "}\n",
                              "u.yaml");
  ASSERT_EQ(own.tuning.rules.size(), base.tuning.rules.size() + 1);
  EXPECT_EQ(own.tuning.params, base.tuning.params);
  EXPECT_EQ(own.tuning.rules[0].loc.line, 9);
  CompileOptions options;
  options.target = parse_target("sm_90a");
  const auto tiles = [&](const Spec& spec, std::map<std::string, FlagValue> given) {
    return make_signature(spec, resolve_flags(spec, given), options).tuning;
  };
  // (decode_mma and producer_warps have defaults, which the rule takes.)
  std::vector<std::pair<std::string, int64_t>> expected = kEveryParamValues;
  expected.emplace_back("decode_mma", 0);
  expected.emplace_back("producer_warps", 1);
  EXPECT_EQ(tiles(own, {{"head_dim", int64_t{128}}}), expected);
  // Not matched by its rule: the extended spec's, as for the built-in flags.
  for (const auto& given : std::vector<std::map<std::string, FlagValue>>{
           {{"head_dim", int64_t{64}}},
           {{"head_dim", int64_t{128}}, {"split_kv", true}}}) {
    EXPECT_EQ(tiles(own, given), tiles(base, given));
  }
  options.target = parse_target("sm_80");
  EXPECT_EQ(tiles(own, {{"head_dim", int64_t{128}}}), tiles(base, {{"head_dim", int64_t{128}}}));
}

TEST(ExprSpec, OwnTuningRuleErrors) {
  const std::string head = kUserHead + "mask: \"j <= p\"\n";
  EXPECT_EQ(spec_error(head + "tuning:\n  params: [block_m]\n"),
            "t.yaml:8:3: tuning params come from the extended spec 'attention'; a spec that "
            "extends gives rules only");
  EXPECT_EQ(spec_error(head + "tuning:\n  rules:\n    - {block_m: 64}\n"),
            "t.yaml:9:7: tuning rule does not set 'block_n' (a rule of a spec that extends "
            "'attention' names every param without a default: block_m, block_n, warps, "
            "stages, min_blocks, pack_gqa, wgmma, split_keys)");
  EXPECT_EQ(spec_error(head + "tuning:\n  rules:\n    - {block_mm: 64}\n"),
            "t.yaml:9:8: unknown key 'block_mm' in tuning rule (did you mean 'block_m'?)");
  // The params of deleted schedules are unknown keys, at the key.
  for (const char* gone : {"pingpong", "persistent", "uniform_boxes", "cluster"}) {
    const std::string error =
        spec_error(head + "tuning:\n  rules:\n    - {" + kEveryParam + ", " + gone + ": 0}\n");
    EXPECT_EQ(error.rfind("t.yaml:9:", 0), 0u) << error;
    EXPECT_NE(error.find(std::string("unknown key '") + gone + "' in tuning rule"),
              std::string::npos)
        << error;
  }
  EXPECT_EQ(spec_error(head + "tuning:\n  rules:\n    - {when: {head_dm: [128]}}\n"),
            "t.yaml:9:15: unknown flag 'head_dm' in tuning rule (did you mean 'head_dim'?)");
  EXPECT_EQ(spec_error(head + "tuning:\n  rulez: []\n"),
            "t.yaml:8:3: unknown key 'rulez' in tuning (did you mean 'rules'?)");
}

// A rule of its own that the kernels refuse fails when a variant compiles
// (as an ATTNJIT_TUNING override would), and the message names the rule.
TEST(ExprSpec, AFailedCompileNamesTheTuningRule) {
  const Spec own = parse_spec(
      kUserHead + "mask: \"j <= p\"\ntuning:\n  rules:\n    - {" + kEveryParam + "}\n", "u.yaml");
  CompileOptions options;
  options.target = parse_target("sm_80");  // wgmma: 1 needs sm_90a
  const Signature sig = make_signature(own, resolve_flags(own, {}), options);
  EXPECT_EQ(sig.tuning_from, "the tuning rule at u.yaml:9:7");
  try {
    compile_source(generate_source(own, sig), sig.options);
    ADD_FAILURE() << "compiled";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kCompile);
    EXPECT_NE(std::string(error.what()).find("\ntiles: from the tuning rule at u.yaml:9:7\n"),
              std::string::npos)
        << error.what();
    EXPECT_NE(std::string(error.what()).find("wgmma = 1 needs the sm_90a target"),
              std::string::npos);
  }
  // Overrides for every param: no rule to name, the overrides instead.
  std::map<std::string, int64_t> all;
  for (const auto& [param, value] : sig.tuning) all[param] = value;
  const std::string all_from = make_signature(own, resolve_flags(own, {}), options, all).tuning_from;
  EXPECT_EQ(all_from.rfind("the overrides block_m=", 0), 0u) << all_from;
  EXPECT_EQ(all_from.find("tuning rule"), std::string::npos) << all_from;
  // One override: it is named first, the rule for the rest.
  EXPECT_EQ(make_signature(own, resolve_flags(own, {}), options, {{"wgmma", 0}}).tuning_from,
            "the overrides wgmma=0, the other params from the tuning rule at u.yaml:9:7");
}

TEST(ExprSpec, ExampleSpecsLoad) {
  for (const char* name : {"chunked_local", "alibi", "prefix_lm", "document"}) {
    const std::string path =
        std::string(ATTNJIT_SOURCE_DIR) + "/specs/examples/" + name + ".yaml";
    const Spec spec = load_spec_file(path);
    EXPECT_TRUE(spec.mask || spec.score) << name;
    EXPECT_FALSE(spec.presets.empty()) << name;
  }
}

}  // namespace
}  // namespace attnjit

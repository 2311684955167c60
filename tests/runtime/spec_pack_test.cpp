// The embedded specs' packs (compiler/src/spec_pack.h): each one holds the
// Spec that parse_spec reads from the spec's YAML, byte for byte and in
// everything a caller sees of it (with the runtime's tile configuration,
// hence here); and a Spec with every member set survives packing.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "attnjit/attention.h"
#include "attnjit/cache_key.h"
#include "attnjit/codegen.h"
#include "attnjit/error.h"
#include "attnjit/signature.h"
#include "attnjit/spec.h"
#include "attnjit/target.h"
#include "spec_pack.h"
#include "variant.h"

namespace attnjit {
namespace {

using detail::pack_spec;
using detail::unpack_spec;

Spec parsed_yaml(const std::string& name) {
  return parse_spec(*find_embedded_spec(name), "specs/" + name + ".yaml");
}

TEST(SpecPack, EachEmbeddedSpecIsPackedAsItsYamlParses) {
  for (const std::string& name : embedded_spec_names()) {
    const std::string from_yaml = pack_spec(parsed_yaml(name));
    // Not EXPECT_EQ: the bytes are no text to print.
    EXPECT_TRUE(detail::embedded_spec_pack(name) == from_yaml) << name;
    EXPECT_TRUE(pack_spec(load_embedded_spec(name)) == from_yaml) << name;
  }
}

std::string tile_config_text(const Signature& sig) {
  const attention::TileConfig c = tile_config_of(sig);
  return "threads " + std::to_string(c.threads) + ", smem " + std::to_string(c.smem_bytes) +
         ", m_tiles " + std::to_string(c.m_tiles) + ", d_split " + std::to_string(c.d_split) +
         ", tma box " + std::to_string(c.tma_box_bytes) + ", v rows " +
         std::to_string(c.v_block_rows);
}

// What `spec` decides for its callers, as lines of text: each constraint's
// `when` resolved (or its error), the matrix expansion, each of its
// variants and the presets resolved, and for each on every target its
// signature (tuning and where it came from), the cache key of its
// generated source and, for the attention family, its tile configuration;
// or why the target has no kernel for it.
std::vector<std::string> decisions(const Spec& spec) {
  std::vector<std::string> out;
  for (const Constraint& constraint : spec.constraints) {
    try {
      out.push_back(resolve_flags(spec, constraint.when).str());
    } catch (const Error& error) {
      out.push_back(error.what());
    }
  }
  out.push_back("dropped " + std::to_string(expand_matrix(spec).dropped_illegal));
  const bool attention_family =
      (spec.params_family.empty() ? spec.family : spec.params_family) == attention_spec().family;
  for (const FlagSet& variant : matrix_and_presets(spec)) {
    const FlagSet flags = resolve_flags(spec, {variant.values.begin(), variant.values.end()});
    out.push_back(flags.str());
    for (const Target& target : supported_targets()) {
      const std::string unsupported = unsupported_reason(spec, flags, target);
      if (!unsupported.empty()) {
        out.push_back(unsupported);
        continue;
      }
      CompileOptions options;
      options.target = target;
      const Signature sig = make_signature(spec, flags, options);
      out.push_back(sig.canonical() + " from " + sig.tuning_from);
      out.push_back(make_cache_key(sig, generate_source(spec, sig).key_text()).hex);
      if (attention_family) out.push_back(tile_config_text(sig));
    }
  }
  return out;
}

TEST(SpecPack, EachEmbeddedSpecDecidesAsItsYamlDoes) {
  for (const std::string& name : embedded_spec_names()) {
    ASSERT_FALSE(detail::embedded_spec_pack(name).empty()) << name;
    const std::vector<std::string> packed = decisions(load_embedded_spec(name));
    const std::vector<std::string> parsed = decisions(parsed_yaml(name));
    ASSERT_EQ(packed.size(), parsed.size()) << name;
    for (std::size_t i = 0; i < packed.size(); ++i) {
      ASSERT_EQ(packed[i], parsed[i]) << name << ", line " << i;
    }
  }
}

SourceLocation at(int line) { return SourceLocation{"x.yaml", line, line + 1}; }

// Every member of every struct a Spec holds, set to a value other than its
// default (and, in a map of flag values, each kind of value).
Spec every_member_set() {
  Spec spec;
  spec.family = "fam";
  spec.description = "desc";
  spec.template_path = "t/x.cuh";
  spec.template_loc = at(1);
  spec.entry = "ent";
  spec.flags.push_back(FlagDecl{"f",
                                FlagType::kEnum,
                                {-3, int64_t{1} << 40},
                                {"a", "b"},
                                FlagValue(std::string("b")),
                                "flag doc",
                                at(2)});
  spec.constraints.push_back(
      Constraint{{{"f", std::string("a")}}, {{"g", true}}, {{"h", int64_t{-7}}}, "why", at(3)});
  spec.tuning.params = {"block_m", "warps"};
  spec.tuning.defaults = {{"warps", 4}};
  spec.tuning.rules.push_back(TuningRule{{{"f", {std::string("a"), int64_t{2}}}},
                                         {"sm_90a"},
                                         {{"block_m", 128}},
                                         "rule why",
                                         "no kernel",
                                         at(4)});
  ArgDecl arg;
  arg.name = "a";
  arg.type = ArgType::kConstElemPtr;
  arg.elem_flag = "f";
  arg.no_alias = false;
  arg.doc = "arg doc";
  arg.loc = at(5);
  arg.per = TensorDomain::kTable;
  arg.table_size = 9;
  arg.table_size_arg = "n";
  arg.sorted = true;
  arg.divisor_of = "d";
  spec.args.push_back(arg);
  spec.presets.push_back(Preset{"p", {{"g", false}}, "preset doc", at(6)});
  spec.matrix.push_back(MatrixEntry{{{"f", {std::string("b"), true}}}, at(7)});
  spec.source_name = "src.yaml";
  spec.extends = "base";
  spec.params_family = "pfam";
  Expr mask;
  mask.kind = ExprKind::kScore;
  ExprNode node;
  node.op = ExprOp::kSelect;
  node.type = ExprType::kFloat;
  node.int_value = -11;
  node.float_value = 0.1;
  node.bool_value = true;
  node.var = ExprVar::kS;
  node.index = 2;
  node.kids[0] = 3;
  node.kids[1] = 4;
  node.kids[2] = 5;
  node.offset = 6;
  mask.nodes = {node, ExprNode{}};
  mask.root = 1;
  mask.context.scalars.push_back(ExprScalar{"sc", ExprType::kFloat});
  mask.context.tensors.push_back(
      ExprTensor{"tn", ExprType::kFloat, TensorDomain::kHead, 12, "sz", true});
  mask.context.other_args = {"other"};
  mask.context.has_head_counts = true;
  mask.text = "mask text";
  spec.mask = mask;
  spec.score = Expr{};
  spec.score->text = "score text";
  spec.tune_as = {{"window", true}};
  spec.expression_vm = true;
  return spec;
}

TEST(SpecPack, ASpecWithEveryMemberSetSurvivesPacking) {
  const Spec want = every_member_set();
  const std::string bytes = pack_spec(want);
  const Spec got = unpack_spec(bytes);
  EXPECT_TRUE(pack_spec(got) == bytes);
  // Each member on its own, so that one both sides skipped fails too.
  const auto spec = [](const Spec& x) {
    return std::make_tuple(x.family, x.description, x.template_path, x.template_loc.str(), x.entry,
                           x.source_name, x.extends, x.params_family, x.tune_as, x.expression_vm,
                           x.flags.size(), x.constraints.size(), x.tuning.rules.size(),
                           x.args.size(), x.presets.size(), x.matrix.size(), x.mask.has_value(),
                           x.score.has_value());
  };
  EXPECT_EQ(spec(got), spec(want));
  const auto flag = [](const FlagDecl& x) {
    return std::make_tuple(x.name, x.type, x.int_values, x.enum_values, x.default_value, x.doc,
                           x.loc.str());
  };
  EXPECT_EQ(flag(got.flags.at(0)), flag(want.flags.at(0)));
  const auto constraint = [](const Constraint& x) {
    return std::make_tuple(x.when, x.require, x.forbid, x.why, x.loc.str());
  };
  EXPECT_EQ(constraint(got.constraints.at(0)), constraint(want.constraints.at(0)));
  const auto rule = [](const TuningRule& x) {
    return std::make_tuple(x.when, x.targets, x.values, x.why, x.unsupported, x.loc.str());
  };
  EXPECT_EQ(rule(got.tuning.rules.at(0)), rule(want.tuning.rules.at(0)));
  EXPECT_EQ(got.tuning.params, want.tuning.params);
  EXPECT_EQ(got.tuning.defaults, want.tuning.defaults);
  const auto arg = [](const ArgDecl& x) {
    return std::make_tuple(x.name, x.type, x.elem_flag, x.no_alias, x.doc, x.loc.str(), x.per,
                           x.table_size, x.table_size_arg, x.sorted, x.divisor_of);
  };
  EXPECT_EQ(arg(got.args.at(0)), arg(want.args.at(0)));
  const auto preset = [](const Preset& x) {
    return std::make_tuple(x.name, x.flags, x.doc, x.loc.str());
  };
  EXPECT_EQ(preset(got.presets.at(0)), preset(want.presets.at(0)));
  EXPECT_EQ(got.matrix.at(0).axes, want.matrix.at(0).axes);
  EXPECT_EQ(got.matrix.at(0).loc.str(), want.matrix.at(0).loc.str());
  const auto expr = [](const Expr& x) {
    return std::make_tuple(x.kind, x.nodes.size(), x.root, x.text, x.context.scalars.size(),
                           x.context.tensors.size(), x.context.other_args,
                           x.context.has_head_counts);
  };
  ASSERT_TRUE(got.mask.has_value() && got.score.has_value());
  EXPECT_EQ(expr(*got.mask), expr(*want.mask));
  EXPECT_EQ(expr(*got.score), expr(*want.score));
  const auto node = [](const ExprNode& x) {
    return std::make_tuple(x.op, x.type, x.int_value, x.float_value, x.bool_value, x.var, x.index,
                           x.kids[0], x.kids[1], x.kids[2], x.offset);
  };
  EXPECT_EQ(node(got.mask->nodes.at(0)), node(want.mask->nodes.at(0)));
  EXPECT_EQ(node(got.mask->nodes.at(1)), node(want.mask->nodes.at(1)));
  const ExprScalar& scalar = got.mask->context.scalars.at(0);
  EXPECT_EQ(std::make_tuple(scalar.name, scalar.type), std::make_tuple("sc", ExprType::kFloat));
  const auto tensor = [](const ExprTensor& x) {
    return std::make_tuple(x.name, x.elem, x.per, x.size, x.size_arg, x.sorted);
  };
  EXPECT_EQ(tensor(got.mask->context.tensors.at(0)), tensor(want.mask->context.tensors.at(0)));
}

}  // namespace
}  // namespace attnjit

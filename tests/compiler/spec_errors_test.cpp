// Every way a spec can be wrong, with its exact file:line:col message.
#include <gtest/gtest.h>

#include "attnjit/spec.h"
#include "test_support.h"

namespace attnjit {
namespace {

using testing::spec_error;

// Four lines; the next line of a test's text is line 5.
const std::string kHead = "family: demo\ntemplate: testing/axpy.cuh\nentry: demo\nflags:\n";
// Nine lines; the next line is line 10.
const std::string kBase = kHead +
                          "  causal: {type: bool, default: false}\n"
                          "  window: {type: bool, default: false}\n"
                          "  head_dim: {type: int, values: [64, 128], default: 64}\n"
                          "  sinks: {type: enum, values: [none, bias], default: none}\n"
                          "  dtype: {type: type, values: [bf16, fp16], default: bf16}\n";

TEST(SpecErrors, BaseIsValid) { EXPECT_NO_THROW(parse_spec(kBase, "t.yaml")); }

TEST(SpecErrors, MalformedYaml) {
  EXPECT_EQ(spec_error("family: [a, b\n"),
            "t.yaml:2:1: malformed yaml: end of sequence flow not found");
  EXPECT_EQ(spec_error("family: a: b\n"), "t.yaml:1:10: malformed yaml: illegal map value");
  EXPECT_EQ(spec_error(kBase + "args:\n  - {name: x\n"),
            "t.yaml:12:1: malformed yaml: end of map flow not found");
}

TEST(SpecErrors, EmptyOrNotAMap) {
  EXPECT_EQ(spec_error(""), "t.yaml:1:1: spec is empty");
  EXPECT_EQ(spec_error("# nothing\n"), "t.yaml:1:1: spec is empty");
  EXPECT_EQ(spec_error("- family\n"), "t.yaml:1:1: spec must be a map");
  EXPECT_EQ(spec_error("family\n"), "t.yaml:1:1: spec must be a map");
}

TEST(SpecErrors, UnknownKeys) {
  EXPECT_EQ(spec_error(kBase + "flgas: {}\n"),
            "t.yaml:10:1: unknown key 'flgas' in spec (did you mean 'flags'?)");
  EXPECT_EQ(spec_error(kBase + "colour: red\n"), "t.yaml:10:1: unknown key 'colour' in spec");
  EXPECT_EQ(spec_error(kHead + "  causal: {type: bool, defualt: false}\n"),
            "t.yaml:5:24: unknown key 'defualt' in flag 'causal' (did you mean 'default'?)");
  EXPECT_EQ(spec_error(kBase + "args:\n  - {name: x, tpye: int32}\n"),
            "t.yaml:11:15: unknown key 'tpye' in arg (did you mean 'type'?)");
  EXPECT_EQ(spec_error(kBase + "tuning: {params: [bm], rulez: []}\n"),
            "t.yaml:10:24: unknown key 'rulez' in tuning (did you mean 'rules'?)");
}

TEST(SpecErrors, MissingKeys) {
  EXPECT_EQ(spec_error("template: testing/axpy.cuh\nentry: demo\n"),
            "t.yaml:1:1: missing key 'family' in spec");
  EXPECT_EQ(spec_error("family: demo\ntemplate: testing/axpy.cuh\n"),
            "t.yaml:1:1: missing key 'entry' in spec");
  EXPECT_EQ(spec_error(kHead + "  causal: {default: false}\n"),
            "t.yaml:5:11: missing key 'type' in flag 'causal'");
  EXPECT_EQ(spec_error(kBase + "args:\n  - {type: int32}\n"),
            "t.yaml:11:5: missing key 'name' in arg");
  EXPECT_EQ(spec_error(kBase + "args:\n  - {name: n}\n"),
            "t.yaml:11:5: missing key 'type' in arg 'n'");
}

TEST(SpecErrors, DuplicateKeys) {
  EXPECT_EQ(spec_error(kBase + "  causal: {type: bool}\n"),
            "t.yaml:10:3: duplicate key 'causal' in flags (first at 5:3)");
  EXPECT_EQ(spec_error(kBase + "entry: again\n"),
            "t.yaml:10:1: duplicate key 'entry' in spec (first at 3:1)");
  EXPECT_EQ(spec_error(kHead + "  causal: {type: bool, type: int}\n"),
            "t.yaml:5:24: duplicate key 'type' in flag 'causal' (first at 5:12)");
  EXPECT_EQ(spec_error(kBase + "args:\n  - {name: n, type: int32}\n  - {name: n, type: int64}\n"),
            "t.yaml:12:12: duplicate arg 'n' (first at 11:5)");
  EXPECT_EQ(spec_error(kBase + "presets:\n  p: {causal: true}\n  p: {window: true}\n"),
            "t.yaml:12:3: duplicate key 'p' in presets (first at 11:3)");
}

TEST(SpecErrors, BadIdentifiers) {
  EXPECT_EQ(spec_error("family: 'a;system(\"x\")'\ntemplate: testing/axpy.cuh\nentry: e\n"),
            "t.yaml:1:9: family 'a;system(\"x\")' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)");
  EXPECT_EQ(spec_error("family: f\ntemplate: testing/axpy.cuh\nentry: '#include <x>'\n"),
            "t.yaml:3:8: entry '#include <x>' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)");
  EXPECT_EQ(spec_error(kHead + "  class: {type: bool}\n"),
            "t.yaml:5:3: flag name 'class' is a C++ keyword");
  EXPECT_EQ(
      spec_error(kHead + "  __x: {type: bool}\n"),
      "t.yaml:5:3: flag name '__x' is reserved (names starting with '__' or '_' and a capital)");
  EXPECT_EQ(spec_error(kHead + "  attnjit_config: {type: bool}\n"),
            "t.yaml:5:3: flag name 'attnjit_config' is reserved (names starting with 'attnjit' "
            "belong to the generator)");
  EXPECT_EQ(spec_error(kHead + "  threadIdx: {type: bool}\n"),
            "t.yaml:5:3: flag name 'threadIdx' is a CUDA built-in name");
  EXPECT_EQ(spec_error(kHead + "  9lives: {type: bool}\n"),
            "t.yaml:5:3: flag name '9lives' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)");
  EXPECT_EQ(spec_error(kHead + "  int32: {type: bool}\n"),
            "t.yaml:5:3: flag name 'int32' is reserved by the spec format");
  EXPECT_EQ(spec_error(kBase + "presets:\n  new: {causal: true}\n"),
            "t.yaml:11:3: preset name 'new' is a C++ keyword");
  EXPECT_EQ(spec_error(kBase + "args:\n  - {name: 'x, int y', type: int32}\n"),
            "t.yaml:11:12: arg name 'x, int y' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)");
  EXPECT_EQ(
      spec_error(kBase + "tuning: {params: [block-m]}\n"),
      "t.yaml:10:19: tuning param name 'block-m' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)");
}

TEST(SpecErrors, CodeInjectionThroughValues) {
  EXPECT_EQ(
      spec_error(kHead + "  sinks: {type: enum, values: [none, \"x }; int y; //\"]}\n"),
      "t.yaml:5:38: enum value 'x }; int y; //' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)");
  EXPECT_EQ(spec_error(kHead + "  dtype: {type: type, values: [\"float; asm(\\\"trap;\\\")\"]}\n"),
            "t.yaml:5:32: type value 'float; asm(\"trap;\")' is not an identifier "
            "([A-Za-z_][A-Za-z0-9_]*)");
  // A newline inside a name is shown escaped, never as a line break.
  EXPECT_EQ(spec_error(kHead + "  \"causal\\n#include <x>\": {type: bool}\n"),
            "t.yaml:5:3: flag name 'causal\\n#include <x>' is not an identifier "
            "([A-Za-z_][A-Za-z0-9_]*)");
  // A value that is not in the domain never reaches the generator.
  EXPECT_EQ(spec_error(kBase + "presets:\n  p: {sinks: \"none; system(1)\"}\n"),
            "t.yaml:11:14: flag 'sinks': 'none; system(1)' is not one of none, bias");
  EXPECT_EQ(spec_error(kBase + "presets:\n  p: {head_dim: \"64 + 1\"}\n"),
            "t.yaml:11:17: flag 'head_dim' expects an int");
}

TEST(SpecErrors, TemplatePaths) {
  const auto with_template = [](const std::string& path) {
    return spec_error("family: f\ntemplate: " + path + "\nentry: f\n");
  };
  EXPECT_EQ(with_template("../x.cuh"),
            "t.yaml:2:11: template path '../x.cuh' must not contain a '..' component");
  EXPECT_EQ(
      with_template("testing/../../etc/x.cuh"),
      "t.yaml:2:11: template path 'testing/../../etc/x.cuh' must not contain a '..' component");
  EXPECT_EQ(with_template("/etc/x.cuh"),
            "t.yaml:2:11: template path '/etc/x.cuh' must be relative to templates/");
  EXPECT_EQ(with_template("'a\"b.cuh'"),
            "t.yaml:2:11: template path 'a\"b.cuh' may use only [A-Za-z0-9_./-]");
  EXPECT_EQ(with_template("testing/axpy.h"),
            "t.yaml:2:11: template path 'testing/axpy.h' must end in .cuh");
  EXPECT_EQ(with_template("testing//axpy.cuh"),
            "t.yaml:2:11: template path 'testing//axpy.cuh' has an empty or '.' component");
  EXPECT_EQ(with_template("testing/axpi.cuh"),
            "t.yaml:2:11: template 'testing/axpi.cuh' is not embedded (did you mean "
            "'testing/axpy.cuh'?)");
  EXPECT_EQ(with_template("testing/other.cuh"),
            "t.yaml:2:11: template 'testing/other.cuh' is not embedded");
  // A folder this build does not embed at all is left to generate_source().
  EXPECT_NO_THROW(parse_spec("family: f\ntemplate: elsewhere/k.cuh\nentry: f\n", "t.yaml"));
}

TEST(SpecErrors, FlagDeclarations) {
  EXPECT_EQ(
      spec_error(kHead + "  causal: {type: boolean}\n"),
      "t.yaml:5:18: flag 'causal': unknown type 'boolean' (expected bool, int, enum or type)");
  EXPECT_EQ(spec_error(kHead + "  causal: {type: bool, values: [true]}\n"),
            "t.yaml:5:24: flag 'causal' is a bool and takes no values");
  EXPECT_EQ(spec_error(kHead + "  head_dim: {type: int}\n"),
            "t.yaml:5:13: flag 'head_dim' of type int needs values");
  EXPECT_EQ(spec_error(kHead + "  head_dim: {type: int, values: []}\n"),
            "t.yaml:5:33: flag 'head_dim' needs at least one value");
  EXPECT_EQ(spec_error(kHead + "  head_dim: {type: int, values: [64, 64]}\n"),
            "t.yaml:5:38: flag 'head_dim' lists 64 twice");
  EXPECT_EQ(spec_error(kHead + "  head_dim: {type: int, values: [64, 5000000000]}\n"),
            "t.yaml:5:38: flag 'head_dim': value '5000000000' is out of range for a 32-bit int");
  EXPECT_EQ(spec_error(kHead + "  head_dim: {type: int, values: [64, x]}\n"),
            "t.yaml:5:38: flag 'head_dim': value must be an integer, got 'x'");
  EXPECT_EQ(spec_error(kHead + "  sinks: {type: enum, values: [a, b, a]}\n"),
            "t.yaml:5:38: flag 'sinks' lists 'a' twice");
  EXPECT_EQ(spec_error(kHead + "  sinks: {type: enum, values: [a]}\n  sinks_t: {type: bool}\n"),
            "t.yaml:6:3: flag name 'sinks_t' collides with the enum type of flag 'sinks'");
  EXPECT_EQ(spec_error(kHead + "  doc: {type: bool}\n"),
            "t.yaml:5:3: flag name 'doc' is reserved by the spec format");
}

TEST(SpecErrors, BadDefaults) {
  EXPECT_EQ(spec_error(kHead + "  head_dim: {type: int, values: [64, 128], default: 72}\n"),
            "t.yaml:5:53: flag 'head_dim': 72 is not one of 64, 128");
  EXPECT_EQ(spec_error(kHead + "  head_dim: {type: int, values: [64, 128], default: \"64\"}\n"),
            "t.yaml:5:53: flag 'head_dim' expects an int");
  EXPECT_EQ(spec_error(kHead + "  causal: {type: bool, default: yes}\n"),
            "t.yaml:5:33: flag 'causal' expects a bool");
  EXPECT_EQ(spec_error(kHead + "  causal: {type: bool, default: [true]}\n"),
            "t.yaml:5:33: flag 'causal' expects a bool");
  EXPECT_EQ(spec_error(kHead + "  sinks: {type: enum, values: [none, bias], default: nonee}\n"),
            "t.yaml:5:54: flag 'sinks': 'nonee' is not one of none, bias (did you mean 'none'?)");
}

TEST(SpecErrors, RequiresAndExcludesSugar) {
  EXPECT_EQ(spec_error(kHead + "  a: {type: bool, requires: [causl]}\n  causal: {type: bool}\n"),
            "t.yaml:5:30: unknown flag 'causl' in flag 'a': requires (did you mean 'causal'?)");
  EXPECT_EQ(spec_error(kHead + "  a: {type: bool, excludes: [k]}\n  k: {type: int, values: [1]}\n"),
            "t.yaml:5:30: flag 'a': excludes: 'k' is not a bool flag; write a constraint instead");
  EXPECT_EQ(spec_error(kHead + "  k: {type: int, values: [1], requires: [a]}\n  a: {type: bool}\n"),
            "t.yaml:5:31: flag 'k': requires needs a bool flag; write a constraint instead");
  EXPECT_EQ(spec_error(kHead + "  a: {type: bool, requires: a}\n"),
            "t.yaml:5:29: flag 'a': requires names the flag itself");
}

TEST(SpecErrors, Constraints) {
  EXPECT_EQ(spec_error(kBase + "constraints:\n  - {if: {causl: true}, require: {window: true}}\n"),
            "t.yaml:11:11: unknown flag 'causl' in constraint (did you mean 'causal'?)");
  EXPECT_EQ(spec_error(kBase + "constraints:\n  - {require: {head_dim: 72}}\n"),
            "t.yaml:11:26: flag 'head_dim': 72 is not one of 64, 128");
  EXPECT_EQ(spec_error(kBase + "constraints:\n  - {forbid: {sinks: nul}}\n"),
            "t.yaml:11:22: flag 'sinks': 'nul' is not one of none, bias");
  EXPECT_EQ(spec_error(kBase + "constraints:\n  - {if: {causal: 1}, require: {window: true}}\n"),
            "t.yaml:11:19: flag 'causal' expects a bool");
  EXPECT_EQ(spec_error(kBase + "constraints:\n  - {if: {causal: true}, why: nothing}\n"),
            "t.yaml:11:5: constraint needs 'require' or 'forbid'");
  EXPECT_EQ(
      spec_error(kBase + "constraints:\n  - {if: {causal: true}, requires: {window: true}}\n"),
      "t.yaml:11:26: unknown key 'requires' in constraint (did you mean 'require'?)");
  EXPECT_EQ(spec_error(kBase + "constraints:\n  - {require: {head_dim: [64, 128]}}\n"),
            "t.yaml:11:26: constraint: flag 'head_dim' takes a single value here");
  EXPECT_EQ(spec_error(kBase + "constraints: {if: {causal: true}}\n"),
            "t.yaml:10:14: constraints must be a list");
}

TEST(SpecErrors, Args) {
  EXPECT_EQ(spec_error(kBase + "args:\n  - {name: x, type: double}\n"),
            "t.yaml:11:21: arg 'x': unknown arg type 'double' (expected const <type flag>*, "
            "<type flag>*, const float*, float*, const int32*, int32*, int32, int64, float or tensor_map)");
  EXPECT_EQ(spec_error(kBase + "args:\n  - {name: x, type: \"const dtyp*\"}\n"),
            "t.yaml:11:21: arg 'x': 'dtyp' is not a type flag (did you mean 'dtype'?)");
  EXPECT_EQ(spec_error(kBase + "args:\n  - {name: x, type: \"head_dim*\"}\n"),
            "t.yaml:11:21: arg 'x': 'head_dim' is not a type flag");
  EXPECT_EQ(spec_error(kBase + "args:\n  - {name: x, type: \"const dtype *\"}\n"),
            "t.yaml:11:21: arg 'x': unknown arg type 'const dtype *' (expected const <type flag>*, "
            "<type flag>*, const float*, float*, const int32*, int32*, int32, int64, float or tensor_map)");
  EXPECT_EQ(spec_error(kBase + "args:\n  - {name: n, type: int32, noalias: false}\n"),
            "t.yaml:11:28: arg 'n': noalias applies only to pointers");
  EXPECT_EQ(spec_error(kBase + "args: {name: n}\n"), "t.yaml:10:7: args must be a list");
}

TEST(SpecErrors, Tuning) {
  EXPECT_EQ(spec_error(kBase + "tuning: {params: [causal]}\n"),
            "t.yaml:10:19: tuning param 'causal' collides with flag 'causal'");
  EXPECT_EQ(spec_error(kBase + "tuning: {params: [sinks_t]}\n"),
            "t.yaml:10:19: tuning param 'sinks_t' collides with flag 'sinks'");
  EXPECT_EQ(spec_error(kBase + "tuning: {params: [bm, bm]}\n"),
            "t.yaml:10:23: tuning param 'bm' is declared twice");
  EXPECT_EQ(spec_error(kBase + "tuning: {params: [why]}\n"),
            "t.yaml:10:19: tuning param 'why' collides with the rule key 'why'");
  EXPECT_EQ(spec_error(kBase + "tuning:\n  params: [block_m]\n  rules:\n    - {blok_m: 64}\n"),
            "t.yaml:13:8: unknown key 'blok_m' in tuning rule (did you mean 'block_m'?)");
  EXPECT_EQ(
      spec_error(kBase + "tuning:\n  params: [bm]\n  rules:\n    - {targets: [sm_75], bm: 64}\n"),
      "t.yaml:13:18: unsupported target 'sm_75' (supported: sm_80, sm_86, sm_89, sm_90, sm_90a)");
  EXPECT_EQ(
      spec_error(kBase +
                 "tuning:\n  params: [bm]\n  rules:\n    - {when: {head_dim: [72]}, bm: 64}\n"),
      "t.yaml:13:26: flag 'head_dim': 72 is not one of 64, 128");
  EXPECT_EQ(spec_error(kBase +
                       "tuning:\n  params: [bm]\n  rules:\n    - {when: {hed_dim: 64}, bm: 64}\n"),
            "t.yaml:13:15: unknown flag 'hed_dim' in tuning rule (did you mean 'head_dim'?)");
  EXPECT_EQ(spec_error(kBase + "tuning:\n  params: [bm]\n  rules:\n    - {bm: 6.5}\n"),
            "t.yaml:13:12: tuning param 'bm' must be an integer, got '6.5'");
  // A param with a default: one entry, an integer, and the same names.
  EXPECT_EQ(spec_error(kBase + "tuning: {params: [{bm: 1, bn: 2}]}\n"),
            "t.yaml:10:19: a tuning param with a default is one entry, {name: value}");
  EXPECT_EQ(spec_error(kBase + "tuning: {params: [{bm: x}]}\n"),
            "t.yaml:10:24: default of tuning param 'bm' must be an integer, got 'x'");
  EXPECT_EQ(spec_error(kBase + "tuning: {params: [{causal: 0}]}\n"),
            "t.yaml:10:19: tuning param 'causal' collides with flag 'causal'");
  EXPECT_EQ(spec_error(kBase + "tuning: {params: [bm, {bm: 0}]}\n"),
            "t.yaml:10:23: tuning param 'bm' is declared twice");
}

TEST(SpecErrors, Presets) {
  const std::string with_rule = kBase +
                                "constraints:\n  - {if: {window: true}, require: {causal: true}, "
                                "why: \"left windows only\"}\n";
  EXPECT_EQ(spec_error(with_rule + "presets:\n  p: {window: true}\n"),
            "t.yaml:13:3: preset 'p': window=true requires causal=true: left windows only");
  EXPECT_EQ(spec_error(kBase + "presets:\n  p: {causl: true}\n"),
            "t.yaml:11:7: unknown flag 'causl' in preset 'p' (did you mean 'causal'?)");
  EXPECT_EQ(spec_error(kHead + "  k: {type: int, values: [1]}\npresets:\n  p: {doc: \"no k\"}\n"),
            "t.yaml:7:3: preset 'p': flag 'k' has no default and must be given");
}

TEST(SpecErrors, Matrix) {
  EXPECT_EQ(spec_error(kBase + "matrix:\n  - {causl: [true]}\n"),
            "t.yaml:11:6: unknown flag 'causl' in matrix entry (did you mean 'causal'?)");
  EXPECT_EQ(spec_error(kBase + "matrix:\n  - {causal: []}\n"),
            "t.yaml:11:14: matrix entry: flag 'causal' has no values");
  EXPECT_EQ(spec_error(kBase + "matrix:\n  - {head_dim: [64, 96]}\n"),
            "t.yaml:11:21: flag 'head_dim': 96 is not one of 64, 128");
  EXPECT_EQ(spec_error(kBase + "matrix:\n  - {causal: [true, true]}\n"),
            "t.yaml:11:21: matrix entry: flag 'causal' lists true twice");
  EXPECT_EQ(spec_error(kHead + "  k: {type: int, values: [1]}\nmatrix:\n  - {}\n"),
            "t.yaml:7:5: matrix entry does not name flag 'k', which has no default");
}

}  // namespace
}  // namespace attnjit

// A kernel family as described by a YAML spec (format: specs/README.md).
//
// parse_spec() checks everything a spec can get wrong and reports it with
// file:line:column; after it returns, every identifier in the Spec matches
// [A-Za-z_][A-Za-z0-9_]* and every value is typed, so nothing in a Spec can
// reach generated code as raw text.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "attnjit/expr.h"

// The public C++ API: exported from libattnjit.so (the build hides the rest).
#pragma GCC visibility push(default)

namespace attnjit {

struct SourceLocation {
  std::string file;         // as given to parse_spec (display only, never hashed)
  int line = 0;             // 1-based; 0 when unknown
  int column = 0;           // 1-based
  std::string str() const;  // "file:line:column"
};

// A flag's value: bool, int or the name of an enum/type member.
using FlagValue = std::variant<bool, int64_t, std::string>;
std::string to_string(const FlagValue& value);

enum class FlagType {
  kBool,  // constexpr bool
  kInt,   // constexpr int, from a list of values
  kEnum,  // enum class <name>_t { ... }; constexpr <name>_t <name>
  kType,  // using <name> = ::attnjit::types::<value>;  (element types)
};
const char* to_string(FlagType type);  // "bool", "int", "enum", "type"

struct FlagDecl {
  std::string name;
  FlagType type = FlagType::kBool;
  std::vector<int64_t> int_values;         // kInt: the domain
  std::vector<std::string> enum_values;    // kEnum, kType: the domain, in order
  std::optional<FlagValue> default_value;  // absent: the flag must be given
  std::string doc;
  SourceLocation loc;

  bool accepts(const FlagValue& value) const;
};

// "if all of `when` hold, then all of `require` must hold and none of
// `forbid` may"; a per-flag `requires: [a, b]` is sugar for
// {when: {flag: true}, require: {a: true, b: true}}.
struct Constraint {
  std::map<std::string, FlagValue> when;
  std::map<std::string, FlagValue> require;
  std::map<std::string, FlagValue> forbid;
  std::string why;  // shown in the error message
  SourceLocation loc;
};

// Compile-time tile parameters (block sizes, warps, pipeline stages). They
// are ints picked by the first rule whose `when` matches the flag values
// (a rule without `when` matches everything); the values become constexpr
// members of the generated config, and they are part of the signature.
struct TuningRule {
  std::map<std::string, std::vector<FlagValue>> when;  // flag -> any of
  std::vector<std::string> targets;                    // empty: any target
  std::map<std::string, int64_t> values;               // param -> value
  std::string why;  // where the values come from (a bench/results/ file); not used otherwise
  // Not empty: the flags this rule matches have no kernel on its targets,
  // and this says why (make_signature's error; build-cache skips them).
  std::string unsupported;
  SourceLocation loc;
};

struct Tuning {
  std::vector<std::string> params;  // declaration order
  // Params declared with a default (`{name: value}` in `params`): the value
  // of a rule that does not set them, so rules written before a param was
  // added keep working.
  std::map<std::string, int64_t> defaults;
  std::vector<TuningRule> rules;
};

// Runtime kernel arguments, in launch order. A pointer type names a kType
// flag (its element type) or a fixed scalar type.
enum class ArgType {
  kConstElemPtr,  // "const <typeflag>*"
  kElemPtr,       // "<typeflag>*"
  kConstF32Ptr,   // "const float*"
  kF32Ptr,        // "float*"
  kConstI32Ptr,   // "const int32*"
  kI32Ptr,        // "int32*"
  kI32,           // "int32"
  kI64,           // "int64"
  kF32,           // "float"
  kTensorMap,     // "tensor_map": a TMA descriptor, passed by value (__grid_constant__)
};

// The spec's spelling of a fixed type ("const int32*", "float", ...); an
// element-typed pointer reads "const <type flag>*" / "<type flag>*".
const char* to_string(ArgType type);

struct ArgDecl {
  std::string name;
  ArgType type = ArgType::kI32;
  std::string elem_flag;  // kConstElemPtr / kElemPtr: the kType flag
  bool no_alias = true;   // pointers: emitted __restrict__ (spec key `noalias`)
  std::string doc;
  SourceLocation loc;
  // `per`: a read-only tensor that mask and score expressions index
  // (const int32* or const float*; docs/expressions.md "Tensors").
  std::optional<TensorDomain> per;
  int64_t table_size = 0;      // per: table, `size: <n>`
  std::string table_size_arg;  // per: table, `size: <int32 arg>`
  // `sorted: true`: an int32 tensor whose values do not decrease over its
  // domain (each sequence's tokens, the heads, the table); tile
  // classification bounds a read over a range by the values at its ends.
  bool sorted = false;
  // Hidden (not in the spec's text): the int64 field holding the runtime's
  // multiplier for division by the int32 arg named here (expr.h
  // divisor_field), filled by the runtime from that arg at each launch.
  std::string divisor_of;
};

struct Preset {
  std::string name;
  std::map<std::string, FlagValue> flags;  // unnamed flags take defaults
  std::string doc;
  SourceLocation loc;
};

// One matrix entry: the cartesian product of the listed values; flags not
// named take their defaults. Combinations that break a constraint are
// dropped (and counted) by expand_matrix.
struct MatrixEntry {
  std::map<std::string, std::vector<FlagValue>> axes;
  SourceLocation loc;
};

struct Spec {
  std::string family;  // identifier
  std::string description;
  std::string template_path;    // relative to templates/, e.g. attention/prefill.cuh
  SourceLocation template_loc;  // where the spec names it (for "not embedded")
  std::string entry;            // identifier: the kernel's extern "C" name
  std::vector<FlagDecl> flags;  // declaration order is the canonical order
  std::vector<Constraint> constraints;
  Tuning tuning;
  std::vector<ArgDecl> args;
  std::vector<Preset> presets;
  std::vector<MatrixEntry> matrix;
  std::string source_name;  // file name for messages
  // `extends: <embedded spec>`: template, entry, flags, constraints, tuning
  // and the leading args come from that spec (empty: none).
  std::string extends;
  // The family whose params struct the template reads: the extended spec's
  // (so its templates compile unchanged; the struct gains this spec's args
  // at its end), else this spec's own (empty: `family`).
  std::string params_family;
  // `mask:` (bool) and `score:` (float), checked trees (docs/expressions.md).
  // With either, the generated unit defines `struct attnjit_user` and the
  // config's `using user = attnjit_user;`.
  std::optional<Expr> mask;
  std::optional<Expr> score;
  // `tune_as:` (with a mask): mask-shape flags whose values the tuning
  // rules see instead of the variant's own, e.g. {window: true} for a
  // band-shaped mask, so that it gets the tiles of the built-in window.
  std::map<std::string, FlagValue> tune_as;
  // The expression VM's variant (expression_vm_spec(), never parsed from a
  // spec's text): its unit defines the VM's `struct attnjit_user`.
  bool expression_vm = false;

  const FlagDecl* find_flag(const std::string& name) const;
  const Preset* find_preset(const std::string& name) const;
};

// What mask and score expressions of `spec` may read: its int32 and float
// scalar args and its tensor args (`per`), in args order.
ExprContext expr_context(const Spec& spec);

// Parses and validates. Throws Error(kSpec) "file:line:col: message".
Spec parse_spec(const std::string& yaml_text, const std::string& source_name);
Spec load_spec_file(const std::string& path);

// The expression VM's spec (docs/expressions.md "The expression VM"): the
// attention spec extended with the VM's args (the mask and score programs,
// vm_mask_code / _count / _result and vm_score_*, and the slots vm_i0..7,
// vm_f0..7, vm_t0..7); its variants run any spec's expressions from
// their params. Built in code, not embedded YAML: no spec lists it.
const Spec& expression_vm_spec();

// Specs compiled into the library (specs/*.yaml at build time).
std::vector<std::string> embedded_spec_names();                  // e.g. "attention"
const std::string* find_embedded_spec(const std::string& name);  // YAML text
Spec load_embedded_spec(const std::string& name);

// A full assignment of every flag (in the spec's flag order).
struct FlagSet {
  std::vector<std::pair<std::string, FlagValue>> values;
  const FlagValue& at(const std::string& name) const;  // asserts presence
  bool get_bool(const std::string& name) const;
  int64_t get_int(const std::string& name) const;
  const std::string& get_name(const std::string& name) const;
  // "dtype=bf16,head_dim=128,..." in the spec's flag order: equal text,
  // equal assignment.
  std::string str() const;
};

// Fills defaults, checks domains and constraints. `given` may name only
// declared flags. Throws Error(kFlags) "unknown flag 'causl'",
// "flag 'head_dim': 72 is not one of 64, 80, ...",
// "mm_clamp=true requires window=true: <why>".
FlagSet resolve_flags(const Spec& spec, const std::map<std::string, FlagValue>& given);
FlagSet resolve_preset(const Spec& spec, const std::string& preset);

// Parses "causal=true,head_dim=128,sinks=null_logit" (values typed by the
// spec's declarations). Throws Error(kFlags).
std::map<std::string, FlagValue> parse_flag_assignments(const Spec& spec, const std::string& text);

struct MatrixExpansion {
  std::vector<FlagSet> variants;  // deduplicated, in a stable order
  int dropped_illegal = 0;
};
MatrixExpansion expand_matrix(const Spec& spec);

// The matrix's variants followed by the presets not already among them: what
// an offline cache build compiles and the GPU test matrix runs.
std::vector<FlagSet> matrix_and_presets(const Spec& spec);

}  // namespace attnjit

#pragma GCC visibility pop

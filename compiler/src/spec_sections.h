// The parts of parse_spec(), one per section of a spec (format:
// specs/README.md). Each reports with file:line:col through SpecReader.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "attnjit/spec.h"
#include "spec_reader.h"

namespace attnjit::detail {

// `flags:`; the per-flag requires/excludes sugar becomes constraints,
// appended to `sugar` (checked after the explicit `constraints:`, so that a
// constraint with a `why` is the one reported).
std::vector<FlagDecl> parse_flags(const SpecReader& reader, const YAML::Node& node,
                                  std::vector<Constraint>& sugar);
std::vector<ArgDecl> parse_args(const SpecReader& reader, const Spec& spec, const YAML::Node& node);
std::vector<Constraint> parse_constraints(const SpecReader& reader, const Spec& spec,
                                          const YAML::Node& node);
Tuning parse_tuning(const SpecReader& reader, const Spec& spec, const YAML::Node& node);
// `tuning:` of a spec that extends another: `rules` only, over the extended
// spec's params (`spec.tuning.params`), each naming every one of them; the
// rules to try before the extended spec's.
std::vector<TuningRule> parse_own_rules(const SpecReader& reader, const Spec& spec,
                                        const YAML::Node& node);
// Needs the constraints: every preset must resolve to a legal flag set.
std::vector<Preset> parse_presets(const SpecReader& reader, const Spec& spec,
                                  const YAML::Node& node);
std::vector<MatrixEntry> parse_matrix(const SpecReader& reader, const Spec& spec,
                                      const YAML::Node& node);

// A user spec's parts (spec_expressions.cpp): `extends: <embedded spec>`
// (its inherited sections; `entries` must not give them again), the
// `per`/`size` tensor args' needs, and `mask:` / `score:`.
void inherit(const SpecReader& reader, const std::vector<MapEntry>& entries, const MapEntry& entry,
             Spec& spec);
void check_tensor_args(const SpecReader& reader, const Spec& spec);
void parse_expressions(const SpecReader& reader, const std::string& yaml_text,
                       const std::vector<MapEntry>& entries, Spec& spec);

// A flag named by a key of `where` ("constraint", "preset 'x'"), or an
// error "unknown flag 'causl' in constraint (did you mean 'causal'?)".
const FlagDecl& declared_flag(const SpecReader& reader, const Spec& spec, const MapEntry& entry,
                              std::string_view where);
// A value typed by the flag's declaration and inside its domain.
FlagValue flag_value(const SpecReader& reader, const FlagDecl& decl, const YAML::Node& node);

}  // namespace attnjit::detail

// parse_spec(): constraints, tuning, presets and matrix.
#include <algorithm>

#include "attnjit/error.h"
#include "attnjit/target.h"
#include "flag_values.h"
#include "names.h"
#include "spec_sections.h"

namespace attnjit::detail {
namespace {

const std::vector<std::string> kConstraintKeys = {"if", "require", "forbid", "why"};
const std::vector<std::string> kTuningKeys = {"params", "rules"};
// A rule's keys besides its params; no param may take one of these names.
const std::vector<std::string> kRuleKeys = {"when", "targets", "why", "unsupported"};

// `{flag: value, ...}` with single, typed values.
std::map<std::string, FlagValue> flag_assignments(const SpecReader& reader, const Spec& spec,
                                                  const YAML::Node& node, std::string_view where) {
  std::map<std::string, FlagValue> result;
  for (const MapEntry& entry : reader.entries(node, where, {})) {
    const FlagDecl& decl = declared_flag(reader, spec, entry, where);
    if (!entry.value.IsScalar()) {
      reader.fail(entry.value, std::string(where) + ": flag " + quoted(entry.key) +
                                   " takes a single value here");
    }
    result[entry.key] = flag_value(reader, decl, entry.value);
  }
  return result;
}

// `{flag: [values] or value, ...}`: each flag may take any of the values.
std::map<std::string, std::vector<FlagValue>> flag_alternatives(const SpecReader& reader,
                                                                const MapEntry& entry,
                                                                const FlagDecl& decl,
                                                                std::string_view where) {
  std::vector<FlagValue> values;
  const std::string what = std::string(where) + ": flag " + quoted(decl.name);
  const std::vector<YAML::Node> items = reader.items_or_scalar(entry.value, what);
  if (items.empty()) reader.fail(entry.value, what + " has no values");
  for (const YAML::Node& item : items) {
    FlagValue value = flag_value(reader, decl, item);
    if (std::find(values.begin(), values.end(), value) != values.end()) {
      reader.fail(item, what + " lists " + to_string(value) + " twice");
    }
    values.push_back(std::move(value));
  }
  return {{decl.name, std::move(values)}};
}

std::vector<std::string> parse_targets(const SpecReader& reader, const YAML::Node& node) {
  std::vector<std::string> targets;
  for (const YAML::Node& item : reader.items_or_scalar(node, "tuning rule: targets")) {
    const std::string name = reader.text(item, "tuning rule: target");
    try {
      targets.push_back(parse_target(name).name());
    } catch (const Error& error) {
      reader.fail(item, error.what());
    }
  }
  return targets;
}

// `params`: names, or one-entry maps {name: default} for a param that
// rules may leave out.
std::vector<std::string> parse_params(const SpecReader& reader, const Spec& spec,
                                      const YAML::Node& node,
                                      std::map<std::string, int64_t>& defaults) {
  std::vector<std::string> params;
  for (const YAML::Node& item : reader.items(node, "tuning: params")) {
    std::string name;
    if (item.IsMap()) {
      const std::vector<MapEntry> entries = reader.entries(item, "tuning param with a default", {});
      if (entries.size() != 1) {
        reader.fail(item, "a tuning param with a default is one entry, {name: value}");
      }
      name = reader.identifier(entries[0], "tuning param name");
      defaults[name] = reader.integer(entries[0].value, "default of tuning param " + quoted(name));
    } else {
      name = reader.identifier(item, "tuning param name");
    }
    if (std::count(params.begin(), params.end(), name) > 0) {
      reader.fail(item, "tuning param " + quoted(name) + " is declared twice");
    }
    if (std::count(kRuleKeys.begin(), kRuleKeys.end(), name) > 0) {
      reader.fail(item, "tuning param " + quoted(name) + " collides with the rule key " +
                            quoted(name));
    }
    for (const FlagDecl& decl : spec.flags) {
      const bool is_enum_type = decl.type == FlagType::kEnum && name == decl.name + "_t";
      if (decl.name == name || is_enum_type) {
        reader.fail(item,
                    "tuning param " + quoted(name) + " collides with flag " + quoted(decl.name));
      }
    }
    params.push_back(name);
  }
  return params;
}

TuningRule parse_rule(const SpecReader& reader, const Spec& spec,
                      const std::vector<std::string>& params, const YAML::Node& node) {
  std::vector<std::string> known(kRuleKeys.begin(), kRuleKeys.end());
  known.insert(known.end(), params.begin(), params.end());
  TuningRule rule;
  rule.loc = reader.location(node);
  for (const MapEntry& entry : reader.entries(node, "tuning rule", known)) {
    if (entry.key == "when") {
      for (const MapEntry& condition : reader.entries(entry.value, "tuning rule: when", {})) {
        const FlagDecl& decl = declared_flag(reader, spec, condition, "tuning rule");
        rule.when.merge(flag_alternatives(reader, condition, decl, "tuning rule"));
      }
    } else if (entry.key == "targets") {
      rule.targets = parse_targets(reader, entry.value);
    } else if (entry.key == "why") {
      rule.why = reader.text(entry.value, "tuning rule: why");
    } else if (entry.key == "unsupported") {
      rule.unsupported = reader.text(entry.value, "tuning rule: unsupported");
      if (rule.unsupported.empty()) reader.fail(entry.value, "tuning rule: unsupported says why");
    } else {
      rule.values[entry.key] = reader.integer(entry.value, "tuning param " + quoted(entry.key));
    }
  }
  if (!rule.unsupported.empty() && !rule.values.empty()) {
    reader.fail(node, "tuning rule: a rule that says `unsupported` sets no params");
  }
  return rule;
}

}  // namespace

std::vector<Constraint> parse_constraints(const SpecReader& reader, const Spec& spec,
                                          const YAML::Node& node) {
  std::vector<Constraint> constraints;
  for (const YAML::Node& item : reader.items(node, "constraints")) {
    const std::vector<MapEntry> entries = reader.entries(item, "constraint", kConstraintKeys);
    Constraint constraint;
    constraint.loc = reader.location(item);
    if (const MapEntry* entry = find_entry(entries, "if")) {
      constraint.when = flag_assignments(reader, spec, entry->value, "constraint");
    }
    if (const MapEntry* entry = find_entry(entries, "require")) {
      constraint.require = flag_assignments(reader, spec, entry->value, "constraint");
    }
    if (const MapEntry* entry = find_entry(entries, "forbid")) {
      constraint.forbid = flag_assignments(reader, spec, entry->value, "constraint");
    }
    if (const MapEntry* entry = find_entry(entries, "why")) {
      constraint.why = reader.text(entry->value, "constraint: why");
    }
    if (constraint.require.empty() && constraint.forbid.empty()) {
      reader.fail(item, "constraint needs 'require' or 'forbid'");
    }
    constraints.push_back(std::move(constraint));
  }
  return constraints;
}

Tuning parse_tuning(const SpecReader& reader, const Spec& spec, const YAML::Node& node) {
  const std::vector<MapEntry> entries = reader.entries(node, "tuning", kTuningKeys);
  Tuning tuning;
  if (const MapEntry* entry = find_entry(entries, "params")) {
    tuning.params = parse_params(reader, spec, entry->value, tuning.defaults);
  }
  if (const MapEntry* entry = find_entry(entries, "rules")) {
    for (const YAML::Node& item : reader.items(entry->value, "tuning: rules")) {
      tuning.rules.push_back(parse_rule(reader, spec, tuning.params, item));
    }
  }
  return tuning;
}

std::vector<TuningRule> parse_own_rules(const SpecReader& reader, const Spec& spec,
                                        const YAML::Node& node) {
  const std::vector<MapEntry> entries = reader.entries(node, "tuning", kTuningKeys);
  if (const MapEntry* entry = find_entry(entries, "params")) {
    reader.fail(entry->key_node, "tuning params come from the extended spec " +
                                     quoted(spec.extends) + "; a spec that extends gives rules only");
  }
  std::vector<TuningRule> rules;
  // A rule of its own must stand alone: it names every param that has no
  // default, so that a missing one fails here and not when a variant
  // first matches it.
  std::vector<std::string> required;
  for (const std::string& param : spec.tuning.params) {
    if (spec.tuning.defaults.count(param) == 0) required.push_back(param);
  }
  if (const MapEntry* entry = find_entry(entries, "rules")) {
    for (const YAML::Node& item : reader.items(entry->value, "tuning: rules")) {
      TuningRule rule = parse_rule(reader, spec, spec.tuning.params, item);
      for (const std::string& param : required) {
        if (rule.values.count(param) == 0) {
          reader.fail(item, "tuning rule does not set " + quoted(param) +
                                " (a rule of a spec that extends " + quoted(spec.extends) +
                                " names every param without a default: " + join(required, ", ") +
                                ")");
        }
      }
      rules.push_back(std::move(rule));
    }
  }
  return rules;
}

std::vector<Preset> parse_presets(const SpecReader& reader, const Spec& spec,
                                  const YAML::Node& node) {
  std::vector<Preset> presets;
  for (const MapEntry& entry : reader.named_entries(node, "presets", "preset")) {
    Preset preset;
    preset.name = entry.key;
    preset.loc = reader.location(entry.key_node);
    const std::string where = "preset " + quoted(preset.name);
    for (const MapEntry& setting : reader.entries(entry.value, where, {})) {
      if (setting.key == "doc") {
        preset.doc = reader.text(setting.value, where + ": doc");
        continue;
      }
      const FlagDecl& decl = declared_flag(reader, spec, setting, where);
      preset.flags[setting.key] = flag_value(reader, decl, setting.value);
    }
    try {
      resolve_flags(spec, preset.flags);
    } catch (const Error& error) {
      reader.fail(entry.key_node, where + ": " + error.what());
    }
    presets.push_back(std::move(preset));
  }
  return presets;
}

std::vector<MatrixEntry> parse_matrix(const SpecReader& reader, const Spec& spec,
                                      const YAML::Node& node) {
  std::vector<MatrixEntry> matrix;
  for (const YAML::Node& item : reader.items(node, "matrix")) {
    MatrixEntry entry;
    entry.loc = reader.location(item);
    for (const MapEntry& axis : reader.entries(item, "matrix entry", {})) {
      const FlagDecl& decl = declared_flag(reader, spec, axis, "matrix entry");
      entry.axes.merge(flag_alternatives(reader, axis, decl, "matrix entry"));
    }
    for (const FlagDecl& decl : spec.flags) {
      if (decl.default_value || entry.axes.count(decl.name) > 0) continue;
      reader.fail(
          item, "matrix entry does not name flag " + quoted(decl.name) + ", which has no default");
    }
    matrix.push_back(std::move(entry));
  }
  return matrix;
}

}  // namespace attnjit::detail

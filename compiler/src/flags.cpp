// Flag values: typing, domains, constraints, and full assignments.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>

#include "attnjit/error.h"
#include "attnjit/spec.h"
#include "check.h"
#include "flag_values.h"
#include "names.h"

namespace attnjit {
namespace detail {
namespace {

std::string domain_text(const FlagDecl& decl) {
  std::vector<std::string> shown;
  for (int64_t value : decl.int_values) shown.push_back(std::to_string(value));
  for (const std::string& value : decl.enum_values) shown.push_back(value);
  return join(shown, ", ");
}

bool has_decl_type(const FlagDecl& decl, const FlagValue& value) {
  switch (decl.type) {
    case FlagType::kBool:
      return std::holds_alternative<bool>(value);
    case FlagType::kInt:
      return std::holds_alternative<int64_t>(value);
    case FlagType::kEnum:
    case FlagType::kType:
      return std::holds_alternative<std::string>(value);
  }
  return false;
}

std::optional<int64_t> parse_decimal(std::string_view text) {
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (first != last && *first == '+') ++first;
  int64_t value = 0;
  const auto [end, error] = std::from_chars(first, last, value);
  if (error != std::errc() || end != last || first == last) return std::nullopt;
  return value;
}

const FlagValue* lookup(const std::vector<std::pair<std::string, FlagValue>>& flags,
                        const std::string& name) {
  for (const auto& [flag, value] : flags) {
    if (flag == name) return &value;
  }
  return nullptr;
}

std::string assignments_text(const std::map<std::string, FlagValue>& assignments) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : assignments) parts.push_back(name + "=" + to_string(value));
  return join(parts, " and ");
}

}  // namespace

std::string type_expectation(const FlagDecl& decl) {
  const std::string prefix = "flag " + quoted(decl.name) + " expects ";
  switch (decl.type) {
    case FlagType::kBool:
      return prefix + "a bool";
    case FlagType::kInt:
      return prefix + "an int";
    case FlagType::kEnum:
    case FlagType::kType:
      return prefix + "one of " + domain_text(decl);
  }
  return prefix + "?";
}

static std::string text_value_problem(const FlagDecl& decl, std::string_view text) {
  const std::string got = ", got " + quoted(text);
  switch (decl.type) {
    case FlagType::kBool:
      return "flag " + quoted(decl.name) + " expects a bool (true, false, 1 or 0)" + got +
             did_you_mean(text, {"true", "false"});
    case FlagType::kInt: {
      std::string_view digits = text;
      if (!digits.empty() && (digits.front() == '+' || digits.front() == '-')) {
        digits.remove_prefix(1);
      }
      const bool integer = !digits.empty() && std::all_of(digits.begin(), digits.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      });
      if (integer) {
        return "flag " + quoted(decl.name) + ": " + quoted(text) + " is out of range (one of " +
               domain_text(decl) + ")";
      }
      return "flag " + quoted(decl.name) + " expects an int (one of " + domain_text(decl) + ")" +
             got;
    }
    case FlagType::kEnum:
    case FlagType::kType:
      break;
  }
  return type_expectation(decl) + got;
}

std::string shown_value(const FlagValue& value) {
  if (const auto* name = std::get_if<std::string>(&value)) return quoted(*name);
  return to_string(value);
}

std::optional<std::string> value_problem(const FlagDecl& decl, const FlagValue& value) {
  if (!has_decl_type(decl, value)) return type_expectation(decl);
  if (decl.accepts(value)) return std::nullopt;
  std::string message = "flag " + quoted(decl.name) + ": " + shown_value(value) +
                        " is not one of " + domain_text(decl);
  if (const auto* name = std::get_if<std::string>(&value)) {
    message += did_you_mean(*name, decl.enum_values);
  }
  return message;
}

std::optional<FlagValue> value_from_text(const FlagDecl& decl, std::string_view text) {
  switch (decl.type) {
    case FlagType::kBool:
      if (text == "true" || text == "1") return FlagValue(true);
      if (text == "false" || text == "0") return FlagValue(false);
      return std::nullopt;
    case FlagType::kInt:
      if (auto value = parse_decimal(text)) return FlagValue(*value);
      return std::nullopt;
    case FlagType::kEnum:
    case FlagType::kType:
      return FlagValue(std::string(text));
  }
  return std::nullopt;
}

std::optional<std::string> constraint_violation(
    const Constraint& constraint, const std::vector<std::pair<std::string, FlagValue>>& flags) {
  for (const auto& [name, wanted] : constraint.when) {
    const FlagValue* actual = lookup(flags, name);
    if (actual == nullptr || *actual != wanted) return std::nullopt;
  }
  const std::string condition = assignments_text(constraint.when);
  const std::string why = constraint.why.empty() ? "" : ": " + constraint.why;
  for (const auto& [name, wanted] : constraint.require) {
    const FlagValue* actual = lookup(flags, name);
    if (actual != nullptr && *actual == wanted) continue;
    const std::string needed = name + "=" + to_string(wanted);
    if (condition.empty()) return needed + " is required" + why;
    return condition + " requires " + needed + why;
  }
  for (const auto& [name, banned] : constraint.forbid) {
    const FlagValue* actual = lookup(flags, name);
    if (actual == nullptr || *actual != banned) continue;
    const std::string forbidden = name + "=" + to_string(banned);
    if (condition.empty()) return forbidden + " is not allowed" + why;
    return condition + " forbids " + forbidden + why;
  }
  return std::nullopt;
}

std::vector<std::string> flag_names(const Spec& spec) {
  std::vector<std::string> names;
  for (const FlagDecl& decl : spec.flags) names.push_back(decl.name);
  return names;
}

}  // namespace detail

const char* to_string(FlagType type) {
  switch (type) {
    case FlagType::kBool:
      return "bool";
    case FlagType::kInt:
      return "int";
    case FlagType::kEnum:
      return "enum";
    case FlagType::kType:
      return "type";
  }
  return "?";
}

std::string to_string(const FlagValue& value) {
  if (const auto* flag = std::get_if<bool>(&value)) return *flag ? "true" : "false";
  if (const auto* number = std::get_if<int64_t>(&value)) return std::to_string(*number);
  return std::get<std::string>(value);
}

bool FlagDecl::accepts(const FlagValue& value) const {
  switch (type) {
    case FlagType::kBool:
      return std::holds_alternative<bool>(value);
    case FlagType::kInt: {
      const auto* number = std::get_if<int64_t>(&value);
      return number != nullptr &&
             std::find(int_values.begin(), int_values.end(), *number) != int_values.end();
    }
    case FlagType::kEnum:
    case FlagType::kType: {
      const auto* member = std::get_if<std::string>(&value);
      return member != nullptr &&
             std::find(enum_values.begin(), enum_values.end(), *member) != enum_values.end();
    }
  }
  return false;
}

const FlagDecl* Spec::find_flag(const std::string& name) const {
  for (const FlagDecl& decl : flags) {
    if (decl.name == name) return &decl;
  }
  return nullptr;
}

const Preset* Spec::find_preset(const std::string& name) const {
  for (const Preset& preset : presets) {
    if (preset.name == name) return &preset;
  }
  return nullptr;
}

const FlagValue& FlagSet::at(const std::string& name) const {
  const FlagValue* value = detail::lookup(values, name);
  ATTNJIT_CHECK(value != nullptr, "FlagSet::at: the flag set has no such flag");
  return *value;
}

bool FlagSet::get_bool(const std::string& name) const {
  const auto* flag = std::get_if<bool>(&at(name));
  ATTNJIT_CHECK(flag != nullptr, "FlagSet::get_bool: the flag is not a bool");
  return *flag;
}

int64_t FlagSet::get_int(const std::string& name) const {
  const auto* number = std::get_if<int64_t>(&at(name));
  ATTNJIT_CHECK(number != nullptr, "FlagSet::get_int: the flag is not an int");
  return *number;
}

const std::string& FlagSet::get_name(const std::string& name) const {
  const auto* member = std::get_if<std::string>(&at(name));
  ATTNJIT_CHECK(member != nullptr, "FlagSet::get_name: the flag is not an enum or type");
  return *member;
}

FlagSet resolve_flags(const Spec& spec, const std::map<std::string, FlagValue>& given) {
  for (const auto& [name, value] : given) {
    const FlagDecl* decl = spec.find_flag(name);
    if (decl == nullptr) {
      throw Error(ErrorKind::kFlags, "unknown flag " + detail::quoted(name) +
                                         detail::did_you_mean(name, detail::flag_names(spec)));
    }
    if (auto problem = detail::value_problem(*decl, value)) {
      throw Error(ErrorKind::kFlags, *problem);
    }
  }
  FlagSet flags;
  for (const FlagDecl& decl : spec.flags) {
    const auto it = given.find(decl.name);
    if (it != given.end()) {
      flags.values.emplace_back(decl.name, it->second);
    } else if (decl.default_value) {
      flags.values.emplace_back(decl.name, *decl.default_value);
    } else {
      throw Error(ErrorKind::kFlags,
                  "flag " + detail::quoted(decl.name) + " has no default and must be given");
    }
  }
  for (const Constraint& constraint : spec.constraints) {
    if (auto violation = detail::constraint_violation(constraint, flags.values)) {
      throw Error(ErrorKind::kFlags, *violation);
    }
  }
  return flags;
}

FlagSet resolve_preset(const Spec& spec, const std::string& preset) {
  const Preset* found = spec.find_preset(preset);
  if (found == nullptr) {
    std::vector<std::string> names;
    for (const Preset& known : spec.presets) names.push_back(known.name);
    throw Error(ErrorKind::kFlags,
                "unknown preset " + detail::quoted(preset) + detail::did_you_mean(preset, names));
  }
  return resolve_flags(spec, found->flags);
}

std::map<std::string, FlagValue> parse_flag_assignments(const Spec& spec, const std::string& text) {
  std::map<std::string, FlagValue> result;
  const auto trim = [](std::string_view part) {
    while (!part.empty() && std::isspace(static_cast<unsigned char>(part.front()))) {
      part.remove_prefix(1);
    }
    while (!part.empty() && std::isspace(static_cast<unsigned char>(part.back()))) {
      part.remove_suffix(1);
    }
    return part;
  };
  if (trim(text).empty()) return result;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string_view item = trim(std::string_view(text).substr(start, end - start));
    start = end + 1;
    const std::size_t equals = item.find('=');
    if (equals == std::string_view::npos) {
      throw Error(ErrorKind::kFlags, "expected name=value, got " + detail::quoted(item) + " in " +
                                         detail::quoted(text));
    }
    const std::string name(trim(item.substr(0, equals)));
    const std::string_view value_text = trim(item.substr(equals + 1));
    const FlagDecl* decl = spec.find_flag(name);
    if (decl == nullptr) {
      throw Error(ErrorKind::kFlags, "unknown flag " + detail::quoted(name) +
                                         detail::did_you_mean(name, detail::flag_names(spec)));
    }
    const std::optional<FlagValue> value = detail::value_from_text(*decl, value_text);
    if (!value) throw Error(ErrorKind::kFlags, detail::text_value_problem(*decl, value_text));
    if (auto problem = detail::value_problem(*decl, *value)) {
      throw Error(ErrorKind::kFlags, *problem);
    }
    if (!result.emplace(name, *value).second) {
      throw Error(ErrorKind::kFlags, "flag " + detail::quoted(name) + " is given twice");
    }
  }
  return result;
}

}  // namespace attnjit

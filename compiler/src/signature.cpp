// make_signature(): the spec's tuning rules applied to one flag set.
#include "attnjit/signature.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "attnjit/error.h"
#include "attnjit/sha256.h"
#include "check.h"
#include "names.h"

namespace attnjit {
namespace {

void check_flag_set(const Spec& spec, const FlagSet& flags) {
  const bool same_size = flags.values.size() == spec.flags.size();
  for (std::size_t i = 0; same_size && i < spec.flags.size(); ++i) {
    const FlagDecl& decl = spec.flags[i];
    if (flags.values[i].first != decl.name || !decl.accepts(flags.values[i].second)) {
      throw Error(ErrorKind::kFlags, "flag set does not match spec " + detail::quoted(spec.family) +
                                         " at flag " + detail::quoted(decl.name) +
                                         "; build it with resolve_flags()");
    }
  }
  if (!same_size) {
    throw Error(ErrorKind::kFlags, "flag set has " + std::to_string(flags.values.size()) +
                                       " flags, spec " + detail::quoted(spec.family) +
                                       " declares " + std::to_string(spec.flags.size()));
  }
}

bool rule_matches(const TuningRule& rule, const FlagSet& flags, const Target& target) {
  for (const auto& [flag, values] : rule.when) {
    if (std::find(values.begin(), values.end(), flags.at(flag)) == values.end()) return false;
  }
  if (rule.targets.empty()) return true;
  return std::find(rule.targets.begin(), rule.targets.end(), target.name()) != rule.targets.end();
}

std::string flags_text(const FlagSet& flags) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : flags.values) parts.push_back(name + "=" + to_string(value));
  return detail::join(parts, ",");
}


std::string unsupported_text(const Spec& spec, const FlagSet& flags, const Target& target,
                             const TuningRule& rule) {
  return detail::quoted(spec.family) + " has no kernel for " + flags_text(flags) + " on " +
         target.name() + ": " + rule.unsupported + " (the tuning rule at " + rule.loc.str() + ")";
}

const TuningRule* first_rule(const Spec& spec, const FlagSet& flags, const Target& target) {
  FlagSet tuned_as = flags;
  for (auto& [name, value] : tuned_as.values) {
    if (auto it = spec.tune_as.find(name); it != spec.tune_as.end()) value = it->second;
  }
  for (const TuningRule& candidate : spec.tuning.rules) {
    if (rule_matches(candidate, tuned_as, target)) return &candidate;
  }
  return nullptr;
}

}  // namespace

std::string unsupported_reason(const Spec& spec, const FlagSet& flags, const Target& target) {
  check_flag_set(spec, flags);
  const TuningRule* rule = first_rule(spec, flags, target);
  return rule != nullptr && !rule->unsupported.empty()
             ? unsupported_text(spec, flags, target, *rule)
             : std::string();
}

void check_tuning_overrides(const Spec& spec, const std::map<std::string, int64_t>& overrides) {
  for (const auto& [param, value] : overrides) {
    const auto& params = spec.tuning.params;
    if (std::find(params.begin(), params.end(), param) == params.end()) {
      throw Error(ErrorKind::kFlags, "unknown tuning param " + detail::quoted(param) +
                                         detail::did_you_mean(param, params));
    }
    if (value < std::numeric_limits<int32_t>::min() ||
        value > std::numeric_limits<int32_t>::max()) {
      throw Error(ErrorKind::kFlags, "tuning param " + detail::quoted(param) + ": " +
                                         std::to_string(value) + " is out of range for a 32-bit int");
    }
  }
}

std::string Signature::canonical() const {
  std::vector<std::string> params;
  for (const auto& [param, value] : tuning) params.push_back(param + "=" + std::to_string(value));
  FlagSet flag_set{flags};
  return family + "[" + flags_text(flag_set) + "|" + detail::join(params, ",") + "]@" +
         options.canonical();
}

std::string Signature::display_name() const {
  return family + "_" + sha256_hex(canonical()).substr(0, 8);
}

int64_t Signature::tuning_value(const std::string& param) const {
  for (const auto& [name, value] : tuning) {
    if (name == param) return value;
  }
  detail::check_failed("param in tuning", "Signature::tuning_value: no such tuning param", __FILE__,
                       __LINE__);
}

Signature make_signature(const Spec& spec, const FlagSet& flags, const CompileOptions& options,
                         const std::map<std::string, int64_t>& overrides) {
  check_flag_set(spec, flags);
  check_tuning_overrides(spec, overrides);
  // (A user spec's tune_as: the rules see those mask-shape flags as given.)
  const TuningRule* rule = first_rule(spec, flags, options.target);
  if (rule != nullptr && !rule->unsupported.empty()) {
    throw Error(ErrorKind::kFlags, unsupported_text(spec, flags, options.target, *rule));
  }
  Signature signature{spec.family, spec.entry, flags, {}, options, {}};
  bool from_rule = false;
  for (const std::string& param : spec.tuning.params) {
    if (auto it = overrides.find(param); it != overrides.end()) {
      signature.tuning.emplace_back(param, it->second);
      continue;
    }
    if (rule != nullptr) {
      if (auto it = rule->values.find(param); it != rule->values.end()) {
        signature.tuning.emplace_back(param, it->second);
        from_rule = true;
        continue;
      }
    }
    // Neither an override nor the rule (if one matches): the param's default.
    if (auto it = spec.tuning.defaults.find(param); it != spec.tuning.defaults.end()) {
      signature.tuning.emplace_back(param, it->second);
      continue;
    }
    if (rule != nullptr) {
      throw Error(ErrorKind::kFlags, "tuning param " + detail::quoted(param) +
                                         " is not set by the tuning rule at " + rule->loc.str() +
                                         " and has no override");
    }
    throw Error(ErrorKind::kFlags, "no tuning rule of " + detail::quoted(spec.family) +
                                       " matches " + flags_text(flags) + " on " +
                                       options.target.name() + " and tuning param " +
                                       detail::quoted(param) + " has no override");
  }
  // Overrides first: a compile they break is theirs, not the rule's.
  std::vector<std::string> overridden;
  for (const auto& [param, value] : signature.tuning) {
    if (overrides.count(param) != 0) overridden.push_back(param + "=" + std::to_string(value));
  }
  const std::string rule_text = from_rule ? "the tuning rule at " + rule->loc.str() : "";
  if (overridden.empty()) {
    signature.tuning_from = rule_text;
  } else {
    signature.tuning_from = "the overrides " + detail::join(overridden, ",");
    if (from_rule) signature.tuning_from += ", the other params from " + rule_text;
  }
  return signature;
}

std::map<std::string, int64_t> parse_tuning_overrides(const std::string& text,
                                                      const std::string& what) {
  std::map<std::string, int64_t> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(at, end - at);
    const size_t eq = item.find('=');
    size_t used = 0;
    int64_t value = 0;
    bool ok = eq != std::string::npos && eq > 0 && eq + 1 < item.size();
    if (ok) {
      try {
        value = std::stoll(item.substr(eq + 1), &used);
      } catch (const std::out_of_range&) {
        throw Error(ErrorKind::kArgument,
                    fmt::format("{}: '{}' is out of range for a 32-bit int", what, item));
      } catch (const std::exception&) {
        ok = false;
      }
      ok = ok && used == item.size() - eq - 1;
    }
    if (!ok) {
      throw Error(ErrorKind::kArgument,
                  fmt::format("{}: '{}' is not name=integer (e.g. block_m=128)", what, item));
    }
    if (!out.emplace(item.substr(0, eq), value).second) {
      throw Error(ErrorKind::kArgument,
                  fmt::format("{}: tuning param '{}' is given twice", what, item.substr(0, eq)));
    }
    at = end + 1;
  }
  return out;
}

}  // namespace attnjit

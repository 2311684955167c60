// Typing and checking flag values, shared by the spec parser (which
// reports with file:line:col) and resolve_flags (which reports kFlags).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attnjit/spec.h"

namespace attnjit::detail {

// "flag 'causal' expects a bool" when the value has the wrong type,
// "flag 'head_dim': 72 is not one of 64, 80, ..." when it is outside the
// domain, nullopt when `decl` accepts it.
std::optional<std::string> value_problem(const FlagDecl& decl, const FlagValue& value);
std::string type_expectation(const FlagDecl& decl);  // "flag 'causal' expects a bool"

// Types command-line text by the declaration: bools accept true/false/1/0,
// ints are decimal, enum and type members are names. nullopt if the text
// does not have the flag's type (the domain is not checked here).
std::optional<FlagValue> value_from_text(const FlagDecl& decl, std::string_view text);

// Flag values for messages: ints bare, names as given, user text quoted.
std::string shown_value(const FlagValue& value);

// nullopt when `flags` satisfy the constraint, else the message
// "mm_clamp=true requires window=true: <why>".
std::optional<std::string> constraint_violation(
    const Constraint& constraint, const std::vector<std::pair<std::string, FlagValue>>& flags);

std::vector<std::string> flag_names(const Spec& spec);

}  // namespace attnjit::detail

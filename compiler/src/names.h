// Identifier and path checks shared by the spec parser and the code
// generator, and small helpers for error messages.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attnjit::detail {

// nullopt when `name` may appear in generated code as an identifier,
// otherwise the reason it may not, e.g. "is a C++ keyword".
std::optional<std::string> identifier_problem(std::string_view name);

// nullopt when `path` is an acceptable template path (relative, only
// [A-Za-z0-9_./-], no '..' or empty component, ends in .cuh).
std::optional<std::string> template_path_problem(std::string_view path);

// Identifiers longer than this are rejected: they reach generated code.
constexpr std::size_t kMaxIdentifierLength = 128;

// `text` with control characters and non-ASCII bytes escaped (\n, \xNN),
// for messages that embed text from elsewhere (yaml-cpp's errors).
std::string escaped(std::string_view text);

// `text` in single quotes, with control characters escaped and long text
// shortened, so that hostile input cannot break a message's layout.
std::string quoted(std::string_view text);

std::size_t edit_distance(std::string_view a, std::string_view b);

// " (did you mean 'x'?)" for the closest candidate within edit distance 2,
// else "".
std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates);

std::string join(const std::vector<std::string>& parts, std::string_view sep);

}  // namespace attnjit::detail

#include "names.h"

#include <algorithm>
#include <iterator>
#include <cctype>
#include <cstdio>

namespace attnjit::detail {
namespace {

// C++20 keywords and alternative tokens: none of them may name a flag, a
// member, a parameter or an enumerator in the generated unit.
constexpr std::string_view kCxxKeywords[] = {"alignas",       "alignof",     "and",
                                             "and_eq",        "asm",         "auto",
                                             "bitand",        "bitor",       "bool",
                                             "break",         "case",        "catch",
                                             "char",          "char8_t",     "char16_t",
                                             "char32_t",      "class",       "compl",
                                             "concept",       "const",       "consteval",
                                             "constexpr",     "constinit",   "const_cast",
                                             "continue",      "co_await",    "co_return",
                                             "co_yield",      "decltype",    "default",
                                             "delete",        "do",          "double",
                                             "dynamic_cast",  "else",        "enum",
                                             "explicit",      "export",      "extern",
                                             "false",         "float",       "for",
                                             "friend",        "goto",        "if",
                                             "inline",        "int",         "long",
                                             "mutable",       "namespace",   "new",
                                             "noexcept",      "not",         "not_eq",
                                             "nullptr",       "operator",    "or",
                                             "or_eq",         "private",     "protected",
                                             "public",        "register",    "reinterpret_cast",
                                             "requires",      "return",      "short",
                                             "signed",        "sizeof",      "static",
                                             "static_assert", "static_cast", "struct",
                                             "switch",        "template",    "this",
                                             "thread_local",  "throw",       "true",
                                             "try",           "typedef",     "typeid",
                                             "typename",      "union",       "unsigned",
                                             "using",         "virtual",     "void",
                                             "volatile",      "wchar_t",     "while",
                                             "xor",           "xor_eq"};

// Names CUDA defines in every translation unit.
constexpr std::string_view kCudaBuiltins[] = {"threadIdx", "blockIdx", "blockDim", "gridDim",
                                              "warpSize"};

bool is_identifier(std::string_view name) {
  if (name.empty()) return false;
  const auto is_start = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
  };
  const auto is_rest = [&](char c) { return is_start(c) || (c >= '0' && c <= '9'); };
  if (!is_start(name.front())) return false;
  return std::all_of(name.begin() + 1, name.end(), is_rest);
}

bool starts_with_attnjit(std::string_view name) {
  constexpr std::string_view kPrefix = "attnjit";
  if (name.size() < kPrefix.size()) return false;
  for (std::size_t i = 0; i < kPrefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(name[i])) != kPrefix[i]) return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> identifier_problem(std::string_view name) {
  if (!is_identifier(name)) return "is not an identifier ([A-Za-z_][A-Za-z0-9_]*)";
  if (name.size() > kMaxIdentifierLength) {
    return "is longer than " + std::to_string(kMaxIdentifierLength) + " characters";
  }
  const auto contains = [&](const auto& list) {
    return std::find(std::begin(list), std::end(list), name) != std::end(list);
  };
  if (contains(kCxxKeywords)) return "is a C++ keyword";
  if (contains(kCudaBuiltins)) return "is a CUDA built-in name";
  const bool reserved_by_cxx = name.rfind("__", 0) == 0 || (name.size() > 1 && name[0] == '_' &&
                                                            name[1] >= 'A' && name[1] <= 'Z');
  if (reserved_by_cxx) return "is reserved (names starting with '__' or '_' and a capital)";
  if (starts_with_attnjit(name))
    return "is reserved (names starting with 'attnjit' belong to the generator)";
  return std::nullopt;
}

std::optional<std::string> template_path_problem(std::string_view path) {
  if (path.empty()) return "is empty";
  if (path.front() == '/') return "must be relative to templates/";
  const auto allowed = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' ||
           c == '-';
  };
  if (!std::all_of(path.begin(), path.end(), allowed)) {
    return "may use only [A-Za-z0-9_./-]";
  }
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    const std::string_view component = path.substr(start, end - start);
    if (component == "..") return "must not contain a '..' component";
    if (component.empty() || component == ".") return "has an empty or '.' component";
    start = end + 1;
  }
  constexpr std::string_view kSuffix = ".cuh";
  if (path.size() <= kSuffix.size() || path.substr(path.size() - kSuffix.size()) != kSuffix) {
    return "must end in .cuh";
  }
  return std::nullopt;
}

std::string escaped(std::string_view text) {
  std::string out;
  for (const char raw : text) {
    const auto c = static_cast<unsigned char>(raw);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c >= 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += raw;
    }
  }
  return out;
}

std::string quoted(std::string_view text) {
  constexpr std::size_t kMaxShown = 64;
  std::string out = "'";
  for (std::size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\\' || c == '\'') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > kMaxShown) out += "...";
  return out + "'";
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const std::size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates) {
  constexpr std::size_t kMaxDistance = 2;
  const std::string* best = nullptr;
  std::size_t best_distance = kMaxDistance + 1;
  for (const std::string& candidate : candidates) {
    const std::size_t distance = edit_distance(name, candidate);
    // A distance as large as the name itself means nothing in common.
    if (distance < best_distance && distance < name.size()) {
      best = &candidate;
      best_distance = distance;
    }
  }
  if (best == nullptr) return "";
  return " (did you mean " + quoted(*best) + "?)";
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep;
    out += parts[i];
  }
  return out;
}

}  // namespace attnjit::detail

// What generated source may look like, whatever the spec said: the proof
// that no spec text reaches a translation unit as raw text (identifiers
// are checked, values typed and printed by the generator). Shared by the
// fuzz targets (tests/fuzz) and the injection tests (tests/reliability).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <algorithm>
#include <vector>

#include "attnjit/codegen.h"
#include "attnjit/spec.h"

namespace attnjit::testing {

// nullopt when `text`, generated from `spec`, keeps to the generator's
// shape; otherwise what is wrong with it. The rules hold for any spec that
// generate_source() accepts:
// - printable ASCII and '\n' only: no NUL, no carriage return, no unicode;
// - no backslash anywhere (no escape, no line continuation);
// - no block comment (a "/*" could swallow generated code);
// - in the unit, exactly two preprocessor lines, the generated params
//   header's include and `#include "<template path>"`, whose path uses only
//   [A-Za-z0-9_./-] and has no ".." component (three for a spec with a
//   mask or score: `#include "attention/user_expr.cuh"` too);
// - in the generated params header, only the fixed lines the generator
//   writes (pragma once, the ABI types' include, the host-only guard).
// The unit's text alone:
inline std::optional<std::string> preprocessor_problem(std::string_view text,
                                                       const std::vector<std::string>& allowed,
                                                       int expected) {
  int directives = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    const std::size_t first = line.find_first_not_of(' ');
    if (first == std::string_view::npos || line[first] != '#') continue;
    ++directives;
    if (std::find(allowed.begin(), allowed.end(), line) == allowed.end()) {
      return "a preprocessor line the generator does not write: " + std::string(line);
    }
  }
  if (expected >= 0 && directives != expected) {
    return std::to_string(directives) + " preprocessor lines";
  }
  return std::nullopt;
}

inline std::optional<std::string> text_problem(std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') continue;
    if (c < 0x20 || c >= 0x7f)
      return "byte " + std::to_string(c) + " at offset " + std::to_string(i);
    if (c == '\\') return "a backslash at offset " + std::to_string(i);
  }
  if (text.find("/*") != std::string_view::npos) return "a block comment";
  return std::nullopt;
}

inline std::optional<std::string> generated_source_problem(const Spec& spec,
                                                           std::string_view text) {
  if (auto problem = text_problem(text)) return problem;
  std::vector<std::string> allowed = {"#include \"" + spec.family + "_params.h\"",
                                      "#include \"" + spec.template_path + "\""};
  // A spec with a mask or score expression also includes the functions its
  // emitted code calls.
  const bool expressions = spec.mask.has_value() || spec.score.has_value();
  if (expressions) allowed.push_back("#include \"attention/user_expr.cuh\"");
  if (auto problem = preprocessor_problem(text, allowed, expressions ? 3 : 2)) return problem;
  const std::string& path = spec.template_path;
  for (char c : path) {
    const bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                         (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '/' || c == '-';
    if (!allowed) return "the template path holds '" + std::string(1, c) + "'";
  }
  if (path.empty() || path[0] == '/') return "the template path " + path + " is absolute";
  for (std::size_t from = 0; from <= path.size();) {
    std::size_t to = path.find('/', from);
    if (to == std::string::npos) to = path.size();
    if (path.compare(from, to - from, "..") == 0) {
      return "the template path " + path + " leaves templates/";
    }
    from = to + 1;
  }
  return std::nullopt;
}

// The unit and every header generated with it.
inline std::optional<std::string> generated_source_problem(const Spec& spec,
                                                           const GeneratedSource& source) {
  if (auto problem = generated_source_problem(spec, std::string_view(source.text))) return problem;
  const std::vector<std::string> allowed = {"#pragma once", "#include \"common/abi.h\"",
                                            "#if !defined(__CUDACC_RTC__)", "#endif"};
  for (const GeneratedHeader& header : source.headers) {
    if (header.path != spec.family + "_params.h") return "a generated header " + header.path;
    if (auto problem = text_problem(header.contents)) return header.path + ": " + *problem;
    if (auto problem = preprocessor_problem(header.contents, allowed, -1)) {
      return header.path + ": " + *problem;
    }
  }
  return std::nullopt;
}

}  // namespace attnjit::testing

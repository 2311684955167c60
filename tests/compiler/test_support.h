// Helpers shared by the compiler tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "attnjit/error.h"
#include "attnjit/spec.h"

namespace attnjit::testing {

inline std::string read_text(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

inline std::string axpy_spec_path() {
  return std::string(ATTNJIT_SOURCE_DIR) + "/tests/compiler/data/axpy.yaml";
}

// "line:column" (1-based) of the first occurrence of `needle` in `text`.
inline std::string position_of(const std::string& text, const std::string& needle) {
  const std::size_t offset = text.find(needle);
  if (offset == std::string::npos) return "not found: " + needle;
  const std::size_t line_start = text.rfind('\n', offset);
  const std::size_t column = line_start == std::string::npos ? offset + 1 : offset - line_start;
  const std::size_t line =
      1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + offset, '\n'));
  return std::to_string(line) + ":" + std::to_string(column);
}

inline Spec axpy_spec() { return parse_spec(read_text(axpy_spec_path()), "axpy.yaml"); }

// The message of the Error `action` throws; a failure if it throws none or
// one of another kind.
template <class Action>
std::string error_message(Action&& action, ErrorKind kind) {
  try {
    action();
  } catch (const Error& error) {
    EXPECT_EQ(to_string(error.kind()), std::string(to_string(kind))) << error.what();
    return error.what();
  }
  ADD_FAILURE() << "expected an error of kind " << to_string(kind);
  return "";
}

// The message parse_spec() gives for `yaml`, read as "t.yaml".
inline std::string spec_error(const std::string& yaml) {
  return error_message([&] { parse_spec(yaml, "t.yaml"); }, ErrorKind::kSpec);
}

}  // namespace attnjit::testing

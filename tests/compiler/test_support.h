// Helpers shared by the compiler tests.
#pragma once

#include <gtest/gtest.h>

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

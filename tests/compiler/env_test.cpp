// env_bool: the one reader of boolean ATTNJIT_* variables.
#include "attnjit/env.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <optional>
#include <string>
#include <vector>

#include "attnjit/error.h"

namespace attnjit {
namespace {

constexpr const char* kName = "ATTNJIT_TEST_SWITCH";

struct Row {
  std::optional<std::string> value;  // nullopt: unset
  bool default_value;
  std::optional<bool> expected;  // nullopt: an error
};

void set(const std::optional<std::string>& value) {
  if (value) {
    ::setenv(kName, value->c_str(), 1);
  } else {
    ::unsetenv(kName);
  }
}

TEST(EnvBool, Table) {
  const std::vector<Row> table = {
      {std::nullopt, false, false},
      {std::nullopt, true, true},
      {"", false, false},
      {"", true, true},
      {"1", false, true},
      {"0", true, false},
      {"true", false, true},
      {"false", true, false},
      {"TRUE", false, true},
      {"False", true, false},
      {"yes", false, true},
      {"no", true, false},
      {"YeS", false, true},
      {"NO", true, false},
      {"on", false, true},
      {"off", true, false},
      {"ON", false, true},
      {"Off", true, false},
      {"2", false, std::nullopt},
      {"-1", false, std::nullopt},
      {"garbage", true, std::nullopt},
      {" 1", false, std::nullopt},
      {"1 ", false, std::nullopt},
      {"y", false, std::nullopt},
      {"n", true, std::nullopt},
      {"tru", false, std::nullopt},
      {"01", false, std::nullopt},
      {"enable", false, std::nullopt},
  };
  for (const Row& row : table) {
    set(row.value);
    const std::string shown = row.value ? "'" + *row.value + "'" : "unset";
    if (row.expected) {
      EXPECT_EQ(env_bool(kName, row.default_value), *row.expected)
          << shown << ", default " << row.default_value;
      continue;
    }
    try {
      env_bool(kName, row.default_value);
      ADD_FAILURE() << shown << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kFlags);
      EXPECT_EQ(std::string(e.what()),
                std::string(kName) + "=" + shown +
                    " is not a boolean (accepted: 1/0, true/false, yes/no, on/off in any case; "
                    "empty or unset: " +
                    (row.default_value ? "true" : "false") + ")");
    }
  }
  ::unsetenv(kName);
}

TEST(EnvBool, ControlCharactersAreEscapedInTheMessage) {
  ::setenv(kName, "1\nATTNJIT_NO_JIT=0", 1);
  try {
    env_bool(kName, false);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'1\\nATTNJIT_NO_JIT=0'"), std::string::npos) << e.what();
  }
  ::unsetenv(kName);
}

TEST(EnvText, UnsetAndEmptyAreTheSame) {
  ::unsetenv(kName);
  EXPECT_EQ(env_text(kName), "");
  ::setenv(kName, "", 1);
  EXPECT_EQ(env_text(kName), "");
  ::setenv(kName, "/some/dir", 1);
  EXPECT_EQ(env_text(kName), "/some/dir");
  ::unsetenv(kName);
}

}  // namespace
}  // namespace attnjit

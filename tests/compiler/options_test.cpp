// Compile options: NVRTC's flags, the canonical text, the environment.
#include "attnjit/options.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "attnjit/error.h"
#include "attnjit/target.h"
#include "test_support.h"

namespace attnjit {
namespace {

using testing::error_message;

CompileOptions options_for(const std::string& target) {
  CompileOptions options;
  options.target = parse_target(target);
  return options;
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_.empty()) {
      ::unsetenv(name_);
    } else {
      ::setenv(name_, old_.c_str(), 1);
    }
  }

 private:
  const char* name_;
  std::string old_;
};

TEST(CompileOptions, NvrtcFlagsAreSortedAndComplete) {
  EXPECT_EQ(options_for("sm_90a").nvrtc_flags(),
            (std::vector<std::string>{"--gpu-architecture=sm_90a", "--no-source-include",
                                      "--ptxas-options=-v", "--std=c++17", "--use_fast_math"}));
  CompileOptions options = options_for("sm_80");
  options.fast_math = false;
  options.line_info = true;
  options.max_registers = 128;
  EXPECT_EQ(options.nvrtc_flags(),
            (std::vector<std::string>{"--gpu-architecture=sm_80", "--maxrregcount=128",
                                      "--no-source-include", "--ptxas-options=-v", "--std=c++17",
                                      "-DATTNJIT_MAX_REGISTERS=128", "-lineinfo"}));
}

TEST(CompileOptions, Canonical) {
  EXPECT_EQ(options_for("sm_90a").canonical(),
            "sm_90a{emit_ptx=true,fast_math=true,line_info=false,max_registers=0}");
}

TEST(CompileOptions, FromEnvironment) {
  {
    ScopedEnv line_info("ATTNJIT_LINEINFO", "1");
    ScopedEnv registers("ATTNJIT_MAXRREG", "96");
    const CompileOptions options = CompileOptions::from_environment(parse_target("sm_86"));
    EXPECT_EQ(options.target.name(), "sm_86");
    EXPECT_TRUE(options.line_info);
    EXPECT_EQ(options.max_registers, 96);
    EXPECT_TRUE(options.fast_math);
  }
  {
    ScopedEnv line_info("ATTNJIT_LINEINFO", "0");
    ScopedEnv registers("ATTNJIT_MAXRREG", "");
    const CompileOptions options = CompileOptions::from_environment(parse_target("sm_80"));
    EXPECT_FALSE(options.line_info);
    EXPECT_EQ(options.max_registers, 0);
  }
  for (const char* yes : {"yes", "TRUE", "On"}) {
    ScopedEnv line_info("ATTNJIT_LINEINFO", yes);
    EXPECT_TRUE(CompileOptions::from_environment(parse_target("sm_80")).line_info) << yes;
  }
  {
    ScopedEnv line_info("ATTNJIT_LINEINFO", "maybe");
    EXPECT_EQ(error_message([] { CompileOptions::from_environment(parse_target("sm_80")); },
                            ErrorKind::kFlags),
              "ATTNJIT_LINEINFO='maybe' is not a boolean (accepted: 1/0, true/false, yes/no, "
              "on/off in any case; empty or unset: false)");
  }
  {
    ScopedEnv registers("ATTNJIT_MAXRREG", "300");
    EXPECT_EQ(error_message([] { CompileOptions::from_environment(parse_target("sm_80")); },
                            ErrorKind::kFlags),
              "ATTNJIT_MAXRREG='300' must be a register count from 0 (no cap) to 255");
  }
}

}  // namespace
}  // namespace attnjit

// Reading attnjit's environment variables. Booleans have one spelling for
// every ATTNJIT_* switch, so that a typo is an error rather than a quiet
// "false" (ATTNJIT_NO_JIT=2 must not allow compiling).
#pragma once

#include <string>

// The public C++ API: exported from libattnjit.so (the build hides the rest).
#pragma GCC visibility push(default)

namespace attnjit {

// The variable's value; unset and empty are the same.
std::string env_text(const char* name);

// 1/0, true/false, yes/no, on/off in any case; unset or empty give
// `default_value`. Throws Error(kFlags) naming the variable, its value and
// the accepted spellings for anything else.
bool env_bool(const char* name, bool default_value);

}  // namespace attnjit

#pragma GCC visibility pop

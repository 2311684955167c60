// Always-on checks for programmer errors (the project's rule: errors a user
// causes are messages with context, a programmer's are asserts with a
// reason). Unlike <cassert> they stay in release builds: a
// broken invariant in a code generator must never produce a silent kernel.
#pragma once

namespace attnjit::detail {

[[noreturn]] void check_failed(const char* condition, const char* reason, const char* file,
                               int line);

}  // namespace attnjit::detail

#define ATTNJIT_CHECK(condition, reason)                                       \
  do {                                                                         \
    if (!(condition)) {                                                        \
      ::attnjit::detail::check_failed(#condition, reason, __FILE__, __LINE__); \
    }                                                                          \
  } while (false)

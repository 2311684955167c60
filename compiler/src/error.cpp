#include "attnjit/error.h"

#include <cstdio>
#include <cstdlib>

#include "check.h"

namespace attnjit {

const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kSpec:
      return "spec";
    case ErrorKind::kFlags:
      return "flags";
    case ErrorKind::kCodegen:
      return "codegen";
    case ErrorKind::kCompile:
      return "compile";
    case ErrorKind::kCache:
      return "cache";
    case ErrorKind::kNoJit:
      return "no-jit";
    case ErrorKind::kDriver:
      return "driver";
    case ErrorKind::kArgument:
      return "argument";
  }
  return "unknown";
}

namespace detail {

void check_failed(const char* condition, const char* reason, const char* file, int line) {
  std::fprintf(stderr, "attnjit: internal check failed at %s:%d: %s (%s)\n", file, line, reason,
               condition);
  std::abort();
}

}  // namespace detail

}  // namespace attnjit

#include "attnjit/error.h"

namespace attnjit {

const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kSpec: return "spec";
    case ErrorKind::kFlags: return "flags";
    case ErrorKind::kCodegen: return "codegen";
    case ErrorKind::kCompile: return "compile";
    case ErrorKind::kCache: return "cache";
    case ErrorKind::kNoJit: return "no-jit";
    case ErrorKind::kDriver: return "driver";
    case ErrorKind::kArgument: return "argument";
  }
  return "unknown";
}

}  // namespace attnjit

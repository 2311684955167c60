// Errors a user can cause come back as attnjit::Error with a kind and a
// message that carries its context (file:line:column, the NVRTC log, ...).
// Programmer errors are asserts.
#pragma once

#include <stdexcept>
#include <string>

// The public C++ API: exported from libattnjit.so (the build hides the rest).
#pragma GCC visibility push(default)

namespace attnjit {

enum class ErrorKind {
  kSpec,      // malformed YAML, unknown keys, bad values (with file:line:col)
  kFlags,     // unknown flag, value outside its domain, illegal combination
  kCodegen,   // template missing, identifier check failed
  kCompile,   // NVRTC failed (message holds the log, options, dump path)
  kCache,     // cache entry or directory problem that could not be degraded
  kNoJit,     // strict no-JIT mode and the variant is in no cache
  kDriver,    // libcuda missing, no device, driver call failed
  kArgument,  // wrong tensor shape, dtype, stride, pointer at launch
};

const char* to_string(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

}  // namespace attnjit

#pragma GCC visibility pop

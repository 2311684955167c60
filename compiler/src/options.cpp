#include "attnjit/options.h"

#include <algorithm>
#include <charconv>

#include "attnjit/env.h"
#include "attnjit/error.h"
#include "names.h"

namespace attnjit {
namespace {

const char* bool_text(bool value) { return value ? "true" : "false"; }

int read_register_cap(const char* name) {
  const std::string value = env_text(name);
  if (value.empty()) return 0;
  int cap = -1;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), cap);
  if (error != std::errc() || end != value.data() + value.size() || cap < 0 || cap > 255) {
    throw Error(ErrorKind::kFlags, std::string(name) + "=" + detail::quoted(value) +
                                       " must be a register count from 0 (no cap) to 255");
  }
  return cap;
}

std::string read_fast_compile(const char* name) {
  const std::string value = env_text(name);
  if (value.empty() || value == "0") return "";
  if (value == "min" || value == "mid" || value == "max") return value;
  throw Error(ErrorKind::kFlags, std::string(name) + "=" + detail::quoted(value) +
                                     " must be min, mid or max (NVRTC's --Ofast-compile), or 0 "
                                     "for a fully optimized compile");
}

}  // namespace

std::vector<std::string> CompileOptions::nvrtc_flags() const {
  std::vector<std::string> flags = {
      "--gpu-architecture=" + target.name(),
      "--std=c++17",
      // Only the embedded headers may be included, never a file that
      // happens to sit next to the process.
      "--no-source-include",
      // ptxas reports registers, spills, stack and shared memory in the log.
      "--ptxas-options=-v",
  };
  if (fast_math) flags.push_back("--use_fast_math");
  if (line_info) flags.push_back("-lineinfo");
  if (max_registers > 0) {
    flags.push_back("--maxrregcount=" + std::to_string(max_registers));
    // Templates that move registers between warps (setmaxnreg) must know
    // the cap: their launch share is no longer the launch bound's.
    flags.push_back("-DATTNJIT_MAX_REGISTERS=" + std::to_string(max_registers));
  }
  if (!fast_compile.empty()) flags.push_back("--Ofast-compile=" + fast_compile);
  std::sort(flags.begin(), flags.end());
  return flags;
}

std::string CompileOptions::canonical() const {
  return target.name() + "{emit_ptx=" + bool_text(emit_ptx) + ",fast_math=" + bool_text(fast_math) +
         ",line_info=" + bool_text(line_info) + ",max_registers=" + std::to_string(max_registers) +
         (fast_compile.empty() ? "" : ",fast_compile=" + fast_compile) + "}";
}

CompileOptions CompileOptions::from_environment(const Target& target) {
  CompileOptions options;
  options.target = target;
  options.line_info = env_bool("ATTNJIT_LINEINFO", false);
  options.max_registers = read_register_cap("ATTNJIT_MAXRREG");
  options.fast_compile = read_fast_compile("ATTNJIT_FAST_COMPILE");
  return options;
}

}  // namespace attnjit

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
  std::sort(flags.begin(), flags.end());
  return flags;
}

std::string CompileOptions::canonical() const {
  return target.name() + "{emit_ptx=" + bool_text(emit_ptx) + ",fast_math=" + bool_text(fast_math) +
         ",line_info=" + bool_text(line_info) + ",max_registers=" + std::to_string(max_registers) +
         "}";
}

CompileOptions CompileOptions::from_environment(const Target& target) {
  CompileOptions options;
  options.target = target;
  options.line_info = env_bool("ATTNJIT_LINEINFO", false);
  options.max_registers = read_register_cap("ATTNJIT_MAXRREG");
  return options;
}

}  // namespace attnjit

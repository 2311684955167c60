// What a variant is compiled with besides its source: the target and
// NVRTC's flags (all part of the cache key), and the one reader of the
// environment variables that change code.
#pragma once

#include <string>
#include <vector>

#include "attnjit/target.h"

// The public C++ API: exported from libattnjit.so (the build hides the rest).
#pragma GCC visibility push(default)

namespace attnjit {

// Options that change the generated binary. Immutable once built; every
// field is part of the key. Environment variables that change code are read
// into this struct in one place (CompileOptions::from_environment) and
// nowhere else.
struct CompileOptions {
  Target target;
  bool line_info = false;  // -lineinfo
  bool fast_math = true;   // --use_fast_math
  int max_registers = 0;   // 0: no cap
  bool emit_ptx = true;    // keep PTX beside the cubin

  std::vector<std::string> nvrtc_flags() const;  // sorted, deterministic
  // "sm_90a{emit_ptx=true,fast_math=true,line_info=false,max_registers=0}"
  std::string canonical() const;

  // The defaults for `target`, changed by the only environment variables
  // that change code: ATTNJIT_LINEINFO (a switch read by env_bool:
  // -lineinfo) and ATTNJIT_MAXRREG (0-255, --maxrregcount; 0 means no cap).
  // Throws Error(kFlags) for a value it cannot read. Every other ATTNJIT_*
  // variable is code-neutral.
  static CompileOptions from_environment(const Target& target);
};

}  // namespace attnjit

#pragma GCC visibility pop

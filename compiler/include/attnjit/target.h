// A compilation target: "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a".
#pragma once

#include <string>
#include <vector>

// The public C++ API: exported from libattnjit.so (the build hides the rest).
#pragma GCC visibility push(default)

namespace attnjit {

struct Target {
  int sm = 90;                 // compute capability major*10 + minor
  bool arch_specific = false;  // the 'a' suffix (sm_90a: wgmma, setmaxnreg)

  std::string name() const;          // "sm_90a"
  std::string virtual_arch() const;  // "compute_90a"
  bool operator==(const Target& o) const { return sm == o.sm && arch_specific == o.arch_specific; }
  bool operator!=(const Target& o) const { return !(*this == o); }
};

// Throws Error(kFlags) for an unknown or unsupported target.
Target parse_target(const std::string& name);
std::vector<Target> supported_targets();  // sm_80, sm_86, sm_89, sm_90a
// The target a device of this compute capability runs best: 8.0 -> sm_80,
// 8.6/8.7 -> sm_86, 8.9 -> sm_89, 9.0 -> sm_90a. Devices newer than 9.0 get
// sm_90: sm_90a code runs on 9.0 only, while compute_90 PTX is forward
// compatible, so there the runtime loads the PTX and the driver compiles it.
// Throws Error(kFlags) below 8.0.
Target target_for_device(int major, int minor);

}  // namespace attnjit

#pragma GCC visibility pop

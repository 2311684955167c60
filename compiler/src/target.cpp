#include "attnjit/target.h"

#include <string>

#include "attnjit/error.h"
#include "names.h"

namespace attnjit {
namespace {

// Every target parse_target() accepts; sm_90 is kept for devices newer than
// Hopper (see target_for_device) and for portable Hopper builds.
const std::vector<Target> kKnownTargets = {
    {80, false}, {86, false}, {89, false}, {90, false}, {90, true}};

std::string known_target_names() {
  std::vector<std::string> names;
  for (const Target& target : kKnownTargets) names.push_back(target.name());
  return detail::join(names, ", ");
}

}  // namespace

std::string Target::name() const { return "sm_" + std::to_string(sm) + (arch_specific ? "a" : ""); }

std::string Target::virtual_arch() const {
  return "compute_" + std::to_string(sm) + (arch_specific ? "a" : "");
}

Target parse_target(const std::string& name) {
  for (const Target& target : kKnownTargets) {
    if (target.name() == name) return target;
  }
  throw Error(ErrorKind::kFlags, "unsupported target " + detail::quoted(name) +
                                     " (supported: " + known_target_names() + ")");
}

std::vector<Target> supported_targets() {
  return {{80, false}, {86, false}, {89, false}, {90, true}};
}

Target target_for_device(int major, int minor) {
  if (major < 8) {
    throw Error(ErrorKind::kFlags, "compute capability " + std::to_string(major) + "." +
                                       std::to_string(minor) +
                                       " is not supported (attnjit needs 8.0 or newer)");
  }
  if (major == 8) {
    // A cubin runs on devices of its major version with an equal or higher
    // minor one, so 8.7 takes the sm_86 build.
    if (minor >= 9) return {89, false};
    if (minor >= 6) return {86, false};
    return {80, false};
  }
  if (major == 9 && minor == 0) return {90, true};
  // Newer than Hopper: sm_90a code (wgmma, setmaxnreg) runs on 9.0 only, so
  // the portable sm_90 build is the closest. Its SASS does not run on
  // another major, and the runtime loads the cubin only, so such a launch
  // fails with the driver's error until a PTX fallback is added (its PTX
  // is kept in the entry and is forward compatible).
  return {90, false};
}

}  // namespace attnjit

#include "attnjit/nvrtc_version.h"

#include <nvrtc.h>

namespace attnjit {

std::string nvrtc_version() {
  int major = 0;
  int minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace attnjit

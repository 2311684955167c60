// The version of the NVRTC library attnjit runs against. Apart from the
// compiler itself so that the cache key, which covers it, does not depend on
// the compile step that runs only on a miss.
#pragma once

#include <string>

// The public C++ API: exported from libattnjit.so (the build hides the rest).
#pragma GCC visibility push(default)

namespace attnjit {

// "13.0"; "unknown" if NVRTC cannot say.
std::string nvrtc_version();

}  // namespace attnjit

#pragma GCC visibility pop

// Types that cross the host/device boundary inside a kernel's parameter
// struct (the generated <family>_params.h). Plain C++: the host compiler
// builds this header as well as NVRTC, so both lay the struct out alike.
#pragma once

namespace attnjit {

// A tensor map (TMA descriptor) as the runtime encodes it on the host: 128
// opaque bytes, 64-byte aligned, inside the __grid_constant__ parameter.
// Kernels that do not copy through the TMA ignore it.
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};

}  // namespace attnjit

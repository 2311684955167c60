// Compiles device headers of templates/ for the host, so their arithmetic
// can be tested without a GPU: the device qualifiers mean nothing here, the
// block index is a global the test sets, and the warp shuffle and vote (never
// called by the code under test) are declared. Include this, then the headers, then
// host_device_end.h.
#pragma once

#define __device__
#define __host__
#define __forceinline__ inline
inline float __shfl_xor_sync(unsigned, float value, int) { return value; }
inline int __any_sync(unsigned, int predicate) { return predicate; }  // (likewise)
struct HostDim3 {
  unsigned x, y, z;
};
inline HostDim3 blockIdx;
inline HostDim3 gridDim;  // (split_counter reads the grid's y and z)
// The bit casts device code uses.
inline float __uint_as_float(unsigned bits) {
  float f;
  __builtin_memcpy(&f, &bits, sizeof f);
  return f;
}

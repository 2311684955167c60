// FP8 (e4m3, the "fn" variant: no infinities, S.1111.111 is NaN) to the
// kernels' 16-bit element types. Every e4m3 value is exact in fp16 and in
// bf16 (3 mantissa bits; exponents 2^-9 .. 2^8), so the conversion loses
// nothing and the per-tensor scale can be applied afterwards, in fp32.
// sm_89 and later convert two values per instruction; older targets use
// integer arithmetic that never touches a subnormal float (fast-math
// flushes those).
#pragma once

#if !defined(ATTNJIT_FP8_DECODE_ONLY)
#include "common/ptx.cuh"
#include "common/types.cuh"
#endif

namespace attnjit {
namespace fp8 {

// One e4m3 byte as a float, without the hardware conversion: the value is
// (8 + m) * 2^(e - 10) for e > 0 and m * 2^-9 for e = 0, both products of
// normal floats.
__device__ __forceinline__ float e4m3_to_float(unsigned byte) {
  const unsigned e = (byte >> 3) & 15u;
  const unsigned m = byte & 7u;
  const float mant = static_cast<float>(e == 0 ? m : 8u + m);
  const float pow2 = __uint_as_float((e == 0 ? 118u : e + 117u) << 23);
  float value = mant * pow2;
  if (e == 15u && m == 7u) value = __uint_as_float(0x7fc00000u);
  return (byte & 0x80u) ? -value : value;
}

#if !defined(ATTNJIT_FP8_DECODE_ONLY)  // (the host test takes the function above only)
// Two e4m3 bytes (the low one first) as a packed pair of T (the low half
// holds the low byte's value).
template <class T>
__device__ __forceinline__ unsigned e4m3x2_to(unsigned short two) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  unsigned h2;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(two));
  if constexpr (element<T>::is_bf16) {
    float lo, hi;
    asm("{\n  .reg .f16 l, h;\n  mov.b32 {l, h}, %2;\n  cvt.f32.f16 %0, l;\n  cvt.f32.f16 %1, h;\n}"
        : "=f"(lo), "=f"(hi)
        : "r"(h2));
    return element<T>::pack(lo, hi);
  } else {
    return h2;
  }
#else
  return element<T>::pack(e4m3_to_float(two & 0xffu), e4m3_to_float(two >> 8));
#endif
}

// Sixteen e4m3 bytes (one 16-byte unit) as sixteen T: two 16-byte units,
// element order kept.
template <class T>
__device__ __forceinline__ void e4m3x16_to(const uint4_t& in, uint4_t& lo, uint4_t& hi) {
  const unsigned words[4] = {in.x, in.y, in.z, in.w};
  unsigned out[8];
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    out[2 * w] = e4m3x2_to<T>(static_cast<unsigned short>(words[w] & 0xffffu));
    out[2 * w + 1] = e4m3x2_to<T>(static_cast<unsigned short>(words[w] >> 16));
  }
  lo = uint4_t{out[0], out[1], out[2], out[3]};
  hi = uint4_t{out[4], out[5], out[6], out[7]};
}

#endif

}  // namespace fp8
}  // namespace attnjit

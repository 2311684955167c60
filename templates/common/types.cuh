// Element types and conversions, with no CUDA toolkit header (generated
// units include only the embedded headers): the packing to bf16x2/f16x2 is
// one PTX instruction.
#pragma once

#include "common/abi.h"

namespace attnjit {
namespace types {

// 16-bit storage types; arithmetic happens in fp32 registers.
struct alignas(2) bf16 {
  unsigned short bits;
};
struct alignas(2) fp16 {
  unsigned short bits;
};

}  // namespace types

template <class T>
struct element;

template <>
struct element<types::bf16> {
  static constexpr bool is_bf16 = true;
  // Packs (lo, hi) into one register, lo in the low half, round to nearest.
  static __device__ __forceinline__ unsigned pack(float lo, float hi) {
    unsigned r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
  }
};

template <>
struct element<types::fp16> {
  static constexpr bool is_bf16 = false;
  static __device__ __forceinline__ unsigned pack(float lo, float hi) {
    unsigned r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
  }
};

}  // namespace attnjit

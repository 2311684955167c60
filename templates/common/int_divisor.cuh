// Division by an int32 that is fixed for a launch (a GQA group, a spec's
// chunk size), without the hardware-less integer division routine (~20
// dependent instructions): the divisor's magic is computed once, and each
// quotient is a multiply and two shifts. For d >= 1 with l = ceil(log2 d)
// and m = ceil(2^(31 + l) / d), m lies in [2^31, 2^32) and
// m * d - 2^(31 + l) < d <= 2^l, so the error u * (m * d - 2^(31 + l)) /
// (d * 2^(31 + l)) of u * m / 2^(31 + l) against u / d stays below 1/d and
// floor(u * m / 2^(31 + l)) = floor(u / d) for every u < 2^31
// (Granlund and Montgomery's round-up method for 31-bit numerators). As
// 2u < 2^32, that is the high word of 2u * m shifted right by l.
// Plain C++17, no CUDA toolkit header: NVRTC compiles it into a unit, the
// compiler's host expression evaluator and the host tests include it too.
#pragma once

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define ATTNJIT_DIVISOR_FN __host__ __device__ __forceinline__
#else
#define ATTNJIT_DIVISOR_FN inline
#endif

namespace attnjit {

// d's magic: m in the low word, l in the high one; 0 for d <= 0, which no
// quotient below may take.
ATTNJIT_DIVISOR_FN long long divisor_magic(int d) {
  if (d <= 0) return 0;
  int l = 0;
  while ((1ll << l) < d) ++l;
  const unsigned long long m = ((1ull << (31 + l)) + static_cast<unsigned long long>(d) - 1ull) /
                               static_cast<unsigned long long>(d);
  return static_cast<long long>(m | (static_cast<unsigned long long>(l) << 32));
}

// floor(u / d) for 0 <= u < 2^31, magic = divisor_magic(d), d >= 1.
ATTNJIT_DIVISOR_FN unsigned divide_by_magic(unsigned u, long long magic) {
  const unsigned m = static_cast<unsigned>(magic);
  const unsigned l = static_cast<unsigned>(static_cast<unsigned long long>(magic) >> 32);
  const unsigned hi = static_cast<unsigned>((static_cast<unsigned long long>(u << 1) * m) >> 32);
  return hi >> l;
}

}  // namespace attnjit

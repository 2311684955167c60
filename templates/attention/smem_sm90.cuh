// Shared-memory tiles in the layout Hopper's warpgroup MMA reads through
// descriptors: a tile of rows x D elements is split into column chunks of
// kChunk elements (64, 32 or 16: the widest that divides D), stored one
// after the other; inside a chunk every row is kSwizzleBytes wide and its
// 16-byte units are XOR-swizzled by the row (the hardware's 128/64/32-byte
// swizzle). Every tile starts 1024-byte aligned. The same layout serves a
// K-major operand (Q, K: D is the reduction dim) and, for V, an MN-major one.
#pragma once

#include "common/ptx.cuh"
#include "common/wgmma.cuh"

namespace attnjit {
namespace attention {

template <int kHeadDim>
struct SwizzledRows {
  static constexpr int kChunk = kHeadDim % 64 == 0 ? 64 : kHeadDim % 32 == 0 ? 32 : 16;
  static constexpr int kSwizzleBytes = kChunk * 2;
  static constexpr int kUnits = kSwizzleBytes / 16;  // 16-byte units per swizzled row
  static constexpr int kShift = kUnits == 8 ? 0 : kUnits == 4 ? 1 : 2;
  static constexpr int kUnitsPerRow = kHeadDim / 8;  // 16-byte units per D row
  static_assert(kHeadDim % 16 == 0, "head dim must be a multiple of 16");

  // Byte offset of 16-byte unit u (elements 8u..8u+7) of row r in a tile of
  // kRows rows.
  template <int kRows>
  static __device__ __forceinline__ unsigned offset(int r, int u) {
    const int chunk = u / kUnits;
    const int unit = (u % kUnits) ^ ((r >> kShift) & (kUnits - 1));
    return static_cast<unsigned>(chunk * kRows * kSwizzleBytes + r * kSwizzleBytes + unit * 16);
  }

  // K-major operand (A = Q or B = K): rows [row0, row0 + 8n) of a kRows tile,
  // reduction columns 16 kk .. 16 kk + 15.
  template <int kRows>
  static __device__ __forceinline__ unsigned long long k_major(unsigned tile, int row0, int kk) {
    const int col = kk * 16;
    const unsigned start =
        tile + (col / kChunk) * kRows * kSwizzleBytes + row0 * kSwizzleBytes + (col % kChunk) * 2;
    return ptx::smem_descriptor<kSwizzleBytes>(start, 16, 8 * kSwizzleBytes);
  }

  // MN-major operand (B = V for O += P V): keys 16 kk .. 16 kk + 15 (the
  // reduction) of a kRows tile, all D columns (the N of the MMA).
  template <int kRows>
  static __device__ __forceinline__ unsigned long long mn_major(unsigned tile, int kk) {
    const unsigned start = tile + kk * 16 * kSwizzleBytes;
    return ptx::smem_descriptor<kSwizzleBytes>(start, kRows * kSwizzleBytes, 8 * kSwizzleBytes);
  }

  // cp.async of kRows rows into a tile at shared address `tile`. row_source(r,
  // ptr) sets the row's global address and returns false past the end
  // (those rows become zeros).
  template <int kRows, int kThreads, class T, class RowSource>
  static __device__ __forceinline__ void load_async(unsigned tile, const RowSource& row_source,
                                                    int tid) {
    // A fixed trip count (the unit count over the threads, rounded up), so
    // the loop unrolls instead of testing c < kTotal per 16-byte unit.
    constexpr int kTotal = kRows * kUnitsPerRow;
    constexpr int kIters = (kTotal + kThreads - 1) / kThreads;
    // Unrolled only for a few units per thread (short tiles): longer unrolls
    // keep more addresses live (D 192/256 went from ~220 to ~250 registers).
#pragma unroll(kIters <= 4 ? kIters : 1)
    for (int i = 0; i < kIters; ++i) {
      const int c = tid + i * kThreads;
      if (kTotal % kThreads != 0 && c >= kTotal) break;
      const int r = c / kUnitsPerRow;
      const int u = c % kUnitsPerRow;
      const T* src = nullptr;
      const bool valid = row_source(r, src);
      ptx::cp_async_16(tile + offset<kRows>(r, u), valid ? src + u * 8 : src, valid);
    }
  }
};

}  // namespace attention
}  // namespace attnjit

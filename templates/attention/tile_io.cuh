// Moving tiles between global and shared memory: 16-byte cp.async loads
// with zero fill past the end of a sequence (so padding rows are exact
// zeros, never stale data), and the 16-byte store of the output tile.
// Shared rows are padded (tile_config.cuh, padded_row_stride) so that
// ldmatrix phases do not conflict.
#pragma once

#include "attention/gqa_rows.cuh"
#include "attention/tile_config.cuh"
#include "common/ptx.cuh"

namespace attnjit {
namespace attention {

template <int kHeadDim>
struct SmemRow {
  static constexpr int kChunks = kHeadDim / 8;                 // 16-byte chunks per row
  static constexpr int kStride = padded_row_stride(kHeadDim);  // elements
  static_assert(kHeadDim % 16 == 0, "head dim must be a multiple of 16");
};

// cp.async of kRows rows of kUnits 16-byte units each. slot(r, u) is the
// shared address of unit u of row r (the layout); row_source(r, ptr) sets
// row r's global address and returns false past the end (those rows become
// zeros; ptr must still be a valid address). A fixed trip count (units over
// threads, rounded up), unrolled only for a few units per thread: longer
// unrolls keep more addresses live (they spilled D 128 mma.sync variants
// and took D 192/256 warpgroup variants to ~250 registers).
template <int kRows, int kUnits, int kThreads, class T, class Slot, class RowSource>
__device__ __forceinline__ void copy_rows_async(const Slot& slot, const RowSource& row_source,
                                                int tid) {
  constexpr int kTotal = kRows * kUnits;
  constexpr int kIters = (kTotal + kThreads - 1) / kThreads;
#pragma unroll(kIters <= 4 ? kIters : 1)
  for (int i = 0; i < kIters; ++i) {
    const int c = tid + i * kThreads;
    if (kTotal % kThreads != 0 && c >= kTotal) break;
    const int r = c / kUnits;
    const int u = c % kUnits;
    const T* src = nullptr;
    const bool valid = row_source(r, src);
    ptx::cp_async_16(slot(r, u), valid ? src + u * 8 : src, valid);
  }
}

// The same into padded shared rows (SmemRow).
template <int kRows, int kHeadDim, int kThreads, class T, class RowSource>
__device__ __forceinline__ void load_rows_async(T* smem, const RowSource& row_source, int tid) {
  using Row = SmemRow<kHeadDim>;
  copy_rows_async<kRows, Row::kChunks, kThreads, T>(
      [=](int r, int u) { return ptx::smem_addr(smem + r * Row::kStride + u * 8); }, row_source,
      tid);
}

// Rows [row0, row0 + kRows) of a [rows, stride] matrix; rows at or past
// `row_end` become zeros.
template <int kRows, int kHeadDim, int kThreads, class T>
__device__ __forceinline__ void load_tile_async(T* smem, const T* base, long long row_stride,
                                                int row0, int row_end, int tid) {
  load_rows_async<kRows, kHeadDim, kThreads>(
      smem,
      [=](int r, const T*& src) {
        const bool valid = row0 + r < row_end;
        src = valid ? base + (row0 + r) * row_stride : base;
        return valid;
      },
      tid);
}

// The query rows [row0, row0 + kRows) of a block, each at its own
// (position, head) (gqa_rows.cuh); rows at or past map.rows become zeros.
template <int kRows, int kHeadDim, int kThreads, class T, class Map>
__device__ __forceinline__ void load_query_rows_async(T* smem, const T* seq_base,
                                                      long long row_stride, long long head_stride,
                                                      const Map& map, int row0, int tid) {
  load_rows_async<kRows, kHeadDim, kThreads>(
      smem,
      [&](int r, const T*& src) {
        const int row = row0 + r;
        const bool valid = row < map.rows;
        src = valid ? seq_base + map.position(row) * row_stride + map.head(row) * head_stride
                    : seq_base;
        return valid;
      },
      tid);
}

// Copies a warp's 16 staged rows of kColumns elements (shared rows of
// kSmemStride) from shared to global memory, 16 bytes per lane and step;
// rows at or past `row_end` are not written.
template <int kColumns, int kSmemStride = SmemRow<kColumns>::kStride, class T, class Map>
__device__ __forceinline__ void store_warp_rows(T* seq_base, long long row_stride,
                                                long long head_stride, const T* smem,
                                                const Map& map, int row0, int lane) {
  constexpr int kChunks = kColumns / 8;
  static_assert(kColumns % 8 == 0 && kSmemStride >= kColumns, "whole 16-byte chunks of a row");
  constexpr int kTotal = 16 * kChunks;
#pragma unroll
  for (int c = lane; c < kTotal; c += 32) {
    const int r = c / kChunks;
    const int chunk = c % kChunks;
    const int row = row0 + r;
    if (row < map.rows) {
      const uint4_t* src = reinterpret_cast<const uint4_t*>(smem + r * kSmemStride + chunk * 8);
      *reinterpret_cast<uint4_t*>(seq_base + map.position(row) * row_stride +
                                  map.head(row) * head_stride + chunk * 8) = *src;
    }
  }
}

}  // namespace attention
}  // namespace attnjit

// Moving tiles between global and shared memory: 16-byte cp.async loads
// with zero fill past the end of a sequence (so padding rows are exact
// zeros, never stale data), and the 16-byte store of the output tile.
// Shared rows are padded by 16 bytes, which makes every ldmatrix phase hit
// 8 distinct 16-byte bank groups for all supported head dims.
#pragma once

#include "attention/rows.cuh"
#include "common/ptx.cuh"

namespace attnjit {
namespace attention {

template <int kHeadDim>
struct SmemRow {
  static constexpr int kChunks = kHeadDim / 8;  // 16-byte chunks per row
  static constexpr int kStride = kHeadDim + 8;  // elements, padded
  static_assert(kHeadDim % 16 == 0, "head dim must be a multiple of 16");
};

// Loads rows [row0, row0 + kRows) of a [rows, stride] matrix into shared
// memory; rows at or past `row_end` become zeros.
template <int kRows, int kHeadDim, int kThreads, class T>
__device__ __forceinline__ void load_tile_async(T* smem, const T* base, long long row_stride,
                                                int row0, int row_end, int tid) {
  using Row = SmemRow<kHeadDim>;
  constexpr int kTotal = kRows * Row::kChunks;
#pragma unroll
  for (int c = tid; c < kTotal; c += kThreads) {
    const int r = c / Row::kChunks;
    const int chunk = c % Row::kChunks;
    const bool valid = row0 + r < row_end;
    const T* src = valid ? base + (row0 + r) * row_stride + chunk * 8 : base;
    ptx::cp_async_16(ptx::smem_addr(smem + r * Row::kStride + chunk * 8), src, valid);
  }
}

// Loads the query rows [row0, row0 + kRows) of a block, each at its own
// (position, head) (rows.cuh); rows at or past map.rows become zeros.
template <int kRows, int kHeadDim, int kThreads, class T, class Map>
__device__ __forceinline__ void load_query_rows_async(T* smem, const T* seq_base,
                                                      long long row_stride, long long head_stride,
                                                      const Map& map, int row0, int tid) {
  using Row = SmemRow<kHeadDim>;
  constexpr int kTotal = kRows * Row::kChunks;
#pragma unroll
  for (int c = tid; c < kTotal; c += kThreads) {
    const int r = c / Row::kChunks;
    const int chunk = c % Row::kChunks;
    const int row = row0 + r;
    const bool valid = row < map.rows;
    const T* src =
        valid ? seq_base + map.position(row) * row_stride + map.head(row) * head_stride + chunk * 8
              : seq_base;
    ptx::cp_async_16(ptx::smem_addr(smem + r * Row::kStride + chunk * 8), src, valid);
  }
}

// Copies a warp's 16 staged rows from shared to global memory, 16 bytes per
// lane and step; rows at or past `row_end` are not written.
template <int kHeadDim, class T, class Map>
__device__ __forceinline__ void store_warp_rows(T* seq_base, long long row_stride,
                                                long long head_stride, const T* smem,
                                                const Map& map, int row0, int lane) {
  using Row = SmemRow<kHeadDim>;
  constexpr int kTotal = 16 * Row::kChunks;
#pragma unroll
  for (int c = lane; c < kTotal; c += 32) {
    const int r = c / Row::kChunks;
    const int chunk = c % Row::kChunks;
    const int row = row0 + r;
    if (row < map.rows) {
      const uint4_t* src = reinterpret_cast<const uint4_t*>(smem + r * Row::kStride + chunk * 8);
      *reinterpret_cast<uint4_t*>(seq_base + map.position(row) * row_stride +
                                  map.head(row) * head_stride + chunk * 8) = *src;
    }
  }
}

}  // namespace attention
}  // namespace attnjit

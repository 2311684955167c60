// Shared-memory tiles in the layout Hopper's warpgroup MMA reads through
// descriptors: a tile of rows x D elements is split into column chunks of
// kChunk elements (tile_config.cuh, swizzle_chunk), stored one after the
// other; inside a chunk every row is kSwizzleBytes wide and its 16-byte
// units are XOR-swizzled by the row (the hardware's 128/64/32-byte
// swizzle). Every tile starts 1024-byte aligned. The same layout serves a
// K-major operand (Q, K: D is the reduction dim) and, for V, an MN-major one.
#pragma once

#include "attention/swizzle.cuh"
#include "attention/tile_config.cuh"
#include "attention/tile_io.cuh"
#include "common/ptx.cuh"
#include "common/wgmma.cuh"

namespace attnjit {
namespace attention {

template <int kHeadDim>
struct SwizzledRows {
  static constexpr int kChunk = swizzle_chunk(kHeadDim);
  static constexpr int kSwizzleBytes = kChunk * 2;
  static constexpr int kUnits = kSwizzleBytes / 16;  // 16-byte units per swizzled row
  static constexpr int kUnitsPerRow = kHeadDim / 8;  // 16-byte units per D row
  static_assert(kHeadDim % 16 == 0, "head dim must be a multiple of 16");

  // Byte offset of 16-byte unit u (elements 8u..8u+7) of row r in a tile of
  // kRows rows.
  template <int kRows>
  static __device__ __forceinline__ unsigned offset(int r, int u) {
    return swizzled_offset(kRows, kSwizzleBytes, r, u);
  }

  // K-major operand (A = Q or B = K): rows [row0, row0 + 8n) of a kRows tile,
  // reduction columns 16 kk .. 16 kk + 15.
  // k_major_first is the descriptor of kk = 0; k_major_step moves it to kk
  // (a constant add, ptx::descriptor_advance).
  static __device__ __forceinline__ unsigned long long k_major_first(unsigned tile, int row0) {
    return ptx::smem_descriptor<kSwizzleBytes>(tile + row0 * kSwizzleBytes, 16, 8 * kSwizzleBytes);
  }
  template <int kRows>
  static __device__ __forceinline__ unsigned long long k_major_step(unsigned long long first,
                                                                    int kk) {
    const int col = kk * 16;
    return ptx::descriptor_advance(
        first, static_cast<unsigned>((col / kChunk) * kRows * kSwizzleBytes + (col % kChunk) * 2));
  }
  template <int kRows>
  static __device__ __forceinline__ unsigned long long k_major(unsigned tile, int row0, int kk) {
    return k_major_step<kRows>(k_major_first(tile, row0), kk);
  }

  // MN-major operand (B = V for O += P V): keys 16 kk .. 16 kk + 15 (the
  // reduction) of a kRows tile, all D columns (the N of the MMA).
  template <int kRows>
  static __device__ __forceinline__ unsigned long long mn_major_first(unsigned tile) {
    return ptx::smem_descriptor<kSwizzleBytes>(tile, kRows * kSwizzleBytes, 8 * kSwizzleBytes);
  }
  static __device__ __forceinline__ unsigned long long mn_major_step(unsigned long long first,
                                                                     int kk) {
    return ptx::descriptor_advance(first, static_cast<unsigned>(kk * 16 * kSwizzleBytes));
  }
  template <int kRows>
  static __device__ __forceinline__ unsigned long long mn_major(unsigned tile, int kk) {
    return mn_major_step(mn_major_first<kRows>(tile), kk);
  }

  // Zeros rows [first_row, kRows) of a tile, spread over kThreads threads.
  template <int kRows, int kThreads>
  static __device__ __forceinline__ void zero_rows(unsigned tile, int first_row, int tid) {
    const int units = (kRows - first_row) * kUnitsPerRow;
#pragma unroll 1
    for (int c = tid; c < units; c += kThreads) {
      ptx::st_shared_zero16(tile + offset<kRows>(first_row + c / kUnitsPerRow, c % kUnitsPerRow));
    }
  }

  // cp.async of kRows rows into a tile at shared address `tile`
  // (copy_rows_async, tile_io.cuh, in this layout).
  template <int kRows, int kThreads, class T, class RowSource>
  static __device__ __forceinline__ void load_async(unsigned tile, const RowSource& row_source,
                                                    int tid) {
    copy_rows_async<kRows, kUnitsPerRow, kThreads, T>(
        [=](int r, int u) { return tile + offset<kRows>(r, u); }, row_source, tid);
  }
};

// The V tile of a small-pages variant (TileConfig::v_block_rows): blocks
// of kBlockRows key rows one after the other, each laid out as a
// SwizzledRows tile of kBlockRows rows, which is what one TMA box of
// kBlockRows rows and all of D writes (kv_source.cuh, PagedKV). A k-step
// of the MN-major product (16 keys) lies inside one block, so its
// descriptor is that block's, with the block's rows as the leading offset
// between swizzle chunks. With kBlockRows = the tile's rows this is
// SwizzledRows' layout, addressed by the same code.
template <int kHeadDim, int kBlockRows>
struct BlockedRows {
  using Rows = SwizzledRows<kHeadDim>;
  static constexpr int kSwizzleBytes = Rows::kSwizzleBytes;
  static constexpr int kUnitsPerRow = Rows::kUnitsPerRow;
  static constexpr unsigned kBlockBytes = unsigned(kBlockRows * kHeadDim * 2);
  static_assert(kBlockRows % 16 == 0, "a block holds whole k-steps (16 keys) of P V");
  // A tile of blocks (kRows > kBlockRows): each block on a swizzle atom.
  template <int kRows>
  static constexpr bool kBlocksAligned = kRows == kBlockRows || kBlockBytes % 1024 == 0;

  // Byte offset of 16-byte unit u of row r in a tile of kRows rows.
  template <int kRows>
  static __device__ __forceinline__ unsigned offset(int r, int u) {
    if constexpr (kBlockRows == kRows) {
      return Rows::template offset<kRows>(r, u);
    } else {
      static_assert(kBlocksAligned<kRows>, "every block starts on a swizzle atom (1024 bytes)");
      return blocked_swizzled_offset(kBlockRows, kSwizzleBytes, kHeadDim, r, u);
    }
  }

  // The bytes from a tile's start to its columns from col0 on, a whole
  // number of swizzle chunks: inside each block, chunks lie kBlockRows
  // rows apart. mn_major_first of the tile's address plus this reads those
  // columns as the N of a narrower product (a warpgroup's part of D,
  // mainloop_sm90.cuh), stepping by the whole tile's blocks.
  static __device__ __forceinline__ unsigned column_offset(int col0) {
    return unsigned(col0 / Rows::kChunk) * unsigned(kBlockRows * kSwizzleBytes);
  }

  // MN-major operand (B = V for O += P V): keys 16 kk .. 16 kk + 15 of a
  // kRows tile, all D columns; first is kk = 0's, step moves it to kk (a
  // constant add).
  template <int kRows>
  static __device__ __forceinline__ unsigned long long mn_major_first(unsigned tile) {
    static_assert(kRows % kBlockRows == 0, "a tile of whole blocks");
    static_assert(kBlocksAligned<kRows>, "every block starts on a swizzle atom (1024 bytes)");
    return Rows::template mn_major_first<kBlockRows>(tile);
  }
  static __device__ __forceinline__ unsigned long long mn_major_step(unsigned long long first,
                                                                     int kk) {
    const int key = 16 * kk;
    return ptx::descriptor_advance(
        first, (key / kBlockRows) * kBlockBytes + unsigned((key % kBlockRows) * kSwizzleBytes));
  }
  template <int kRows>
  static __device__ __forceinline__ unsigned long long mn_major(unsigned tile, int kk) {
    return mn_major_step(mn_major_first<kRows>(tile), kk);
  }

  // Zeros rows [first_row, kRows) of a tile, spread over kThreads threads.
  template <int kRows, int kThreads>
  static __device__ __forceinline__ void zero_rows(unsigned tile, int first_row, int tid) {
    if constexpr (kBlockRows == kRows) {
      Rows::template zero_rows<kRows, kThreads>(tile, first_row, tid);
    } else {
      const int units = (kRows - first_row) * kUnitsPerRow;
#pragma unroll 1
      for (int c = tid; c < units; c += kThreads) {
        ptx::st_shared_zero16(tile + offset<kRows>(first_row + c / kUnitsPerRow, c % kUnitsPerRow));
      }
    }
  }
};

}  // namespace attention
}  // namespace attnjit

// GQA packing: which (query position, head) each row of a query tile
// holds. Without packing a tile is one query head over consecutive
// positions. With it, the G = Hq / Hkv query heads that share a kv head are
// interleaved: packed row R holds position R / G of head hk * G + R % G, so
// every K and V tile a block loads serves G heads, and a window spans G
// times fewer positions. The loaders, the mask's positions and the
// epilogue all go through this one mapping.
#pragma once

#include "common/int_divisor.cuh"

namespace attnjit {
namespace attention {

// pack_gqa 2 (TileConfig::unpack_long): each sequence decides. It runs
// unpacked (group 1 in its PackedRows: a query head per tile, as a prefill
// without packing does) where its unpacked tiles U are at most 9/8 of its
// packed ones P (8 U <= 9 P): always for whole tiles of one head or from 8
// x block_m queries on, never where its packed rows fit one tile (a
// decode), so the decodes beside chunks in a mixed batch keep packing and
// each of their K/V tiles serves the whole group. The launch grid has
// group x ceil(max_q / block_m) query cells per kv head, enough for either
// (grid_shape).
__device__ __forceinline__ bool runs_unpacked(int n_q, int group, int block_m) {
  const long long packed = (static_cast<long long>(n_q) * group + block_m - 1) / block_m;
  const long long unpacked = static_cast<long long>(group) * ((n_q + block_m - 1) / block_m);
  return group > 1 && n_q > 0 && 8 * unpacked <= 9 * packed;
}

template <bool kPack>
struct PackedRows {
  int group;           // heads interleaved per position (1 without packing, or unpacked)
  int head0;           // the head of member 0 of each group
  int rows;            // valid rows of this sequence: n_q * group
  long long by_group;  // divisor_magic(group) (packing only; the launch's, computed on the
                       // host): a packed tile's rows are split at every Q load, output
                       // store and row setup
  __device__ __forceinline__ int position(int row) const {
    if constexpr (kPack) {
      return static_cast<int>(divide_by_magic(static_cast<unsigned>(row), by_group));
    } else {
      return row;
    }
  }
  __device__ __forceinline__ int head(int row) const {
    if constexpr (kPack) {
      return head0 + row - position(row) * group;
    } else {
      return head0;
    }
  }
};

}  // namespace attention
}  // namespace attnjit

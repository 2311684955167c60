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

template <bool kPack>
struct PackedRows {
  int group;           // heads interleaved per position (1 without packing)
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

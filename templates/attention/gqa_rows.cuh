// GQA packing: which (query position, head) each row of a query tile
// holds. Without packing a tile is one query head over consecutive
// positions. With it, the G = Hq / Hkv query heads that share a kv head are
// interleaved: packed row R holds position R / G of head hk * G + R % G, so
// every K and V tile a block loads serves G heads, and a window spans G
// times fewer positions. The loaders, the mask's positions and the
// epilogue all go through this one mapping.
#pragma once

namespace attnjit {
namespace attention {

template <bool kPack>
struct PackedRows {
  int group;  // heads interleaved per position (1 without packing)
  int head0;  // the head of member 0 of each group
  int rows;   // valid rows of this sequence: n_q * group

  __device__ __forceinline__ int position(int row) const {
    if constexpr (kPack) {
      return row / group;
    } else {
      return row;
    }
  }
  __device__ __forceinline__ int head(int row) const {
    if constexpr (kPack) {
      return head0 + row % group;
    } else {
      return head0;
    }
  }
};

}  // namespace attention
}  // namespace attnjit

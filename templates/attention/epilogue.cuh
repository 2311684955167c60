// The end of a query tile: normalize by the softmax denominator, stage the
// warp's 16 output rows in its (now unused) Q rows of shared memory, write
// them with 16-byte stores, and write the LSE when the variant returns it.
#pragma once

#include "attention/params.cuh"
#include "attention/tile_io.cuh"
#include "common/types.cuh"

namespace attnjit {
namespace attention {

template <class C, class Softmax, int kOutBlocks, class Map>
__device__ __forceinline__ void epilogue(const Params<typename C::dtype>& prm,
                                         const Softmax& softmax, const float (&o)[kOutBlocks][4],
                                         typename C::dtype* stage, int q_begin, const Map& map,
                                         int row0, int lane) {
  using T = typename C::dtype;
  constexpr int kStride = SmemRow<C::head_dim>::kStride;
  float inv[2], lse[2];
  softmax.finish(0, inv[0], lse[0]);
  softmax.finish(1, inv[1], lse[1]);

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    unsigned* row =
        reinterpret_cast<unsigned*>(stage + (lane / 4 + 8 * r) * kStride + 2 * (lane % 4));
#pragma unroll
    for (int db = 0; db < kOutBlocks; ++db) {
      row[db * 4] = element<T>::pack(o[db][2 * r] * inv[r], o[db][2 * r + 1] * inv[r]);
    }
  }
  __syncwarp();
  store_warp_rows<C::head_dim>(prm.o + q_begin * prm.o_row_stride, prm.o_row_stride,
                               prm.o_head_stride, stage, map, row0, lane);

  if constexpr (C::return_lse) {
    if (lane % 4 == 0) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int row = row0 + lane / 4 + 8 * r;
        if (row < map.rows) {
          prm.lse[static_cast<long long>(map.head(row)) * prm.total_q + q_begin +
                  map.position(row)] = lse[r];
        }
      }
    }
  }
}

}  // namespace attention
}  // namespace attnjit

// The end of a query tile, shared by both forward paths (their output
// accumulators have the same m16n8 fragment layout): normalize by the
// softmax denominator, stage the warp's 16 output rows in shared memory the
// warp owns (its now unused Q rows), write them with 16-byte stores, and
// write the LSE when the variant returns it. Another way to finish a tile
// (e.g. partial results for a later combine) is another epilogue type.
#pragma once

#include "attention/params.cuh"
#include "attention/tile_io.cuh"
#include "common/types.cuh"

namespace attnjit {
namespace attention {

template <class C>
struct Epilogue {
  using T = typename C::dtype;
  static constexpr int kStride = SmemRow<C::head_dim>::kStride;

  // One warp's rows [row0, row0 + 16) of the work tile: its output
  // accumulators o and softmax state; `stage` is 16 padded rows of shared
  // memory.
  template <class Softmax, int kOutBlocks, class Work>
  static __device__ __forceinline__ void store(const Params<T>& prm, const Work& work,
                                               const Softmax& softmax,
                                               const float (&o)[kOutBlocks][4], T* stage, int row0,
                                               int lane) {
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
    store_warp_rows<C::head_dim>(prm.o + work.q_begin * prm.o_row_stride, prm.o_row_stride,
                                 prm.o_head_stride, stage, work.map, row0, lane);
    if constexpr (C::return_lse) store_lse(prm, work, lse, row0, lane);
  }

 private:
  // lse [Hq, total_q] of this thread's two rows (one lane per quad).
  template <class Work>
  static __device__ __forceinline__ void store_lse(const Params<T>& prm, const Work& work,
                                                   const float (&lse)[2], int row0, int lane) {
    if (lane % 4 != 0) return;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = row0 + lane / 4 + 8 * r;
      if (row < work.map.rows) {
        prm.lse[static_cast<long long>(work.map.head(row)) * prm.total_q + work.q_begin +
                work.map.position(row)] = lse[r];
      }
    }
  }
};

}  // namespace attention
}  // namespace attnjit

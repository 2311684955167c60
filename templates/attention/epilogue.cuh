// The end of a query tile, shared by both forward paths (their output
// accumulators have the same m16n8 fragment layout): normalize by the
// softmax denominator, stage the warp's 16 output rows in shared memory the
// warp owns (its now unused Q rows), write them with 16-byte stores, and
// write the LSE when the variant returns it. With split-KV a block that
// holds one part of its rows' keys writes that part (fp32, to the
// workspace) instead, and the last block of the tile to finish combines
// the parts (finish_split), so a decode is one launch.
#pragma once

#include "attention/params.cuh"
#include "attention/sinks.cuh"
#include "attention/tile_io.cuh"
#include "common/ptx.cuh"
#include "common/types.cuh"

namespace attnjit {
namespace attention {

template <class C>
struct Epilogue {
  using T = typename C::dtype;
  static constexpr int DV = value_dim<C>();  // D of o (head_dim_v, or head_dim)
  static constexpr int kStride = SmemRow<DV>::kStride;

  // One warp's rows [row0, row0 + 16) of the work tile: its output
  // accumulators o (columns [col0, col0 + 8 kOutBlocks): all of D, or the
  // part of a warpgroup that splits D) and softmax state; `stage` is 16
  // padded rows of shared memory. The warp holding column 0 writes the LSE.
  template <class Softmax, int kOutBlocks, class Work>
  static __device__ __forceinline__ void store(const Params<T>& prm, const Work& work,
                                               const Softmax& softmax,
                                               const float (&o)[kOutBlocks][4], T* stage, int row0,
                                               int lane, int col0 = 0) {
    static_assert(8 * kOutBlocks <= DV, "a warp's columns are some of o's");
    float inv[2], lse[2];
    softmax.finish(0, inv[0], lse[0]);
    softmax.finish(1, inv[1], lse[1]);
    if constexpr (fp8_kv<C>()) {
      const float v_scale = output_scale<C>(prm);
      inv[0] *= v_scale;
      inv[1] *= v_scale;
    }
    if constexpr (C::split_kv) {
      if (work.splits > 1) {
        store_part(prm, work, o, inv, lse, row0, lane, col0);
        return;
      }
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      unsigned* row = reinterpret_cast<unsigned*>(stage + (lane / 4 + 8 * r) * kStride + col0 +
                                                  2 * (lane % 4));
#pragma unroll
      for (int db = 0; db < kOutBlocks; ++db) {
        row[db * 4] = element<T>::pack(o[db][2 * r] * inv[r], o[db][2 * r + 1] * inv[r]);
      }
    }
    __syncwarp();
    store_warp_rows<8 * kOutBlocks, kStride>(prm.o + work.q_begin * prm.o_row_stride + col0,
                                             prm.o_row_stride, prm.o_head_stride, stage + col0,
                                             work.map, row0, lane);
    if constexpr (C::return_lse) {
      if (col0 == 0) store_lse(prm, work, lse, row0, lane);
    }
  }

  // Split-KV, after every warp's store(): the block that stores a tile's
  // last part combines the parts of its rows. `sync` is a barrier over the
  // block's `threads` epilogue threads (tid in [0, threads)).
  template <class Work, class Sync>
  static __device__ __forceinline__ void finish_split(const Params<T>& prm, const Work& work,
                                                      int tid, int threads, Sync sync) {
    if constexpr (C::split_kv) {
      if (work.splits > 1 && last_part(prm, work, tid, sync)) combine(prm, work, tid, threads);
    }
  }

 private:
  // A part's rows, fp32: the output normalized by the part's own sum, and
  // its LSE (-inf where the part saw no key of the row), at
  // [split, token, head] of the workspace.
  template <int kOutBlocks, class Work>
  static __device__ __forceinline__ void store_part(const Params<T>& prm, const Work& work,
                                                    const float (&o)[kOutBlocks][4],
                                                    const float (&inv)[2], const float (&lse)[2],
                                                    int row0, int lane, int col0) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = row0 + lane / 4 + 8 * r;
      if (row >= work.map.rows) continue;
      const long long slot = part_slot(prm, work, work.split, row);
      float* dst = prm.o_partial + slot * DV + col0 + 2 * (lane % 4);
#pragma unroll
      for (int db = 0; db < kOutBlocks; ++db) {
        *reinterpret_cast<float2*>(dst + db * 8) =
            make_float2(o[db][2 * r] * inv[r], o[db][2 * r + 1] * inv[r]);
      }
      if (lane % 4 == 0 && col0 == 0) prm.lse_partial[slot] = lse[r];
    }
  }

  // [split, token, head] of the workspace, for packed row `row`.
  template <class Work>
  static __device__ __forceinline__ long long part_slot(const Params<T>& prm, const Work& work,
                                                        int split, int row) {
    const long long token = work.q_begin + work.map.position(row);
    return (static_cast<long long>(split) * prm.total_q + token) * prm.num_heads_q +
           work.map.head(row);
  }

  // Counts this block's part in; true in the block that counts last (it
  // then sees every part's stores). The tile's counter (split_counter)
  // goes back to 0 for the next launch.
  template <class Work, class Sync>
  static __device__ __forceinline__ bool last_part(const Params<T>& prm, const Work& work, int tid,
                                                   Sync sync) {
    __shared__ int is_last;
    __threadfence();  // this thread's part, visible before the count
    sync();
    if (tid == 0) {
      int* counter = prm.split_counters + work.split_counter();
      const bool last = atomicAdd(counter, 1) == work.splits - 1;
      if (last) atomicExch(counter, 0);
      is_last = last;
    }
    sync();
    const bool last = is_last != 0;
    if (last) __threadfence();
    return last;
  }

  // Every row of the tile from its parts: o = sum_s w_s o_s / Z, with
  // w_s = exp(lse_s - M) and Z = sum_s w_s (+ exp(sink - M) for the null
  // logit, which enters here once); lse = M + log Z. A thread takes four
  // consecutive elements of one row; the parts are read past L1 (other
  // blocks wrote them).
  template <class Work>
  static __device__ __forceinline__ void combine(const Params<T>& prm, const Work& work, int tid,
                                                 int threads) {
    constexpr int kQuads = DV / 4;
    const int rows = work.row_end - work.row0;
    for (int i = tid; i < rows * kQuads; i += threads) {
      const int row = work.row0 + i / kQuads;
      const int c = (i % kQuads) * 4;
      float m = ptx::neg_inf();
      for (int s = 0; s < work.splits; ++s) {
        m = ptx::max(m, __ldcg(prm.lse_partial + part_slot(prm, work, s, row)));
      }
      float sink = ptx::neg_inf();
      if constexpr (Sinks<C>::kNullLogit) {
        sink = prm.sinks[work.map.head(row)];
        m = ptx::max(m, sink);
      }
      float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
      float z = 0.f;
      if (m != ptx::neg_inf()) {
        for (int s = 0; s < work.splits; ++s) {
          const long long slot = part_slot(prm, work, s, row);
          const float w = __expf(__ldcg(prm.lse_partial + slot) - m);
          if (w == 0.f) continue;  // an empty part's output is 0, never read
          const float4 part =
              __ldcg(reinterpret_cast<const float4*>(prm.o_partial + slot * DV + c));
          z += w;
          acc.x += w * part.x;
          acc.y += w * part.y;
          acc.z += w * part.z;
          acc.w += w * part.w;
        }
        if constexpr (Sinks<C>::kNullLogit) z += __expf(sink - m);
      }
      const float inv = z > 0.f ? 1.f / z : 0.f;
      const long long token = work.q_begin + work.map.position(row);
      T* dst = prm.o + token * prm.o_row_stride + work.map.head(row) * prm.o_head_stride + c;
      uint2 packed;
      packed.x = element<T>::pack(acc.x * inv, acc.y * inv);
      packed.y = element<T>::pack(acc.z * inv, acc.w * inv);
      *reinterpret_cast<uint2*>(dst) = packed;
      if constexpr (C::return_lse) {
        if (c == 0) {
          prm.lse[static_cast<long long>(work.map.head(row)) * prm.total_q + token] =
              z > 0.f ? m + __logf(z) : ptx::neg_inf();
        }
      }
    }
  }

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

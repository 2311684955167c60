// The mma.sync forward mainloop (sm_80 and later): one block's pass over
// the key tiles of its work tile. Each warp owns m_tiles m16 row tiles of
// the query tile (tile_config.cuh); K and V tiles stream through a cp.async
// ring of C::stages buffers of padded rows, one commit group per tile, so
// the copy of tile t + stages - 1 overlaps the MMAs of tile t; S = Q K^T
// and O += P V are m16n8k16 MMAs fed by ldmatrix, and Q's fragments stay in
// registers when they fit. The K/V source says where key tile kt's rows
// are (kv_source.cuh); the block's rows, mask and key range come from the
// scheduler's work tile.
#pragma once

#include "attention/logits.cuh"
#include "attention/mask.cuh"
#include "attention/params.cuh"
#include "attention/sinks.cuh"
#include "attention/softmax.cuh"
#include "attention/tile_config.cuh"
#include "attention/tile_io.cuh"
#include "common/ptx.cuh"
#include "common/types.cuh"

namespace attnjit {
namespace attention {

template <class C, class KV>
struct MainloopSm80 {
  using T = typename C::dtype;
  static constexpr TileConfig kTile = tile_config<C>();
  static constexpr int D = C::head_dim;
  static constexpr int BM = C::block_m;
  static constexpr int BN = C::block_n;
  static constexpr int kM = kTile.m_tiles;
  static constexpr int kStages = C::stages;
  static constexpr int kThreads = kTile.threads;
  static constexpr int kStride = kTile.smem_row_stride;
  static_assert(BM == 16 * kM * C::warps && kM >= 1 && kM <= 2,
                "block_m must be 16 or 32 rows per warp");
  static_assert(BN % 16 == 0, "block_n must be a multiple of 16");
  static_assert(kStages >= 2, "the pipeline needs at least two stages");
  static constexpr int kKSteps = D / 16;       // k-steps of Q K^T
  static constexpr int kScoreBlocks = BN / 8;  // n8 blocks of S
  static constexpr int kOutBlocks = D / 8;     // n8 blocks of O
  static constexpr bool kBF16 = element<T>::is_bf16;
  using Softmax =
      OnlineSoftmax<kScoreBlocks, kOutBlocks, slack_max_pays(D, BN, C::split_kv != 0)>;
  using QFragments = unsigned[kM][kTile.q_in_registers ? kKSteps : 1][4];
  using RowKeys = typename Mask<C>::RowKeys;

  // What the epilogue takes: per m16 tile, the softmax state and the output
  // accumulators of this thread's rows.
  struct Accumulators {
    Softmax softmax[kM];
    float o[kM][kOutBlocks][4];
  };

  // This thread's rows (g and g + 8 of each of the warp's m16 tiles): the
  // keys they see (edge-tile masks) and their sink logits.
  struct Rows {
    RowKeys keys[kM][2];
    float sink2[kM][2];
  };

  const Params<T>& prm;
  T* const sQ;  // the Q tile, then the K ring and the V ring (padded rows)
  T* const sK;
  T* const sV;
  const int tid, warp, lane;
  // Set by run(): this warp's first row in the Q tile, and those rows.
  int warp_row0;
  T* sQ_warp;

  __device__ __forceinline__ MainloopSm80(const Params<T>& params, unsigned char* smem, int thread)
      : prm(params),
        sQ(reinterpret_cast<T*>(smem)),
        sK(sQ + BM * kStride),
        sV(sK + kStages * BN * kStride),
        tid(thread),
        warp(thread / 32),
        lane(thread % 32) {}

  // This warp's m16 tile m of the Q tile, where the epilogue stages its
  // output (after run()).
  __device__ __forceinline__ T* q_rows(int m) const { return sQ_warp + m * 16 * kStride; }

  template <class Work>
  __device__ __forceinline__ void run(const Work& work, Accumulators& acc) {
    const KeyRange range = work.range;
    const KV kv(prm, work);  // where the work tile's keys and values are
    start_pipeline(work, kv, range);
    warp_row0 = warp * 16 * kM;
    Rows rows;
    init_rows(work, rows, acc);
    QFragments qf;
    sQ_warp = sQ + warp_row0 * kStride;
    for (int kt = range.first_tile, it = 0; kt <= range.last_tile; ++kt, ++it) {
      refill_and_wait(kv, range.last_tile, kt, it);
      if constexpr (kTile.q_in_registers) {
        if (it == 0) load_q_registers(qf);
      }
      key_tile(work, rows, qf, acc, kt, it);
    }
    // Q rows may still be landing when no key tile was visited.
    ptx::cp_async_wait<0>();
    __syncthreads();
  }

 private:
  __device__ __forceinline__ T* k_stage(int st) const { return sK + st * BN * kStride; }
  __device__ __forceinline__ T* v_stage(int st) const { return sV + st * BN * kStride; }

  // Q, then the first stages - 1 key tiles: one commit group each.
  template <class Work>
  __device__ __forceinline__ void start_pipeline(const Work& work, const KV& kv,
                                                 const KeyRange& range) {
    load_query_rows_async<BM, D, kThreads>(sQ, work.q, prm.q_row_stride, prm.q_head_stride,
                                           work.map, work.row0, tid);
    ptx::cp_async_commit();
    for (int st = 0; st < kStages - 1; ++st) {
      const int kt = range.first_tile + st;
      if (kt <= range.last_tile) {
        kv.template load_k_async<kThreads>(k_stage(st), kt, tid);
        kv.template load_v_async<kThreads>(v_stage(st), kt, tid);
      }
      ptx::cp_async_commit();
    }
  }

  // This thread's rows, and the softmax state and zero outputs they start
  // from.
  template <class Work>
  __device__ __forceinline__ void init_rows(const Work& work, Rows& rows, Accumulators& acc) const {
#pragma unroll
    for (int m = 0; m < kM; ++m) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int row = work.row0 + warp_row0 + m * 16 + lane / 4 + 8 * r;
        work.row_setup(prm, row, rows.keys[m][r], rows.sink2[m][r]);
      }
    }
#pragma unroll
    for (int m = 0; m < kM; ++m) {
      Sinks<C>::init(acc.softmax[m], rows.sink2[m], lane, work.splits == 1);
#pragma unroll
      for (int db = 0; db < kOutBlocks; ++db) {
        acc.o[m][db][0] = acc.o[m][db][1] = acc.o[m][db][2] = acc.o[m][db][3] = 0.f;
      }
    }
  }

  // Copies key tile kt + stages - 1 into the stage that tile kt - 1 left,
  // then waits until tile kt has landed for every thread.
  __device__ __forceinline__ void refill_and_wait(const KV& kv, int last_tile, int kt,
                                                  int it) const {
    const int pre = kt + kStages - 1;
    if (pre <= last_tile) {
      const int st = (it + kStages - 1) % kStages;
      kv.template load_k_async<kThreads>(k_stage(st), pre, tid);
      kv.template load_v_async<kThreads>(v_stage(st), pre, tid);
    }
    ptx::cp_async_commit();
    ptx::cp_async_wait<kStages - 1>();
    __syncthreads();
  }

  __device__ __forceinline__ void load_q_registers(QFragments& qf) const {
#pragma unroll
    for (int m = 0; m < kM; ++m) {
#pragma unroll
      for (int kk = 0; kk < kKSteps; ++kk) {
        load_q_fragment(qf[m][kk], q_rows(m), kk, lane);
      }
    }
  }

  // Key tile kt, in stage it % stages: scores, logits, softmax, P V; the
  // stage is free again for every thread at the end.
  template <class Work>
  __device__ __forceinline__ void key_tile(const Work& work, const Rows& rows, const QFragments& qf,
                                           Accumulators& acc, int kt, int it) const {
    const int st = it % kStages;
    const T* sK_st = k_stage(st);
    const T* sV_st = v_stage(st);
    const int j0 = kt * BN;
    float s[kM][kScoreBlocks][4];
    scores(s, qf, sQ_warp, sK_st, lane);
    const bool edge = work.edge_tile(prm, kt);
    const bool score_on = work.score_tile(prm, kt);
#pragma unroll
    for (int m = 0; m < kM; ++m) {
      to_logits<C>(s[m], prm, rows.sink2[m], rows.keys[m], j0, edge, score_on, lane);
      acc.softmax[m].update(s[m], acc.o[m], LogitScale<C>::score_multiplier(score_scale<C>(prm)));
    }
    accumulate(acc.o, s, sV_st, lane);
    __syncthreads();
  }

  // S = Q K^T for this warp's rows and the BN keys of the K tile.
  static __device__ __forceinline__ void scores(float (&s)[kM][kScoreBlocks][4],
                                                const QFragments& qf, const T* sQ_warp, const T* sK,
                                                int lane) {
#pragma unroll
    for (int m = 0; m < kM; ++m) {
#pragma unroll
      for (int nb = 0; nb < kScoreBlocks; ++nb) {
        s[m][nb][0] = s[m][nb][1] = s[m][nb][2] = s[m][nb][3] = 0.f;
      }
    }
#pragma unroll
    for (int kk = 0; kk < kKSteps; ++kk) {
      unsigned a[kM][4];
#pragma unroll
      for (int m = 0; m < kM; ++m) {
        if constexpr (kTile.q_in_registers) {
#pragma unroll
          for (int i = 0; i < 4; ++i) a[m][i] = qf[m][kk][i];
        } else {
          load_q_fragment(a[m], sQ_warp + m * 16 * kStride, kk, lane);
        }
      }
#pragma unroll
      for (int nb2 = 0; nb2 < BN / 16; ++nb2) {
        const int key = nb2 * 16 + (lane % 8) + (lane / 16) * 8;
        const int col = kk * 16 + ((lane / 8) % 2) * 8;
        unsigned b[4];
        ptx::warp_ldmatrix_x4(b, ptx::smem_addr(sK + key * kStride + col));
#pragma unroll
        for (int m = 0; m < kM; ++m) {
          ptx::warp_mma_16816<kBF16>(s[m][2 * nb2], a[m], b[0], b[1]);
          ptx::warp_mma_16816<kBF16>(s[m][2 * nb2 + 1], a[m], b[2], b[3]);
        }
      }
    }
  }

  // A fragment of rows 0-15, columns 16kk..16kk+15 of an m16 tile of Q.
  static __device__ __forceinline__ void load_q_fragment(unsigned (&a)[4], const T* sQ_tile, int kk,
                                                         int lane) {
    const int row = (lane % 8) + ((lane / 8) % 2) * 8;
    const int col = kk * 16 + (lane / 16) * 8;
    ptx::warp_ldmatrix_x4(a, ptx::smem_addr(sQ_tile + row * kStride + col));
  }

  // O += P V, P taken from the probabilities in s (packed to T).
  static __device__ __forceinline__ void accumulate(float (&o)[kM][kOutBlocks][4],
                                                    const float (&s)[kM][kScoreBlocks][4],
                                                    const T* sV, int lane) {
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      unsigned a[kM][4];
#pragma unroll
      for (int m = 0; m < kM; ++m) pack_p_fragment<T>(a[m], s[m], kk);
#pragma unroll
      for (int db2 = 0; db2 < D / 16; ++db2) {
        const int key = kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8;
        const int col = db2 * 16 + (lane / 16) * 8;
        unsigned b[4];
        ptx::warp_ldmatrix_x4_trans(b, ptx::smem_addr(sV + key * kStride + col));
#pragma unroll
        for (int m = 0; m < kM; ++m) {
          ptx::warp_mma_16816<kBF16>(o[m][2 * db2], a[m], b[0], b[1]);
          ptx::warp_mma_16816<kBF16>(o[m][2 * db2 + 1], a[m], b[2], b[3]);
        }
      }
    }
  }
};

}  // namespace attention
}  // namespace attnjit

// Varlen prefill attention on tensor cores, one block per (query tile,
// query head, sequence). Two forward paths share the tiling, masks, sinks,
// softmax and epilogue: mma.sync m16n8k16 (sm_80 and later; each warp owns
// 16 or 32 query rows, K and V tiles stream through a cp.async pipeline)
// and, with the tuning parameter wgmma = 1 on sm_90a, warpgroup MMAs
// (prefill_sm90.cuh). Entry points for the generated unit (specs/README.md,
// "template contract"): attention_prefill_traits<C> and
// attention_prefill_body<C>.
#pragma once

#include "attention/epilogue.cuh"
#include "attention/gqa_rows.cuh"
#include "attention/logits.cuh"
#include "attention/mask.cuh"
#include "attention/params.cuh"
#include "attention/sinks.cuh"
#include "attention/softmax.cuh"
#include "attention/tile_config.cuh"
#include "attention/tile_io.cuh"
#include "attention/tile_scheduler.cuh"
#include "common/ptx.cuh"
#include "common/types.cuh"
// The warpgroup path (and its 40 KB of generated wrappers) only where it
// can run: NVRTC defines the feature macro for sm_90a.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define ATTNJIT_HAS_WGMMA 1
#include "attention/prefill_sm90.cuh"
#else
#define ATTNJIT_HAS_WGMMA 0
#endif

namespace attnjit {

// Threads and shared memory per block come from the tile configuration
// (tile_config.cuh), the same function the runtime reads.
template <class C>
struct attention_prefill_traits {
  static_assert(ATTNJIT_HAS_WGMMA || C::wgmma == 0, "wgmma = 1 needs the sm_90a target");
  static constexpr unsigned threads = attention::tile_config<C>().threads;
  static constexpr unsigned smem_bytes = attention::tile_config<C>().smem_bytes;
  static constexpr unsigned min_blocks = C::min_blocks;  // blocks per SM to fit
};

namespace attention {

template <class C>
struct Forward {
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
  using Softmax = OnlineSoftmax<kScoreBlocks, kOutBlocks>;
  using QFragments = unsigned[kM][kTile.q_in_registers ? kKSteps : 1][4];

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
      for (int m = 0; m < kM; ++m) {
        a[m][0] = element<T>::pack(s[m][2 * kk][0], s[m][2 * kk][1]);
        a[m][1] = element<T>::pack(s[m][2 * kk][2], s[m][2 * kk][3]);
        a[m][2] = element<T>::pack(s[m][2 * kk + 1][0], s[m][2 * kk + 1][1]);
        a[m][3] = element<T>::pack(s[m][2 * kk + 1][2], s[m][2 * kk + 1][3]);
      }
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

template <class C>
__device__ void forward(const Params<typename C::dtype>& prm) {
  using F = Forward<C>;
  using T = typename C::dtype;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);
  T* sK = sQ + F::BM * F::kStride;
  T* sV = sK + F::kStages * F::BN * F::kStride;

  using Scheduler = TileScheduler<C, F::BM, F::BN>;
  typename Scheduler::Work work;
  if (!Scheduler::get(prm, work)) return;
  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;
  const auto& map = work.map;
  const KeyRange range = work.range;
  const int q_begin = work.q_begin, n_k = work.n_k, row0 = work.row0;
  const T *q = work.q, *k = work.k, *v = work.v;

  load_query_rows_async<F::BM, F::D, F::kThreads>(sQ, q, prm.q_row_stride, prm.q_head_stride, map,
                                                  row0, tid);
  ptx::cp_async_commit();
  for (int st = 0; st < F::kStages - 1; ++st) {
    const int kt = range.first_tile + st;
    if (kt <= range.last_tile) {
      load_tile_async<F::BN, F::D, F::kThreads>(sK + st * F::BN * F::kStride, k, prm.k_row_stride,
                                                kt * F::BN, n_k, tid);
      load_tile_async<F::BN, F::D, F::kThreads>(sV + st * F::BN * F::kStride, v, prm.v_row_stride,
                                                kt * F::BN, n_k, tid);
    }
    ptx::cp_async_commit();
  }

  // This thread's rows: g and g + 8 of each of the warp's m16 tiles, with
  // the keys they see and their sink logits.
  const int warp_row0 = warp * 16 * F::kM;
  typename Mask<C>::RowKeys keys[F::kM][2];
  float sink2[F::kM][2];
#pragma unroll
  for (int m = 0; m < F::kM; ++m) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      work.row_setup(prm, row0 + warp_row0 + m * 16 + lane / 4 + 8 * r, keys[m][r], sink2[m][r]);
    }
  }

  typename F::Softmax softmax[F::kM];
  float o[F::kM][F::kOutBlocks][4];
#pragma unroll
  for (int m = 0; m < F::kM; ++m) {
    Sinks<C>::init(softmax[m], sink2[m], lane);
#pragma unroll
    for (int db = 0; db < F::kOutBlocks; ++db) {
      o[m][db][0] = o[m][db][1] = o[m][db][2] = o[m][db][3] = 0.f;
    }
  }
  typename F::QFragments qf;
  T* sQ_warp = sQ + warp_row0 * F::kStride;

  for (int kt = range.first_tile, it = 0; kt <= range.last_tile; ++kt, ++it) {
    const int pre = kt + F::kStages - 1;
    if (pre <= range.last_tile) {
      const int st = (it + F::kStages - 1) % F::kStages;
      load_tile_async<F::BN, F::D, F::kThreads>(sK + st * F::BN * F::kStride, k, prm.k_row_stride,
                                                pre * F::BN, n_k, tid);
      load_tile_async<F::BN, F::D, F::kThreads>(sV + st * F::BN * F::kStride, v, prm.v_row_stride,
                                                pre * F::BN, n_k, tid);
    }
    ptx::cp_async_commit();
    ptx::cp_async_wait<F::kStages - 1>();
    __syncthreads();
    if constexpr (F::kTile.q_in_registers) {
      if (it == 0) {
#pragma unroll
        for (int m = 0; m < F::kM; ++m) {
#pragma unroll
          for (int kk = 0; kk < F::kKSteps; ++kk) {
            F::load_q_fragment(qf[m][kk], sQ_warp + m * 16 * F::kStride, kk, lane);
          }
        }
      }
    }
    const int st = it % F::kStages;
    const T* sK_st = sK + st * F::BN * F::kStride;
    const T* sV_st = sV + st * F::BN * F::kStride;
    const int j0 = kt * F::BN;

    float s[F::kM][F::kScoreBlocks][4];
    F::scores(s, qf, sQ_warp, sK_st, lane);
    const bool edge = !work.mask.interior(work.p_first, work.p_last, j0, F::BN);
#pragma unroll
    for (int m = 0; m < F::kM; ++m) {
      to_logits<C>(s[m], prm, sink2[m], keys[m], j0, edge, lane);
      softmax[m].update(s[m], o[m], LogitScale<C>::score_multiplier(prm.scale));
    }
    F::accumulate(o, s, sV_st, lane);
    __syncthreads();
  }
  // Q rows may still be landing when no key tile was visited.
  ptx::cp_async_wait<0>();
  __syncthreads();

#pragma unroll
  for (int m = 0; m < F::kM; ++m) {
    Epilogue<C>::store(prm, work, softmax[m], o[m], sQ_warp + m * 16 * F::kStride,
                       row0 + warp_row0 + m * 16, lane);
  }
}

}  // namespace attention

template <class C>
__device__ __forceinline__ void attention_prefill_body(
    const typename C::dtype* q, const typename C::dtype* k, const typename C::dtype* v,
    typename C::dtype* o, float* lse, const float* sinks, const int* cu_seqlens_q,
    const int* cu_seqlens_k, const int* mm_span_offsets, const int* mm_spans,
    long long q_row_stride, long long q_head_stride, long long k_row_stride,
    long long k_head_stride, long long v_row_stride, long long v_head_stride,
    long long o_row_stride, long long o_head_stride, int num_heads_q, int num_heads_kv, int total_q,
    float scale, float softcap, int window_left, int window_right, const TensorMap& k_map,
    const TensorMap& v_map) {
  const attention::Params<typename C::dtype> prm{q,
                                                 k,
                                                 v,
                                                 o,
                                                 lse,
                                                 sinks,
                                                 cu_seqlens_q,
                                                 cu_seqlens_k,
                                                 mm_span_offsets,
                                                 mm_spans,
                                                 q_row_stride,
                                                 q_head_stride,
                                                 k_row_stride,
                                                 k_head_stride,
                                                 v_row_stride,
                                                 v_head_stride,
                                                 o_row_stride,
                                                 o_head_stride,
                                                 num_heads_q,
                                                 num_heads_kv,
                                                 total_q,
                                                 scale,
                                                 softcap,
                                                 window_left,
                                                 window_right,
                                                 &k_map,
                                                 &v_map};
#if ATTNJIT_HAS_WGMMA
  if constexpr (C::wgmma != 0) {
    attention::forward_sm90<C>(prm);
    return;
  }
#endif
  if constexpr (C::wgmma == 0) attention::forward<C>(prm);
}

}  // namespace attnjit

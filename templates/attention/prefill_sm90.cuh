// The Hopper (sm_90a) forward path: the same tiling, masks, sinks and
// epilogue as the mma.sync path, with the two products on warpgroup MMAs.
// Each warpgroup (4 warps) owns 64 query rows; S = Q K^T reads Q and K from
// swizzled shared memory through descriptors, O += P V takes P from
// registers (the S accumulators, packed) and V from shared memory,
// MN-major. K and V stream through a cp.async pipeline of C::stages
// buffers, written in the swizzled layout (smem_sm90.cuh).
#pragma once

#include "attention/epilogue.cuh"
#include "attention/logits.cuh"
#include "attention/mask.cuh"
#include "attention/params.cuh"
#include "attention/rows.cuh"
#include "attention/sinks.cuh"
#include "attention/smem_sm90.cuh"
#include "attention/softmax.cuh"
#include "attention/tile_io.cuh"
#include "common/ptx.cuh"
#include "common/types.cuh"
#include "common/wgmma.cuh"

namespace attnjit {
namespace attention {

template <class C>
struct WarpgroupLayout {
  static constexpr int D = C::head_dim;
  static constexpr int BM = C::block_m;
  static constexpr int BN = C::block_n;
  static constexpr int kStages = C::stages;
  static constexpr int kWarpgroups = C::warps / 4;
  static_assert(C::warps % 4 == 0 && C::warps >= 4, "wgmma needs whole warpgroups (warps % 4 == 0)");
  static_assert(BM == 64 * kWarpgroups, "wgmma: block_m must be 64 rows per warpgroup");
  static_assert(BN % 16 == 0 && BN <= 256, "wgmma: block_n must be a multiple of 16, at most 256");
  static_assert(kStages >= 2, "the pipeline needs at least two stages");
  using Rows = SwizzledRows<D>;
  static constexpr unsigned kQBytes = BM * D * 2;
  static constexpr unsigned kTileBytes = BN * D * 2;
  // 1024 bytes of slack to align the tiles; the epilogue stages each warp's
  // 16 output rows (padded rows, tile_io.cuh) over Q and the first K tile.
  static constexpr unsigned kTilesBytes = kQBytes + 2 * kStages * kTileBytes;
  static constexpr unsigned kStageOutBytes = BM * SmemRow<D>::kStride * 2;
  static constexpr unsigned smem_bytes =
      1024 + (kTilesBytes > kStageOutBytes ? kTilesBytes : kStageOutBytes);
};

template <class C>
__device__ void forward_sm90(const Params<typename C::dtype>& prm) {
  using L = WarpgroupLayout<C>;
  using T = typename C::dtype;
  using Rows = typename L::Rows;
  constexpr int D = L::D, BM = L::BM, BN = L::BN, kStages = L::kStages;
  constexpr int kThreads = C::warps * 32;
  constexpr bool kBF16 = element<T>::is_bf16;
  constexpr int kScoreBlocks = BN / 8, kOutBlocks = D / 8;
  using Softmax = OnlineSoftmax<kScoreBlocks, kOutBlocks>;

  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const unsigned raw = ptx::smem_addr(smem_raw);
  const unsigned pad = (1024u - (raw & 1023u)) & 1023u;
  const unsigned sQ = raw + pad;
  const unsigned sK = sQ + L::kQBytes;
  const unsigned sV = sK + kStages * L::kTileBytes;

  constexpr bool kPack = C::pack_gqa != 0;
  const int b = blockIdx.z;
  const int group = prm.num_heads_q / prm.num_heads_kv;
  const int hk = kPack ? static_cast<int>(blockIdx.y) : static_cast<int>(blockIdx.y) / group;
  const int q_begin = prm.cu_seqlens_q[b];
  const int n_q = prm.cu_seqlens_q[b + 1] - q_begin;
  const int k_begin = prm.cu_seqlens_k[b];
  const int n_k = prm.cu_seqlens_k[b + 1] - k_begin;
  const RowMap<kPack> map{kPack ? group : 1, kPack ? hk * group : static_cast<int>(blockIdx.y),
                          kPack ? n_q * group : n_q};
  const int m_tiles = (map.rows + BM - 1) / BM;
  const int m_tile = m_tiles - 1 - static_cast<int>(blockIdx.x);  // longest tiles first
  if (m_tile < 0) return;

  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int row0 = m_tile * BM;
  const int row_end = ptx::imin(row0 + BM, map.rows);
  const int shift = n_k - n_q;  // bottom-right alignment

  const T* q = prm.q + q_begin * prm.q_row_stride;
  const T* k = prm.k + k_begin * prm.k_row_stride + hk * prm.k_head_stride;
  const T* v = prm.v + k_begin * prm.v_row_stride + hk * prm.v_head_stride;

  Mask<C> mask{n_k, prm.window_left, prm.window_right, nullptr, 0};
  if constexpr (C::mm_prefix) {
    const int s0 = prm.mm_span_offsets[b];
    mask.spans = prm.mm_spans + 2 * s0;
    mask.span_count = prm.mm_span_offsets[b + 1] - s0;
  }
  const int p_first = map.position(row0) + shift;
  const int p_last = map.position(row_end - 1) + shift;
  const KeyRange range = mask.key_range(p_first, p_last, BN);

  Rows::template load_async<BM, kThreads, T>(
      sQ,
      [&](int r, const T*& src) {
        const int row = row0 + r;
        if (row >= map.rows) {
          src = q;
          return false;
        }
        src = q + map.position(row) * prm.q_row_stride + map.head(row) * prm.q_head_stride;
        return true;
      },
      tid);
  ptx::cp_async_commit();
  auto load_kv = [&](int kt, int st) {
    const int key0 = kt * BN;
    auto rows_of = [&](const T* base, long long stride) {
      return [=](int r, const T*& src) {
        const bool valid = key0 + r < n_k;
        src = valid ? base + (key0 + r) * stride : base;
        return valid;
      };
    };
    Rows::template load_async<BN, kThreads, T>(sK + st * L::kTileBytes,
                                               rows_of(k, prm.k_row_stride), tid);
    Rows::template load_async<BN, kThreads, T>(sV + st * L::kTileBytes,
                                               rows_of(v, prm.v_row_stride), tid);
  };
  for (int st = 0; st < kStages - 1; ++st) {
    if (range.first_tile + st <= range.last_tile) load_kv(range.first_tile + st, st);
    ptx::cp_async_commit();
  }

  // This thread's two rows (g, g + 8 of its warp's 16).
  const int warp_row = row0 + warp * 16;
  int p[2], span_lo[2], span_hi[2];
  float sink2[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = warp_row + lane / 4 + 8 * r;
    p[r] = map.position(row) + shift;
    mask.span_of(p[r], span_lo[r], span_hi[r]);
    sink2[r] = Sinks<C>::logit2(prm.sinks, map.head(row));
  }
  Softmax softmax;
  Sinks<C>::init(softmax, sink2, lane);
  float o[kOutBlocks][4];
#pragma unroll
  for (int db = 0; db < kOutBlocks; ++db) o[db][0] = o[db][1] = o[db][2] = o[db][3] = 0.f;
  const int wg_row0 = (warp / 4) * 64;  // this warpgroup's first row in the Q tile

  for (int kt = range.first_tile, it = 0; kt <= range.last_tile; ++kt, ++it) {
    const int pre = kt + kStages - 1;
    if (pre <= range.last_tile) load_kv(pre, (it + kStages - 1) % kStages);
    ptx::cp_async_commit();
    ptx::cp_async_wait<kStages - 1>();
    ptx::fence_proxy_async_shared();
    __syncthreads();
    const int st = it % kStages;
    const unsigned sK_st = sK + st * L::kTileBytes;
    const unsigned sV_st = sV + st * L::kTileBytes;
    const int j0 = kt * BN;

    float s[kScoreBlocks][4];
    ptx::warpgroup_arrive();
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      ptx::WarpgroupMma<BN>::template ss<kBF16>(s, Rows::template k_major<BM>(sQ, wg_row0, kk),
                                                Rows::template k_major<BN>(sK_st, 0, kk), kk > 0);
    }
    ptx::warpgroup_commit();
    ptx::warpgroup_wait<0>();
    ptx::fence_operands(s);

    const bool edge = !mask.interior(p_first, p_last, j0, BN);
    to_logits<C>(s, prm, mask, sink2, p, span_lo, span_hi, j0, edge, lane);
    softmax.update(s, o);

    unsigned a[BN / 16][4];
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      a[kk][0] = element<T>::pack(s[2 * kk][0], s[2 * kk][1]);
      a[kk][1] = element<T>::pack(s[2 * kk][2], s[2 * kk][3]);
      a[kk][2] = element<T>::pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
      a[kk][3] = element<T>::pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
    }
    ptx::fence_operands(o);
    ptx::warpgroup_arrive();
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      ptx::WarpgroupMma<D>::template rs<kBF16>(o, a[kk], Rows::template mn_major<BN>(sV_st, kk),
                                               1);
    }
    ptx::warpgroup_commit();
    ptx::warpgroup_wait<0>();
    ptx::fence_operands(o);
    __syncthreads();
  }
  ptx::cp_async_wait<0>();
  __syncthreads();

  T* stage = reinterpret_cast<T*>(smem_raw + pad) + warp * 16 * SmemRow<D>::kStride;
  epilogue<C>(prm, softmax, o, stage, q_begin, map, warp_row, lane);
}

}  // namespace attention
}  // namespace attnjit

// The Hopper (sm_90a) forward path: the same tiling, masks, sinks and
// epilogue as the mma.sync path, with the two products on warpgroup MMAs.
// Each warpgroup (4 warps) owns 64 query rows; S = Q K^T reads Q and K from
// swizzled shared memory through descriptors, O += P V takes P from
// registers (the S accumulators, packed) and V from shared memory,
// MN-major. K and V stream through a cp.async pipeline of C::stages
// buffers, written in the swizzled layout (smem_sm90.cuh).
#pragma once

#include "attention/block.cuh"
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
  static_assert(C::warps % 4 == 0 && C::warps >= 4,
                "wgmma needs whole warpgroups (warps % 4 == 0)");
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

  BlockWork<C, BM, BN> work;
  if (!work.init(prm)) return;
  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;
  const auto& map = work.map;
  const KeyRange range = work.range;
  const int q_begin = work.q_begin, n_k = work.n_k, row0 = work.row0;
  const T *q = work.q, *k = work.k, *v = work.v;

  // cp.async groups: the first holds Q and the first key tile, then one
  // group per key tile (empty past the last), so waiting for tile t is
  // waiting until at most (tiles issued after t) groups are pending.
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
  // Tile kt's K and V buffers: slot (kt - first) mod kStages.
  auto slot_of = [&](int kt) { return ((kt - range.first_tile) % kStages) * L::kTileBytes; };
  auto load_tile = [&](int kt) {
    if (kt > range.last_tile) return;
    const int key0 = kt * BN;
    auto rows_of = [&](const T* base, long long stride) {
      return [=](int r, const T*& src) {
        const bool valid = key0 + r < n_k;
        src = valid ? base + (key0 + r) * stride : base;
        return valid;
      };
    };
    Rows::template load_async<BN, kThreads, T>(sK + slot_of(kt), rows_of(k, prm.k_row_stride), tid);
    Rows::template load_async<BN, kThreads, T>(sV + slot_of(kt), rows_of(v, prm.v_row_stride), tid);
  };

  // This thread's two rows (g, g + 8 of its warp's 16).
  const int warp_row = row0 + warp * 16;
  typename Mask<C>::RowKeys keys[2];  // the keys each row sees
  float sink2[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    work.row_setup(prm, warp_row + lane / 4 + 8 * r, keys[r], sink2[r]);
  }
  Softmax softmax;
  Sinks<C>::init(softmax, sink2, lane);
  float o[kOutBlocks][4];
#pragma unroll
  for (int db = 0; db < kOutBlocks; ++db) o[db][0] = o[db][1] = o[db][2] = o[db][3] = 0.f;
  const int wg_row0 = (warp / 4) * 64;  // this warpgroup's first row in the Q tile

  // S = Q K^T of tile kt, issued (not waited for).
  auto issue_scores = [&](float(&s)[kScoreBlocks][4], int kt) {
    const unsigned tile = sK + slot_of(kt);
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      ptx::WarpgroupMma<BN>::template ss<kBF16>(s, Rows::template k_major<BM>(sQ, wg_row0, kk),
                                                Rows::template k_major<BN>(tile, 0, kk), kk > 0);
    }
  };
  // O += P V of tile kt, issued.
  auto issue_pv = [&](const unsigned(&a)[BN / 16][4], int kt) {
    const unsigned tile = sV + slot_of(kt);
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      ptx::WarpgroupMma<D>::template rs<kBF16>(o, a[kk], Rows::template mn_major<BN>(tile, kk), 1);
    }
  };
  const float multiplier = LogitScale<C>::score_multiplier(prm.scale);
  // Scores of tile kt -> probabilities, and the output's rescale factor.
  auto softmax_tile = [&](float(&s)[kScoreBlocks][4], int kt, float(&correction)[2]) {
    const int j0 = kt * BN;
    const bool edge = !work.mask.interior(work.p_first, work.p_last, j0, BN);
    to_logits<C>(s, prm, sink2, keys, j0, edge, lane);
    softmax.update_scores(s, correction, multiplier);
  };
  // Probabilities -> the A fragments of P V.
  auto pack_p = [&](unsigned(&a)[BN / 16][4], const float(&s)[kScoreBlocks][4]) {
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      a[kk][0] = element<T>::pack(s[2 * kk][0], s[2 * kk][1]);
      a[kk][1] = element<T>::pack(s[2 * kk][2], s[2 * kk][3]);
      a[kk][2] = element<T>::pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
      a[kk][3] = element<T>::pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
    }
  };

  if constexpr (kStages == 2) {
    // Two buffers: each tile's two products run back to back.
    load_tile(range.first_tile);
    ptx::cp_async_commit();
    for (int kt = range.first_tile; kt <= range.last_tile; ++kt) {
      load_tile(kt + 1);
      ptx::cp_async_commit();
      ptx::cp_async_wait<1>();
      ptx::fence_proxy_async_shared();
      __syncthreads();
      float s[kScoreBlocks][4];
      ptx::warpgroup_arrive();
      issue_scores(s, kt);
      ptx::warpgroup_commit();
      ptx::warpgroup_wait<0>();
      ptx::fence_operands(s);
      float correction[2];
      softmax_tile(s, kt, correction);
      Softmax::rescale(o, correction);
      unsigned a[BN / 16][4];
      pack_p(a, s);
      ptx::fence_operands(o);
      ptx::warpgroup_arrive();
      issue_pv(a, kt);
      ptx::warpgroup_commit();
      ptx::warpgroup_wait<0>();
      ptx::fence_operands(o);
      __syncthreads();
    }
  } else {
    // Three or more buffers: Q K^T of tile t and P V of tile t - 1 are in
    // flight together, and the softmax of tile t overlaps P V (t - 1); the
    // output is rescaled once that has landed. Tiles t - 1 and t are
    // resident, tile t + kStages - 2 is loading.
    for (int st = 0; st < kStages - 1; ++st) {
      load_tile(range.first_tile + st);
      ptx::cp_async_commit();
    }
    unsigned a[BN / 16][4];
    if (range.first_tile <= range.last_tile) {
      ptx::cp_async_wait<kStages - 2>();
      ptx::fence_proxy_async_shared();
      __syncthreads();
      float s[kScoreBlocks][4];
      ptx::warpgroup_arrive();
      issue_scores(s, range.first_tile);
      ptx::warpgroup_commit();
      ptx::warpgroup_wait<0>();
      ptx::fence_operands(s);
      float correction[2];
      softmax_tile(s, range.first_tile, correction);  // o is still 0
      pack_p(a, s);
    }
    for (int kt = range.first_tile + 1; kt <= range.last_tile; ++kt) {
      ptx::cp_async_wait<kStages - 3>();
      ptx::fence_proxy_async_shared();
      __syncthreads();  // every warpgroup is done with tile kt - 2's buffer
      load_tile(kt + kStages - 2);
      ptx::cp_async_commit();
      float s[kScoreBlocks][4];
      ptx::fence_operands(o);
      ptx::fence_operands(a);
      ptx::warpgroup_arrive();
      issue_scores(s, kt);
      ptx::warpgroup_commit();
      issue_pv(a, kt - 1);
      ptx::warpgroup_commit();
      ptx::warpgroup_wait<1>();
      ptx::fence_operands(s);
      float correction[2];
      softmax_tile(s, kt, correction);
      ptx::warpgroup_wait<0>();
      ptx::fence_operands(o);
      ptx::fence_operands(a);
      Softmax::rescale(o, correction);
      pack_p(a, s);
    }
    if (range.first_tile <= range.last_tile) {
      ptx::fence_operands(o);
      ptx::fence_operands(a);
      ptx::warpgroup_arrive();
      issue_pv(a, range.last_tile);
      ptx::warpgroup_commit();
      ptx::warpgroup_wait<0>();
      ptx::fence_operands(o);
    }
  }
  ptx::cp_async_wait<0>();
  __syncthreads();

  T* stage = reinterpret_cast<T*>(smem_raw + pad) + warp * 16 * SmemRow<D>::kStride;
  epilogue<C>(prm, softmax, o, stage, q_begin, map, warp_row, lane);
}

}  // namespace attention
}  // namespace attnjit

// The Hopper (sm_90a) forward path: the same tiling, masks, sinks and
// epilogue as the mma.sync path, with the two products on warpgroup MMAs
// and the key and value tiles copied by the TMA. The block is C::warps
// consumer warps (whole warpgroups, 64 query rows each) and one producer
// warp. The producer streams K and V tiles into a ring of C::stages
// buffers, written in the swizzled layout wgmma reads (smem_sm90.cuh); each
// buffer has a "full" mbarrier (the copy's bytes landed) and an "empty" one
// (every consumer warp is done with it), separately for K and V, so a K
// buffer is refilled as soon as its Q K^T is done. Consumers never
// synchronize with each other inside the key loop. S = Q K^T reads Q and K
// through descriptors; O += P V takes P from registers (the S
// accumulators, packed) and V MN-major.
#pragma once

#include "attention/epilogue.cuh"
#include "attention/gqa_rows.cuh"
#include "attention/logits.cuh"
#include "attention/mask.cuh"
#include "attention/params.cuh"
#include "attention/sinks.cuh"
#include "attention/smem_sm90.cuh"
#include "attention/softmax.cuh"
#include "attention/tile_config.cuh"
#include "attention/tile_io.cuh"
#include "attention/tile_scheduler.cuh"
#include "common/ptx.cuh"
#include "common/tma.cuh"
#include "common/types.cuh"
#include "common/wgmma.cuh"

namespace attnjit {
namespace attention {

template <class C>
struct WarpgroupLayout {
  static constexpr TileConfig kTile = tile_config<C>();
  static constexpr int D = C::head_dim;
  static constexpr int BM = C::block_m;
  static constexpr int BN = C::block_n;
  static constexpr int kStages = C::stages;
  static_assert(C::warps % 4 == 0 && C::warps >= 4,
                "wgmma needs whole warpgroups (warps % 4 == 0)");
  static_assert(BM == 64 * kTile.warpgroups, "wgmma: block_m must be 64 rows per warpgroup");
  static_assert(BN % 16 == 0 && BN <= 256, "wgmma: block_n must be a multiple of 16, at most 256");
  static_assert(kStages >= 2, "the pipeline needs at least two stages");
  static constexpr int kConsumerThreads = kTile.consumer_threads;
  // Registers (tile_config.cuh): the producer gives some back, the
  // consumers take them.
  static constexpr bool kRebalance = kTile.rebalance;
  static constexpr int kProducerRegisters = kTile.producer_registers;
  static constexpr int kConsumerRegisters = kTile.consumer_registers;
  using Rows = SwizzledRows<D>;
  static_assert(Rows::kChunk == kTile.tma_chunk, "the TMA box is one swizzle chunk wide");
  static constexpr unsigned kQBytes = kTile.q_tile_bytes;
  static constexpr unsigned kTileBytes = kTile.kv_tile_bytes;
  static constexpr unsigned kChunkBytes = kTile.tma_box_bytes;  // one TMA box
  // The tiles from a 1024-byte aligned base, then the mbarriers.
  static constexpr unsigned kDataBytes = kTile.barrier_offset;
};

// The mbarrier ring: tile i of a block (counted from its first) uses stage
// i mod stages; the n-th use of a stage completes phase n of its barriers,
// whose parity the waiter names.
template <int kStages>
struct TileRing {
  unsigned full_k, full_v, empty_k, empty_v;  // shared addresses of barrier arrays

  __device__ __forceinline__ explicit TileRing(unsigned base)
      : full_k(base),
        full_v(base + 8 * kStages),
        empty_k(base + 16 * kStages),
        empty_v(base + 24 * kStages) {}
  static __device__ __forceinline__ int stage(int i) { return i % kStages; }
  static __device__ __forceinline__ unsigned parity(int i) { return unsigned(i / kStages) & 1u; }
  // Tile i's barrier in the array at `bars`.
  static __device__ __forceinline__ unsigned at(unsigned bars, int i) {
    return bars + 8u * unsigned(stage(i));
  }
};

template <class C>
__device__ void forward_sm90(const Params<typename C::dtype>& prm) {
  using L = WarpgroupLayout<C>;
  using T = typename C::dtype;
  using Rows = typename L::Rows;
  using Ring = TileRing<L::kStages>;
  constexpr int D = L::D, BM = L::BM, BN = L::BN, kStages = L::kStages;
  constexpr int kConsumerThreads = L::kConsumerThreads;
  constexpr bool kBF16 = element<T>::is_bf16;
  constexpr int kScoreBlocks = BN / 8, kOutBlocks = D / 8;
  using Softmax = OnlineSoftmax<kScoreBlocks, kOutBlocks>;

  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const unsigned raw = ptx::smem_addr(smem_raw);
  const unsigned pad = (1024u - (raw & 1023u)) & 1023u;
  const unsigned sQ = raw + pad;
  const unsigned sK = sQ + L::kQBytes;
  const unsigned sV = sK + kStages * L::kTileBytes;
  const Ring ring(sQ + L::kDataBytes);

  typename TileScheduler<C, BM, BN>::Work work;
  if (!TileScheduler<C, BM, BN>::get(prm, work)) return;
  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;
  const KeyRange range = work.range;
  const int first = range.first_tile, last = range.last_tile;

  if (tid == 0) {
#pragma unroll 1
    for (int st = 0; st < kStages; ++st) {
      ptx::mbarrier_init(Ring::at(ring.full_k, st), 1);
      ptx::mbarrier_init(Ring::at(ring.full_v, st), 1);
      ptx::mbarrier_init(Ring::at(ring.empty_k, st), C::warps);
      ptx::mbarrier_init(Ring::at(ring.empty_v, st), C::warps);
    }
    ptx::fence_mbarrier_init();
  }
  __syncthreads();

  if (warp >= C::warps) {
    if constexpr (L::kRebalance) ptx::setmaxnreg_dec<L::kProducerRegisters>();
    // The producer: one lane of the warpgroup issues every copy. A tile is
    // D / kChunk boxes of kChunk columns for K, then the same for V; K of
    // tile i waits for the consumers to finish Q K^T of tile i - stages, V
    // for P V of that tile.
    if (warp == C::warps && lane == 0) {
      ptx::prefetch_tensor_map(&prm.k_map);
      ptx::prefetch_tensor_map(&prm.v_map);
      auto copy = [&](const TensorMap* map, unsigned tile, unsigned full, int row) {
        ptx::mbarrier_arrive_expect_tx(full, L::kTileBytes);
#pragma unroll
        for (int c = 0; c < D / Rows::kChunk; ++c) {
          ptx::tma_load_3d(tile + c * L::kChunkBytes, map, full, c * Rows::kChunk, work.hk, row);
        }
      };
#pragma unroll 1
      for (int kt = first; kt <= last; ++kt) {
        const int i = kt - first;
        const unsigned tile = Ring::stage(i) * L::kTileBytes;
        const int row = work.k_begin + kt * BN;
        if (i >= kStages) ptx::mbarrier_wait(Ring::at(ring.empty_k, i), Ring::parity(i) ^ 1u);
        copy(&prm.k_map, sK + tile, Ring::at(ring.full_k, i), row);
        if (i >= kStages) ptx::mbarrier_wait(Ring::at(ring.empty_v, i), Ring::parity(i) ^ 1u);
        copy(&prm.v_map, sV + tile, Ring::at(ring.full_v, i), row);
      }
    }
    return;
  }

  // The consumers. Q: cp.async by every consumer thread.
  if constexpr (L::kRebalance) ptx::setmaxnreg_inc<L::kConsumerRegisters>();
  const auto& map = work.map;
  const int q_begin = work.q_begin, row0 = work.row0;
  const T* q = work.q;
  Rows::template load_async<BM, kConsumerThreads, T>(
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

  ptx::cp_async_wait<0>();
  ptx::fence_proxy_async_shared();
  ptx::named_barrier_sync(1, kConsumerThreads);  // Q is in shared memory

  auto wait_full = [&](unsigned full, int kt) {
    const int i = kt - first;
    ptx::mbarrier_wait(Ring::at(full, i), Ring::parity(i));
  };
  // This warp is done reading tile kt's buffer (its MMAs have completed).
  auto release = [&](unsigned empty, int kt) {
    __syncwarp();
    if (lane == 0) ptx::mbarrier_arrive(Ring::at(empty, kt - first));
  };
  auto tile_of = [&](int kt) { return Ring::stage(kt - first) * L::kTileBytes; };
  // The TMA copies whole tiles: in the one that holds the sequence's last
  // key, the rows past it are the next sequence's values or whatever the
  // buffer holds past its used rows. Their P is exactly 0, but 0 * Inf or
  // NaN is NaN, so those V rows are zeroed (as cp.async's zero fill did)
  // before P V reads the tile. K needs nothing: masked scores are replaced.
  const int tail_tile = work.n_k % BN != 0 ? work.n_k / BN : -1;
  auto wait_v = [&](int kt) {
    wait_full(ring.full_v, kt);
    if (kt == tail_tile) {
      Rows::template zero_rows<BN, kConsumerThreads>(sV + tile_of(kt), work.n_k - kt * BN, tid);
      ptx::fence_proxy_async_shared();
      ptx::named_barrier_sync(1, kConsumerThreads);
    }
  };
  // S = Q K^T of tile kt, issued (not waited for).
  auto issue_scores = [&](float(&s)[kScoreBlocks][4], int kt) {
    const unsigned tile = sK + tile_of(kt);
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      ptx::WarpgroupMma<BN>::template ss<kBF16>(s, Rows::template k_major<BM>(sQ, wg_row0, kk),
                                                Rows::template k_major<BN>(tile, 0, kk), kk > 0);
    }
  };
  // O += P V of tile kt, issued.
  auto issue_pv = [&](const unsigned(&a)[BN / 16][4], int kt) {
    const unsigned tile = sV + tile_of(kt);
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

  // Q K^T of tile t and P V of tile t - 1 are in flight together, and the
  // softmax of tile t overlaps P V (t - 1); the output is rescaled once
  // that has landed.
  unsigned a[BN / 16][4];
  if (first <= last) {
    wait_full(ring.full_k, first);
    float s[kScoreBlocks][4];
    ptx::warpgroup_arrive();
    issue_scores(s, first);
    ptx::warpgroup_commit();
    ptx::warpgroup_wait<0>();
    ptx::fence_operands(s);
    release(ring.empty_k, first);
    float correction[2];
    softmax_tile(s, first, correction);  // o is still 0
    pack_p(a, s);
  }
#pragma unroll 1
  for (int kt = first + 1; kt <= last; ++kt) {
    wait_full(ring.full_k, kt);
    wait_v(kt - 1);
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
    release(ring.empty_k, kt);
    float correction[2];
    softmax_tile(s, kt, correction);
    ptx::warpgroup_wait<0>();
    ptx::fence_operands(o);
    ptx::fence_operands(a);
    release(ring.empty_v, kt - 1);
    Softmax::rescale(o, correction);
    pack_p(a, s);
  }
  if (first <= last) {
    wait_v(last);
    ptx::fence_operands(o);
    ptx::fence_operands(a);
    ptx::warpgroup_arrive();
    issue_pv(a, last);
    ptx::warpgroup_commit();
    ptx::warpgroup_wait<0>();
    ptx::fence_operands(o);
  }
  // Every consumer is done with Q and the tiles before any stages its
  // output over them.
  ptx::named_barrier_sync(1, kConsumerThreads);

  T* stage = reinterpret_cast<T*>(smem_raw + pad) + warp * 16 * SmemRow<D>::kStride;
  Epilogue<C>::store(prm, work, softmax, o, stage, warp_row, lane);
}

}  // namespace attention
}  // namespace attnjit

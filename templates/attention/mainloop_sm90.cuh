// The Hopper (sm_90a) forward mainloop: the same tiling, masks, sinks and
// softmax as the mma.sync path, with the two products on warpgroup MMAs
// and the key and value tiles copied by the TMA. A producer warpgroup (one
// lane of it) streams K and V tiles into a ring of C::stages buffers, in the
// swizzled layout wgmma reads (smem_sm90.cuh); each buffer has a "full"
// mbarrier (the copy's bytes landed) and an "empty" one (every consumer
// warp is done with it), separately for K and V, so a K buffer is refilled
// as soon as its Q K^T is done (TileRing). The consumer warpgroups (64
// query rows each) never synchronize with each other inside the key loop:
// S = Q K^T reads Q and K through descriptors, O += P V takes P from
// registers (the S accumulators, packed) and V MN-major, and Q K^T of tile
// t is in flight with P V of tile t - 1. The K/V source says where a key
// tile's rows are (kv_source.cuh); forward_sm90.cuh runs the two roles.
#pragma once

#include "attention/logits.cuh"
#include "attention/mask.cuh"
#include "attention/params.cuh"
#include "attention/sinks.cuh"
#include "attention/smem_sm90.cuh"
#include "attention/softmax.cuh"
#include "attention/tile_config.cuh"
#include "attention/tile_io.cuh"
#include "attention/tile_walk.cuh"
#include "common/ptx.cuh"
#include "common/tma.cuh"
#include "common/types.cuh"
#include "common/wgmma.cuh"

namespace attnjit {
namespace attention {

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

  // By one thread, before the block's first barrier: a full barrier
  // completes on the producer's arrival and its copy's bytes, an empty one
  // on the arrival of every consumer warp.
  // kFullArrivals: 1 (the TMA producer lane, with the copy's bytes) or
  // the producer warpgroup's threads (fp8 K/V, converted by all of them).
  template <int kConsumerWarps, int kFullArrivals = 1>
  __device__ __forceinline__ void init() const {
#pragma unroll 1
    for (int st = 0; st < kStages; ++st) {
      ptx::mbarrier_init(at(full_k, st), kFullArrivals);
      ptx::mbarrier_init(at(full_v, st), kFullArrivals);
      ptx::mbarrier_init(at(empty_k, st), kConsumerWarps);
      ptx::mbarrier_init(at(empty_v, st), kConsumerWarps);
    }
    ptx::fence_mbarrier_init();
  }

  // Until tile i has landed in its buffer (`full` is full_k or full_v).
  static __device__ __forceinline__ void wait_full(unsigned full, int i) {
    ptx::mbarrier_wait(at(full, i), parity(i));
  }
  // Until the consumers are done with tile i - stages, the buffer's
  // previous tile (`empty` is empty_k or empty_v).
  static __device__ __forceinline__ void wait_empty(unsigned empty, int i) {
    ptx::mbarrier_wait(at(empty, i), parity(i) ^ 1u);
  }
  // This warp is done reading tile i's buffer (its MMAs have completed).
  static __device__ __forceinline__ void release(unsigned empty, int i, int lane) {
    __syncwarp();
    if (lane == 0) ptx::mbarrier_arrive(at(empty, i));
  }
};

template <class C, class KV>
struct MainloopSm90 {
  using T = typename C::dtype;
  static constexpr TileConfig kTile = tile_config<C>();
  static constexpr int D = C::head_dim;   // of q and k
  static constexpr int DV = kTile.dv;     // of v and o
  static constexpr int BM = C::block_m;
  static constexpr int BN = C::block_n;
  static constexpr int kStages = C::stages;
  static_assert(C::warps % 4 == 0 && C::warps >= 4,
                "wgmma needs whole warpgroups (warps % 4 == 0)");
  // Warpgroups that split D (kDSplit 2) share their 64 rows.
  static constexpr int kDSplit = kTile.d_split;
  static_assert(BM * kDSplit == 64 * kTile.warpgroups,
                "wgmma: block_m must be 64 rows per warpgroup (per two warpgroups past D 256)");
  static_assert(D <= kMaxHeadDimWgmma, "wgmma: head dim at most 512");
  // The columns of O, and of the scores' reduction, that one warpgroup owns.
  static constexpr int kDPart = D / kDSplit;
  static_assert(kDPart <= 256, "one warpgroup's part of D is at most 256 columns");
  static_assert(kDSplit == 1 || DV == D, "split D: v as wide as q and k");
  static_assert(DV <= D, "v no wider than q and k");
  static_assert(BN % 16 == 0 && BN <= 256, "wgmma: block_n must be a multiple of 16, at most 256");
  static_assert(kStages >= 2, "the pipeline needs at least two stages");
  // (A split variant's epilogue flag takes 1024 bytes of static shared
  // memory, with alignment, beside the tiles: tile_config.cuh's
  // set_blocks_per_sm counts it too.)
  static_assert(kTile.smem_bytes + (C::split_kv ? 1024u : 0u) <= kMaxSmemPerBlockSm90,
                "the tiles need more shared memory than a block may have (227 KiB; a split "
                "variant's epilogue takes 1 KiB)");
  // The MMA descriptors step by adding to their 14-bit start field (address
  // / 16, ptx::descriptor_advance), which cannot carry below 2^18 bytes.
  static_assert(kMaxSmemPerBlockSm90 + 1024u < (1u << 18),
                "every shared address of a block fits a descriptor's start field");
  static constexpr int kConsumerThreads = kTile.consumer_threads;
  static constexpr int kScoreBlocks = BN / 8;  // n8 blocks of S
  static constexpr int kOutBlocks = DV / kDSplit / 8;  // n8 blocks of this warpgroup's O
  static constexpr bool kBF16 = element<T>::is_bf16;
  using Rows = SwizzledRows<D>;
  static_assert(Rows::kChunk == kTile.tma_chunk, "the TMA box is one swizzle chunk wide");
  // V's layout: Rows', or blocks of 16 keys (small_pages; TileConfig::v_block_rows).
  using VRows = BlockedRows<DV, kTile.v_block_rows>;
  static_assert(kDPart % Rows::kChunk == 0, "a warpgroup's part of D is whole swizzle chunks");
  static_assert(SwizzledRows<DV>::kChunk == Rows::kChunk,
                "v's rows are swizzled in the chunks of q's and k's (one TMA box width)");
  static_assert(!fp8_kv<C>() || DV == D, "fp8 K/V: v as wide as k");
  using Ring = TileRing<kStages>;
  using Softmax =
      OnlineSoftmax<kScoreBlocks, kOutBlocks, slack_max_pays(D, BN, C::split_kv != 0)>;
  using RowKeys = typename Mask<C>::RowKeys;
  using KvSource = KV;

  // Consumer warp w's 16 rows of the tile: the w-th, or (kDSplit 2, two
  // warpgroups over one 64-row slice) the (w % 4)-th.
  static __device__ __forceinline__ int row_warp(int w) { return kDSplit > 1 ? w % 4 : w; }

  // Shared memory from a 1024-byte aligned base: Q, the K ring, the V ring
  // (swizzled), the ring's barriers past them (tile_config.cuh). The
  // epilogue stages output rows over Q and the first tiles. (fp8 K/V: the
  // raw ring at kTile.staging_offset; kDSplit 2: the scores' exchange at
  // kTile.exchange_offset, both from q.)
  struct SharedTiles {
    unsigned char* raw;
    unsigned pad;  // raw + pad is 1024-byte aligned
    unsigned q, k, v;
    unsigned staging;  // fp8 K/V: the raw tiles, K then V per stage
    Ring ring;

    __device__ __forceinline__ explicit SharedTiles(unsigned char* smem, unsigned raw_address)
        : raw(smem),
          pad((1024u - (raw_address & 1023u)) & 1023u),
          q(raw_address + pad),
          k(q + kTile.q_tile_bytes),
          v(k + kStages * kTile.kv_tile_bytes),
          staging(q + kTile.staging_offset),
          ring(q + kTile.barrier_offset) {}

    // Tile i's buffer in the K ring at `tiles` (or, tile_v, the V ring).
    static __device__ __forceinline__ unsigned tile(unsigned tiles, int i) {
      return tiles + Ring::stage(i) * kTile.kv_tile_bytes;
    }
    static __device__ __forceinline__ unsigned tile_v(unsigned tiles, int i) {
      return tiles + Ring::stage(i) * kTile.v_tile_bytes;
    }
    // 16 padded rows (SmemRow) for warp w's output, over Q (the warps of
    // warpgroups that split D stage the same rows, each its columns).
    __device__ __forceinline__ T* output_rows(int w) const {
      return reinterpret_cast<T*>(raw + pad) + row_warp(w) * 16 * SmemRow<DV>::kStride;
    }
  };

  // This thread's rows (g and g + 8 of its warp's 16): the keys they see
  // (edge-tile masks) and their sink logits.
  struct RowState {
    RowKeys keys[2];
    float sink2[2];
  };

  // The producer: the threads of the producer warpgroup the source names
  // (KV::issues_copies) issue every copy, K of tile i once the consumers
  // are done with Q K^T of tile i - stages, V once they are done with its
  // P V (contiguous K/V: lane 0 alone; pages: every lane of a warp, which
  // hold its window on the block table, one of them issuing). kCopies:
  // what this warp copies, K and V (one producer warp), or K alone or V
  // alone (kTile.producer_warps 2: a warp for each, walking the tiles
  // apart, each ring with its own barriers).
  enum Copies { kKeysAndValues, kKeys, kValues };
  struct Producer {
    template <Copies kCopies = kKeysAndValues, class Work>
    static __device__ __forceinline__ void run(const SharedTiles& smem, const KV& kv,
                                               const Params<T>& prm, const Work& work, int lane) {
      if (lane == 0) kv.prefetch_maps();
      typename KV::Pages pages;
      typename Work::Walk walk;
#pragma unroll 1
      for (work.walk_start(prm, walk); walk.on(); work.walk_next(prm, walk)) {
        const int kt = walk.kt;
        const int i = walk.tile().i;
        const unsigned tile = Ring::stage(i) * kTile.kv_tile_bytes;  // in the K ring
        const unsigned tile_v = kTile.v_tile_bytes == kTile.kv_tile_bytes
                                    ? tile  // (the same in either ring)
                                    : Ring::stage(i) * kTile.v_tile_bytes;
        if constexpr (kCopies != kValues) {
          if (i >= kStages) Ring::wait_empty(smem.ring.empty_k, i);
          kv.tma_load_k(smem.k + tile, Ring::at(smem.ring.full_k, i), kt, lane, pages);
        }
        if constexpr (kCopies != kKeys) {
          if (i >= kStages) Ring::wait_empty(smem.ring.empty_v, i);
          kv.tma_load_v(smem.v + tile_v, Ring::at(smem.ring.full_v, i), kt, lane, pages);
        }
      }
    }
  };

  // The producer for fp8 K/V: one lane copies the raw tiles (rows of D
  // bytes, K then V) by TMA into a staging ring of kTile.raw_stages tiles,
  // each stage with an mbarrier of its own ("staged", past the ring's four
  // arrays). Every thread of the producer warpgroups (two in an fp8 decode
  // block, tile_config.cuh) waits for a staged tile and converts its share
  // into the K (V) buffer once the consumers have released that buffer, then arrive
  // on the full barrier after a proxy fence (the converted tile is read by
  // wgmma, the async proxy). Named barrier 2: every thread has converted a
  // staged tile before its staging buffer is refilled.
  struct Fp8Producer {
    static constexpr int kThreads = 128 * kTile.producer_warpgroups;
    static constexpr int kRawStages = kTile.raw_stages;
    static constexpr unsigned kRawBytes = unsigned(BN * D);  // one fp8 tile
    static_assert(!fp8_kv<C>() || kRawStages >= kStages,
                  "fp8: the raw ring is at least the converted one");
    using Tiles = Fp8Tiles<C>;

    // Tile i's staging buffer (K; V follows) and its barrier.
    static __device__ __forceinline__ unsigned raw(const SharedTiles& smem, int i) {
      return smem.staging + unsigned(i % kRawStages) * 2u * kRawBytes;
    }
    static __device__ __forceinline__ unsigned staged(const SharedTiles& smem, int i) {
      return smem.ring.full_k + 32u * kStages + 8u * unsigned(i % kRawStages);
    }

    // By one thread, with the ring's init: one arrival (the copying lane's,
    // with the bytes it expects) per phase.
    static __device__ __forceinline__ void init(const SharedTiles& smem) {
#pragma unroll 1
      for (int st = 0; st < kRawStages; ++st) ptx::mbarrier_init(staged(smem, st), 1);
    }

    template <class Work>
    static __device__ __forceinline__ void run(const SharedTiles& smem, const KV& kv,
                                               const Params<T>& prm, const Work& work, int ptid) {
      typename KV::Pages pages;   // the copying threads'
      typename Work::Walk ahead;  // the copying threads': the next tile to stage
      if (KV::issues_copies(ptid)) {
        if (ptid == 0) kv.prefetch_maps();
        work.walk_start(prm, ahead);
#pragma unroll 1
        for (int i = 0; i < kRawStages; ++i) stage(smem, kv, prm, work, ahead, ptid, pages);
      }
      typename Work::Walk walk;
#pragma unroll 1
      for (work.walk_start(prm, walk); walk.on(); work.walk_next(prm, walk)) {
        const int i = walk.tile().i;
        const unsigned tile = Ring::stage(i) * kTile.kv_tile_bytes;
        ptx::mbarrier_wait(staged(smem, i), unsigned(i / kRawStages) & 1u);
        if (i >= kStages) Ring::wait_empty(smem.ring.empty_k, i);
        Tiles::template convert_swizzled<kThreads, Rows>(raw(smem, i), smem.k + tile, ptid);
        ptx::fence_proxy_async_shared();
        ptx::mbarrier_arrive(Ring::at(smem.ring.full_k, i));
        if (i >= kStages) Ring::wait_empty(smem.ring.empty_v, i);
        Tiles::template convert_swizzled<kThreads, Rows>(raw(smem, i) + kRawBytes, smem.v + tile,
                                                         ptid);
        ptx::fence_proxy_async_shared();
        ptx::mbarrier_arrive(Ring::at(smem.ring.full_v, i));
        ptx::named_barrier_sync(2, kThreads);
        if (KV::issues_copies(ptid)) stage(smem, kv, prm, work, ahead, ptid, pages);
      }
    }

    // TMA of the `ahead` walk's tile into its staging buffer (nothing once
    // the walk is done), then on to the next tile, by the producer threads
    // the source names (issues_copies). Each copying lane orders the
    // warpgroup's reads of the buffer's previous tile (named barrier 2)
    // before the async proxy's writes.
    template <class Work>
    static __device__ __forceinline__ void stage(const SharedTiles& smem, const KV& kv,
                                                 const Params<T>& prm, const Work& work,
                                                 typename Work::Walk& ahead, int lane,
                                                 typename KV::Pages& pages) {
      if (!ahead.on()) return;
      const KeyTile t = ahead.tile();
      ptx::fence_proxy_async_shared();
      kv.tma_stage_fp8(raw(smem, t.i), raw(smem, t.i) + kRawBytes, staged(smem, t.i), t.kt, lane,
                       pages);
      work.walk_next(prm, ahead);
    }
  };

  // The consumer warpgroups: Q by cp.async, then for each key tile S =
  // Q K^T, the softmax, O += P V. One object per thread holding scalars;
  // the row state, fragments and accumulators stay local arrays.
  struct Consumer {
    const Params<T>& prm;
    const SharedTiles& smem;
    const int tid, warp, lane;
    int warp_row;      // this warp's first row in the work tile (set by run)
    int wg_row0;       // this warpgroup's first row in the Q tile
    int tail_tile;     // the tile holding the sequence's last key when it is partial, else -1
    float multiplier;  // what the softmax multiplies scores by (LogitScale)

    __device__ __forceinline__ Consumer(const Params<T>& params, const SharedTiles& tiles,
                                        int thread, int w, int l)
        : prm(params),
          smem(tiles),
          tid(thread),
          warp(w),
          lane(l) {}

    // The part of D this thread's warpgroup owns (kDSplit 2), else 0.
    __device__ __forceinline__ int d_part() const { return kDSplit > 1 ? warp / 4 : 0; }
    // The first column of O this thread's warpgroup owns.
    __device__ __forceinline__ int column0() const { return d_part() * (DV / kDSplit); }

    // softmax and o: this thread's softmax state and output accumulators,
    // for the epilogue.
    template <class Work>
    __device__ __forceinline__ void run(const Work& work, Softmax& softmax,
                                        float (&o)[kOutBlocks][4]) {
      load_q(work);
      warp_row = work.row0 + row_warp(warp) * 16;
      RowState rows;
      init_rows(work, rows, softmax, o);
      wg_row0 = (row_warp(warp) / 4) * 64;
      ptx::cp_async_wait<0>();
      ptx::fence_proxy_async_shared();
      ptx::named_barrier_sync(1, kConsumerThreads);  // Q is in shared memory
      tail_tile = work.n_k % BN != 0 ? work.n_k / BN : -1;
      multiplier = LogitScale<C>::score_multiplier(score_scale<C>(prm));
      if constexpr (kTile.warpgroups / kDSplit > 1) {
        if (work.row0 + wg_row0 >= work.row_end) {
          pass_tiles(work);
          return;
        }
      }
      key_loop(work, rows, softmax, o);
    }

   private:
    // A warpgroup none of whose rows the work tile holds (a decode's few
    // packed rows in a block of several warpgroups, as in a mixed batch;
    // a sequence's last query tile) skips the MMAs and the softmax, which
    // cost as much tensor time for empty rows as for full ones, and only
    // hands each buffer back; it still zeroes its share of the V tail (a
    // named barrier of every consumer). Its rows are past the tile's, so
    // the epilogue stores none of them.
    template <class Work>
    __device__ __forceinline__ void pass_tiles(const Work& work) const {
      typename Work::Walk walk;
#pragma unroll 1
      for (work.walk_start(prm, walk); walk.on(); work.walk_next(prm, walk)) {
        const KeyTile kt = walk.tile();
        wait_k(kt);
        release_k(kt);
        wait_v(work, kt);
        release_v(kt);
      }
    }

    // The first key tile's Q K^T alone (o is still 0), its softmax, and
    // its P packed into `a`.
    template <class Work>
    __device__ __forceinline__ void first_tile(const Work& work, const RowState& rows,
                                               Softmax& softmax, unsigned (&a)[BN / 16][4],
                                               float (&correction)[2], const KeyTile& t) const {
      wait_k(t);
      float s[kScoreBlocks][4];
      ptx::warpgroup_arrive();
      issue_scores(s, t);
      ptx::warpgroup_commit();
      ptx::warpgroup_wait<0>();
      ptx::fence_operands(s);
      release_k(t);
      exchange_scores(s, t);
      softmax_tile(work, rows, softmax, s, t, correction);
      pack_p(a, s);
    }

    // The key tiles: wait for K (and V), issue the MMAs, release buffers.
    template <class Work>
    __device__ __forceinline__ void key_loop(const Work& work, const RowState& rows,
                                             Softmax& softmax, float (&o)[kOutBlocks][4]) {
      // Q K^T of tile t and P V of tile t - 1 are issued together; the
      // softmax of tile t is meant to run while P V (t - 1) is in flight,
      // and the output is rescaled once that has landed. (ptxas moves the
      // wait for P V (t - 1), and the V release after it, above the
      // softmax, so in the SASS the two do not overlap; docs/tuning.md has
      // the two-buffer loop that fixed the order and measured slower.)
      // The tiles are the walk's (tile_walk.cuh): every tile of the range,
      // or those a spec's mask does not leave empty.
      unsigned a[BN / 16][4];
      typename Work::Walk walk;
      work.walk_start(prm, walk);
      const bool any = walk.on();
      if (any) {
        float correction[2];
        first_tile(work, rows, softmax, a, correction, walk.tile());
      }
#pragma unroll 1
      for (work.walk_next(prm, walk); walk.on(); work.walk_next(prm, walk)) {
        const KeyTile kt = walk.tile(), before = walk.previous();
        wait_k(kt);
        wait_v(work, before);
        float s[kScoreBlocks][4];
        ptx::fence_operands(o);
        ptx::fence_operands(a);
        ptx::warpgroup_arrive();
        issue_scores(s, kt);
        ptx::warpgroup_commit();
        issue_pv(o, a, before);
        ptx::warpgroup_commit();
        ptx::warpgroup_wait<1>();
        ptx::fence_operands(s);
        release_k(kt);
        exchange_scores(s, kt);
        float correction[2];
        const bool moved = softmax_tile(work, rows, softmax, s, kt, correction);
        ptx::warpgroup_wait<0>();
        ptx::fence_operands(o);
        ptx::fence_operands(a);
        release_v(before);
        if (moved) Softmax::rescale(o, correction);
        pack_p(a, s);
      }
      if (any) last_pv(work, o, a, walk.previous());
    }

    // cp.async by every consumer thread, one commit group.
    template <class Work>
    __device__ __forceinline__ void load_q(const Work& work) const {
      Rows::template load_async<BM, kConsumerThreads, T>(smem.q, q_rows(work), tid);
      ptx::cp_async_commit();
    }

    // The row source (copy_rows_async) of work tile `work`'s Q: rows past
    // the sequence's are zero-filled.
    template <class Work>
    __device__ __forceinline__ auto q_rows(const Work& work) const {
      const auto& map = work.map;
      const int row0 = work.row0;
      const T* q = work.q;
      const Params<T>& p = prm;
      return [&map, row0, q, &p](int r, const T*& src) {
        const int row = row0 + r;
        if (row >= map.rows) {
          src = q;
          return false;
        }
        src = q + map.position(row) * p.q_row_stride + map.head(row) * p.q_head_stride;
        return true;
      };
    }

    // This thread's rows, and the softmax state and zero outputs they start
    // from.
    template <class Work>
    __device__ __forceinline__ void init_rows(const Work& work, RowState& rows, Softmax& softmax,
                                              float (&o)[kOutBlocks][4]) const {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        work.row_setup(prm, warp_row + lane / 4 + 8 * r, rows.keys[r], rows.sink2[r]);
      }
      Sinks<C>::init(softmax, rows.sink2, lane, work.splits == 1);
#pragma unroll
      for (int db = 0; db < kOutBlocks; ++db) {
        o[db][0] = o[db][1] = o[db][2] = o[db][3] = 0.f;
      }
    }

    // A visited tile's buffers: the ring's by its visit index.
    __device__ __forceinline__ unsigned k_tile(const KeyTile& t) const {
      return SharedTiles::tile(smem.k, t.i);
    }
    __device__ __forceinline__ unsigned v_tile(const KeyTile& t) const {
      return SharedTiles::tile_v(smem.v, t.i);
    }
    __device__ __forceinline__ void wait_k(const KeyTile& t) const {
      Ring::wait_full(smem.ring.full_k, t.i);
    }
    // This warp is done with tile t's K (or V) buffer.
    __device__ __forceinline__ void release_k(const KeyTile& t) const {
      Ring::release(smem.ring.empty_k, t.i, lane);
    }
    __device__ __forceinline__ void release_v(const KeyTile& t) const {
      Ring::release(smem.ring.empty_v, t.i, lane);
    }

    // V of tile t has landed (and, in the tail tile, had its rows past
    // the sequence's keys zeroed).
    template <class Work>
    __device__ __forceinline__ void wait_v(const Work& work, const KeyTile& t) const {
      Ring::wait_full(smem.ring.full_v, t.i);
      if (t.kt == tail_tile) zero_v_tail(work, t);
    }

    // The TMA copies whole tiles: in the one that holds the sequence's last
    // key, the rows past it are the next sequence's values or whatever the
    // buffer holds past its used rows. Their P is exactly 0, but 0 * Inf or
    // NaN is NaN, so those V rows are zeroed (as cp.async's zero fill did)
    // before P V reads the tile. K needs nothing: masked scores are
    // replaced.
    template <class Work>
    __device__ __forceinline__ void zero_v_tail(const Work& work, const KeyTile& t) const {
      VRows::template zero_rows<BN, kConsumerThreads>(v_tile(t), work.n_k - t.kt * BN, tid);
      ptx::fence_proxy_async_shared();
      ptx::named_barrier_sync(1, kConsumerThreads);
    }

    // S = Q K^T of tile t, issued (not waited for): over all of D, or
    // (kDSplit 2) over this warpgroup's part, whose columns are whole
    // swizzle chunks, so its k-steps start kDPart / 16 steps in. (Written
    // twice so that the variants without the split keep their code.)
    __device__ __forceinline__ void issue_scores(float (&s)[kScoreBlocks][4],
                                                 const KeyTile& t) const {
      const unsigned long long q0 = Rows::k_major_first(smem.q, wg_row0);
      const unsigned long long k0 = Rows::k_major_first(k_tile(t), 0);
      if constexpr (kDSplit > 1) {
        constexpr int kSteps = kDPart / 16;
        const int kk0 = d_part() * kSteps;
#pragma unroll
        for (int kk = 0; kk < kSteps; ++kk) {
          ptx::WarpgroupMma<BN>::template ss<kBF16>(
              s, Rows::template k_major_step<BM>(q0, kk0 + kk),
              Rows::template k_major_step<BN>(k0, kk0 + kk), kk > 0);
        }
      } else {
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
          ptx::WarpgroupMma<BN>::template ss<kBF16>(s, Rows::template k_major_step<BM>(q0, kk),
                                                    Rows::template k_major_step<BN>(k0, kk),
                                                    kk > 0);
        }
      }
    }

    // kDSplit 2: each warpgroup holds the scores over its part of D; both
    // add the other's (through shared memory, one buffer per warpgroup and
    // tile parity) and then hold the same S, bit for bit (a + b == b + a),
    // so both run the same softmax on the same rows. A thread's fragment
    // has the same (row, key) positions in either warpgroup, so thread t
    // reads slot t. The parity keeps a buffer from being written again
    // before the other warpgroup has read it: that write comes after the
    // next tile's barrier, which the reader reaches only past its read.
    __device__ __forceinline__ void exchange_scores(float (&s)[kScoreBlocks][4],
                                                    const KeyTile& t) const {
      if constexpr (kDSplit > 1) {
        static_assert(kDSplit == 2, "two warpgroups split D");
        constexpr unsigned kBuffer = 128u * 16u * kScoreBlocks;  // one warpgroup's scores
        const unsigned base = smem.q + kTile.exchange_offset + unsigned(t.i & 1) * 2u * kBuffer;
        const unsigned mine = base + unsigned(d_part()) * kBuffer + unsigned(tid % 128) * 16u;
        const unsigned theirs =
            base + unsigned(d_part() ^ 1) * kBuffer + unsigned(tid % 128) * 16u;
#pragma unroll
        for (int b = 0; b < kScoreBlocks; ++b) {
          ptx::st_shared_f32x4(mine + unsigned(b) * 128u * 16u, s[b][0], s[b][1], s[b][2], s[b][3]);
        }
        ptx::named_barrier_sync(3, 256);
#pragma unroll
        for (int b = 0; b < kScoreBlocks; ++b) {
          float other[4];
          ptx::ld_shared_f32x4(theirs + unsigned(b) * 128u * 16u, other);
#pragma unroll
          for (int e = 0; e < 4; ++e) s[b][e] += other[e];
        }
      }
    }

    // O += P V of tile t, issued: into this warpgroup's columns.
    __device__ __forceinline__ void issue_pv(float (&o)[kOutBlocks][4],
                                             const unsigned (&a)[BN / 16][4],
                                             const KeyTile& t) const {
      if constexpr (kDSplit > 1) {
        const unsigned long long v0 =
            VRows::template mn_major_first<BN>(v_tile(t) + VRows::column_offset(column0()));
#pragma unroll
        for (int kk = 0; kk < BN / 16; ++kk) {
          ptx::WarpgroupMma<DV / kDSplit>::template rs<kBF16>(o, a[kk],
                                                              VRows::mn_major_step(v0, kk), 1);
        }
      } else {
        const unsigned long long v0 = VRows::template mn_major_first<BN>(v_tile(t));
#pragma unroll
        for (int kk = 0; kk < BN / 16; ++kk) {
          ptx::WarpgroupMma<DV>::template rs<kBF16>(o, a[kk], VRows::mn_major_step(v0, kk), 1);
        }
      }
    }

    // Scores of tile t -> probabilities, and the output's rescale factor;
    // true when the warp's output needs it (update_scores).
    template <class Work>
    __device__ __forceinline__ bool softmax_tile(const Work& work, const RowState& rows,
                                                 Softmax& softmax, float (&s)[kScoreBlocks][4],
                                                 const KeyTile& t, float (&correction)[2]) const {
      const int j0 = t.kt * BN;
      const bool edge = work.edge_tile(prm, t);
      to_logits<C>(s, prm, rows.sink2, rows.keys, j0, edge, work.score_tile(prm, t.kt), lane);
      return softmax.update_scores(s, correction, multiplier);
    }

    // Probabilities -> the A fragments of P V.
    static __device__ __forceinline__ void pack_p(unsigned (&a)[BN / 16][4],
                                                  const float (&s)[kScoreBlocks][4]) {
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) pack_p_fragment<T>(a[kk], s, kk);
    }

    // The last visited tile's P V.
    template <class Work>
    __device__ __forceinline__ void last_pv(const Work& work, float (&o)[kOutBlocks][4],
                                            unsigned (&a)[BN / 16][4], const KeyTile& t) {
      wait_v(work, t);
      ptx::fence_operands(o);
      ptx::fence_operands(a);
      ptx::warpgroup_arrive();
      issue_pv(o, a, t);
      ptx::warpgroup_commit();
      ptx::warpgroup_wait<0>();
      ptx::fence_operands(o);
      // (The last V buffer is not handed back: nothing refills it before
      // the block exits.)
    }
  };
};

}  // namespace attention
}  // namespace attnjit

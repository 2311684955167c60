// The warpgroup path's block (sm_90a): the scheduler's work tile, then two
// roles. The producer warpgroup gives most of its registers to the
// consumers (setmaxnreg, tile_config.cuh) and its first warp streams K
// and V through the TMA (or, with producer_warps 2, its first warp K and
// its second V); the consumer warpgroups run the MMAs and the
// epilogue. The only block-wide barrier is the one after the mbarriers are
// initialized; the consumers meet on named barrier 1. A persistent block
// (PersistentTileScheduler) does the same for one work tile after another:
// its producer warp takes each tile's cell and hands it to the consumers
// (CellRing) before it streams that tile's K and V, the ring's indices
// counting on across tiles, so the producer streams the next tile's K and V
// while the consumers finish the last (its output is staged apart from the
// ring).
#pragma once

#include "attention/mask.cuh"
#include "attention/params.cuh"
#include "attention/tile_config.cuh"
#include "common/ptx.cuh"
#include "common/tma.cuh"

namespace attnjit {
namespace attention {

// Key tiles of a work tile (the ring indices it takes).
template <class Work>
__device__ __forceinline__ int key_tiles_of(const Work& work) {
  const int count = work.range.last_tile - work.range.first_tile + 1;
  return count > 0 ? count : 0;
}

// A persistent block's cells, from the producer warp that takes them to
// the consumer warps, in order: the n-th in slot n % 2, with a full
// mbarrier (the producer lane's arrival after its store; -1: no more) and
// an empty one (an arrival from every consumer warp once it has read the
// slot). 48 bytes past the ring's barriers (TileConfig::smem_bytes).
struct CellRing {
  unsigned bars;  // shared address: full[2], then empty[2]
  int* slots;     // the same memory's cells, past the barriers

  __device__ __forceinline__ CellRing(unsigned char* at, unsigned address)
      : bars(address), slots(reinterpret_cast<int*>(at + 32)) {}
  __device__ __forceinline__ unsigned full(int n) const { return bars + 8u * unsigned(n & 1); }
  __device__ __forceinline__ unsigned empty(int n) const {
    return bars + 16u + 8u * unsigned(n & 1);
  }
  static __device__ __forceinline__ unsigned parity(int n) { return unsigned(n >> 1) & 1u; }

  // By one thread, with the ring's init (before its fence).
  template <int kConsumerWarps>
  __device__ __forceinline__ void init() const {
    for (int s = 0; s < 2; ++s) {
      ptx::mbarrier_init(full(s), 1);
      ptx::mbarrier_init(empty(s), kConsumerWarps);
    }
  }
  // The producer lane: cell n, once the consumers have read cell n - 2.
  __device__ __forceinline__ void put(int n, int cell) const {
    if (n >= 2) ptx::mbarrier_wait(empty(n), parity(n) ^ 1u);
    *reinterpret_cast<volatile int*>(slots + (n & 1)) = cell;
    ptx::mbarrier_arrive(full(n));  // (release: the store is seen by the waiters)
  }
  // Every consumer thread: cell n; its warp's lane 0 frees the slot once
  // every lane has read it.
  __device__ __forceinline__ int get(int n, int lane) const {
    ptx::mbarrier_wait(full(n), parity(n));
    const int cell = *reinterpret_cast<volatile const int*>(slots + (n & 1));
    __syncwarp();
    if (lane == 0) ptx::mbarrier_arrive(empty(n));
    return cell;
  }
};

// The consumers' part of one work tile: the mainloop, then each warp's
// output rows. `base` is the ring index of the tile's first key tile;
// q_ready: its Q was prefetched. after_run(consumer) runs between the
// mainloop and the epilogue (a persistent block prefetches the next
// tile's Q there).
template <class C, class Mainloop, class Epilogue, class Work, class AfterRun>
__device__ __forceinline__ void consume_tile(const Params<typename C::dtype>& prm,
                                             const typename Mainloop::SharedTiles& smem,
                                             const Work& work, int base, int tid, int warp,
                                             int lane, bool q_ready, const AfterRun& after_run) {
  typename Mainloop::Consumer consumer(prm, smem, work.range.first_tile, work.range.last_tile,
                                       tid, warp, lane, base);
  typename Mainloop::Softmax softmax;
  float o[Mainloop::kOutBlocks][4];
  consumer.run(work, softmax, o, q_ready);
  after_run(consumer);
  // Every consumer is done with Q and the tiles before any stages its
  // output over them (a persistent block stages it apart, and each
  // warpgroup has issued its rows of the next tile's Q in after_run).
  ptx::named_barrier_sync(1, Mainloop::kConsumerThreads);
  Epilogue::store(prm, work, softmax, o, smem.output_rows(warp), consumer.warp_row, lane);
  Epilogue::finish_split(prm, work, tid, Mainloop::kConsumerThreads,
                         [] { ptx::named_barrier_sync(1, Mainloop::kConsumerThreads); });
}

// The cell ring of a persistent block's shared memory, past the ring's
// barriers.
template <class SharedTiles>
__device__ __forceinline__ CellRing cells(const SharedTiles& smem) {
  constexpr unsigned kAt = SharedTiles::kCellRingOffset;
  return CellRing(smem.raw + smem.pad + kAt, smem.q + kAt);
}

template <class C, class Scheduler, class Mainloop, class Epilogue>
__device__ void forward_sm90(const Params<typename C::dtype>& prm) {
  using KV = typename Mainloop::KvSource;
  constexpr TileConfig kTile = Mainloop::kTile;
  constexpr bool kPersistent = Scheduler::kPersistent;
  static_assert(kPersistent == kTile.persistent, "the scheduler follows the tile configuration");
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const typename Mainloop::SharedTiles smem(smem_raw, ptx::smem_addr(smem_raw));

  // A persistent block always runs: its first cell may hold no tile, and
  // every block counts itself out (PersistentTileScheduler::done).
  typename Scheduler::Work work;
  if constexpr (!kPersistent) {
    if (!Scheduler::get(prm, work)) return;
  }
  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;

  constexpr bool kFp8 = fp8_kv<C>();
  static_assert(!(kFp8 && kPersistent), "persistent blocks: not with fp8 K/V");
  if (tid == 0) {
    if constexpr (kFp8) Mainloop::Fp8Producer::init(smem);
    if constexpr (kPersistent) cells(smem).template init<C::warps>();
    // (fences every init)
    smem.ring.template init<C::warps, kFp8 ? 128 * kTile.producer_warpgroups : 1>();
  }
  __syncthreads();

  if (warp >= C::warps) {
    if constexpr (kTile.rebalance) ptx::setmaxnreg_dec<kTile.producer_registers>();
    const int ptid = tid - C::warps * 32;
    if constexpr (kFp8) {
      Mainloop::Fp8Producer::run(smem, KV(prm, work), work.range.first_tile,
                                 work.range.last_tile, ptid);
    } else if constexpr (kPersistent) {
      // The first producer warp takes the tiles, every lane of it (a
      // spec's mask classifies tiles by warp ballots), and hands each to
      // the consumers before the source's copying lanes issue its copies,
      // the ring counting on across tiles.
      if (ptid >= 32) return;
      const CellRing ring = cells(smem);
      int base = 0, takes = 0;
      for (int n = 0;; ++n) {
        const int cell = Scheduler::take(prm, work, takes);
        if (lane == 0) ring.put(n, cell);
        if (cell < 0) break;
        if (KV::issues_copies(ptid)) {
          Mainloop::Producer::run(smem, KV(prm, work), work.range.first_tile,
                                  work.range.last_tile, lane, base);
        }
        base += key_tiles_of(work);
        __syncwarp();
      }
      Scheduler::done(prm);
    } else if constexpr (kTile.producer_warps == 2) {
      // K from the first producer warp, V from the second, each with the
      // source's copying lanes of its own warp.
      using Producer = typename Mainloop::Producer;
      const int first = work.range.first_tile, last = work.range.last_tile;
      if (ptid < 64 && KV::issues_copies(lane)) {
        if (ptid < 32) {
          Producer::template run<Mainloop::kKeys>(smem, KV(prm, work), first, last, lane);
        } else {
          Producer::template run<Mainloop::kValues>(smem, KV(prm, work), first, last, lane);
        }
      }
    } else if (KV::issues_copies(ptid)) {
      Mainloop::Producer::run(smem, KV(prm, work), work.range.first_tile, work.range.last_tile,
                              lane);
    }
    return;
  }
  if constexpr (kTile.rebalance) ptx::setmaxnreg_inc<kTile.consumer_registers>();
  if constexpr (kPersistent) {
    // Each tile's successor is read, and its Q issued, as soon as the
    // mainloop is done with this one's (prefetch_q), not after the
    // epilogue; `next` lives from there on only.
    const CellRing ring = cells(smem);
    int cell = ring.get(0, lane);
    if (cell < 0) return;
    Scheduler::set(prm, work, cell);
    int base = 0;
    bool q_ready = false;
    for (int n = 1;; ++n) {
      typename Scheduler::Work next;
      consume_tile<C, Mainloop, Epilogue>(prm, smem, work, base, tid, warp, lane, q_ready,
                                          [&](const typename Mainloop::Consumer& consumer) {
                                            cell = ring.get(n, lane);
                                            if (cell >= 0) {
                                              Scheduler::set(prm, next, cell);
                                              consumer.prefetch_q(next);
                                            }
                                          });
      if (cell < 0) break;
      base += key_tiles_of(work);
      work = next;
      q_ready = true;
    }
  } else {
    consume_tile<C, Mainloop, Epilogue>(prm, smem, work, 0, tid, warp, lane, false,
                                        [](const typename Mainloop::Consumer&) {});
  }
}

}  // namespace attention
}  // namespace attnjit

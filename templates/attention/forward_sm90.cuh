// The warpgroup path's block (sm_90a): the scheduler's work tile, then two
// roles. The producer warpgroup gives most of its registers to the
// consumers (setmaxnreg, tile_config.cuh) and its first warp streams K
// and V through the TMA (or, with producer_warps 2, its first warp K and
// its second V); the consumer warpgroups run the MMAs and the
// epilogue. The only block-wide barrier is the one after the mbarriers are
// initialized; the consumers meet on named barrier 1. A persistent block
// (PersistentTileScheduler) does the same for one work tile after another:
// both roles walk the same tiles, and the ring's indices count on across
// them, so the producer streams the next tile's K and V while the
// consumers finish the last (its output is staged apart from the ring).
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

template <class C, class Scheduler, class Mainloop, class Epilogue>
__device__ void forward_sm90(const Params<typename C::dtype>& prm) {
  using KV = typename Mainloop::KvSource;
  constexpr TileConfig kTile = Mainloop::kTile;
  constexpr bool kPersistent = Scheduler::kPersistent;
  static_assert(kPersistent == kTile.persistent, "the scheduler follows the tile configuration");
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const typename Mainloop::SharedTiles smem(smem_raw, ptx::smem_addr(smem_raw));

  typename Scheduler::Work work;
  int cursor = 0;  // persistent: the grid cell of `work`
  if constexpr (kPersistent) {
    if (!Scheduler::first(prm, work, cursor)) return;
  } else {
    if (!Scheduler::get(prm, work)) return;
  }
  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;

  constexpr bool kFp8 = fp8_kv<C>();
  static_assert(!(kFp8 && kPersistent), "persistent blocks: not with fp8 K/V");
  if (tid == 0) {
    if constexpr (kFp8) Mainloop::Fp8Producer::init(smem);
    // (fences both inits)
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
      // The first producer warp walks the tiles, every lane of it (a
      // spec's mask classifies tiles by warp ballots); the source's
      // copying lanes issue each tile's copies, the ring counting on
      // across tiles.
      if (ptid >= 32) return;
      int base = 0;
      do {
        if (KV::issues_copies(ptid)) {
          Mainloop::Producer::run(smem, KV(prm, work), work.range.first_tile,
                                  work.range.last_tile, lane, base);
        }
        base += key_tiles_of(work);
        __syncwarp();
      } while (Scheduler::next(prm, work, cursor));
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
    // Each tile's successor is found, and its Q issued, as soon as the
    // mainloop is done with this one's (prefetch_q), not after the
    // epilogue; `next` lives from there on only.
    int base = 0;
    bool q_ready = false;
    for (;;) {
      typename Scheduler::Work next;
      int next_cursor = cursor;
      bool more = false;
      consume_tile<C, Mainloop, Epilogue>(prm, smem, work, base, tid, warp, lane, q_ready,
                                          [&](const typename Mainloop::Consumer& consumer) {
                                            next = work;
                                            more = Scheduler::next(prm, next, next_cursor);
                                            if (more) consumer.prefetch_q(next);
                                          });
      if (!more) break;
      base += key_tiles_of(work);
      work = next;
      cursor = next_cursor;
      q_ready = true;
    }
  } else {
    consume_tile<C, Mainloop, Epilogue>(prm, smem, work, 0, tid, warp, lane, false,
                                        [](const typename Mainloop::Consumer&) {});
  }
}

}  // namespace attention
}  // namespace attnjit

// The warpgroup path's block (sm_90a): the scheduler's work tile, then two
// roles. The producer warpgroup gives most of its registers to the
// consumers (setmaxnreg, tile_config.cuh) and its first warp streams K
// and V through the TMA (or, with producer_warps 2, its first warp K and
// its second V); the consumer warpgroups run the MMAs and the
// epilogue. The only block-wide barrier is the one after the mbarriers are
// initialized; the consumers meet on named barrier 1.
#pragma once

#include "attention/mask.cuh"
#include "attention/params.cuh"
#include "attention/tile_config.cuh"
#include "common/ptx.cuh"
#include "common/tma.cuh"

namespace attnjit {
namespace attention {

template <class C, class Scheduler, class Mainloop, class Epilogue>
__device__ void forward_sm90(const Params<typename C::dtype>& prm) {
  using KV = typename Mainloop::KvSource;
  constexpr TileConfig kTile = Mainloop::kTile;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const typename Mainloop::SharedTiles smem(smem_raw, ptx::smem_addr(smem_raw));

  typename Scheduler::Work work;
  if (!Scheduler::get(prm, work)) return;
  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;

  constexpr bool kFp8 = fp8_kv<C>();
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
      Mainloop::Fp8Producer::run(smem, KV(prm, work), prm, work, ptid);
    } else if constexpr (kTile.producer_warps == 2) {
      // K from the first producer warp, V from the second, each with the
      // source's copying lanes of its own warp.
      using Producer = typename Mainloop::Producer;
      if (ptid < 64 && KV::issues_copies(lane)) {
        if (ptid < 32) {
          Producer::template run<Mainloop::kKeys>(smem, KV(prm, work), prm, work, lane);
        } else {
          Producer::template run<Mainloop::kValues>(smem, KV(prm, work), prm, work, lane);
        }
      }
    } else if (KV::issues_copies(ptid)) {
      Mainloop::Producer::run(smem, KV(prm, work), prm, work, lane);
    }
    return;
  }
  if constexpr (kTile.rebalance) ptx::setmaxnreg_inc<kTile.consumer_registers>();
  typename Mainloop::Consumer consumer(prm, smem, tid, warp, lane);
  typename Mainloop::Softmax softmax;
  float o[Mainloop::kOutBlocks][4];
  consumer.run(work, softmax, o);
  // Every consumer is done with Q and the tiles before any stages its
  // output over them.
  ptx::named_barrier_sync(1, Mainloop::kConsumerThreads);
  if constexpr (Mainloop::kDSplit > 1) {
    // (Each warpgroup stores its columns of the rows both hold.)
    Epilogue::store(prm, work, softmax, o, smem.output_rows(warp), consumer.warp_row, lane,
                    consumer.column0());
  } else {
    Epilogue::store(prm, work, softmax, o, smem.output_rows(warp), consumer.warp_row, lane);
  }
  Epilogue::finish_split(prm, work, tid, Mainloop::kConsumerThreads,
                         [] { ptx::named_barrier_sync(1, Mainloop::kConsumerThreads); });
}

}  // namespace attention
}  // namespace attnjit

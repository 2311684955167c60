// The mma.sync path's block (sm_80 and later): the scheduler's work tile,
// the mainloop over its key tiles, then the epilogue of each warp's m16
// tiles. Every thread runs all three; the block synchronizes inside the
// mainloop only.
#pragma once

#include "attention/params.cuh"

namespace attnjit {
namespace attention {

template <class C, class Scheduler, class Mainloop, class Epilogue>
__device__ void forward_sm80(const Params<typename C::dtype>& prm) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  typename Scheduler::Work work;
  if (!Scheduler::get(prm, work)) return;
  Mainloop mainloop(prm, smem_raw, threadIdx.x);
  typename Mainloop::Accumulators acc;
  mainloop.run(work, acc);
#pragma unroll
  for (int m = 0; m < Mainloop::kM; ++m) {
    Epilogue::store(prm, work, acc.softmax[m], acc.o[m], mainloop.q_rows(m),
                    work.row0 + mainloop.warp_row0 + m * 16, mainloop.lane);
  }
  Epilogue::finish_split(prm, work, static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x),
                         [] { __syncthreads(); });
}

}  // namespace attention
}  // namespace attnjit

// Hopper (sm_90) asynchronous copies as inline PTX: shared-memory mbarriers
// (init, arrive, expect-tx, parity wait) and the tensor-memory-accelerator
// copy of one box of a tiled tensor map into shared memory. A tensor map is
// the 128-byte descriptor the runtime encodes on the host
// (cuTensorMapEncodeTiled) and passes as a __grid_constant__ kernel
// parameter (types.cuh, TensorMap).
#pragma once

#include "common/types.cuh"

namespace attnjit {
namespace ptx {

// `count` arrivals complete a phase (plus any transaction bytes expected).
__device__ __forceinline__ void mbarrier_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

// Makes the initialized barriers visible to the async proxy (the TMA unit)
// and to the other threads once they pass a block-wide barrier.
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void mbarrier_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

// One arrival that also expects `bytes` of copies to complete this phase.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}

// Waits until the phase with parity `parity` has completed.
__device__ __forceinline__ void mbarrier_wait(unsigned bar, unsigned parity) {
  asm volatile(
      "{\n"
      "  .reg .pred done;\n"
      "  wait_%=:\n"
      "  mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "  @!done bra wait_%=;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

// One lane of the (converged, whole) warp: true there, false in the
// others. Unlike `lane == 0` it tells ptxas that one lane runs what it
// guards, so warp-uniform operands of a TMA copy stay uniform registers.
__device__ __forceinline__ bool elect_one_sync() {
  unsigned elected = 0;
  asm volatile(
      "{\n"
      "  .reg .pred p;\n"
      "  elect.sync _|p, 0xffffffff;\n"
      "  selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(elected));
  return elected != 0;
}

__device__ __forceinline__ void prefetch_tensor_map(const TensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(map))
               : "memory");
}

// Copies the box at coordinates (c0, c1, c2) (innermost first, in elements)
// of a 3-D tensor map into shared memory at `dst`; completes `bytes` of the
// current phase of `bar`. Out-of-bounds elements arrive as zeros.
__device__ __forceinline__ void tma_load_3d(unsigned dst, const TensorMap* map, unsigned bar,
                                            int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}

// The same for a 4-D tensor map (a paged cache: D, heads, rows of a page,
// pages).
__device__ __forceinline__ void tma_load_4d(unsigned dst, const TensorMap* map, unsigned bar,
                                            int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5}], [%6];" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3),
      "r"(bar)
      : "memory");
}

// The same for a 5-D tensor map (a paged cache's V with D as swizzle
// chunks: chunk columns, rows of a page, chunks, heads, pages).
__device__ __forceinline__ void tma_load_5d(unsigned dst, const TensorMap* map, unsigned bar,
                                            int c0, int c1, int c2, int c3, int c4) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5, %6}], [%7];" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4),
      "r"(bar)
      : "memory");
}

// Warpgroup-collective register reallocation: this warpgroup's per-thread
// register count becomes N (a multiple of 8 in [24, 256]); inc waits until
// the block's pool has the registers that dec calls released.
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg: N in [24, 256], multiple of 8");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg: N in [24, 256], multiple of 8");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}

// Named barrier `id` (1..15; 0 is __syncthreads) over `threads` threads.
__device__ __forceinline__ void named_barrier_sync(unsigned id, unsigned threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
}  // namespace ptx
}  // namespace attnjit

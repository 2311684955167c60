// Hopper (sm_90a) warpgroup primitives as inline PTX: shared-memory matrix
// descriptors, the wgmma fence / commit / wait protocol, and the proxy fence
// that makes cp.async-written tiles visible to wgmma. The MMA instructions
// themselves are generated (wgmma_ops.cuh). A warpgroup is 4 consecutive
// warps; every call here is collective over one.
#pragma once

#include "common/wgmma_ops.cuh"

namespace attnjit {
namespace ptx {

// Swizzle modes of a descriptor (PTX "matrix-descriptor-encode"), by the
// width in bytes of one swizzled row: 128, 64 or 32.
template <int kSwizzleBytes>
struct DescriptorSwizzle;
template <>
struct DescriptorSwizzle<128> {
  static constexpr unsigned long long kMode = 1;
};
template <>
struct DescriptorSwizzle<64> {
  static constexpr unsigned long long kMode = 2;
};
template <>
struct DescriptorSwizzle<32> {
  static constexpr unsigned long long kMode = 3;
};

// A wgmma shared-memory descriptor: start address, leading and stride byte
// offsets (all in 16-byte units, 14 bits each) and the swizzle mode; the
// base offset stays 0 because every swizzled region is 1024-byte aligned.
template <int kSwizzleBytes>
__device__ __forceinline__ unsigned long long smem_descriptor(unsigned smem_address,
                                                              unsigned leading_bytes,
                                                              unsigned stride_bytes) {
  unsigned long long desc = (smem_address >> 4) & 0x3FFFu;
  desc |= static_cast<unsigned long long>((leading_bytes >> 4) & 0x3FFFu) << 16;
  desc |= static_cast<unsigned long long>((stride_bytes >> 4) & 0x3FFFu) << 32;
  desc |= DescriptorSwizzle<kSwizzleBytes>::kMode << 62;
  return desc;
}

// desc with its start address moved on by `bytes` (a multiple of 16). The
// start field is bits 0-13 (address / 16) and every shared-memory address
// is below 2^18 bytes, so the field's sum never carries out of it: one
// 32-bit add of the low word, the strides and the swizzle untouched. The
// MMA loops derive each step's descriptor from the tile's first this way
// (a constant add) instead of encoding every address again.
__device__ __forceinline__ unsigned long long descriptor_advance(unsigned long long desc,
                                                                 unsigned bytes) {
  const unsigned lo = static_cast<unsigned>(desc) + (bytes >> 4);
  return (desc & 0xFFFFFFFF00000000ull) | lo;
}

// Orders this warpgroup's register and shared-memory accesses before the
// wgmma instructions that follow.
__device__ __forceinline__ void warpgroup_arrive() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

__device__ __forceinline__ void warpgroup_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

// Waits until at most kPending committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void warpgroup_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
}

// Keeps the compiler from moving accesses to accumulator registers across
// the asynchronous MMAs that read and write them.
template <int kRows, int kCols>
__device__ __forceinline__ void fence_operands(float (&d)[kRows][kCols]) {
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
#pragma unroll
    for (int j = 0; j < kCols; ++j) asm volatile("" : "+f"(d[i][j])::"memory");
  }
}

template <int kRows, int kCols>
__device__ __forceinline__ void fence_operands(unsigned (&a)[kRows][kCols]) {
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
#pragma unroll
    for (int j = 0; j < kCols; ++j) asm volatile("" : "+r"(a[i][j])::"memory");
  }
}

// Makes this thread's generic-proxy writes to shared memory (cp.async,
// st.shared) visible to the async proxy that wgmma reads through.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

}  // namespace ptx
}  // namespace attnjit

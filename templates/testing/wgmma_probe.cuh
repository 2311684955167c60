// A unit test of the warpgroup MMA building blocks (tests/gpu/
// wgmma_layout_test.cpp): one warpgroup computes S = Q K^T (both operands
// K-major in swizzled shared memory) and O = P V (P from registers, V
// MN-major), for a 64 x D query tile and a BN x D key tile, and writes both
// in fp32 so the host can compare them element by element.
#pragma once

#include "attention/smem_sm90.cuh"
#include "common/ptx.cuh"
#include "common/types.cuh"
#include "common/wgmma.cuh"

namespace attnjit {
namespace testing {

template <int D, int BN, class T>
__device__ void wgmma_probe(const T* q, const T* k, const T* v, const T* p, float* s_out,
                            float* o_out) {
  using Rows = attention::SwizzledRows<D>;
  constexpr bool kBF16 = element<T>::is_bf16;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const unsigned raw = ptx::smem_addr(smem_raw);
  const unsigned sQ = raw + ((1024u - (raw & 1023u)) & 1023u);
  const unsigned sK = sQ + 64 * D * 2;
  const unsigned sV = sK + BN * D * 2;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  auto rows = [](const T* base) {
    return [=](int r, const T*& src) {
      src = base + r * D;
      return true;
    };
  };
  Rows::template load_async<64, 128, T>(sQ, rows(q), tid);
  Rows::template load_async<BN, 128, T>(sK, rows(k), tid);
  Rows::template load_async<BN, 128, T>(sV, rows(v), tid);
  ptx::cp_async_commit();
  ptx::cp_async_wait<0>();
  ptx::fence_proxy_async_shared();
  __syncthreads();

  float s[BN / 8][4];
  ptx::warpgroup_arrive();
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    ptx::WarpgroupMma<BN>::template ss<kBF16>(s, Rows::template k_major<64>(sQ, 0, kk),
                                              Rows::template k_major<BN>(sK, 0, kk), kk > 0);
  }
  ptx::warpgroup_commit();
  ptx::warpgroup_wait<0>();
  ptx::fence_operands(s);

  const int g = warp * 16 + lane / 4;
  const int c = 2 * (lane % 4);
#pragma unroll
  for (int nb = 0; nb < BN / 8; ++nb) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      s_out[(g + 8 * (e / 2)) * BN + nb * 8 + c + e % 2] = s[nb][e];
    }
  }

  // P's A fragments straight from global memory.
  unsigned a[BN / 16][4];
  auto pair = [&](int row, int col) {
    const unsigned short lo = reinterpret_cast<const unsigned short*>(p)[row * BN + col];
    const unsigned short hi = reinterpret_cast<const unsigned short*>(p)[row * BN + col + 1];
    return static_cast<unsigned>(lo) | (static_cast<unsigned>(hi) << 16);
  };
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) {
    a[kk][0] = pair(g, kk * 16 + c);
    a[kk][1] = pair(g + 8, kk * 16 + c);
    a[kk][2] = pair(g, kk * 16 + 8 + c);
    a[kk][3] = pair(g + 8, kk * 16 + 8 + c);
  }
  float o[D / 8][4];
#pragma unroll
  for (int db = 0; db < D / 8; ++db) o[db][0] = o[db][1] = o[db][2] = o[db][3] = 0.f;
  ptx::fence_operands(o);
  ptx::warpgroup_arrive();
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) {
    ptx::WarpgroupMma<D>::template rs<kBF16>(o, a[kk], Rows::template mn_major<BN>(sV, kk), 1);
  }
  ptx::warpgroup_commit();
  ptx::warpgroup_wait<0>();
  ptx::fence_operands(o);
#pragma unroll
  for (int db = 0; db < D / 8; ++db) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      o_out[(g + 8 * (e / 2)) * D + db * 8 + c + e % 2] = o[db][e];
    }
  }
}

}  // namespace testing
}  // namespace attnjit

// The decode block's products swapped (decode_mma 2, DecodeSwapLayout):
// S^T = K Q^T and O^T = V^T P^T, keys and D as the m16n8k16 MMAs' M and a
// row group's <= 8 query rows as N, P^T taken from S^T's fragments by
// movmatrix.trans, and the state and output written back into a part in
// the standard layout, so the block's combine and epilogue
// (decode_sm90.cuh) read them as the standard path's. The ring, the tiles
// in shared memory and their ldmatrix addresses are the standard path's
// (DecodeLayout); `Decode` is the block (DecodeSm90), whose constants
// these take.
#pragma once

#include "attention/decode_layout.cuh"
#include "common/fp8.cuh"
#include "common/ptx.cuh"
#include "common/types.cuh"

namespace attnjit {
namespace attention {

template <class Decode>
struct DecodeSwapProducts {
  using Swap = typename Decode::Swap;
  using Layout = typename Decode::Layout;
  using MmaT = typename Decode::MmaT;
  using LoopSoftmax = typename Decode::LoopSoftmax;
  static constexpr bool kFp8 = Decode::kFp8;
  static constexpr bool kMmaBF16 = Decode::kMmaBF16;
  static constexpr int kSteps = Decode::kSteps;
  static constexpr int kRowFloats = Decode::kRowFloats;
  static __device__ __forceinline__ unsigned f16x2_of(unsigned two) {
    return Decode::f16x2_of(two);
  }

  // S^T = K Q^T of the K tile at `tile` (DecodeSwapLayout): m16 tiles of
  // keys, Q^T's B fragments of rows 0-7 from this warp's Q tile.
  static __device__ __forceinline__ void scores(float (&s)[Swap::kKeyTiles][4], unsigned tile,
                                                unsigned q_tile, int lane) {
#pragma unroll
    for (int mt = 0; mt < Swap::kKeyTiles; ++mt) s[mt][0] = s[mt][1] = s[mt][2] = s[mt][3] = 0.f;
#pragma unroll 1
    for (int kk2 = 0; kk2 < kSteps / 2; ++kk2) {
      unsigned qb[4];  // b0, b1 of steps 2 kk2 and 2 kk2 + 1
      ptx::warp_ldmatrix_x4(qb, q_tile + Swap::q_b_lane(lane, kk2, 0));
#pragma unroll
      for (int mt = 0; mt < Swap::kKeyTiles; ++mt) {
        if constexpr (kFp8) {
          unsigned r[4];
          ptx::warp_ldmatrix_x4(r, tile + Layout::k_lane(lane, mt, kk2));
#pragma unroll
          for (int step = 0; step < 2; ++step) {
            unsigned a[4];
#pragma unroll
            for (int j = 0; j < 4; ++j) {
              if (Layout::k_step(kk2, j) != 2 * kk2 + step) continue;
              a[Swap::k_half(j)] = f16x2_of(r[j]);
              a[2 + Swap::k_half(j)] = f16x2_of(r[j] >> 16);
            }
            ptx::warp_mma_16816<false>(s[mt], a, qb[2 * step], qb[2 * step + 1]);
          }
        } else {
#pragma unroll
          for (int step = 0; step < 2; ++step) {
            unsigned r[4], a[4];
            ptx::warp_ldmatrix_x4(r, tile + Layout::k_lane(lane, mt, 2 * kk2 + step));
#pragma unroll
            for (int j = 0; j < 4; ++j) a[Swap::k_a(j)] = r[j];
            ptx::warp_mma_16816<kMmaBF16>(s[mt], a, qb[2 * step], qb[2 * step + 1]);
          }
        }
      }
    }
  }

  // O^T += V^T P^T of the raw V tile at `tile`; P^T's B fragments from
  // S^T's by movmatrix.trans; `valid`: the tile's keys that exist (V's
  // halves of the others zeroed).
  template <bool kTail>
  static __device__ __forceinline__ void accumulate(float (&ot)[Swap::kOutTiles][4],
                                                    const float (&s)[Swap::kKeyTiles][4],
                                                    unsigned tile, int valid, int lane) {
    const int c = lane % 4;
#pragma unroll
    for (int kk = 0; kk < Swap::kKeyTiles; ++kk) {
      const unsigned b0 = ptx::warp_movmatrix_trans(element<MmaT>::pack(s[kk][0], s[kk][1]));
      const unsigned b1 = ptx::warp_movmatrix_trans(element<MmaT>::pack(s[kk][2], s[kk][3]));
      unsigned keep[2] = {0xffffffffu, 0xffffffffu};
      if constexpr (kTail) {
#pragma unroll
        for (int i = 0; i < 2; ++i) keep[i] = Layout::v_keep(kk, i, c, valid);
      }
#pragma unroll
      for (int u2 = 0; u2 < Layout::kUnits / 2; ++u2) {
        unsigned r[4];
        ptx::warp_ldmatrix_x4_trans(r, tile + Layout::v_lane(lane, kk, u2));
        unsigned even[4], odd[4];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            if constexpr (kFp8) {
              const unsigned two = __byte_perm(r[2 * h + i], 0u, Layout::kVPermute);
              even[Swap::v_a(h, i)] = f16x2_of(two) & keep[i];
              odd[Swap::v_a(h, i)] = f16x2_of(two >> 16) & keep[i];
            } else {
              even[Swap::v_a(h, i)] = r[2 * h + i] & keep[i];
            }
          }
        }
        if constexpr (kFp8) {
          ptx::warp_mma_16816<false>(ot[2 * u2], even, b0, b1);
          ptx::warp_mma_16816<false>(ot[2 * u2 + 1], odd, b0, b1);
        } else {
          ptx::warp_mma_16816<kMmaBF16>(ot[u2], even, b0, b1);
        }
      }
    }
  }

  // The swapped state and output into this warp's part in the standard
  // part layout (write_part's), so combine() reads it as any other: row
  // R's max in the slots of lanes 4 R .. 4 R + 3, its whole sum in the
  // first of them and 0 in the others; rows 8-15 (none here) empty, with
  // zero outputs (combine weighs them by 0).
  static __device__ __forceinline__ void write_part(const LoopSoftmax& softmax,
                                                    const float (&ot)[Swap::kOutTiles][4],
                                                    float* part, int lane) {
    const int g = lane / 4, c = lane % 4;
    float sum[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) sum[i] = LoopSoftmax::row_sum_of(softmax.row_sum[i]);
    if (g < 4) {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int slot = 4 * (2 * c + i) + g;
        part[slot] = softmax.row_max[i];
        part[64 + slot] = g == 0 ? sum[i] : 0.f;
      }
    }
    part[32 + lane] = ptx::neg_inf();
    part[96 + lane] = 0.f;
    float* rows = part + 128;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      float* row = rows + (2 * c + i) * kRowFloats;
#pragma unroll
      for (int mt = 0; mt < Swap::kOutTiles; ++mt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) row[Swap::ot_column(mt, g + 8 * h)] = ot[mt][2 * h + i];
      }
    }
#pragma unroll 1
    for (int at = lane; at < 8 * kRowFloats; at += 32) rows[8 * kRowFloats + at] = 0.f;
  }
};

}  // namespace attention
}  // namespace attnjit

// Online softmax over the key tiles of one warp's 16 query rows, in base 2
// with the scale folded in (scores arrive already multiplied by log2(e)).
// Each thread owns two rows (g and g + 8 of the m16n8 fragment) and keeps a
// partial row sum over its own columns; the quad reduces it once at the end.
#pragma once

#include "common/ptx.cuh"
#include "common/types.cuh"

namespace attnjit {
namespace attention {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// Whether a path takes the slack max (OnlineSoftmax, kSlack). The output
// rescale it skips costs D / 2 multiplies per thread and key tile against
// the tile's BN / 2 scores, so it pays where D >= 2 BN. Measured on the
// H200 (bench/results/2026-12-01-h200-124266f-slack-max-*, twice): Gemma-4
// D256 x 64 keys -7%, GPT-OSS D64 x 32 -3%; where D < 2 BN (D80 x 96,
// D128 x 128, MiMo's D80 x 64) +0.5-2%; split-KV decode tiles (D128 x 32)
// +1-1.5%, the vote on a latency-bound chain. The mma.sync path follows
// the same rule (not timed: no sm_80 GPU here).
__host__ __device__ constexpr bool slack_max_pays(int head_dim, int block_n, bool split_kv) {
  return !split_kv && head_dim >= 2 * block_n;
}

// The probabilities of keys 16 kk .. 16 kk + 15 (score blocks 2 kk and
// 2 kk + 1 of the m16n8 layout) as the A fragment of the m16n8k16 P V,
// packed to the 16-bit type E. Every path's P V takes P this way.
template <class E, int kBlocks>
__device__ __forceinline__ void pack_p_fragment(unsigned (&a)[4], const float (&s)[kBlocks][4],
                                                int kk) {
  a[0] = element<E>::pack(s[2 * kk][0], s[2 * kk][1]);
  a[1] = element<E>::pack(s[2 * kk][2], s[2 * kk][3]);
  a[2] = element<E>::pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
  a[3] = element<E>::pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
}

// kSwapped: the decode block's swapped products (DecodeSwapLayout: keys
// as the MMA's M, rows as N), where a thread's rows are 2c and 2c + 1 of
// the n8 block, row r's values of an m16 tile are elements r and r + 2,
// and the threads of one row are those of equal c (lanes apart by 4, 8,
// 16) instead of a quad.
template <int kScoreBlocks, int kOutBlocks, bool kSlack, bool kSwapped = false>
struct OnlineSoftmax {
  // Element i (0, 1) of row r in a fragment block.
  static __device__ __forceinline__ constexpr int elem(int r, int i) {
    return kSwapped ? r + 2 * i : 2 * r + i;
  }
  // x reduced over the lanes that hold the same row.
  static __device__ __forceinline__ float row_max_of(float x) {
    if constexpr (kSwapped) {
      x = ptx::max_num(x, __shfl_xor_sync(0xffffffffu, x, 4));
      x = ptx::max_num(x, __shfl_xor_sync(0xffffffffu, x, 8));
      return ptx::max_num(x, __shfl_xor_sync(0xffffffffu, x, 16));
    } else {
      return ptx::quad_max(x);
    }
  }
  static __device__ __forceinline__ float row_sum_of(float x) {
    if constexpr (kSwapped) {
      x += __shfl_xor_sync(0xffffffffu, x, 4);
      x += __shfl_xor_sync(0xffffffffu, x, 8);
      return x + __shfl_xor_sync(0xffffffffu, x, 16);
    } else {
      return ptx::quad_sum(x);
    }
  }

  // kSlack: the running max moves only when a tile's max passes it by more
  // than kMaxSlack (base 2); until then the tile's probabilities are taken
  // against the max kept, so they stay at most 2^kMaxSlack (exact in fp32
  // and in P's 16-bit type), and the output needs no rescale: a warp none
  // of whose rows moved skips it. Max, sum and output always refer to the
  // same max, so the result is the same up to rounding, and the LSE too.
  // Without it the max is always the true one and every tile rescales.
  // (kMaxSlack is 8, a constant of update_scores: a static member would be
  // emitted into every module's PTX.)

  float row_max[2];  // running max of base-2 logits (within kMaxSlack of the true one)
  float row_sum[2];  // this thread's partial sum of exp2(logit - row_max)

  // No extra logit: the max starts at -inf and the sum at 0.
  __device__ __forceinline__ void init_empty() {
    row_max[0] = row_max[1] = ptx::neg_inf();
    row_sum[0] = row_sum[1] = 0.f;
  }

  // One extra logit (base 2) joins the denominator only: it starts the max,
  // and its exp2(logit - max) = 1 is counted once per row (by the lane
  // `owner_lane` says: lane 0 of a quad; swapped, the lanes 0-3).
  __device__ __forceinline__ void init_with_logit(const float (&logit2)[2], bool owner_lane) {
    row_max[0] = logit2[0];
    row_max[1] = logit2[1];
    row_sum[0] = row_sum[1] = owner_lane ? 1.f : 0.f;
  }

  // s holds base-2 logits (-inf where masked); replaces them by
  // probabilities relative to the new max and rescales the output.
  // `multiplier` turns the scores into base-2 logits (1 when they already
  // are; the folded scale otherwise, see LogitScale in logits.cuh).
  __device__ __forceinline__ void update(float (&s)[kScoreBlocks][4], float (&o)[kOutBlocks][4],
                                         float multiplier) {
    float correction[2];
    if (update_scores(s, correction, multiplier)) rescale(o, correction);
  }

  // The first half of update(): the new running max and sum, s turned into
  // probabilities, and the factor the output must be rescaled by (apart so
  // the warpgroup path can rescale once the P V of the previous tile, still
  // in flight, has landed). True when the output needs the rescale: with
  // kSlack only when some row of the calling warp moved its max (the same
  // in every lane; the other rows' factors are 1), else always.
  __device__ __forceinline__ bool update_scores(float (&s)[kScoreBlocks][4], float (&correction)[2],
                                                float multiplier) {
    [[maybe_unused]] bool moved = false;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      // A tree over the row's scores (depth log2, not a chain of one
      // max per score: the max is on the path from Q K^T to P V).
      float part[kScoreBlocks];
#pragma unroll
      for (int nb = 0; nb < kScoreBlocks; ++nb) {
        part[nb] = ptx::max_num(s[nb][elem(r, 0)], s[nb][elem(r, 1)]);
      }
#pragma unroll
      for (int stride = 1; stride < kScoreBlocks; stride *= 2) {
#pragma unroll
        for (int nb = 0; nb + stride < kScoreBlocks; nb += 2 * stride) {
          part[nb] = ptx::max_num(part[nb], part[nb + stride]);
        }
      }
      const float tile_max = part[0];
      // multiplier > 0, so the max of the logits is the logit of the max.
      const float tile_max2 = row_max_of(tile_max) * multiplier;
      float new_max;
      if constexpr (kSlack) {
        // (-inf + slack is -inf: a row's first visible key always moves it.)
        constexpr float kMaxSlack = 8.f;
        const bool moves = tile_max2 > row_max[r] + kMaxSlack;
        new_max = moves ? tile_max2 : row_max[r];
        moved = moved || moves;
      } else {
        new_max = ptx::max(row_max[r], tile_max2);
      }
      // A row that has seen nothing yet keeps -inf; subtract 0 then so
      // exp2 gives 0 and never NaN.
      const float base = new_max == ptx::neg_inf() ? 0.f : new_max;
      correction[r] = kSlack && new_max == row_max[r] ? 1.f : ptx::exp2(row_max[r] - base);
      row_max[r] = new_max;
      float sum = 0.f;
#pragma unroll
      for (int nb = 0; nb < kScoreBlocks; ++nb) {
        s[nb][elem(r, 0)] = ptx::exp2(ptx::fma(s[nb][elem(r, 0)], multiplier, -base));
        s[nb][elem(r, 1)] = ptx::exp2(ptx::fma(s[nb][elem(r, 1)], multiplier, -base));
        sum += s[nb][elem(r, 0)] + s[nb][elem(r, 1)];
      }
      row_sum[r] = row_sum[r] * correction[r] + sum;
    }
    if constexpr (kSlack) return ptx::warp_any(moved);
    return true;
  }

  static __device__ __forceinline__ void rescale(float (&o)[kOutBlocks][4],
                                                 const float (&correction)[2]) {
#pragma unroll
    for (int db = 0; db < kOutBlocks; ++db) {
      o[db][elem(0, 0)] *= correction[0];
      o[db][elem(0, 1)] *= correction[0];
      o[db][elem(1, 0)] *= correction[1];
      o[db][elem(1, 1)] *= correction[1];
    }
  }

  // 1 / denominator (0 for a row with no visible key and no sink) and the
  // natural-log LSE (-inf for such a row) of row r.
  __device__ __forceinline__ void finish(int r, float& inv_sum, float& lse) const {
    const float total = row_sum_of(row_sum[r]);
    if (total > 0.f) {
      inv_sum = 1.f / total;
      lse = (row_max[r] + ptx::log2(total)) * kLn2;
    } else {
      inv_sum = 0.f;
      lse = ptx::neg_inf();
    }
  }
};

}  // namespace attention
}  // namespace attnjit

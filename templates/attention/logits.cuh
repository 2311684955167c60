// Scores -> base-2 logits for one warp's 16 query rows of a key tile,
// shared by both forward paths (their accumulators have the same m16n8
// fragment layout; the swapped decode block's S^T fragments by kSwapped):
// scale (or soft-cap; or neither when the scale is folded into the
// softmax, see LogitScale), the key-0 sink bias, and on edge tiles the
// visibility mask.
#pragma once

#include "attention/mask.cuh"
#include "attention/params.cuh"
#include "attention/sinks.cuh"
#include "attention/softmax.cuh"
#include "common/ptx.cuh"

namespace attnjit {
namespace attention {

// Without a soft-cap or a key-0 bias the scale is folded into the softmax
// instead (one FMA per score inside exp2, as FlashAttention does): the
// scores stay raw, scale > 0 keeps their order, and
// OnlineSoftmax::update_scores multiplies by score_multiplier().
template <class C>
struct LogitScale {
  static constexpr bool kFolded = !C::softcap && !Sinks<C>::kBiasKey0 && !user_score<C>();
  // What the softmax multiplies the scores it gets by (1 when to_logits
  // already produced base-2 logits).
  static __device__ __forceinline__ float score_multiplier(float scale) {
    return kFolded ? scale * kLog2e : 1.f;
  }
};

// keys[r]: the keys this thread's row r (g and g + 8 of the fragment) sees
// (Mask::row_keys, once per row); j0: the tile's first key; edge: the tile
// needs the element mask; score_on: it runs a spec's score
// (WorkTile::score_tile). kSwapped: the fragments of DecodeSwapLayout
// (m16 blocks of keys; rows 2c and 2c + 1, element e of row e % 2 and key
// 16 nb + g + 8 (e / 2)).
// kPositive: a spec's runtime divisors are all positive (see to_logits).
template <class C, bool kSwapped, bool kPositive, int kBlocks>
__device__ __forceinline__ void to_logits_as(float (&s)[kBlocks][4],
                                          const Params<typename C::dtype>& prm,
                                          const float (&sink2)[2],
                                          const typename Mask<C>::RowKeys (&keys)[2], int j0,
                                          bool edge, bool score_on, int lane) {
  // Element e of fragment block nb: its row (of this thread's two) and key.
  const auto row_of = [](int e) { return kSwapped ? e % 2 : e / 2; };
  const auto key_of = [&](int nb, int e) {
    if constexpr (kSwapped) {
      return j0 + nb * 16 + lane / 4 + 8 * (e / 2);
    } else {
      return j0 + nb * 8 + 2 * (lane % 4) + (e % 2);
    }
  };
  const float scale = score_scale<C>(prm);
  const float scale2 = scale * kLog2e;
  float cap_in = 0.f, cap_out = 0.f;
  if constexpr (C::softcap) {
    cap_in = scale / prm.softcap;
    cap_out = prm.softcap * kLog2e;
  }
#pragma unroll
  for (int nb = 0; nb < kBlocks; ++nb) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if constexpr (C::softcap) {
        s[nb][e] = cap_out * ptx::tanh(s[nb][e] * cap_in);
      } else if constexpr (!LogitScale<C>::kFolded) {
        s[nb][e] *= scale2;
      }
    }
  }
  // A spec's column values at the thread's key columns: column i of block
  // nb holds elements e with col_of(e) == i (user_columns).
  const auto col_of = [](int e) { return kSwapped ? e / 2 : e % 2; };
  constexpr int kColStepN = kSwapped ? 16 : 8, kColStepI = kSwapped ? 8 : 1;
  if constexpr (user_score<C>()) {
    // The spec's score, on the natural-log score after scale and cap
    // (score_on: not on a tile where it is the identity).
    if (score_on) {
      UserColsOf<C> cols[kBlocks][2];
      user_columns<C, kPositive, kColStepN, kColStepI>(prm, key_of(0, 0), cols);
#pragma unroll
      for (int nb = 0; nb < kBlocks; ++nb) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[nb][e] = user_score_at<C, kPositive>(prm, keys[row_of(e)].user, cols[nb][col_of(e)],
                                                 s[nb][e] * kLn2, key_of(nb, e)) *
                     kLog2e;
        }
      }
    }
  }
  Sinks<C>::template add_key0_bias<kSwapped>(s, sink2, j0, lane);
  if (!edge) return;
  // The rows' bounds relative to this lane's first key, so each score's
  // key is a constant of the unrolled loop and its test one compare with
  // an immediate. Without a window (or a spec's bound raising it) a row's
  // first visible key is the sequence's first, which every key passes:
  // only the upper bounds are tested.
  constexpr bool kCheckLo = C::window || UserOf<C>::key_bounds_below;
  const int first = key_of(0, 0);
  const typename Mask<C>::RowKeys rel[2] = {Mask<C>::shifted(keys[0], first),
                                            Mask<C>::shifted(keys[1], first)};
  constexpr bool kUserMask = user_mask<C>() && !user_mask_in_row_keys<C>();
  UserColsOf<C> cols[kBlocks][2];
  if constexpr (kUserMask) {
    user_columns<C, kPositive, kColStepN, kColStepI>(prm, first, cols);
  }
#pragma unroll
  for (int nb = 0; nb < kBlocks; ++nb) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = row_of(e);
      const int j = key_of(nb, e);
      bool visible;
      if constexpr (kUserMask) {
        // A spec's mask tested per key: absolute keys, as its expressions
        // see them.
        // (`&`: both evaluated, no branch per score.)
        visible = Mask<C>::visible_in(keys[r], j) &
                  user_mask_at<C, kPositive>(prm, keys[r].user, cols[nb][col_of(e)], j);
      } else {
        visible = Mask<C>::template visible_in<kCheckLo>(rel[r], j - first);
      }
      if (!visible) s[nb][e] = ptx::neg_inf();
    }
  }
}

// Where a spec's expressions divide by runtime args, the scores of a tile
// take one of two copies of the code: the one that knows every divisor is
// positive (a quotient is then a multiply, three shifts and two XORs, no
// sign cases) when the launch's are, a test per tile.
template <class C, bool kSwapped = false, int kBlocks>
__device__ __forceinline__ void to_logits(float (&s)[kBlocks][4],
                                          const Params<typename C::dtype>& prm,
                                          const float (&sink2)[2],
                                          const typename Mask<C>::RowKeys (&keys)[2], int j0,
                                          bool edge, bool score_on, int lane) {
  if constexpr (user_divides<C>()) {
    if (UserOf<C>::divisors_positive(prm)) {
      to_logits_as<C, kSwapped, true>(s, prm, sink2, keys, j0, edge, score_on, lane);
      return;
    }
  }
  to_logits_as<C, kSwapped, false>(s, prm, sink2, keys, j0, edge, score_on, lane);
}

}  // namespace attention
}  // namespace attnjit

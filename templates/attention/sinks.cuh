// Attention sinks (docs/semantics.md "Sinks"), each costing once per query tile:
// the GPT-OSS null logit seeds the softmax state before the first key tile;
// the MiMo bias is added to key 0's score, only in the tile that holds it.
#pragma once

#include "attention/softmax.cuh"

namespace attnjit {
namespace attention {

template <class C>
struct Sinks {
  using Mode = typename C::sinks_t;
  static constexpr bool kNullLogit = C::sinks == Mode::null_logit;
  static constexpr bool kBiasKey0 = C::sinks == Mode::bias_key0;
  static constexpr bool kAny = kNullLogit || kBiasKey0;

  // sinks[head] in base 2, for each of this thread's two rows.
  static __device__ __forceinline__ float logit2(const float* sinks, int head) {
    if constexpr (kAny) {
      return sinks[head] * kLog2e;
    } else {
      return 0.f;
    }
  }

  // whole_row: the block sees all of its rows' keys. A split-KV part does
  // not; its null logit enters once, when the parts are combined.
  // (kSwapped: the fragments of DecodeSwapLayout, rows 2c and 2c + 1.)
  template <bool kSwapped = false, class Softmax>
  static __device__ __forceinline__ void init(Softmax& softmax, const float (&logit)[2], int lane,
                                              bool whole_row) {
    if constexpr (kNullLogit) {
      if (whole_row) {
        softmax.init_with_logit(logit, kSwapped ? lane < 4 : lane % 4 == 0);
      } else {
        softmax.init_empty();
      }
    } else {
      softmax.init_empty();
    }
  }

  // s: base-2 logits of one warp's m16 x n tile whose first key is j0.
  // Column 0 of the tile is key 0 of the sequence when j0 == 0; the lanes
  // with (lane % 4 == 0) hold it in s[0][0] (row g) and s[0][2] (row g+8).
  // Swapped (keys as M): the lanes 0-3 hold it in s[0][0] and s[0][1]
  // (rows 2c and 2c + 1).
  template <bool kSwapped = false, int kBlocks>
  static __device__ __forceinline__ void add_key0_bias(float (&s)[kBlocks][4],
                                                       const float (&logit)[2], int j0, int lane) {
    if constexpr (kBiasKey0) {
      if (j0 == 0 && (kSwapped ? lane < 4 : lane % 4 == 0)) {
        s[0][0] += logit[0];
        s[0][kSwapped ? 1 : 2] += logit[1];
      }
    }
  }
};

}  // namespace attention
}  // namespace attnjit

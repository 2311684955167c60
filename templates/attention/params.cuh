// The runtime arguments of one launch: the struct generated from the
// spec's `args` (attention_prefill_params.h, see compiler/include/attnjit/
// kernel_params.h), which the kernel receives as its one __grid_constant__
// parameter. Device code takes it by reference, never by value: the TMA
// maps inside must stay in the parameter space.
#pragma once

#include "attention_prefill_params.h"

namespace attnjit {
namespace attention {

template <class T>
using Params = ::attnjit::attention_prefill_params<T>;

// Whether a variant reads an engine's paged K/V cache (the spec's
// kv_layout flag).
template <class C>
__host__ __device__ constexpr bool paged_kv() {
  return C::kv_layout == C::kv_layout_t::paged;
}

// Whether a variant's K/V are fp8 e4m3 (the spec's kv_dtype flag).
template <class C>
__host__ __device__ constexpr bool fp8_kv() {
  return C::kv_dtype == C::kv_dtype_t::fp8_e4m3;
}

// The softmax scale as the scores need it: with fp8 K the per-tensor
// k_scale folds in (s = q . k8 * k_scale * scale, exactly the scaled
// score of the dequantized keys).
template <class C>
__device__ __forceinline__ float score_scale(const Params<typename C::dtype>& prm) {
  if constexpr (fp8_kv<C>()) {
    return prm.scale * __ldg(prm.k_scale);
  } else {
    return prm.scale;
  }
}

// What the output is multiplied by besides 1 / the softmax sum: with fp8
// V its per-tensor v_scale (o = sum p v8 * v_scale).
template <class C>
__device__ __forceinline__ float output_scale(const Params<typename C::dtype>& prm) {
  if constexpr (fp8_kv<C>()) {
    return __ldg(prm.v_scale);
  } else {
    return 1.f;
  }
}

}  // namespace attention
}  // namespace attnjit

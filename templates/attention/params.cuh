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

}  // namespace attention
}  // namespace attnjit

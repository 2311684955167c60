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

}  // namespace attention
}  // namespace attnjit

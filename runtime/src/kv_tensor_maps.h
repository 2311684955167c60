// The TMA maps of k and v for the sm_90a warpgroup kernels
// (kv_tensor_maps.cpp), encoded on the launch path and kept per thread.
#pragma once

#include "attnjit/attention_args.h"
#include "attnjit/driver.h"

namespace attnjit {

// The maps of k (out[0]) and v (out[1]) for one launch of a variant with
// these flags and TMA box: the cached ones where the tensors are those of
// this thread's last launch, else encoded anew. Throws Error(kArgument)
// for strides past the TMA's limit or pages that do not divide the key
// tile (nor it them).
void kv_tensor_maps(const AttentionFlags& flags, const AttentionArgs& args, const TmaBox& box,
                    const TensorMapBytes* (&out)[2]);

}  // namespace attnjit

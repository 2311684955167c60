// Device memory the launch path keeps for itself, per context: the
// split-KV parts (split_kv.cpp) and the generic tier's scratch
// (attention_tier.cpp). Both are grown on demand, off any capturing
// stream, and never freed.
#pragma once

#include <cstddef>

#include "attnjit/attention.h"
#include "attnjit/driver.h"

namespace attnjit {

// Offsets inside a scratch buffer are 256-byte aligned.
inline size_t align256(size_t n) { return (n + 255) / 256 * 256; }

// The workspace of one split launch: the caller's (checked), or the
// library's for this context and stream.
void* split_workspace(const AttentionArgs& args, const SplitPlan& plan, CuStream stream);

}  // namespace attnjit

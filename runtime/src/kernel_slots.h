// A kernel's variants, one slot per schedule (AttentionKernel::Slot), shared
// by the unit that makes them (attention.cpp) and the one that plans and
// launches with them (attention_launch.cpp).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include "attnjit/attention.h"
#include "tiered_variant.h"

namespace attnjit {

// One schedule's variant, set once (AttentionKernel::variant).
struct AttentionKernel::Slot {
  std::mutex mutex;
  std::atomic<TieredVariant*> ready{nullptr};
  std::shared_ptr<TieredVariant> variant;
};

// The slot of a schedule: split_kv * 2 + small_pages.
inline int slot_of(const Schedule& s) { return (s.split_kv ? 2 : 0) + (s.small_pages ? 1 : 0); }

}  // namespace attnjit

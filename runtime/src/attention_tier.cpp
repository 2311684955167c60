// The generic tier at run time (docs/tiers.md): a variant no cache holds is
// answered by its generic variant (generic_flags, generic_args in
// generic_tier.cpp) while it compiles on a background thread
// (TieredVariant).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <future>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "attnjit/attention.h"
#include "attnjit/error.h"
#include "launch_scratch.h"
#include "tiered_variant.h"
#include "tiers.h"
#include "variant.h"

namespace attnjit {
namespace {

// Device scratch for generic_args() per context: zero span offsets, -inf
// sinks, LSE. Grown (never on a capturing stream: captures wait for the
// specialized variant) and filled once per growth, then read-only except
// the LSE, whose values nobody reads (launches on several streams may
// write it at once). Never freed: a context's scratch lives as long as the
// process, like the split workspace.
struct Scratch {
  CuDevicePtr base = 0;
  size_t seqs = 0, heads = 0, lse_floats = 0;  // capacities
};

GenericScratch generic_scratch(const AttentionArgs& a) {
  static std::mutex mutex;
  static std::map<unsigned long long, Scratch> by_context;
  Driver& driver = Driver::get();
  const unsigned long long ctx = driver.context_id(driver.current_or_primary_context());
  std::lock_guard<std::mutex> lock(mutex);
  Scratch& s = by_context[ctx];
  const size_t seqs = size_t(a.num_seqs) + 1, heads = size_t(a.num_heads_q);
  const size_t lse_floats = size_t(a.num_heads_q) * size_t(a.total_q);
  if (s.base == 0 || seqs > s.seqs || heads > s.heads || lse_floats > s.lse_floats) {
    Scratch grown;
    grown.seqs = std::max(seqs, 2 * s.seqs);
    grown.heads = std::max(heads, s.heads);
    grown.lse_floats = std::max(lse_floats, 2 * s.lse_floats);
    const size_t bytes =
        align256(grown.seqs * 4) + align256(grown.heads * 4) + grown.lse_floats * 4;
    grown.base = driver.mem_alloc(bytes);
    driver.memset_d8(grown.base, 0, bytes);
    const std::vector<float> neg_inf(grown.heads, -std::numeric_limits<float>::infinity());
    driver.copy_to_device(grown.base + align256(grown.seqs * 4), neg_inf.data(),
                          neg_inf.size() * 4);
    driver.synchronize();  // filled before any stream reads it
    s = grown;             // the old buffer stays: a launch in flight may read it
  }
  const CuDevicePtr sinks = s.base + align256(s.seqs * 4);
  const CuDevicePtr lse = sinks + align256(s.heads * 4);
  const auto pointer = [](CuDevicePtr p) { return reinterpret_cast<void*>(uintptr_t(p)); };
  return GenericScratch{static_cast<const int32_t*>(pointer(s.base)),
                        static_cast<const float*>(pointer(sinks)),
                        static_cast<float*>(pointer(lse))};
}

}  // namespace

namespace {

// The generic variant answering for a variant: its launches switch the
// modes the variant does not have off through their arguments.
class GenericTier final : public Tier {
 public:
  GenericTier(const AttentionFlags& requested, std::unique_ptr<Variant> generic)
      : requested_(requested), generic_(std::move(generic)) {}
  const Variant& variant() const override { return *generic_; }
  void launch(const AttentionArgs& a, CuStream stream,
              const std::vector<UserArg>& /*user_args*/) const override {
    generic_->launch(generic_args(requested_, a, generic_scratch(a)), stream, {});
  }
  AttentionArgs plan_args(const AttentionArgs& a) const override {
    return generic_args(requested_, a, GenericScratch{});
  }

 private:
  AttentionFlags requested_;
  std::unique_ptr<Variant> generic_;
};

}  // namespace

std::unique_ptr<Tier> generic_tier(const Signature& sig, KernelCache& cache) {
  const Spec& spec = attention_spec();
  const AttentionFlags requested = AttentionFlags::from_flag_set(sig.flags);
  const AttentionFlags generic = generic_flags(requested);
  Schedule schedule = Schedule::of(sig.flags);
  if (generic.canonical_text(schedule) == requested.canonical_text(schedule)) return nullptr;
  // The generic variant of the same schedule, else (a small_pages sibling's)
  // of the variant without small_pages, which is correct at every page size.
  for (int tries = schedule.small_pages ? 2 : 1; tries > 0; --tries) {
    std::optional<Signature> generic_sig;
    try {
      generic_sig = make_signature(spec, generic.to_flag_set(schedule), sig.options);
    } catch (const Error&) {
      return nullptr;  // no generic variant for these flags: compile as always
    }
    if (std::optional<LookupResult> found = cache.find(spec, *generic_sig)) {
      return std::make_unique<GenericTier>(requested,
                                           std::make_unique<Variant>(*generic_sig, *found));
    }
    schedule.small_pages = false;
  }
  return nullptr;
}

}  // namespace attnjit

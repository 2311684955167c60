// The generic tier at run time (docs/tiers.md): a kernel whose variant no
// cache holds is answered by its generic variant (generic_tier.cpp) while
// the variant compiles on a background thread.
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
#include "log.h"
#include "variant.h"
#include "user_vm_tier.h"

namespace attnjit {
namespace {

std::atomic<uint64_t> generic_launch_count{0};

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

std::shared_ptr<AttentionKernel> AttentionKernel::tiered(const Signature& sig, KernelCache& cache,
                                                         const Target& target) {
  const Spec& spec = attention_spec();
  if (std::optional<LookupResult> cached = cache.find(spec, sig)) {
    auto kernel = std::shared_ptr<AttentionKernel>(new AttentionKernel());
    kernel->init_from(sig, *cached, cache, target);
    return kernel;
  }
  const AttentionFlags requested = AttentionFlags::from_flag_set(sig.flags);
  const Schedule schedule = Schedule::of(sig.flags);
  const AttentionFlags generic = generic_flags(requested);
  if (generic.canonical_text(schedule) == requested.canonical_text(schedule)) return nullptr;
  std::optional<Signature> generic_sig;
  try {
    generic_sig = make_signature(spec, generic.to_flag_set(schedule), sig.options);
  } catch (const Error&) {
    return nullptr;  // no generic variant for these flags: compile as always
  }
  std::optional<LookupResult> found = cache.find(spec, *generic_sig);
  if (!found) return nullptr;
  auto generic_kernel = std::shared_ptr<AttentionKernel>(new AttentionKernel());
  generic_kernel->init_from(*generic_sig, *found, cache, target);

  auto kernel = std::shared_ptr<AttentionKernel>(new AttentionKernel());
  kernel->flags_ = requested;
  kernel->schedule_ = schedule;
  kernel->generic_ = std::move(generic_kernel);
  kernel->cache_ = &cache;
  kernel->target_ = target;
  if (cache.config().log) {
    log_line(fmt::format("attnjit: {} answered by the generic {} while it compiles",
                         sig.display_name(), generic_sig->display_name()));
  }
  // The compile joins any other caller's of the same key (the cache's
  // in-flight table); the kernel is memoized, so it outlives the thread
  // (pending_ is joined first when it is destroyed).
  kernel->compile_specialized(sig, cache, [sig, &cache, target] {
    LookupResult result = cache.get(attention_spec(), sig);
    auto specialized = std::shared_ptr<AttentionKernel>(new AttentionKernel());
    specialized->init_from(sig, result, cache, target);
    return specialized;
  });
  return kernel;
}

void AttentionKernel::compile_specialized(const Signature& sig, KernelCache& cache,
                                          std::function<std::shared_ptr<AttentionKernel>()> build) {
  const bool log = cache.config().log;
  pending_ = std::async(std::launch::async, [this, sig, log, build = std::move(build)] {
    const auto start = std::chrono::steady_clock::now();
    try {
      std::shared_ptr<AttentionKernel> specialized = build();
      std::lock_guard<std::mutex> lock(tier_mutex_);
      specialized_owner_ = std::move(specialized);
      specialized_.store(specialized_owner_.get(), std::memory_order_release);
    } catch (const std::exception& e) {
      // Launches keep the generic variant (the same results); said once.
      log_line(fmt::format("attnjit: {} failed to compile; its generic variant keeps answering: {}",
                           sig.display_name(), e.what()));
      std::lock_guard<std::mutex> lock(tier_mutex_);
      specialized_error_ = std::current_exception();
      return;
    } catch (...) {
      std::lock_guard<std::mutex> lock(tier_mutex_);
      specialized_error_ = std::current_exception();
      return;
    }
    if (log) {
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      log_line(fmt::format("attnjit: {} specialized after {:.0f} ms", sig.display_name(),
                           took.count() * 1000));
    }
  });
}

void count_generic_launch() { generic_launch_count.fetch_add(1, std::memory_order_relaxed); }

const AttentionKernel& AttentionKernel::current() const {
  if (!generic_) return *this;
  const AttentionKernel* specialized = specialized_.load(std::memory_order_acquire);
  return specialized ? *specialized : *generic_;
}

AttentionKernel& AttentionKernel::current() {
  return const_cast<AttentionKernel&>(std::as_const(*this).current());
}

AttentionKernel::Tier AttentionKernel::tier() const {
  return generic_ && !specialized_.load(std::memory_order_acquire) ? Tier::kGeneric
                                                                   : Tier::kSpecialized;
}

void AttentionKernel::wait_specialized() {
  if (!generic_ || specialized_.load(std::memory_order_acquire)) return;
  if (pending_.valid()) pending_.wait();  // wait() is const: callers may share it
  std::lock_guard<std::mutex> lock(tier_mutex_);
  if (!specialized_.load(std::memory_order_acquire) && specialized_error_) {
    std::rethrow_exception(specialized_error_);
  }
}

uint64_t AttentionKernel::generic_launches() { return generic_launch_count.load(); }

AttentionKernel* AttentionKernel::landed(CuStream stream) {
  AttentionKernel* specialized = specialized_.load(std::memory_order_acquire);
  if (!specialized && Driver::get().stream_capturing(stream)) {
    wait_specialized();  // a graph never records a tier
    specialized = specialized_.load(std::memory_order_acquire);
  }
  return specialized;
}

void AttentionKernel::launch_generic(const AttentionArgs& a, CuStream stream) {
  if (AttentionKernel* specialized = landed(stream)) {
    specialized->for_args(a).variant().launch(a, stream, {});
    return;
  }
  const AttentionArgs args = generic_args(flags_, a, generic_scratch(a));
  generic_->for_args(args).variant().launch(args, stream, {});
  generic_launch_count.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace attnjit

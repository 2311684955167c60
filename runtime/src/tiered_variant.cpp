// A variant fetched on its first launch, with a tier answering while it
// compiles (tiered_variant.h, docs/tiers.md).
#include "tiered_variant.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "attnjit/error.h"
#include "attnjit/large_stack.h"
#include "log.h"

namespace attnjit {
namespace {

std::atomic<uint64_t> tier_launch_count{0};

}  // namespace

uint64_t tier_launches() { return tier_launch_count.load(std::memory_order_relaxed); }

TieredVariant::TieredVariant(std::shared_ptr<const Spec> spec, Signature sig, KernelCache& cache,
                             std::shared_ptr<const UserParams> user, TierFactory make_tier)
    : spec_(std::move(spec)),
      sig_(std::move(sig)),
      cache_(cache),
      user_(std::move(user)),
      make_tier_(std::move(make_tier)),
      planned_(shape_of(sig_)) {}

TieredVariant::~TieredVariant() = default;

VariantShape TieredVariant::shape() const {
  if (const Variant* v = ready_.load(std::memory_order_acquire)) return v->shape();
  return planned_;
}

void TieredVariant::fetch() {
  if (fetched_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (fetched_.load(std::memory_order_relaxed)) return;
  std::optional<LookupResult> found = cache_.find(*spec_, sig_);
  if (!found && make_tier_) {
    if (std::unique_ptr<Tier> tier = make_tier_()) {
      if (cache_.config().log) {
        log_line(fmt::format("attnjit: {} answered by {} while it compiles", sig_.display_name(),
                             tier->variant().kernel().name()));
      }
      tier_ = std::move(tier);
      compile_in_background();
      fetched_.store(true, std::memory_order_release);
      return;
    }
  }
  // Loaded, or compiled in this call (a failure throws and keeps nothing).
  const LookupResult result =
      found ? *found : on_large_stack([&] { return cache_.get(*spec_, sig_); });
  own_ = std::make_unique<Variant>(sig_, result, user_);
  ready_.store(own_.get(), std::memory_order_release);
  fetched_.store(true, std::memory_order_release);
}

void TieredVariant::compile_in_background() {
  const bool log = cache_.config().log;
  // The compile joins any other caller's of the same key (the cache's
  // in-flight table).
  pending_ = std::async(std::launch::async, [this, log] {
    const auto start = std::chrono::steady_clock::now();
    try {
      const LookupResult result = on_large_stack([&] { return cache_.get(*spec_, sig_); });
      auto compiled = std::make_unique<Variant>(sig_, result, user_);
      std::lock_guard<std::mutex> lock(mutex_);
      own_ = std::move(compiled);
      ready_.store(own_.get(), std::memory_order_release);
    } catch (const std::exception& e) {
      // Launches keep what answered for it (the same results); said once,
      // and where no cache holds it with the JIT off only with ATTNJIT_LOG.
      const auto* error = dynamic_cast<const Error*>(&e);
      if (log || error == nullptr || error->kind() != ErrorKind::kNoJit) {
        log_line(fmt::format("attnjit: {} failed to compile in the background; what answered "
                             "for it keeps answering: {}",
                             sig_.display_name(), e.what()));
      }
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::current_exception();
      return;
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::current_exception();
      return;
    }
    if (log) {
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      log_line(fmt::format("attnjit: {} specialized after {:.0f} ms", sig_.display_name(),
                           took.count() * 1000));
    }
  });
}

const Variant& TieredVariant::current() {
  if (const Variant* v = ready_.load(std::memory_order_acquire)) return *v;
  fetch();
  if (const Variant* v = ready_.load(std::memory_order_acquire)) return *v;
  return tier_->variant();
}

std::exception_ptr TieredVariant::error() {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

bool TieredVariant::tiered() const {
  return fetched_.load(std::memory_order_acquire) && !ready_.load(std::memory_order_acquire);
}

void TieredVariant::wait() {
  fetch();
  if (ready_.load(std::memory_order_acquire)) return;
  if (pending_.valid()) pending_.wait();
  std::lock_guard<std::mutex> lock(mutex_);
  if (!ready_.load(std::memory_order_acquire) && error_) std::rethrow_exception(error_);
}

void TieredVariant::launch(const AttentionArgs& a, CuStream stream,
                           const std::vector<UserArg>& user_args) {
  const Variant* v = ready_.load(std::memory_order_acquire);
  if (v == nullptr) {
    fetch();
    v = ready_.load(std::memory_order_acquire);
    if (v == nullptr && Driver::get().stream_capturing(stream)) {
      wait();  // a graph never records a tier
      v = ready_.load(std::memory_order_acquire);
    }
  }
  if (v != nullptr) {
    v->launch(a, stream, user_args);
    return;
  }
  tier_->launch(a, stream, user_args);
  tier_launch_count.fetch_add(1, std::memory_order_relaxed);
}

size_t TieredVariant::workspace_bytes(const AttentionArgs& a, int sm_count) {
  fetch();
  // The compiled variant's plan (while it compiles, from its signature's
  // tiles and blocks per SM, which the binary's launch bound takes from the
  // same rule), and the tier's while one answers.
  const Variant* v = ready_.load(std::memory_order_acquire);
  size_t bytes = v != nullptr ? v->plan(a, sm_count).split.workspace_bytes
                              : plan_launch(planned_, AttentionFlags::from_flag_set(sig_.flags), a,
                                            sm_count)
                                    .split.workspace_bytes;
  if (v == nullptr && tier_) {
    bytes = std::max(bytes, tier_->variant().plan(tier_->plan_args(a), sm_count).split.workspace_bytes);
  }
  return bytes;
}

}  // namespace attnjit

// A kernel's launches (attention.h): the schedule a launch runs (the
// planner's choices over the variants' tile configurations), the variant
// fetched for it (the small_pages sibling's fallbacks), its plan and
// workspace, the launch itself, and what describes and waits for the
// kernel's variants. Making the kernel and its variants: attention.cpp.
#include <algorithm>
#include <exception>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "attnjit/attention.h"
#include "attnjit/driver.h"
#include "attnjit/env.h"
#include "attnjit/error.h"
#include "kernel_slots.h"
#include "log.h"
#include "planner.h"
#include "tiered_variant.h"
#include "variant.h"

namespace attnjit {

Schedule AttentionKernel::schedule_for(const AttentionArgs& a) {
  // Decided before any variant is fetched, from their tile configurations:
  // the split sibling for a decode-shaped batch, and (of either) the
  // small_pages sibling for pages whose boxes are its V blocks (16 rows: pages
  // of 16 mod 32 keys, where V goes as a box per 16 keys and all of D; at
  // D 128 a 128-key tile's 32 boxes become 24). ATTNJIT_SMALL_PAGES=0
  // turns that off (read at each such launch).
  Schedule want = schedule_;
  VariantShape shape = variant(want).shape();
  if (wants_split(shape, a)) {
    want.split_kv = true;
    shape = variant(want).shape();
  }
  if (wants_small_pages(shape, a) &&
      !small_pages_missing_[want.split_kv ? 1 : 0].load(std::memory_order_relaxed) &&
      env_bool("ATTNJIT_SMALL_PAGES", true)) {
    want.small_pages = true;
  }
  return want;
}

namespace {

// An error that a small_pages sibling will meet again (no JIT, a failed
// build, flags it cannot have): it is not asked for again.
bool lasting(const Error& e) {
  return e.kind() == ErrorKind::kNoJit || e.kind() == ErrorKind::kCompile ||
         e.kind() == ErrorKind::kCodegen || e.kind() == ErrorKind::kSpec ||
         e.kind() == ErrorKind::kFlags;
}

}  // namespace

void AttentionKernel::small_pages_failed(const Schedule& want, const std::exception& e,
                                         bool lasting) {
  std::atomic<bool>& missing = small_pages_missing_[want.split_kv ? 1 : 0];
  const bool first = lasting && !missing.exchange(true, std::memory_order_relaxed);
  const auto* error = dynamic_cast<const Error*>(&e);
  const bool no_jit = error != nullptr && error->kind() == ErrorKind::kNoJit;
  // Said once where it is lasting (and only with ATTNJIT_LOG for no JIT, or
  // for a passing error that the next launch retries).
  if (!(first && !no_jit) && !cache_->config().log) return;
  log_line(fmt::format("attnjit: the small_pages sibling [{}] {}; the variant without it serves "
                       "pages of 16 keys{}: {}",
                       flags_.canonical_text(want),
                       no_jit ? "is in no cache and the JIT is off" : "failed",
                       lasting ? "" : " for this launch", e.what()));
}

TieredVariant* AttentionKernel::small_pages_sibling(const Schedule& want, bool fetch,
                                                    const CuStream* stream) {
  // Only a schedule: the variant without it is correct at every page size.
  // Where it cannot be had (its flags refused, no cache holding it with the
  // JIT off, a failed build) that one serves, from then on (after a
  // passing error, such as the cache's or the driver's, for that launch);
  // and while it compiles in the background (a tier cached for it) that
  // one serves too, being faster than a tier, unless the launch is being
  // captured into a CUDA graph, which then waits for the sibling.
  TieredVariant* made = nullptr;
  try {
    TieredVariant& small = variant(want);
    made = &small;
    if (!fetch) return &small;
    small.fetch();
    if (!small.tiered()) return &small;
    if (std::exception_ptr error = small.error()) {
      std::rethrow_exception(error);  // (never retried: lasting, whatever it was)
    }
    if (stream != nullptr && Driver::get().stream_capturing(*stream)) {
      small.wait();
      return &small;
    }
    return nullptr;
  } catch (const Error& e) {
    // (A fetched sibling failed in its background compile: never retried.)
    small_pages_failed(want, e, lasting(e) || (made != nullptr && made->fetched()));
    return nullptr;
  } catch (const std::exception& e) {
    small_pages_failed(want, e, true);
    return nullptr;
  }
}

TieredVariant& AttentionKernel::fetched_for(const AttentionArgs& a, const CuStream* stream) {
  Schedule want = schedule_for(a);
  if (want.small_pages && !schedule_.small_pages) {
    if (TieredVariant* small = small_pages_sibling(want, true, stream)) return *small;
    want.small_pages = false;
  }
  TieredVariant& runs = variant(want);
  runs.fetch();
  return runs;
}

LaunchPlan AttentionKernel::plan(const AttentionArgs& a, int sm_count) {
  Schedule want = schedule_for(a);
  if (want.small_pages && !schedule_.small_pages) {
    if (TieredVariant* small = small_pages_sibling(want, false)) {
      return plan_launch(small->shape(), flags_, a, sm_count);
    }
    want.small_pages = false;
  }
  return plan_launch(variant(want).shape(), flags_, a, sm_count);
}

size_t AttentionKernel::workspace_bytes(const AttentionArgs& a, int sm_count) {
  TieredVariant& runs = fetched_for(a);
  size_t bytes = runs.workspace_bytes(a, sm_count);
  // While a small_pages sibling compiles, a launch runs the variant without
  // it, or (captured) the sibling: enough for either.
  Schedule want = schedule_for(a);
  if (want.small_pages && !schedule_.small_pages) {
    TieredVariant& small = variant(want);
    if (&small != &runs && small.fetched()) bytes = std::max(bytes, small.workspace_bytes(a, sm_count));
  }
  return bytes;
}

Kernel& AttentionKernel::kernel_for(const AttentionArgs& a) {
  return fetched_for(a).current().kernel();
}

EntrySource AttentionKernel::source_for(const AttentionArgs& a) {
  return fetched_for(a).current().source();
}

Kernel& AttentionKernel::kernel() { return variant(schedule_).current().kernel(); }

int AttentionKernel::block_m() { return variant(schedule_).current().block_m(); }

int AttentionKernel::pack_gqa() { return variant(schedule_).current().pack_gqa(); }

EntrySource AttentionKernel::source() { return variant(schedule_).current().source(); }

AttentionKernel::Tier AttentionKernel::tier() {
  TieredVariant& own = variant(schedule_);
  own.fetch();
  return own.tiered() ? Tier::kGeneric : Tier::kSpecialized;
}

void AttentionKernel::wait_specialized() {
  bool any = false;
  for (const Schedule s : {Schedule{false, false}, Schedule{false, true}, Schedule{true, false},
                           Schedule{true, true}}) {
    TieredVariant* v = slots_[slot_of(s)].ready.load(std::memory_order_acquire);
    if (v == nullptr || !v->fetched()) continue;
    any = true;
    if (s.small_pages && !schedule_.small_pages) {
      // A small_pages sibling that fails leaves the variant without it serving.
      if (small_pages_missing_[s.split_kv ? 1 : 0].load(std::memory_order_relaxed)) continue;
      try {
        v->wait();
      } catch (const std::exception& e) {
        small_pages_failed(s, e, true);  // (a background compile is not retried)
      }
      continue;
    }
    v->wait();
  }
  if (!any) variant(schedule_).wait();
}

void AttentionKernel::join_background() noexcept {
  for (int i = 0; i < 4; ++i) {
    TieredVariant* v = slots_[i].ready.load(std::memory_order_acquire);
    if (v == nullptr || !v->fetched()) continue;
    try {
      v->wait();
    } catch (...) {
      // (Reported where it failed; this only waits.)
    }
  }
}

uint64_t AttentionKernel::generic_launches() { return tier_launches(); }

void AttentionKernel::launch(const AttentionArgs& a, CuStream stream) {
  if (user_params_) user_params_->require_none();
  launch(a, stream, {});
}

void AttentionKernel::launch(const AttentionArgs& a, CuStream stream,
                             const std::vector<UserArg>& user_args) {
  validate_attention_args(flags_, a);
  if (a.num_seqs == 0 || a.max_seqlen_q == 0) return;
  if (user_params_) user_params_->check(a, user_args);
  fetched_for(a, &stream).launch(a, stream, user_args);
}

bool AttentionKernel::launch_if_ready(const AttentionArgs& a, CuStream stream,
                                      const std::vector<UserArg>& user_args) {
  validate_attention_args(flags_, a);
  if (a.num_seqs == 0 || a.max_seqlen_q == 0) return true;
  if (user_params_) user_params_->check(a, user_args);
  // The variant fetched_for would pick, only where no fetch, compile or
  // wait can happen on the way: the planned schedule's variant (a small_pages
  // sibling included) already fetched and compiled; anything else, such as
  // a sibling still compiling, is the full path's to decide.
  TieredVariant* runs = slots_[slot_of(schedule_for(a))].ready.load(std::memory_order_acquire);
  if (runs == nullptr || !runs->ready()) return false;
  runs->launch(a, stream, user_args);
  return true;
}

}  // namespace attnjit

// Split-KV on the host: when a launch goes to the split variant, how many
// splits it gets, and the workspace the parts live in. The kernels' side is
// templates/attention/tile_scheduler.cuh (which block takes which part) and
// epilogue.cuh (the parts and their combine by the last block).
#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

#include <fmt/format.h>

#include "attention/tile_config.h"
#include "attnjit/attention.h"
#include "attnjit/env.h"
#include "attnjit/error.h"
#include "launch_scratch.h"
#include "log.h"
#include "planner.h"
#include "variant.h"

namespace attnjit {
namespace {

// A library-owned workspace per (context, stream), zeroed when allocated;
// it only grows, and a buffer it outgrows stays allocated (a CUDA graph may
// have captured its address). Never freed: at exit the driver may be gone.
struct WorkspaceCache {
  std::mutex mutex;
  std::map<std::pair<unsigned long long, CuStream>, std::pair<CuDevicePtr, size_t>> buffers;
  // Every buffer's CounterState (counters_to_clear), the callers' among them.
  std::map<CuDevicePtr, CounterState> counters;
};

WorkspaceCache& workspace_cache() {
  static WorkspaceCache& cache = *new WorkspaceCache;
  return cache;
}

}  // namespace

VariantShape AttentionKernel::shape() const { return variant().shape(); }

SplitPlan AttentionKernel::split_plan(const AttentionArgs& a, int sm_count) const {
  return variant().split_plan(a, sm_count);
}

AttentionKernel& AttentionKernel::for_args(const AttentionArgs& a) {
  if (generic_) return current().for_args(a);
  // The schedule this launch runs, decided before any sibling is fetched:
  // the split sibling for a decode-shaped batch, and (of either) the
  // small_pages sibling for pages whose boxes are its V blocks.
  Schedule want = schedule_;
  VariantShape shape = this->shape();
  const bool to_split = wants_split(shape, a);
  if (to_split) {
    want.split_kv = true;
    shape = planned_shape(split_sibling_, want);
  }
  // Pages whose boxes are the sibling's V blocks (16 rows: pages of 16 mod
  // 32 keys): V as a box per 16 keys and all of D (at D 128 a 128-key
  // tile's 32 boxes become 24). Only a schedule, and the variant without
  // it is correct at every page size: where the sibling cannot be had (no
  // cache holds it and the JIT is off, or it fails to build) that one
  // serves, from then on (after a passing error, such as the cache's or
  // the driver's, for that launch). ATTNJIT_SMALL_PAGES=0 turns it off
  // (read at each such launch).
  std::atomic<bool>& missing = small_pages_missing_[to_split ? 1 : 0];
  if (wants_small_pages(shape, a) && !missing.load(std::memory_order_relaxed) &&
      env_bool("ATTNJIT_SMALL_PAGES", true)) {
    Schedule small = want;
    small.small_pages = true;
    // (This variant's own small_pages sibling runs its tiles, the tuning
    // overrides it was got with; the split sibling is got without any, and
    // so is its small_pages one.)
    Sibling& slot = to_split ? split_small_pages_sibling_ : small_pages_sibling_;
    const std::map<std::string, int64_t> none;
    try {
      return sibling(slot, small, to_split ? none : tuning_overrides_);
    } catch (const Error& e) {
      // What will fail again (no JIT, a failed build) is not asked for
      // again; a passing cache or driver error is, at the next launch.
      const bool lasting = e.kind() == ErrorKind::kNoJit || e.kind() == ErrorKind::kCompile ||
                           e.kind() == ErrorKind::kCodegen || e.kind() == ErrorKind::kSpec ||
                           e.kind() == ErrorKind::kFlags;
      if (lasting) missing.store(true, std::memory_order_relaxed);
      if (e.kind() != ErrorKind::kNoJit && (lasting || cache_->config().log)) {
        log_line(
            fmt::format("attnjit: the small_pages sibling of {} failed ({}); it serves "
                        "pages of {} keys itself: {}",
                        variant_->kernel().name(), to_string(e.kind()), a.page_size, e.what()));
      } else if (cache_->config().log) {
        log_line(
            fmt::format("attnjit: no cache holds the small_pages sibling of {} and the JIT "
                        "is off; it serves pages of {} keys itself",
                        variant_->kernel().name(), a.page_size));
      }
    }
  }
  return to_split ? sibling(split_sibling_, want) : *this;
}

AttentionKernel& AttentionKernel::sibling(Sibling& s, const Schedule& schedule,
                                          const std::map<std::string, int64_t>& tuning) {
  if (AttentionKernel* ready = s.ready.load(std::memory_order_acquire)) return *ready;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.kernel) {
    std::shared_ptr<AttentionKernel> kernel;
    if (user_spec_) {
      kernel = AttentionKernel::get_user(
          user_spec_, resolve_flags(*user_spec_, flags_.to_flag_map(schedule)), *cache_, &target_,
          tuning);
    } else {
      kernel = AttentionKernel::get(flags_.to_flag_set(schedule), *cache_, &target_, tuning);
    }
    // A tier may answer for the sibling (docs/tiers.md), and a tier's
    // kernel launches only through its own dispatch (its tier's args): the
    // launch waits for the sibling's own kernel, as it did when get()
    // compiled it. A failed compile throws here and keeps nothing, so the
    // next launch tries again.
    kernel->wait_specialized();
    s.kernel = std::move(kernel);
    s.ready.store(&s.kernel->current(), std::memory_order_release);
  }
  return *s.ready.load(std::memory_order_acquire);
}

namespace {

// Zeroes what the launch's counters need in `buffer` (capacity bytes, its
// parts at the top) and says where the parts go. Under cache.mutex.
SplitScratch place_split(WorkspaceCache& cache, CuDevicePtr buffer, size_t capacity,
                         const SplitPlan& plan, CuStream stream) {
  const size_t counter_bytes = plan.lse_offset;
  const size_t parts_bytes = plan.workspace_bytes - plan.lse_offset;
  CounterState& state =
      cache.counters.try_emplace(buffer, CounterState{capacity, capacity}).first->second;
  const CounterClear clear = counters_to_clear(state, counter_bytes, capacity, parts_bytes, [&] {
    return Driver::get().stream_capturing(stream);
  });
  if (clear.to > clear.from) {
    Driver::get().memset_d8_async(buffer + clear.from, 0, clear.to - clear.from, stream);
  }
  char* base = reinterpret_cast<char*>(buffer);
  char* parts = base + (capacity - plan.workspace_bytes);
  return SplitScratch{reinterpret_cast<int32_t*>(base + plan.counters_offset),
                      reinterpret_cast<float*>(parts + plan.lse_offset),
                      reinterpret_cast<float*>(parts + plan.o_offset)};
}

}  // namespace

SplitScratch split_workspace(const AttentionArgs& a, const SplitPlan& plan, CuStream stream) {
  if (a.workspace != nullptr) {
    if (a.workspace_bytes < plan.workspace_bytes) {
      throw Error(ErrorKind::kArgument,
                  fmt::format("attention: the workspace has {} bytes; this launch (split-KV, {} "
                              "splits) needs {}",
                              a.workspace_bytes, plan.num_splits, plan.workspace_bytes));
    }
    if ((reinterpret_cast<uintptr_t>(a.workspace) & 255) != 0) {
      throw Error(ErrorKind::kArgument, "attention: the workspace must be 256-byte aligned");
    }
    // (The parts at the top of the caller's bytes, 256-aligned.)
    const size_t capacity = a.workspace_bytes / 256 * 256;
    WorkspaceCache& cache = workspace_cache();
    std::lock_guard<std::mutex> lock(cache.mutex);
    return place_split(cache, reinterpret_cast<CuDevicePtr>(a.workspace), capacity, plan, stream);
  }
  Driver& driver = Driver::get();
  const CuContext ctx = driver.current_or_primary_context();
  const auto key = std::make_pair(driver.context_id(ctx), stream);
  WorkspaceCache& cache = workspace_cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto& [ptr, bytes] = cache.buffers[key];
  if (bytes < plan.workspace_bytes) {
    if (driver.stream_capturing(stream)) {
      throw Error(ErrorKind::kArgument,
                  fmt::format("attention: a launch needs {} bytes of workspace (split-KV parts) "
                              "while the stream is being captured into a CUDA graph; launch once "
                              "with the largest shape before capturing, or pass a workspace",
                              plan.workspace_bytes));
    }
    const size_t grown = std::max(plan.workspace_bytes, 2 * bytes);
    const CuDevicePtr fresh = driver.mem_alloc(grown);
    driver.memset_d8(fresh, 0, grown);
    driver.synchronize();  // zeroed before any stream uses it
    ptr = fresh;
    bytes = grown;
  }
  return place_split(cache, ptr, bytes, plan, stream);
}

}  // namespace attnjit

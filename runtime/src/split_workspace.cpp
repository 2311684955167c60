// Split-KV on the host: the workspace a split launch's parts live in (when
// a launch goes to the split variant and how many splits it gets: the
// planner, planner.h). The kernels' side is templates/attention/
// tile_scheduler.cuh (which block takes which part) and epilogue.cuh (the
// parts and their combine by the last block).
#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "attnjit/driver.h"
#include "attnjit/error.h"
#include "launch_scratch.h"

namespace attnjit {
namespace {

// The handle of CUDA's per-thread default stream (cuda.h's
// CU_STREAM_PER_THREAD): one value, a different stream in every thread.
const CuStream kPerThreadStream = reinterpret_cast<CuStream>(uintptr_t{0x2});

// A library-owned workspace per (context, stream), zeroed when allocated;
// it only grows, and a buffer it outgrows stays allocated (a CUDA graph may
// have captured its address). Never freed: at exit the driver may be gone.
struct WorkspaceCache {
  std::mutex mutex;
  // (context, stream, thread): the thread only for the per-thread default
  // stream, whose one handle names each thread's own stream (two threads'
  // launches on it may run at once, so they must not share parts).
  using Key = std::tuple<unsigned long long, CuStream, std::thread::id>;
  std::map<Key, std::pair<CuDevicePtr, size_t>> buffers;
  // Every buffer's CounterState (counters_to_clear), the callers' among them.
  std::map<CuDevicePtr, CounterState> counters;
};

WorkspaceCache& workspace_cache() {
  static WorkspaceCache& cache = *new WorkspaceCache;
  return cache;
}

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
  const WorkspaceCache::Key key{
      driver.context_id(ctx), stream,
      stream == kPerThreadStream ? std::this_thread::get_id() : std::thread::id()};
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

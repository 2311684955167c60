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

namespace attnjit {
namespace {

// A split count is taken once its waves fill the GPU this well relative
// to the best count allowed (docs/tuning.md, "Chosen by the runtime").
constexpr double kSplitSlack = 0.95;

// The most keys one query of a batch can see: all of the longest
// sequence's, or a window's worth (plus the chunk's own queries) when a
// window bounds them and no unclamped span reaches past it (a clamped
// span reaches no later than the sequence's last key, inside
// window_left + max_seqlen_q).
int64_t visible_keys(const AttentionFlags& flags, const AttentionArgs& a) {
  int64_t keys = a.max_seqlen_k;
  const bool spans_escape = flags.mm_prefix && !flags.mm_clamp;
  if (flags.window && !spans_escape && a.window_left >= 0) {
    const int64_t right = a.window_right >= 0 ? a.window_right : a.max_seqlen_k;
    keys = std::min<int64_t>(keys, a.window_left + a.max_seqlen_q + right);
  }
  return keys;
}

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

SplitPlan AttentionKernel::split_plan(const AttentionArgs& a, int sm_count) const {
  if (generic_) return current().split_plan(a, sm_count);
  SplitPlan plan;
  if (!flags_.split_kv || a.num_splits == 1 || a.num_seqs <= 0 || a.max_seqlen_q <= 0) {
    return plan;
  }
  const int group = pack_gqa_ ? a.num_heads_q / a.num_heads_kv : 1;
  // Every query tile of the longest sequence counts as a slot: a prefill's
  // tiles already fill the GPU and get no split, and a decode's few (the
  // decode block's 8-row tiles: two for GQA 16, or for two queries at
  // GQA 8) split as one would.
  const int64_t m_tiles = (int64_t(a.max_seqlen_q) * group + block_m_ - 1) / block_m_;
  // More than 8 tiles (a decode's 64 packed rows at the swapped block's 8)
  // is a prefill: no split, even forced (its parts and grid would grow with
  // its length).
  if (m_tiles > 8) return plan;
  const int64_t slots =
      int64_t(a.num_seqs) * (pack_gqa_ ? a.num_heads_kv : a.num_heads_q) * m_tiles;
  const int64_t tiles = (visible_keys(flags_, a) + block_n_ - 1) / block_n_;
  const int64_t min_tiles = std::max<int64_t>(1, (split_keys_ + block_n_ - 1) / block_n_);
  const int64_t most = std::min<int64_t>({tiles / min_tiles, 128, a.num_splits > 1 ? a.num_splits : 128});
  int splits = 1;
  if (a.num_splits > 1) {
    splits = int(std::max<int64_t>(1, most));
  } else if (most > 1) {
    // The fewest splits whose waves fill the GPU within kSplitSlack of the
    // best count up to the most allowed: efficiency = waves / ceil(waves)
    // over the blocks that run at once (SMs x blocks per SM). A decode is
    // bound by the bytes its resident blocks pull, so a slot left idle is
    // bandwidth lost; an extra split costs only its partial row and a turn
    // of the combine.
    const int64_t sms = sm_count > 0 ? sm_count : current_device_sm_count();
    const double capacity = double(sms) * min_blocks_;
    const auto efficiency = [&](int64_t s) {
      const double waves = double(slots * s) / capacity;
      return waves / std::ceil(waves);
    };
    if (double(slots) < 0.8 * capacity) {
      double best = 0;
      for (int64_t s = 1; s <= most; ++s) best = std::max(best, efficiency(s));
      for (int64_t s = 1; s <= most; ++s) {
        if (efficiency(s) >= kSplitSlack * best) {
          splits = int(s);
          break;
        }
      }
    }
  }
  if (splits <= 1) return plan;
  plan.num_splits = splits;
  const LaunchGrid grid = attention_grid(a, block_m_, pack_gqa_, splits);
  const size_t parts = size_t(splits) * size_t(a.total_q) * size_t(a.num_heads_q);
  plan.counters_offset = 0;
  plan.lse_offset = align256(
      size_t(attention::split_counter_count(grid.x, grid.y, grid.z, splits)) * sizeof(int32_t));
  plan.o_offset = plan.lse_offset + align256(parts * sizeof(float));
  plan.workspace_bytes = plan.o_offset + align256(parts * size_t(flags_.head_dim) * sizeof(float));
  return plan;
}

AttentionKernel& AttentionKernel::for_args(const AttentionArgs& a) {
  if (generic_) return current().for_args(a);
  AttentionKernel* runs = this;
  if (!flags_.split_kv && a.num_splits != 1) {
    // Decode-shaped: every sequence within 64 packed rows (one query tile
    // of most split rules; the swapped decode block's 8-row tiles split
    // each of their up to eight).
    constexpr int64_t kSplitRows = 64;
    const int64_t group = a.num_heads_kv > 0 ? a.num_heads_q / a.num_heads_kv : 1;
    const bool decode = a.max_seqlen_q > 0 && int64_t(a.max_seqlen_q) * group <= kSplitRows;
    if (a.num_splits > 1 || decode) {
      AttentionFlags flags = flags_;
      flags.split_kv = true;
      runs = &sibling(split_sibling_, flags);
    }
  }
  // Pages whose boxes are the sibling's V blocks (16 rows: pages of 16 mod
  // 32 keys): V as a box per 16 keys and all of D (at D 128 a 128-key
  // tile's 32 boxes become 24). Only a schedule, and this variant is correct at every page
  // size: where the sibling cannot be had (no cache holds it and the JIT
  // is off, or it fails to build) this one serves, from then on (after a
  // passing error, such as the cache's or the driver's, for that launch).
  // ATTNJIT_SMALL_PAGES=0 turns it off (read at each such launch).
  if (runs->small_pages_rows_ > 0 && !runs->flags_.small_pages &&
      attention::paged_box_rows(runs->block_n_, a.page_size) == runs->small_pages_rows_ &&
      !runs->small_pages_missing_.load(std::memory_order_relaxed) &&
      env_bool("ATTNJIT_SMALL_PAGES", true)) {
    AttentionFlags flags = runs->flags_;
    flags.small_pages = true;
    try {
      runs = &runs->sibling(runs->small_pages_sibling_, flags, runs->tuning_overrides_);
    } catch (const Error& e) {
      // What will fail again (no JIT, a failed build) is not asked for
      // again; a passing cache or driver error is, at the next launch.
      const bool lasting = e.kind() == ErrorKind::kNoJit || e.kind() == ErrorKind::kCompile ||
                           e.kind() == ErrorKind::kCodegen || e.kind() == ErrorKind::kSpec ||
                           e.kind() == ErrorKind::kFlags;
      if (lasting) runs->small_pages_missing_.store(true, std::memory_order_relaxed);
      if (e.kind() != ErrorKind::kNoJit && (lasting || runs->cache_->config().log)) {
        log_line(
            fmt::format("attnjit: the small_pages sibling of {} failed ({}); it serves "
                        "pages of {} keys itself: {}",
                        runs->kernel_->name(), to_string(e.kind()), a.page_size, e.what()));
      } else if (runs->cache_->config().log) {
        log_line(
            fmt::format("attnjit: no cache holds the small_pages sibling of {} and the JIT "
                        "is off; it serves pages of {} keys itself",
                        runs->kernel_->name(), a.page_size));
      }
    }
  }
  return *runs;
}

AttentionKernel& AttentionKernel::sibling(Sibling& s, const AttentionFlags& flags,
                                          const std::map<std::string, int64_t>& tuning) {
  if (AttentionKernel* ready = s.ready.load(std::memory_order_acquire)) return *ready;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.kernel) {
    std::shared_ptr<AttentionKernel> kernel;
    if (user_spec_) {
      std::map<std::string, FlagValue> values = flags.to_flag_map();
      kernel = AttentionKernel::get_user(user_spec_, resolve_flags(*user_spec_, values), *cache_,
                                         &target_, tuning);
    } else {
      kernel = AttentionKernel::get(flags, *cache_, &target_, tuning);
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

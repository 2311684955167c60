// The launch planner (planner.h): pure choices from a variant's shape and
// a launch's arguments.
#include "planner.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "attention/tile_config.h"
#include "attnjit/driver.h"
#include "launch_scratch.h"

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
    keys = std::min<int64_t>(keys, int64_t{a.window_left} + a.max_seqlen_q + right);
  }
  return keys;
}

}  // namespace

bool wants_split(const VariantShape& v, const AttentionArgs& a) {
  if (v.split_kv || a.num_splits == 1) return false;
  // Decode-shaped: every sequence within 64 packed rows (one query tile
  // of most split rules; the swapped decode block's 8-row tiles split
  // each of their up to eight).
  constexpr int64_t kSplitRows = 64;
  const int64_t group = a.num_heads_kv > 0 ? a.num_heads_q / a.num_heads_kv : 1;
  const bool decode = a.max_seqlen_q > 0 && int64_t(a.max_seqlen_q) * group <= kSplitRows;
  return a.num_splits > 1 || decode;
}

bool wants_small_pages(const VariantShape& v, const AttentionArgs& a) {
  // Pages whose boxes are the sibling's V blocks (16 rows: pages of 16 mod
  // 32 keys): V as a box per 16 keys and all of D.
  return v.small_pages_rows > 0 && !v.small_pages &&
         attention::paged_box_rows(v.block_n, a.page_size) == v.small_pages_rows;
}

SplitPlan plan_splits(const VariantShape& v, const AttentionFlags& flags, const AttentionArgs& a,
                      const std::function<int()>& sm_count) {
  SplitPlan plan;
  if (!v.split_kv || a.num_splits == 1 || a.num_seqs <= 0 || a.max_seqlen_q <= 0) {
    return plan;
  }
  const int group = v.pack_gqa ? a.num_heads_q / a.num_heads_kv : 1;
  // Every query tile of the longest sequence counts as a slot: a prefill's
  // tiles already fill the GPU and get no split, and a decode's few (the
  // decode block's 8-row tiles: two for GQA 16, or for two queries at
  // GQA 8) split as one would.
  const int64_t m_tiles = (int64_t(a.max_seqlen_q) * group + v.block_m - 1) / v.block_m;
  // More than 8 tiles (a decode's 64 packed rows at the swapped block's 8)
  // is a prefill: no split, even forced (its parts and grid would grow with
  // its length).
  if (m_tiles > 8) return plan;
  const int64_t slots =
      int64_t(a.num_seqs) * (v.pack_gqa ? a.num_heads_kv : a.num_heads_q) * m_tiles;
  const int64_t tiles = (visible_keys(flags, a) + v.block_n - 1) / v.block_n;
  const int64_t min_tiles = std::max<int64_t>(1, (v.split_keys + v.block_n - 1) / v.block_n);
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
    const int64_t sms = sm_count();
    const double capacity = double(sms) * v.min_blocks;
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
  const LaunchGrid grid = attention_grid(a, v.block_m, v.pack_gqa, splits);
  const size_t parts = size_t(splits) * size_t(a.total_q) * size_t(a.num_heads_q);
  plan.counters_offset = 0;
  plan.lse_offset = align256(
      size_t(attention::split_counter_count(grid.x, grid.y, grid.z, splits)) * sizeof(int32_t));
  plan.o_offset = plan.lse_offset + align256(parts * sizeof(float));
  plan.workspace_bytes =
      plan.o_offset + align256(parts * size_t(flags.value_head_dim()) * sizeof(float));
  return plan;
}

LaunchPlan plan_launch(const VariantShape& v, const AttentionFlags& flags, const AttentionArgs& a,
                       int sm_count) {
  LaunchPlan plan;
  plan.schedule.split_kv = v.split_kv;
  plan.schedule.small_pages = v.small_pages;
  if (v.split_kv) {
    plan.split = plan_splits(v, flags, a, [sm_count] {
      return sm_count > 0 ? sm_count : current_device_sm_count();
    });
  }
  plan.grid = attention_grid(a, v.block_m, v.pack_gqa ? 1 : 0, plan.split.num_splits);
  return plan;
}

}  // namespace attnjit

// The launch grid (attention_grid, runtime) and the kernels' tile
// scheduler (templates/attention/tile_scheduler.cuh, compiled for the host)
// together: for random varlen batches, GQA groups, tile heights and with
// and without GQA packing, every (token, query head) output row belongs to
// exactly one block, and each block reads the k/v head of its query heads.
// No GPU.
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <set>
#include <random>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "attnjit/attention.h"

// clang-format off
#include "host_device.h"
#include "attention/tile_scheduler.cuh"
#include "host_device_end.h"
// clang-format on

namespace attnjit {
namespace {

template <int kPack, bool kSplit = false, int kSplitKeys = 0>
struct Config {
  using dtype = unsigned short;
  static constexpr int pack_gqa = kPack;
  static constexpr bool split_kv = kSplit;
  static constexpr int split_keys = kSplitKeys;
  static constexpr bool causal = true;
  static constexpr bool window = false;
  static constexpr bool mm_prefix = false;
  static constexpr bool mm_clamp = false;
  enum class kv_layout_t : int { contiguous = 0, paged = 1 };
  static constexpr kv_layout_t kv_layout = kv_layout_t::contiguous;
};

// GQA groups of the random batches: powers of two and not (3, 5, 6 and 7
// take packed rows' multiply-and-shift division off its shift-only path).
constexpr std::array<int, 8> kGroups{1, 2, 3, 4, 5, 6, 7, 8};

// A batch's launch arguments and the kernel params the scheduler reads
// (pointers only formed, never read, past the lengths).
AttentionArgs batch_args(int num_seqs, int hq, int hkv, int max_q) {
  AttentionArgs args;
  args.num_seqs = num_seqs;
  args.num_heads_q = hq;
  args.num_heads_kv = hkv;
  args.max_seqlen_q = max_q;
  return args;
}
attention::Params<unsigned short> batch_params(const std::vector<int>& cu_q,
                                               const std::vector<int>& cu_k, int hq, int hkv) {
  attention::Params<unsigned short> prm{};
  prm.cu_seqlens_q = cu_q.data();
  prm.cu_seqlens_k = cu_k.data();
  prm.num_heads_q = hq;
  prm.num_heads_kv = hkv;
  prm.gqa_group = hq / hkv;  // as the runtime fills them (variant.cpp, kernel_params)
  prm.gqa_group_magic = ::attnjit::divisor_magic(prm.gqa_group);
  prm.q_row_stride = hq;
  prm.k_row_stride = prm.v_row_stride = hkv;
  prm.k_head_stride = prm.v_head_stride = 1;
  return prm;
}

template <int kPack, int kBlockM>
void check_grid(std::mt19937_64& rng) {
  const int num_seqs = 1 + int(rng() % 4);
  const int hkv = 1 + int(rng() % 3);
  const int group = kGroups[rng() % kGroups.size()];
  const int hq = hkv * group;
  std::vector<int> cu_q{0}, cu_k{0};
  int max_q = 0;
  for (int b = 0; b < num_seqs; ++b) {
    const int n_q = int(rng() % 300);
    cu_q.push_back(cu_q.back() + n_q);
    cu_k.push_back(cu_k.back() + n_q + int(rng() % 50));
    max_q = std::max(max_q, n_q);
  }
  const std::string what = fmt::format("pack={} block_m={} B={} Hq={} Hkv={} max_q={}", kPack,
                                       kBlockM, num_seqs, hq, hkv, max_q);
  const AttentionArgs args = batch_args(num_seqs, hq, hkv, max_q);
  const LaunchGrid grid = attention_grid(args, kBlockM, kPack);

  const attention::Params<unsigned short> prm = batch_params(cu_q, cu_k, hq, hkv);
  std::map<std::pair<int, int>, int> writes;  // (token, head) -> blocks
  for (blockIdx.z = 0; blockIdx.z < grid.z; ++blockIdx.z) {
    for (blockIdx.y = 0; blockIdx.y < grid.y; ++blockIdx.y) {
      for (blockIdx.x = 0; blockIdx.x < grid.x; ++blockIdx.x) {
        using Scheduler = attention::TileScheduler<Config<kPack>, kBlockM, 64>;
        typename Scheduler::Work work;
        if (!Scheduler::get(prm, work)) continue;
        ASSERT_LT(work.row0, work.row_end) << what;
        for (int row = work.row0; row < work.row_end; ++row) {
          const int pos = work.map.position(row);
          const int head = work.map.head(row);
          ASSERT_GE(pos, 0) << what;
          ASSERT_LT(pos, work.n_q) << what;
          ASSERT_GE(head, 0) << what;
          ASSERT_LT(head, hq) << what;
          ASSERT_EQ(head / group, work.hk) << what << " row " << row;
          ++writes[{work.q_begin + pos, head}];
        }
      }
    }
  }
  ASSERT_EQ(int(writes.size()), cu_q.back() * hq) << what;
  for (const auto& [row, count] : writes) {
    ASSERT_EQ(count, 1) << what << " token " << row.first << " head " << row.second;
  }
}

// Split-KV: with num_splits parts, every key tile of every row is visited
// by exactly one block, the key tiles of an unsplit schedule and no other;
// the blocks of one query tile agree on their part count, which equals
// the number of blocks that count on the tile's split counter (the combine
// waits for that many); no two tiles share a counter, and every counter
// lies within the [B, grid.y, query tiles] the host sizes.
template <int kPack, int kBlockM, int kMinTiles>
void check_split(std::mt19937_64& rng) {
  constexpr int kBlockN = 64;
  const int num_seqs = 1 + int(rng() % 5);
  const int hkv = 1 + int(rng() % 3);
  const int group = kGroups[rng() % kGroups.size()];
  const int hq = hkv * group;
  const int num_splits = 1 + int(rng() % 9);
  std::vector<int> cu_q{0}, cu_k{0};
  int max_q = 0;
  for (int b = 0; b < num_seqs; ++b) {
    const int n_q = rng() % 4 == 0 ? int(rng() % 100) : int(rng() % 3);  // mostly decodes
    cu_q.push_back(cu_q.back() + n_q);
    cu_k.push_back(cu_k.back() + n_q + int(rng() % 2000));
    max_q = std::max(max_q, n_q);
  }
  const std::string what =
      fmt::format("pack={} block_m={} min_tiles={} B={} Hq={} Hkv={} max_q={} splits={}", kPack,
                  kBlockM, kMinTiles, num_seqs, hq, hkv, max_q, num_splits);
  const AttentionArgs args = batch_args(num_seqs, hq, hkv, max_q);
  attention::Params<unsigned short> prm = batch_params(cu_q, cu_k, hq, hkv);
  prm.num_splits = num_splits;
  using Key = std::tuple<int, int, int>;  // (token, head, key tile)
  // Visits of each key tile by each row, and the parts counted on each
  // split counter (with the tile each came from: sequence, head slot, row0).
  using Tile = std::tuple<int, int, int>;
  const auto visits = [&](auto config, int splits, std::map<Key, int>& seen,
                          std::map<int, std::vector<std::pair<Tile, int>>>& parts) {
    using Scheduler = attention::TileScheduler<decltype(config), kBlockM, kBlockN>;
    const LaunchGrid grid = attention_grid(args, kBlockM, kPack, splits);
    gridDim = HostDim3{grid.x, grid.y, grid.z};
    for (blockIdx.z = 0; blockIdx.z < grid.z; ++blockIdx.z) {
      for (blockIdx.y = 0; blockIdx.y < grid.y; ++blockIdx.y) {
        for (blockIdx.x = 0; blockIdx.x < grid.x; ++blockIdx.x) {
          typename Scheduler::Work work;
          if (!Scheduler::get(prm, work)) continue;
          int counter = -1;
          if (work.splits > 1) {
            EXPECT_LE(work.splits, num_splits) << what;
            counter = work.split_counter();
            EXPECT_GE(counter, 0) << what;
            EXPECT_LT(counter, attention::split_counter_count(grid.x, grid.y, grid.z, splits))
                << what;
          }
          parts[counter].push_back(
              {Tile{int(blockIdx.z), int(blockIdx.y), work.row0}, work.splits});
          for (int row = work.row0; row < work.row_end; ++row) {
            for (int kt = work.range.first_tile; kt <= work.range.last_tile; ++kt) {
              ++seen[{work.q_begin + work.map.position(row), work.map.head(row), kt}];
            }
          }
        }
      }
    }
  };
  std::map<Key, int> whole, split;
  std::map<int, std::vector<std::pair<Tile, int>>> whole_parts, split_parts;
  visits(Config<kPack>{}, 1, whole, whole_parts);
  visits(Config<kPack, true, kMinTiles * kBlockN>{}, num_splits, split, split_parts);
  ASSERT_EQ(whole.size(), split.size()) << what;
  for (const auto& [key, count] : split) {
    ASSERT_EQ(count, 1) << what << " token " << std::get<0>(key) << " head " << std::get<1>(key)
                        << " tile " << std::get<2>(key);
    ASSERT_EQ(whole.count(key), 1u) << what;
  }
  // Split tiles: the blocks on one counter are one tile's, as many as its
  // part count. (Counter -1 holds the unsplit tiles, one part each.)
  std::set<Tile> counted;
  for (const auto& [counter, blocks] : split_parts) {
    for (const auto& [tile, count] : blocks) {
      if (counter < 0) {
        ASSERT_EQ(count, 1) << what;
        continue;
      }
      ASSERT_EQ(tile, blocks.front().first) << what << " counter " << counter;
      ASSERT_EQ(count, int(blocks.size())) << what << " counter " << counter;
    }
    if (counter >= 0) ASSERT_TRUE(counted.insert(blocks.front().first).second) << what;
  }
}

TEST(DeviceGrid, SplitKvVisitsEveryKeyTileOnce) {
  const uint64_t seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  SCOPED_TRACE(fmt::format("seed {}", seed));
  for (int trial = 0; trial < 40; ++trial) {
    check_split<1, 64, 1>(rng);
    check_split<1, 64, 4>(rng);
    check_split<0, 64, 2>(rng);
    // The decode block's 8-row tiles (decode_mma 2): a GQA-16 head, or
    // two queries at GQA 8, in two or more tiles, each split.
    check_split<1, 8, 1>(rng);
    check_split<1, 8, 4>(rng);
  }
}

TEST(DeviceGrid, EveryOutputRowBelongsToExactlyOneBlock) {
  const uint64_t seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  SCOPED_TRACE(fmt::format("seed {}", seed));
  for (int trial = 0; trial < 40; ++trial) {
    check_grid<0, 64>(rng);
    check_grid<0, 192>(rng);
    check_grid<1, 64>(rng);
    check_grid<1, 128>(rng);
    check_grid<1, 192>(rng);
  }
}

// The warp-parallel scans that trim a user mask's empty key tiles answer
// as loops from either end do, for random predicates and ranges (lengths
// around multiples of the 32 lanes, empty ranges, no hit, all hits).
TEST(DeviceGrid, WarpScansFindTheFirstAndLastTileLikeALoop) {
  std::mt19937_64 rng(31);
  for (int trial = 0; trial < 4000; ++trial) {
    const int lo = int(rng() % 50) - 5;
    const int hi = lo + int(rng() % 140) - 3;
    const int density = int(rng() % 5);  // 0: nothing kept ... 4: all kept
    std::vector<bool> kept(300);
    for (std::size_t i = 0; i < kept.size(); ++i) kept[i] = int(rng() % 4) < density;
    const auto keep = [&](int t) { return kept[std::size_t(t + 10)]; };
    int first = lo;
    while (first <= hi && !keep(first)) ++first;
    int last = hi;
    while (last >= lo && !keep(last)) --last;
    ASSERT_EQ(attention::first_where(lo, hi, keep), first) << lo << " " << hi;
    ASSERT_EQ(attention::last_where(lo, hi, keep), last) << lo << " " << hi;
  }
}

}  // namespace
}  // namespace attnjit

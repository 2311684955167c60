// The launch grid (attention_grid, runtime) and the kernels' tile
// scheduler (templates/attention/tile_scheduler.cuh, compiled for the host)
// together: for random varlen batches, GQA groups, tile heights and with
// and without GQA packing, every (token, query head) output row belongs to
// exactly one block, and each block reads the k/v head of its query heads.
// No GPU.
#include <gtest/gtest.h>

#include <map>
#include <random>
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

template <int kPack>
struct Config {
  using dtype = unsigned short;
  static constexpr int pack_gqa = kPack;
  static constexpr bool causal = true;
  static constexpr bool window = false;
  static constexpr bool mm_prefix = false;
  static constexpr bool mm_clamp = false;
  enum class kv_layout_t : int { contiguous = 0, paged = 1 };
  static constexpr kv_layout_t kv_layout = kv_layout_t::contiguous;
};

template <int kPack, int kBlockM>
void check_grid(std::mt19937_64& rng) {
  const int num_seqs = 1 + int(rng() % 4);
  const int hkv = 1 + int(rng() % 3);
  const int group = 1 << int(rng() % 4);  // 1, 2, 4, 8
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
  AttentionArgs args;
  args.num_seqs = num_seqs;
  args.num_heads_q = hq;
  args.num_heads_kv = hkv;
  args.max_seqlen_q = max_q;
  const LaunchGrid grid = attention_grid(args, kBlockM, kPack != 0);

  attention::Params<unsigned short> prm{};
  prm.cu_seqlens_q = cu_q.data();
  prm.cu_seqlens_k = cu_k.data();
  prm.num_heads_q = hq;
  prm.num_heads_kv = hkv;
  prm.q_row_stride = hq;  // only used to form pointers
  prm.k_row_stride = prm.v_row_stride = hkv;
  prm.k_head_stride = prm.v_head_stride = 1;
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

}  // namespace
}  // namespace attnjit

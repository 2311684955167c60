// The decode block's ring (templates/attention/decode_sm90.cuh: produce()
// and the key loop) on the host, with the kernel's own schedule and
// parities (DecodeSchedule, decode_layout.cuh) on a model of the mbarriers.
// No GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "attention/decode_layout.cuh"

namespace attnjit {
namespace {

// The ring's protocol (decode_sm90.cuh: produce() and the key loop) with
// the kernel's own schedule (DecodeSchedule) on a model of the mbarriers:
// a phase completes once its arrivals are in and its expected bytes have
// landed, and try_wait.parity(p) succeeds once the current phase's parity
// differs from p. A producer and the consumer warps step in random order,
// copies land at random later steps: every warp must read each of its
// tiles with that tile's bytes in the stage until it releases it, every
// tile must be read by exactly one warp per row group, and nothing may
// wait forever. (One wrong parity or arrival count fails it.)
struct ModelBarrier {
  int count = 0, pending = 0, phase = 0;
  long tx = 0;
  void init(int n) { count = pending = n; }
  void settle() {
    if (pending == 0 && tx == 0) {
      ++phase;
      pending = count;
    }
  }
  void arrive_expect_tx(long bytes) {
    tx += bytes;
    --pending;
    settle();
  }
  void arrive() {
    --pending;
    settle();
  }
  void land(long bytes) {
    tx -= bytes;
    settle();
  }
  bool passed(unsigned parity) const { return unsigned(phase & 1) != parity; }
};

void run_ring(std::mt19937& rng, int warps, int rows, int stages, int tiles, int copies,
              int group_rows = 16) {
  using attention::DecodeSchedule;
  const DecodeSchedule schedule = DecodeSchedule::of(rows, warps, group_rows);
  const std::string what = "warps " + std::to_string(warps) + " rows " + std::to_string(rows) +
                           " groups of " + std::to_string(group_rows) +
                           " stages " + std::to_string(stages) + " tiles " + std::to_string(tiles) +
                           " copies " + std::to_string(copies);
  std::vector<ModelBarrier> staged(stages), empty(stages);
  for (int st = 0; st < stages; ++st) {
    staged[st].init(copies);
    empty[st].init(schedule.groups);
  }
  std::vector<std::vector<int>> stage_tile(stages, std::vector<int>(copies, -1));
  struct Landing {
    int stage, copy, tile;
  };
  std::vector<Landing> in_flight;
  int next_tile = 0;  // the producer's
  struct Warp {
    int tile;
    bool reading = false;
  };
  std::vector<Warp> warp(warps);
  for (int w = 0; w < warps; ++w) warp[w].tile = schedule.phase(w);
  std::vector<std::vector<int>> readers(tiles);
  for (int step = 0;; ++step) {
    ASSERT_LT(step, 100000) << what;
    std::vector<int> ready;  // 0: producer, 1..warps: warp, warps + 1 ...: a landing
    if (next_tile < tiles &&
        (next_tile < stages ||
         empty[next_tile % stages].passed(DecodeSchedule::empty_parity(next_tile, stages)))) {
      ready.push_back(0);
    }
    for (int w = 0; w < warps; ++w) {
      if (!schedule.active(w) || warp[w].tile >= tiles) continue;
      const int i = warp[w].tile;
      if (warp[w].reading || staged[i % stages].passed(DecodeSchedule::staged_parity(i, stages))) {
        ready.push_back(1 + w);
      }
    }
    for (size_t l = 0; l < in_flight.size(); ++l) ready.push_back(1 + warps + int(l));
    if (ready.empty()) break;
    const int pick = ready[std::uniform_int_distribution<size_t>(0, ready.size() - 1)(rng)];
    if (pick == 0) {
      const int st = next_tile % stages;
      for (int c = 0; c < copies; ++c) {
        staged[st].arrive_expect_tx(100);
        in_flight.push_back({st, c, next_tile});
      }
      ++next_tile;
    } else if (pick <= warps) {
      Warp& me = warp[pick - 1];
      const int st = me.tile % stages;
      for (int c = 0; c < copies; ++c) {
        ASSERT_EQ(stage_tile[st][c], me.tile)
            << what << ": warp " << pick - 1 << " reads tile " << me.tile
            << " from a stage holding " << stage_tile[st][c];
      }
      if (!me.reading) {
        me.reading = true;  // its ldmatrix and MMAs run between this step and the next
        readers[me.tile].push_back(pick - 1);
      } else {
        me.reading = false;
        empty[st].arrive();
        me.tile += schedule.phases;
      }
    } else {
      const size_t l = size_t(pick - 1 - warps);
      const Landing landing = in_flight[l];
      in_flight.erase(in_flight.begin() + long(l));
      stage_tile[landing.stage][landing.copy] = landing.tile;
      staged[landing.stage].land(100);
    }
  }
  EXPECT_EQ(next_tile, tiles) << what << ": the producer waits forever";
  for (int w = 0; w < warps; ++w) {
    if (schedule.active(w)) EXPECT_GE(warp[w].tile, tiles) << what << ": warp " << w << " waits";
  }
  for (int i = 0; i < tiles; ++i) {
    std::vector<int> groups;
    for (const int w : readers[i]) groups.push_back(schedule.group(w));
    std::sort(groups.begin(), groups.end());
    std::vector<int> each(schedule.groups);
    for (int g = 0; g < schedule.groups; ++g) each[g] = g;
    EXPECT_EQ(groups, each) << what << ": tile " << i;
  }
}

TEST(DecodeLayout, TheRingNeitherLosesNorHangs) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    for (const int warps : {4, 8}) {
      for (const int stages : {warps, 2 * warps}) {
        for (const int rows : {1, 16, 17, 33, 40, 64, 16 * warps}) {
          for (const int copies : {1, 2}) {
            const int tiles = std::uniform_int_distribution<int>(0, 3 * stages + 5)(rng);
            run_ring(rng, warps, rows, stages, tiles, copies);
            if (::testing::Test::HasFatalFailure()) return;
          }
        }
        // The swapped block's groups of 8 rows (block_m up to 8 x warps).
        for (const int rows : {1, 8, 9, 16, 17, 24, 8 * warps}) {
          const int tiles = std::uniform_int_distribution<int>(0, 3 * stages + 5)(rng);
          run_ring(rng, warps, rows, stages, tiles, 1, 8);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

}  // namespace
}  // namespace attnjit

// The split counters' zeroing (runtime/src/launch_scratch.h,
// counters_to_clear) on a model of one workspace buffer, no GPU: launches
// of random shapes, eager or captured into graphs that replay at random
// later, each finding its counters zero when it starts. A launch's parts
// write the top of the buffer; its counters end at zero (the kernels reset
// them); a zeroing runs where and when the launch it belongs to runs.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "launch_scratch.h"

namespace attnjit {
namespace {

constexpr size_t kUnit = 256;  // the model's byte: one 256-byte block

struct Buffer {
  std::vector<bool> dirty;  // per block: written by some launch's parts
  CounterState state;
  explicit Buffer(size_t blocks) : dirty(blocks, false), state{blocks * kUnit, blocks * kUnit} {}
  size_t capacity() const { return dirty.size() * kUnit; }
  void zero(const CounterClear& c) {
    for (size_t b = c.from / kUnit; b < c.to / kUnit; ++b) dirty[b] = false;
  }
  // True when the counters were clean; then the parts are written.
  bool run(const CounterClear& c, size_t counter_bytes, size_t parts_bytes) {
    zero(c);
    for (size_t b = 0; b < counter_bytes / kUnit; ++b) {
      if (dirty[b]) return false;
    }
    for (size_t b = (capacity() - parts_bytes) / kUnit; b < dirty.size(); ++b) dirty[b] = true;
    return true;
  }
};

struct Captured {
  CounterClear clear;
  size_t counter_bytes, parts_bytes;
};

TEST(SplitCounters, EveryLaunchFindsItsCountersZeroAcrossShapesAndGraphReplays) {
  const uint64_t seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  size_t clears = 0, launches = 0;
  for (int trial = 0; trial < 300; ++trial) {
    Buffer buf(8 + rng() % 56);
    std::vector<Captured> graphs;
    for (int step = 0; step < 60; ++step) {
      // A shape that fits: counters of 1 .. n blocks, parts of the rest or less.
      const size_t blocks = buf.dirty.size();
      const size_t counters = 1 + rng() % (blocks / 2);
      const size_t parts = 1 + rng() % (blocks - counters);
      const size_t cb = counters * kUnit, pb = parts * kUnit;
      const int what = int(rng() % 4);
      if (what == 0) {  // captured: runs only when replayed
        graphs.push_back(
            {counters_to_clear(buf.state, cb, buf.capacity(), pb, [] { return true; }), cb, pb});
      } else if (what == 1 && !graphs.empty()) {
        const Captured& g = graphs[rng() % graphs.size()];
        ASSERT_TRUE(buf.run(g.clear, g.counter_bytes, g.parts_bytes))
            << "trial " << trial << " step " << step << ": a replay found dirty counters";
        ++launches;
      } else {
        const CounterClear c =
            counters_to_clear(buf.state, cb, buf.capacity(), pb, [] { return false; });
        clears += c.to > c.from;
        ASSERT_TRUE(buf.run(c, cb, pb))
            << "trial " << trial << " step " << step << ": an eager launch found dirty counters";
        ++launches;
      }
    }
  }
  // Eager launches zero only now and then: not before every launch.
  EXPECT_GT(launches, 0u);
  EXPECT_LT(clears, launches / 2);
}

TEST(SplitCounters, TheSameShapeAgainZeroesNothingAndTheFirst256BytesNever) {
  CounterState state{1 << 20, 1 << 20};
  // Counters of 2 KB (512 of them) below 100 KB of parts.
  EXPECT_EQ(counters_to_clear(state, 2048, 1 << 20, 100 << 10, [] { return false; }).to, 0u);
  for (int i = 0; i < 5; ++i) {
    const CounterClear c = counters_to_clear(state, 2048, 1 << 20, 100 << 10, [] { return false; });
    EXPECT_EQ(c.to, c.from);
  }
  // Parts reaching down to 4 KB, then counters of 8 KB: the 4 KB they wrote.
  counters_to_clear(state, 256, 1 << 20, (1 << 20) - 4096, [] { return false; });
  const CounterClear grown = counters_to_clear(state, 8192, 1 << 20, 4096, [] { return false; });
  EXPECT_EQ(grown.from, 4096u);
  EXPECT_EQ(grown.to, 8192u);
  // Captured: 256 bytes of counters need nothing; more are zeroed whole.
  EXPECT_EQ(counters_to_clear(state, 256, 1 << 20, 4096, [] { return true; }).to, 0u);
  const CounterClear captured = counters_to_clear(state, 1024, 1 << 20, 4096, [] { return true; });
  EXPECT_EQ(captured.from, 0u);
  EXPECT_EQ(captured.to, 1024u);
}

}  // namespace
}  // namespace attnjit

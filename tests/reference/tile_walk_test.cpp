// The key-tile walk (templates/attention/tile_walk.cuh), compiled for the
// host: against a brute-force list of the tiles a mask leaves non-empty,
// on random class layouts (runs of empty tiles longer than a ballot's 32,
// ranges that start anywhere, all empty, all full), and over a random
// element mask whose tile classes are taken from its elements: every tile
// with a visible pair is visited, in order, each once, and a classifier
// that calls one such tile empty is caught by the same check.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <vector>

// clang-format off
#include "host_device.h"
#include "attention/tile_walk.cuh"
#include "host_device_end.h"
// clang-format on

namespace attnjit {
namespace {

using Classes = std::vector<int>;  // per tile: 0 empty, 1 partial, 2 full

struct Visit {
  int kt, i;
  bool full;
};

template <bool kSkips>
std::vector<Visit> walk(int first, int last, const std::function<int(int)>& classify) {
  std::vector<Visit> visits;
  attention::TileWalk<kSkips> w;
  for (w.start(first, last, classify); w.on(); w.next(classify)) {
    const attention::KeyTile t = w.tile();
    if (!visits.empty()) {
      EXPECT_EQ(w.previous().kt, visits.back().kt);
      EXPECT_EQ(w.previous().i, visits.back().i);
    }
    visits.push_back({t.kt, t.i, t.full});
    if (visits.size() > 100000) break;  // a walk that does not end
  }
  return visits;
}

Classes random_classes(std::mt19937_64& rng, int n) {
  Classes c(n);
  const int style = int(rng() % 4);
  for (int t = 0; t < n;) {
    const int run = 1 + int(rng() % (style == 0 ? 80 : 6));
    const int cls = style == 1 ? 0 : style == 2 ? 2 : int(rng() % 3);
    for (int k = 0; k < run && t < n; ++k) c[t++] = cls;
  }
  return c;
}

TEST(TileWalk, VisitsExactlyTheNonEmptyTilesInOrder) {
  std::mt19937_64 rng(std::random_device{}());
  for (int trial = 0; trial < 3000; ++trial) {
    const int n = 1 + int(rng() % 300);
    const Classes c = random_classes(rng, n);
    const int first = int(rng() % n), last = first + int(rng() % (n - first + 1)) - 1;
    const auto classify = [&](int t) {
      EXPECT_TRUE(t >= first && t <= last) << "classified a tile outside the range: " << t;
      return c[t];
    };
    std::vector<Visit> want;
    for (int t = first; t <= last; ++t) {
      if (c[t] != 0) want.push_back({t, int(want.size()), c[t] == 2});
    }
    const std::vector<Visit> got = walk<true>(first, last, classify);
    ASSERT_EQ(got.size(), want.size()) << "range [" << first << ", " << last << "]";
    for (size_t v = 0; v < got.size(); ++v) {
      ASSERT_EQ(got[v].kt, want[v].kt) << v;
      ASSERT_EQ(got[v].i, want[v].i) << v;
      ASSERT_EQ(got[v].full, want[v].full) << v;
    }
    const std::vector<Visit> every = walk<false>(first, last, classify);
    ASSERT_EQ(int(every.size()), std::max(0, last - first + 1));
    for (size_t v = 0; v < every.size(); ++v) {
      ASSERT_EQ(every[v].kt, first + int(v));
      ASSERT_EQ(every[v].i, int(v));
    }
  }
}

// A random element mask over n_q x n_k, tiles of bn keys and one query
// tile of all rows: the classes from the elements, and the check that
// every tile holding a visible pair is visited.
struct ElementMask {
  int n_q, n_k, bn;
  std::vector<char> visible;  // [n_q][n_k]

  int tiles() const { return (n_k + bn - 1) / bn; }
  int true_class(int t) const {
    int seen = 0, cells = 0;
    for (int p = 0; p < n_q; ++p) {
      for (int j = t * bn; j < std::min(n_k, (t + 1) * bn); ++j) {
        seen += visible[p * n_k + j];
        ++cells;
      }
    }
    return seen == 0 ? 0 : seen == cells && (t + 1) * bn <= n_k ? 2 : 1;
  }
  // Every tile with a visible pair is among the visits.
  bool covered(const std::vector<Visit>& visits) const {
    std::vector<char> seen(tiles());
    for (const Visit& v : visits) seen[v.kt] = 1;
    for (int t = 0; t < tiles(); ++t) {
      if (true_class(t) != 0 && !seen[t]) return false;
    }
    return true;
  }
};

TEST(TileWalk, EveryTileWithAVisiblePairIsVisitedAndALoosenedRuleIsCaught) {
  std::mt19937_64 rng(std::random_device{}());
  int caught = 0;
  for (int trial = 0; trial < 400; ++trial) {
    ElementMask m{1 + int(rng() % 6), 1 + int(rng() % 2000), 16 << (rng() % 3), {}};
    m.visible.resize(size_t(m.n_q) * m.n_k);
    // Several intervals per row: sink keys, a band, scattered blocks.
    const int sink = int(rng() % 40), band = int(rng() % 200);
    for (int p = 0; p < m.n_q; ++p) {
      const int pos = m.n_k - m.n_q + p;
      for (int j = 0; j < m.n_k; ++j) {
        const bool block = (j / 64) % 7 == int(rng() % 7) && rng() % 4 == 0;
        m.visible[p * m.n_k + j] = j <= pos && (j < sink || pos - j <= band || block);
      }
    }
    const int last = m.tiles() - 1;
    const auto exact = [&](int t) { return m.true_class(t); };
    ASSERT_TRUE(m.covered(walk<true>(0, last, exact)));
    // A loosened classifier: one non-empty tile called empty.
    std::vector<int> nonempty;
    for (int t = 0; t <= last; ++t) {
      if (m.true_class(t) != 0) nonempty.push_back(t);
    }
    if (nonempty.empty()) continue;
    const int dropped = nonempty[rng() % nonempty.size()];
    const auto loose = [&](int t) { return t == dropped ? 0 : m.true_class(t); };
    EXPECT_FALSE(m.covered(walk<true>(0, last, loose))) << "dropped tile " << dropped;
    ++caught;
  }
  EXPECT_GT(caught, 300);
}

// Split-KV over a walk (split_walk, tile_scheduler.cuh set_split): the
// parts divide the visited tiles, not the range. Over random class layouts,
// split counts and minimum part sizes: parts 0..parts-1 walk the visited
// tiles of the range in order, each exactly once, each part starts and
// ends on a visited tile and holds split_keys' share of them (the last
// part the rest), and a cell past the parts is told so. count_where and
// nth_where against a loop.
TEST(TileWalk, SplitsDivideTheVisitedTiles) {
  std::mt19937_64 rng(std::random_device{}());
  int split_ranges = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const int n = 1 + int(rng() % 300);
    const Classes c = random_classes(rng, n);
    const int first = int(rng() % n), last = first + int(rng() % (n - first));
    const auto classify = [&](int t) { return c[t]; };
    const auto keep = [&](int t) { return c[t] != 0; };
    std::vector<int> visited;
    for (int t = first; t <= last; ++t) {
      if (keep(t)) visited.push_back(t);
    }
    ASSERT_EQ(attention::count_where(first, last, keep), int(visited.size()));
    for (int k = 0; k <= int(visited.size()); ++k) {
      ASSERT_EQ(attention::nth_where(first, last, k, keep),
                k < int(visited.size()) ? visited[k] : last + 1);
    }
    const int num_splits = 1 + int(rng() % 24), min_tiles = 1 + int(rng() % 4);
    const attention::KeySplit ks =
        attention::split_keys(0, int(visited.size()) - 1, num_splits, min_tiles);
    std::vector<int> walked;
    int parts = -1;
    for (int x = 0; x < num_splits; ++x) {
      const attention::WalkSplit ws =
          attention::split_walk(first, last, x, num_splits, min_tiles, keep);
      if (parts < 0) parts = ws.parts;
      ASSERT_EQ(ws.parts, parts) << "every cell agrees on the parts";
      if (x >= ws.parts) continue;
      std::vector<Visit> part = walk<true>(ws.first, ws.last, classify);
      if (ws.parts > 1) {
        ++split_ranges;
        ASSERT_FALSE(part.empty());
        ASSERT_EQ(part.front().kt, ws.first);
        ASSERT_EQ(part.back().kt, ws.last);
        ASSERT_EQ(int(part.size()), x + 1 < ws.parts
                                        ? ks.per
                                        : int(visited.size()) - x * ks.per);
      }
      for (const Visit& v : part) walked.push_back(v.kt);
    }
    ASSERT_EQ(parts, ks.parts);
    ASSERT_EQ(walked, visited) << "the parts' walks are the range's, in order, once";
  }
  EXPECT_GT(split_ranges, 3000);
}

}  // namespace
}  // namespace attnjit

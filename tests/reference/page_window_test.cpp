// The paged producers' window on the block table (templates/attention/
// page_window.cuh, the kernel's own arithmetic: its boxes, their keys and
// the window's moves) on a model of the copying warp: 32 lanes, each with
// its registers, a shuffle reading another lane's. Over page sizes, key
// tiles, sequence lengths and the key-tile ranges a split may walk, every
// box of every tile must get its own page, no table entry at or past the
// sequence's pages may be read, none twice, and but after a jump none in
// the move of the tile that needs it. No GPU. (The kernel takes box b's
// key and page as lane b does here, every lane shuffling from the same
// holder, and one elected lane issues every box.)
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "attention/page_window.cuh"
#include "attention/tile_config.cuh"

namespace attnjit {
namespace {

using attention::PageWindow;

struct Walk {
  int page_size, block_n, n_k, first_tile, last_tile;

  std::string name() const {
    return "page " + std::to_string(page_size) + ", block_n " + std::to_string(block_n) + ", " +
           std::to_string(n_k) + " keys, tiles " + std::to_string(first_tile) + ".." +
           std::to_string(last_tile);
  }
};

// Runs the copying warp over the walk's tiles as PagedKV::for_each_page
// does; returns how many table entries it read.
int run_walk(const Walk& c, std::mt19937& rng) {
  const int n_pages = (c.n_k + c.page_size - 1) / c.page_size;
  // The sequence's row of the table: its pages shuffled in a pool, then
  // entries an engine may leave holding anything.
  std::vector<int> table(size_t(n_pages) + 40, -7);
  for (int i = 0; i < n_pages; ++i) table[size_t(i)] = int(rng() % 100000);
  std::set<int> read;
  int reads = 0;
  const auto load = [&](int i) {
    // window_to reads only the sequence's own entries.
    EXPECT_GE(i, 0) << c.name();
    EXPECT_LT(i, n_pages) << c.name() << ": entry " << i << " past the sequence's pages";
    EXPECT_TRUE(read.insert(i).second) << c.name() << ": entry " << i << " read twice";
    ++reads;
    return table[size_t(std::min(std::max(i, 0), n_pages))];
  };
  std::array<PageWindow, 32> lanes{};
  // Entries read by the moves before the current tile's (what its lookups
  // may use without waiting: all but after a jump).
  std::set<int> read_before;
  int previous_base = -64;
  for (int kt = c.first_tile; kt <= c.last_tile; ++kt) {
    const int j0 = kt * c.block_n;
    const attention::TileBoxes t = attention::tile_boxes(c.block_n, c.page_size, j0, c.n_k);
    EXPECT_GE(t.rows, 16) << c.name();
    EXPECT_LE(t.boxes, 32) << c.name();
    read_before = read;
    for (int lane = 0; lane < 32; ++lane) {
      attention::window_to(lanes[size_t(lane)], j0 / c.page_size, lane, n_pages, load);
    }
    const int base = lanes[0].base;
    for (int lane = 0; lane < 32; ++lane) EXPECT_EQ(lanes[size_t(lane)].base, base);
    EXPECT_EQ(base % 32, 0);
    const bool jumped = base != previous_base && base != previous_base + 32;
    previous_base = base;
    for (int lane = 0; lane < 32; ++lane) {
      // Every lane takes part in the shuffles (the kernel's box_key).
      const int j = attention::box_key(t, j0, lane);
      const int index = j / c.page_size;
      EXPECT_GE(index - base, 0) << c.name();
      EXPECT_LT(index - base, 64) << c.name() << ": lane " << lane << " of tile " << kt;
      const attention::WindowSlot slot = attention::window_slot(base, index);
      const PageWindow& holder = lanes[size_t(slot.lane)];
      const int page = slot.in_next ? holder.next : holder.cur;
      if (lane < t.boxes) {
        EXPECT_LT(index, n_pages) << c.name();
        EXPECT_EQ(page, table[size_t(std::min(index, n_pages))])
            << c.name() << ": tile " << kt << " box " << lane << " (key " << j << ")";
        // The box lies inside its page, and unless the window jumped onto
        // this tile its entry was loaded by an earlier tile's move.
        EXPECT_LE(j % c.page_size + t.rows, c.page_size) << c.name();
        if (!jumped) {
          EXPECT_TRUE(read_before.count(index) == 1)
              << c.name() << ": tile " << kt << " waits for entry " << index;
        }
      }
    }
  }
  return reads;
}

TEST(PageWindow, EveryBoxGetsItsPageFromEntriesReadOnce) {
  std::mt19937 rng(20261201);
  int walks = 0;
  for (const int page_size : {16, 32, 48, 64, 128, 256, 1024}) {
    for (const int block_n : {32, 64, 80, 128}) {
      for (int trial = 0; trial < 40; ++trial) {
        const int n_k = 1 + int(rng() % 40000);
        const int tiles = (n_k + block_n - 1) / block_n;
        Walk walk{page_size, block_n, n_k, 0, tiles - 1};
        if (trial % 2 == 1) {  // a split's range of the tiles
          walk.first_tile = int(rng() % unsigned(tiles));
          walk.last_tile = walk.first_tile + int(rng() % unsigned(tiles - walk.first_tile));
        }
        run_walk(walk, rng);
        ++walks;
      }
    }
  }
  EXPECT_EQ(walks, 7 * 4 * 40);
}

// A whole sequence read from its first tile reads each entry it needs
// once and nothing else but the window's lookahead: at most 64 entries
// past the last page it uses (none past the sequence's own).
TEST(PageWindow, AWholeSequenceReadsItsEntriesOnceEach) {
  std::mt19937 rng(7);
  for (const int page_size : {16, 64}) {
    const int n_k = 8192;
    const int n_pages = n_k / page_size;
    const Walk walk{page_size, 32, n_k, 0, n_k / 32 - 1};
    EXPECT_EQ(run_walk(walk, rng), n_pages) << walk.name();
  }
}

// The window's base and its three entries.
using Entries = std::array<int, 4>;
Entries entries(const PageWindow& w) { return {w.base, w.cur, w.next, w.ahead}; }

// Tiles far apart (a jump) reload the window instead of using a stale
// one.
TEST(PageWindow, AJumpReloadsTheWindow) {
  PageWindow w;
  int loads = 0;
  const auto load = [&](int i) {
    ++loads;
    return 1000 + i;
  };
  const int n_pages = 1000;
  attention::window_to(w, 5, 3, n_pages, load);
  EXPECT_EQ(entries(w), (Entries{0, 1003, 1035, 1067}));
  EXPECT_EQ(loads, 3);
  attention::window_to(w, 31, 3, n_pages, load);  // the same window
  EXPECT_EQ(loads, 3);
  attention::window_to(w, 40, 3, n_pages, load);  // on by 32: cur and next were loaded
  EXPECT_EQ(entries(w), (Entries{32, 1035, 1067, 1099}));
  EXPECT_EQ(loads, 4);
  attention::window_to(w, 200, 3, n_pages, load);  // a jump: all three loaded
  EXPECT_EQ(entries(w), (Entries{192, 1195, 1227, 1259}));
  EXPECT_EQ(loads, 7);
  // Near the sequence's end: entries past its 1000 pages are 0, not read.
  attention::window_to(w, 990, 3, n_pages, load);
  EXPECT_EQ(entries(w), (Entries{960, 1963, 1995, 0}));
  EXPECT_EQ(loads, 9);
}

}  // namespace
}  // namespace attnjit

// The paged producers' window on a sequence's row of the block table
// (PagedKV::Pages, kv_source.cuh), as plain index arithmetic with no
// device code: the kernel uses it, and tests/reference/page_window_test.cpp
// runs it for the host over a model of the copying warp (32 lanes, each
// with its registers, and the shuffles between them).
//
// A key tile is copied as boxes of `rows` keys, each inside one page
// (tile_boxes), box b's the key of lane b (box_key). Lane l holds the pages
// of page indices base + l (`cur`), base + 32 + l (`next`) and base + 64 +
// l (`ahead`), base a multiple of 32. A tile whose first page index lies
// past [base, base + 32) moves the window: on by 32 (cur takes next, next
// takes ahead, ahead loads the 32 after), or anywhere else (all three
// load). A tile's boxes span at most 32 page indices after its first
// (block_n / 16 boxes of at least 16 rows), so each of its pages is in cur
// or next, and every lane finds a box's page by shuffling those from the
// lane that holds it. So the entries a tile reads were loaded 32 or more
// pages before it, except after a jump (a split's or a work tile's first
// tile). Only entries below the sequence's page count are read at all.
#pragma once

#include "attention/tile_config.cuh"

#if defined(__CUDACC_RTC__)
#define ATTNJIT_WINDOW_FN __host__ __device__ constexpr
#else
#define ATTNJIT_WINDOW_FN constexpr
#endif

namespace attnjit {
namespace attention {

struct PageWindow {
  int base = -64;  // a multiple of 32; -64: nothing loaded yet
  int cur = 0;
  int next = 0;
  int ahead = 0;
};

// The boxes of the key tile whose first key is j0: `rows` keys each (one
// box inside one page), `boxes` of them up to the sequence's n_k keys.
struct TileBoxes {
  int rows;
  int boxes;
};

// The same for boxes of a given `rows` (dividing block_n and the page size).
ATTNJIT_WINDOW_FN TileBoxes tile_boxes_of(int block_n, int rows, int j0, int n_k) {
  const int left = (n_k - j0 + rows - 1) / rows;
  return TileBoxes{rows, block_n / rows < left ? block_n / rows : left};
}

ATTNJIT_WINDOW_FN TileBoxes tile_boxes(int block_n, int page_size, int j0, int n_k) {
  return tile_boxes_of(block_n, paged_box_rows(block_n, page_size), j0, n_k);
}

// The first key of the box lane `lane` copies (lanes past the tile's boxes
// take box 0's, and issue nothing).
ATTNJIT_WINDOW_FN int box_key(const TileBoxes& t, int j0, int lane) {
  return j0 + (lane < t.boxes ? lane : 0) * t.rows;
}

// What moving a window at `base` onto page index `index` (>= 0) does: its
// new base, and whether it stays, or moves on by 32.
struct WindowMove {
  int base;
  bool stays;
  bool by_32;
};

ATTNJIT_WINDOW_FN WindowMove window_move(int base, int index) {
  const int want = index & ~31;
  return WindowMove{want, want == base, want == base + 32};
}

// Where page index `index` of a window at `base` is: the lane holding it
// and whether in `next` (index in [base, base + 64)).
struct WindowSlot {
  int lane;
  bool in_next;
};

ATTNJIT_WINDOW_FN WindowSlot window_slot(int base, int index) {
  const int at = index - base;
  return WindowSlot{at & 31, at >= 32};
}

// Lane `lane`'s part of the move onto `index`: load(i) reads the table's
// entry i, called only for i below the sequence's `n_pages` (0 past them).
template <class Load>
ATTNJIT_WINDOW_FN void window_to(PageWindow& w, int index, int lane, int n_pages, Load load) {
  const WindowMove move = window_move(w.base, index);
  if (move.stays) return;
  const auto entry = [&](int i) { return i < n_pages ? load(i) : 0; };
  if (move.by_32) {
    w.cur = w.next;
    w.next = w.ahead;
  } else {
    w.cur = entry(move.base + lane);
    w.next = entry(move.base + 32 + lane);
  }
  w.ahead = entry(move.base + 64 + lane);
  w.base = move.base;
}

}  // namespace attention
}  // namespace attnjit

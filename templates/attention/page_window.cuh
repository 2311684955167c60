// The paged producers' window on a sequence's row of the block table
// (PagedKV::Pages, kv_source.cuh), as plain index arithmetic with no
// device code: the kernel uses it, and tests/reference/page_window_test.cpp
// runs it for the host over a model of the copying warp (32 lanes, each
// with its registers, and the shuffles between them).
//
// Lane l of the warp holds the pages of page indices base + l (`cur`) and
// base + 32 + l (`next`), base a multiple of 32. A tile whose first page
// index lies past the window moves it: onto the next 32 (cur takes next,
// next loads the 32 after), or anywhere else (both load). A tile's boxes
// span at most 32 page indices after its first (block_n / 16 boxes of at
// least 16 rows), so every one of its pages lies in [base, base + 64): a
// lane finds its box's page by shuffling cur or next from the lane that
// holds it. Entries are loaded 32 pages before a tile needs them, and only
// indices below the sequence's page count are read at all.
#pragma once

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
};

// What moving a window at `base` onto page index `index` (>= 0) does: its
// new base, and whether it stays, or takes `next` as its `cur`.
struct WindowMove {
  int base;
  bool stays;
  bool cur_from_next;
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

// Lane `lane`'s part of the move onto `index`: load(i) is the table's entry
// i for i below the sequence's page count, else 0 (never read).
template <class Load>
ATTNJIT_WINDOW_FN void window_to(PageWindow& w, int index, int lane, Load load) {
  const WindowMove move = window_move(w.base, index);
  if (move.stays) return;
  w.cur = move.cur_from_next ? w.next : load(move.base + lane);
  w.next = load(move.base + 32 + lane);
  w.base = move.base;
}

}  // namespace attention
}  // namespace attnjit

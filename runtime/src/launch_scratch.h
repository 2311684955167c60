// Device memory the launch path keeps for itself, per context: the
// split-KV parts (split_kv.cpp) and the generic tier's scratch
// (attention_tier.cpp). Both are grown on demand, off any capturing
// stream, and never freed.
#pragma once

#include <cstddef>

#include "attnjit/attention.h"
#include "attnjit/driver.h"

namespace attnjit {

// Offsets inside a scratch buffer are 256-byte aligned.
inline size_t align256(size_t n) { return (n + 255) / 256 * 256; }

// A split launch's counters sit at the bottom of its buffer, [0,
// counter_bytes), and must be zero when it starts (the kernels leave them
// at zero); its lse and output parts sit at the top, [capacity -
// parts_bytes, capacity), never below 256 (there is always a counter). A
// buffer serves launches of other shapes, whose parts may have written
// where this one's counters are. Per buffer: `dirty`, the lowest byte a
// launch's parts may have written since it was last zeroed, and
// `replayed`, the lowest a captured launch's parts write (a CUDA graph may
// replay them at any time, unseen here); both start at the capacity.
struct CounterState {
  size_t dirty, replayed;
};
struct CounterClear {
  size_t from = 0, to = 0;  // the bytes to zero before the launch (none: from == to)
};
// A captured launch zeroes its counters whenever they pass the first 256
// bytes (what it finds at a replay is not known now); an eager one the
// bytes of them that launches' parts may have written.
inline CounterClear counters_to_clear(CounterState& state, size_t counter_bytes, size_t capacity,
                                      size_t parts_bytes, bool capturing) {
  CounterClear clear;
  const size_t parts_at = capacity - parts_bytes;
  if (capturing) {
    if (counter_bytes > 256) clear = CounterClear{0, counter_bytes};
    if (parts_at < state.replayed) state.replayed = parts_at;
  } else if (counter_bytes > state.dirty) {
    clear = CounterClear{state.dirty, counter_bytes};
    state.dirty = counter_bytes < state.replayed ? counter_bytes : state.replayed;
  }
  if (parts_at < state.dirty) state.dirty = parts_at;
  return clear;
}

// The workspace of one split launch: the caller's (checked), or the
// library's for this context and stream; its counters zeroed where they
// need to be (counters_to_clear). `parts_shift`: how far above the
// plan's offsets its parts go (the buffer's bytes past the plan's).
struct SplitScratch {
  char* base = nullptr;
  size_t parts_shift = 0;
};
SplitScratch split_workspace(const AttentionArgs& args, const SplitPlan& plan, CuStream stream);

}  // namespace attnjit

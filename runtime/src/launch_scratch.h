// Device memory the launch path keeps for itself, per context: the
// split-KV parts (split_workspace.cpp) and the generic tier's scratch
// (attention_tier.cpp). Both are grown on demand, off any capturing
// stream, and never freed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "attnjit/attention_args.h"
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
// bytes of them that launches' parts may have written. `capturing()` says
// whether the launch's stream is being captured, asked only where the
// answer matters: counters past 256 bytes, or parts below a captured
// launch's. (Else both answers leave counters and state as they are:
// parts never reach below 256 bytes, so neither does `dirty`.)
template <class Capturing>
CounterClear counters_to_clear(CounterState& state, size_t counter_bytes, size_t capacity,
                               size_t parts_bytes, Capturing&& capturing) {
  CounterClear clear;
  const size_t parts_at = capacity - parts_bytes;
  const bool matters = counter_bytes > 256 || parts_at < state.replayed;
  if (matters && capturing()) {
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
// need to be (counters_to_clear), its parts at the buffer's top.
struct SplitScratch {
  int32_t* counters = nullptr;
  float* lse = nullptr;
  float* o = nullptr;
};
SplitScratch split_workspace(const AttentionArgs& args, const SplitPlan& plan, CuStream stream);

}  // namespace attnjit

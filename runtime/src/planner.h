// The launch planner: what a launch of a variant runs, decided from the
// variant's tile shape and the launch's arguments alone, with no kernel or
// cache at hand (the SM count is an input; 0 asks the current device,
// where the choice needs it). AttentionKernel
// fetches the siblings these choices name and launches; the choices
// themselves are pure functions, tested on the CPU
// (tests/runtime/planner_test.cpp).
#pragma once

#include <functional>

#include "attnjit/attention_args.h"

namespace attnjit {

// What of a variant's tile configuration the planner reads.
struct VariantShape {
  int block_m = 0, block_n = 0;
  bool pack_gqa = false;
  int split_keys = 0;     // the fewest keys a split part takes
  int min_blocks = 1;     // resident blocks per SM
  // Rows of V's blocks in the small_pages sibling where that sibling
  // would take a page size (0: it never would).
  int small_pages_rows = 0;
  // The variant's schedule (Schedule): a split one, a small_pages one.
  bool split_kv = false, small_pages = false;
};

// Whether a launch of a variant that does not split goes to its split
// sibling: split parts were asked for, or the batch is decode-shaped (every
// sequence within 64 packed query rows) and splitting was not ruled out
// (num_splits 1).
bool wants_split(const VariantShape& shape, const AttentionArgs& args);

// Whether a paged launch goes to the small_pages sibling of the variant
// whose shape this is: its pages are that sibling's V blocks.
bool wants_small_pages(const VariantShape& shape, const AttentionArgs& args);

// The splits and workspace of a launch of a split variant (one part and
// no workspace otherwise, or where the batch is no decode): the fewest
// splits whose waves fill the GPU's SMs within a slack of the best count
// allowed, or the count asked for. sm_count() is asked only where the
// choice needs it (a launch that names its splits needs no device).
SplitPlan plan_splits(const VariantShape& shape, const AttentionFlags& flags,
                      const AttentionArgs& args, const std::function<int()>& sm_count);

// A launch of the variant whose shape this is: its schedule, its splits
// (plan_splits where the variant splits) and its grid. sm_count 0: the
// current device's, asked only where the splits need it.
LaunchPlan plan_launch(const VariantShape& shape, const AttentionFlags& flags,
                       const AttentionArgs& args, int sm_count = 0);

}  // namespace attnjit

// The generic tier's flags and arguments (attention.h, docs/tiers.md).
#include "attnjit/attention_args.h"

namespace attnjit {

AttentionFlags generic_flags(const AttentionFlags& requested) {
  AttentionFlags g = requested;
  // Causal folds into window_right = 0: the clamp reads the left window
  // alone, so spans are the same either way.
  g.causal = false;
  g.window = true;
  g.mm_prefix = true;
  if (g.sinks == SinkMode::kNone) g.sinks = SinkMode::kNullLogit;
  g.return_lse = true;
  return g;
}

AttentionArgs generic_args(const AttentionFlags& requested, const AttentionArgs& args,
                           const GenericScratch& scratch) {
  AttentionArgs g = args;
  if (!requested.window) {
    g.window_left = -1;
    g.window_right = -1;
  }
  if (requested.causal) {
    // j <= p and j - p <= right (right >= 0, or unbounded) is j - p <= 0.
    g.window_right = 0;
  }
  if (!requested.mm_prefix) {
    // Every sequence's spans are [offsets[b], offsets[b + 1]) = none; the
    // span array is never read.
    g.mm_span_offsets = scratch.zero_span_offsets;
    g.mm_spans = scratch.zero_span_offsets;
  }
  if (requested.sinks == SinkMode::kNone) g.sinks = scratch.null_sinks;
  if (!requested.return_lse) g.lse = scratch.lse;
  return g;
}

}  // namespace attnjit

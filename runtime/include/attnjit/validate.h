// The checked mode of the attention API: validates the metadata that
// validate_attention_args() cannot see because it lives on the device
// (cu_seqlens, multimodal spans, sinks), from HOST copies of it.
//
// It reads every element, so it costs O(B + R + Hq) host work plus the
// device-to-host copies the caller makes: a debug-mode check, not a per-launch
// one. Callers run it in their debug or "checked" mode, before the launch and
// with the same AttentionArgs: the Python wrapper (varlen_attention) in its
// debug mode, a serving engine under its own debug switch, the test suites
// always:
//
//   AttentionMetadata host;
//   host.cu_seqlens_q = HostSpan<int32_t>(cu_q_host);   // copies of the
//   host.cu_seqlens_k = HostSpan<int32_t>(cu_k_host);   // device arrays
//   validate_attention_metadata(kernel->flags(), args, host);
//   kernel->launch(args, stream);
//
// A kernel launched with metadata that fails these checks reads or writes out
// of bounds; nothing on the device checks it again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "attnjit/attention.h"

// The public C++ API: exported from libattnjit.so (the build hides the rest).
#pragma GCC visibility push(default)

namespace attnjit {

// A read-only view of a host array (no ownership).
template <class T>
struct HostSpan {
  const T* data = nullptr;
  std::size_t size = 0;

  HostSpan() = default;
  HostSpan(const T* d, std::size_t n) : data(d), size(n) {}
  HostSpan(const std::vector<T>& v) : data(v.data()), size(v.size()) {}  // NOLINT: a view
  bool empty() const { return size == 0; }
  const T& operator[](std::size_t i) const { return data[i]; }
};

// Host copies of the device arrays AttentionArgs points to. An array the
// flags do not use may be left empty.
struct AttentionMetadata {
  HostSpan<int32_t> cu_seqlens_q;     // [B+1]
  HostSpan<int32_t> cu_seqlens_k;     // [B+1], contiguous K/V
  HostSpan<int32_t> seqused_k;        // [B], paged K/V
  HostSpan<int32_t> block_table;      // [B * block_table_stride], paged K/V
  HostSpan<int32_t> mm_span_offsets;  // [B+1], when mm_prefix
  HostSpan<int32_t> mm_spans;         // [2R], when mm_prefix
  HostSpan<float> sinks;              // [Hq], when sinks != none
};

// Runs validate_attention_args(flags, args), then checks, against args'
// sizes (docs/semantics.md):
// - cu_seqlens_q and cu_seqlens_k hold B+1 entries, start at 0, never
//   decrease, end at total_q and total_k, and every length is within
//   max_seqlen_q / max_seqlen_k;
// - with paged K/V, instead of cu_seqlens_k: seqused_k holds B entries,
//   each covering its sequence's new queries and within max_seqlen_k, and
//   block_table B rows of block_table_stride entries whose first
//   ceil(seqused_k[b] / page_size) of row b are pages of the cache
//   [0, num_pages);
// - with mm_prefix: mm_span_offsets holds B+1 entries, starts at 0, never
//   decreases and ends at R = mm_spans.size / 2; each span [r0, r1] of
//   sequence b has 0 <= r0 <= r1 < n_k(b) (its keys: seqused_k[b] when
//   paged), and the spans of a sequence are
//   sorted and disjoint (r0 of one > r1 of the one before);
// - with a sink mode: sinks holds exactly Hq values, all finite.
// Throws Error(kArgument) naming the array, the index and the values.
void validate_attention_metadata(const AttentionFlags& flags, const AttentionArgs& args,
                                 const AttentionMetadata& host);

}  // namespace attnjit

#pragma GCC visibility pop

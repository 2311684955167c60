// validate_attention_metadata(): the checked mode's host-side checks of
// cu_seqlens, multimodal spans and sinks (validate.h).
#include "attnjit/validate.h"

#include <fmt/format.h>

#include <cmath>
#include <string>

#include "attnjit/error.h"

namespace attnjit {
namespace {

[[noreturn]] void fail(const std::string& message) {
  throw Error(ErrorKind::kArgument, "attention (checked mode): " + message);
}

// Formats only on failure, as validate_attention_args does.
#define ATTNJIT_CHECKED(ok, ...)               \
  do {                                         \
    if (!(ok)) fail(fmt::format(__VA_ARGS__)); \
  } while (0)

// A CSR offsets array: `count`+1 entries from 0 to `total`, never
// decreasing.
void check_offsets(const HostSpan<int32_t>& offsets, const char* name, int count, int64_t total,
                   const char* total_name) {
  ATTNJIT_CHECKED(offsets.data != nullptr || offsets.size == 0, "`{}` has {} entries but no data",
                  name, offsets.size);
  ATTNJIT_CHECKED(offsets.size == static_cast<std::size_t>(count) + 1,
                  "`{}` holds {} entries, expected num_seqs + 1 = {}", name, offsets.size,
                  count + 1);
  ATTNJIT_CHECKED(offsets[0] == 0, "`{}[0]` is {}, expected 0", name, offsets[0]);
  for (int b = 0; b < count; ++b) {
    ATTNJIT_CHECKED(offsets[b + 1] >= offsets[b],
                    "`{}` decreases at sequence {}: {}[{}] = {} < {}[{}] = {}", name, b, name,
                    b + 1, offsets[b + 1], name, b, offsets[b]);
  }
  ATTNJIT_CHECKED(offsets[count] == total, "`{}[{}]` is {}, expected {} = {}", name, count,
                  offsets[count], total_name, total);
}

void check_lengths(const HostSpan<int32_t>& cu, const char* name, int count, int max_len,
                   const char* max_name) {
  for (int b = 0; b < count; ++b) {
    const int64_t length = int64_t{cu[b + 1]} - cu[b];
    ATTNJIT_CHECKED(length <= max_len, "sequence {} has {} rows in `{}`, more than {} = {}", b,
                    length, name, max_name, max_len);
  }
}

void check_spans(const AttentionArgs& args, const AttentionMetadata& host) {
  ATTNJIT_CHECKED(host.mm_spans.data != nullptr || host.mm_spans.size == 0,
                  "`mm_spans` has {} entries but no data", host.mm_spans.size);
  ATTNJIT_CHECKED(host.mm_spans.size % 2 == 0, "`mm_spans` holds {} values, not pairs [r0, r1]",
                  host.mm_spans.size);
  const int64_t spans = static_cast<int64_t>(host.mm_spans.size / 2);
  check_offsets(host.mm_span_offsets, "mm_span_offsets", args.num_seqs, spans,
                "the number of spans (mm_spans holds 2 values each)");
  for (int b = 0; b < args.num_seqs; ++b) {
    const int64_t keys = int64_t{host.cu_seqlens_k[b + 1]} - host.cu_seqlens_k[b];
    for (int32_t s = host.mm_span_offsets[b]; s < host.mm_span_offsets[b + 1]; ++s) {
      const int32_t r0 = host.mm_spans[2 * std::size_t(s)];
      const int32_t r1 = host.mm_spans[2 * std::size_t(s) + 1];
      ATTNJIT_CHECKED(r0 >= 0 && r0 <= r1 && r1 < keys,
                      "span {} [{}, {}] of sequence {} is outside its keys [0, {}) or reversed", s,
                      r0, r1, b, keys);
      if (s == host.mm_span_offsets[b]) continue;
      const int32_t previous_r1 = host.mm_spans[2 * std::size_t(s) - 1];
      ATTNJIT_CHECKED(r0 > previous_r1,
                      "span {} [{}, {}] of sequence {} overlaps or precedes span {} "
                      "(ending at {}): spans must be sorted and disjoint",
                      s, r0, r1, b, s - 1, previous_r1);
    }
  }
}

void check_sinks(const AttentionArgs& args, const AttentionMetadata& host) {
  ATTNJIT_CHECKED(host.sinks.data != nullptr || host.sinks.size == 0,
                  "`sinks` has {} entries but no data", host.sinks.size);
  ATTNJIT_CHECKED(host.sinks.size == static_cast<std::size_t>(args.num_heads_q),
                  "`sinks` holds {} values, expected num_heads_q = {}", host.sinks.size,
                  args.num_heads_q);
  for (std::size_t h = 0; h < host.sinks.size; ++h) {
    ATTNJIT_CHECKED(std::isfinite(host.sinks[h]), "`sinks[{}]` is {}, not finite", h,
                    host.sinks[h]);
  }
}

}  // namespace

void validate_attention_metadata(const AttentionFlags& flags, const AttentionArgs& args,
                                 const AttentionMetadata& host) {
  validate_attention_args(flags, args);
  check_offsets(host.cu_seqlens_q, "cu_seqlens_q", args.num_seqs, args.total_q, "total_q");
  check_offsets(host.cu_seqlens_k, "cu_seqlens_k", args.num_seqs, args.total_k, "total_k");
  check_lengths(host.cu_seqlens_q, "cu_seqlens_q", args.num_seqs, args.max_seqlen_q,
                "max_seqlen_q");
  check_lengths(host.cu_seqlens_k, "cu_seqlens_k", args.num_seqs, args.max_seqlen_k,
                "max_seqlen_k");
  if (flags.mm_prefix) check_spans(args, host);
  if (flags.sinks != SinkMode::kNone) check_sinks(args, host);
}

}  // namespace attnjit

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

// Sequence b's keys: from cu_seqlens_k, or seqused_k with paged K/V.
int64_t key_count(const AttentionFlags& flags, const AttentionMetadata& host, int b) {
  if (flags.kv_layout == KvLayout::kPaged) return host.seqused_k[b];
  return int64_t{host.cu_seqlens_k[b + 1]} - host.cu_seqlens_k[b];
}

// Paged K/V: each sequence's keys (seqused_k) and the pages its keys lie in.
void check_pages(const AttentionArgs& args, const AttentionMetadata& host) {
  const HostSpan<int32_t>& used = host.seqused_k;
  ATTNJIT_CHECKED(used.data != nullptr || used.size == 0, "`seqused_k` has {} entries but no data",
                  used.size);
  ATTNJIT_CHECKED(used.size == static_cast<std::size_t>(args.num_seqs),
                  "`seqused_k` holds {} entries, expected num_seqs = {}", used.size, args.num_seqs);
  const HostSpan<int32_t>& table = host.block_table;
  const std::size_t rows = std::size_t(args.num_seqs);
  const std::size_t stride = std::size_t(args.block_table_stride);
  ATTNJIT_CHECKED(table.data != nullptr || table.size == 0,
                  "`block_table` has {} entries but no data", table.size);
  ATTNJIT_CHECKED(table.size == rows * stride,
                  "`block_table` holds {} entries, expected num_seqs * block_table_stride = {}",
                  table.size, rows * stride);
  for (int b = 0; b < args.num_seqs; ++b) {
    const int64_t n_q = int64_t{host.cu_seqlens_q[b + 1]} - host.cu_seqlens_q[b];
    const int32_t n_k = used[b];
    ATTNJIT_CHECKED(n_k >= n_q,
                    "`seqused_k[{}]` is {}, below the {} new queries of sequence {} (it counts "
                    "the cached keys and the new ones)",
                    b, n_k, n_q, b);
    ATTNJIT_CHECKED(n_k <= args.max_seqlen_k, "`seqused_k[{}]` is {}, more than max_seqlen_k = {}",
                    b, n_k, args.max_seqlen_k);
    const int64_t pages = (int64_t{n_k} + args.page_size - 1) / args.page_size;
    for (int64_t i = 0; i < pages; ++i) {
      const int32_t page = table[std::size_t(b) * stride + std::size_t(i)];
      ATTNJIT_CHECKED(page >= 0 && page < args.num_pages,
                      "`block_table[{}][{}]` is {}, not a page of the cache [0, {}) (sequence {} "
                      "reads its first {} entries)",
                      b, i, page, args.num_pages, b, pages);
    }
  }
}

void check_spans(const AttentionFlags& flags, const AttentionArgs& args,
                 const AttentionMetadata& host) {
  ATTNJIT_CHECKED(host.mm_spans.data != nullptr || host.mm_spans.size == 0,
                  "`mm_spans` has {} entries but no data", host.mm_spans.size);
  ATTNJIT_CHECKED(host.mm_spans.size % 2 == 0, "`mm_spans` holds {} values, not pairs [r0, r1]",
                  host.mm_spans.size);
  const int64_t spans = static_cast<int64_t>(host.mm_spans.size / 2);
  check_offsets(host.mm_span_offsets, "mm_span_offsets", args.num_seqs, spans,
                "the number of spans (mm_spans holds 2 values each)");
  for (int b = 0; b < args.num_seqs; ++b) {
    const int64_t keys = key_count(flags, host, b);
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
  check_lengths(host.cu_seqlens_q, "cu_seqlens_q", args.num_seqs, args.max_seqlen_q,
                "max_seqlen_q");
  if (flags.kv_layout == KvLayout::kPaged) {
    check_pages(args, host);
  } else {
    check_offsets(host.cu_seqlens_k, "cu_seqlens_k", args.num_seqs, args.total_k, "total_k");
    check_lengths(host.cu_seqlens_k, "cu_seqlens_k", args.num_seqs, args.max_seqlen_k,
                  "max_seqlen_k");
  }
  if (flags.mm_prefix) check_spans(flags, args, host);
  if (flags.sinks != SinkMode::kNone) check_sinks(args, host);
}

}  // namespace attnjit

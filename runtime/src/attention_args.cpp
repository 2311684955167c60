// The host checks of a launch's arguments (validate_attention_args): every
// pointer the flags need, strides and layouts that neither overlap nor
// misalign, sizes the kernels index with 32-bit ints, a paged cache's page
// geometry. They run on every launch, so a passing check costs a few
// compares and the message is formatted only on failure.
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "attnjit/attention_args.h"
#include "attnjit/error.h"

namespace attnjit {
namespace {

[[noreturn]] void fail(const std::string& message) { throw Error(ErrorKind::kArgument, message); }

// The message is formatted only when the check fails: validation runs on
// every launch, so the passing path must cost a few compares.
#define ATTNJIT_REQUIRE(ok, ...)               \
  do {                                         \
    if (!(ok)) fail(fmt::format(__VA_ARGS__)); \
  } while (0)

// `bytes` is a power of two: a mask, not a division, on every launch.
bool aligned(const void* p, size_t bytes) {
  return (reinterpret_cast<uintptr_t>(p) & (bytes - 1)) == 0;
}

void require_pointer(const void* p, const char* name, size_t alignment, const char* why) {
  ATTNJIT_REQUIRE(p != nullptr, "attention: `{}` is null ({})", name, why);
  ATTNJIT_REQUIRE(aligned(p, alignment), "attention: `{}` must be {}-byte aligned", name,
                  alignment);
}

void require_strides(const char* name, int64_t row, int64_t head) {
  ATTNJIT_REQUIRE(row > 0 && head > 0,
                  "attention: `{}` strides must be positive (row {}, "
                  "head {})",
                  name, row, head);
  ATTNJIT_REQUIRE(row % 8 == 0 && head % 8 == 0,
                  "attention: `{}` row and head strides must be multiples "
                  "of 8 elements for 16-byte loads (row {}, head {})",
                  name, row, head);
}

// The [rows, heads, head_dim] elements of one tensor must not alias: the
// kernel writes o through this layout (aliasing rows or heads race), and
// aliasing rows or heads of q, k or v mean a stride from another tensor.
// The layout must nest: the smaller stride steps over whole head_dim
// vectors, the larger one over the whole extent of the smaller. Dimensions
// of extent 1 are never stepped over and impose nothing. Strides are
// positive here (require_strides ran first).
[[noreturn, gnu::noinline, gnu::cold]] void layout_failed(const char* name, int64_t rows,
                                                          int64_t row_stride, int64_t heads,
                                                          int64_t head_stride, int64_t head_dim) {
  fail(
      fmt::format("attention: `{}` rows or heads overlap in memory: strides "
                  "(row {}, head {}) for {} rows of {} heads of {} elements",
                  name, row_stride, head_stride, rows, heads, head_dim));
}

inline void require_layout(const char* name, int64_t rows, int64_t row_stride, int64_t heads,
                           int64_t head_stride, int64_t head_dim) {
  int64_t inner_n = heads, inner_stride = head_stride;
  int64_t outer_n = rows, outer_stride = row_stride;
  if (row_stride < head_stride) {
    std::swap(inner_n, outer_n);
    std::swap(inner_stride, outer_stride);
  }
  if (inner_n <= 1) {  // only the outer dimension is stepped over
    inner_n = outer_n;
    inner_stride = outer_stride;
    outer_n = 1;
  }
  bool ok = inner_n <= 1 || inner_stride >= head_dim;
  if (ok && outer_n > 1) {
    int64_t inner_span = 0;  // (inner_n - 1) * inner_stride + head_dim
    ok = !__builtin_mul_overflow(inner_n - 1, inner_stride, &inner_span) &&
         !__builtin_add_overflow(inner_span, head_dim, &inner_span) && outer_stride >= inner_span;
  }
  if (!ok) layout_failed(name, rows, row_stride, heads, head_stride, head_dim);
}

void validate_contiguous_kv(const AttentionFlags& flags, const AttentionArgs& a) {
  require_pointer(a.cu_seqlens_k, "cu_seqlens_k", 4, "k and v are contiguous");
  ATTNJIT_REQUIRE(a.total_k >= 0, "attention: total_k must be >= 0, got {}", a.total_k);
  require_layout("k", a.total_k, a.k_row_stride, a.num_heads_kv, a.k_head_stride, flags.head_dim);
  require_layout("v", a.total_k, a.v_row_stride, a.num_heads_kv, a.v_head_stride,
                 flags.value_head_dim());
}

// A page of [page_size, Hkv, D] must nest inside the page stride, as the
// rows and heads of a contiguous tensor nest.
void require_page_layout(const char* name, const AttentionArgs& a, int64_t row_stride,
                         int64_t head_stride, int64_t page_stride, int64_t head_dim) {
  require_layout(name, a.page_size, row_stride, a.num_heads_kv, head_stride, head_dim);
  const int64_t extent = (a.page_size - 1) * row_stride + (a.num_heads_kv - 1) * head_stride +
                         head_dim;
  ATTNJIT_REQUIRE(page_stride % 8 == 0 && (a.num_pages <= 1 || page_stride >= extent),
                  "attention: `{}` pages overlap or are misaligned: page stride {} for pages of "
                  "{} elements (a multiple of 8 elements, at least the page's extent)",
                  name, page_stride, extent);
}

void validate_paged_kv(const AttentionFlags& flags, const AttentionArgs& a) {
  require_pointer(a.block_table, "block_table", 4, "kv_layout is paged");
  require_pointer(a.seqused_k, "seqused_k", 4, "kv_layout is paged");
  ATTNJIT_REQUIRE(a.page_size >= 16 && a.page_size % 16 == 0 && a.page_size <= 4096,
                  "attention: page_size must be a multiple of 16 in [16, 4096], got {}",
                  a.page_size);
  ATTNJIT_REQUIRE(a.num_pages > 0, "attention: num_pages must be > 0 for a paged cache, got {}",
                  a.num_pages);
  const int64_t pages_needed = (int64_t(a.max_seqlen_k) + a.page_size - 1) / a.page_size;
  ATTNJIT_REQUIRE(a.block_table_stride >= pages_needed,
                  "attention: block_table_stride {} is below the {} pages max_seqlen_k {} needs",
                  a.block_table_stride, pages_needed, a.max_seqlen_k);
  require_page_layout("k", a, a.k_row_stride, a.k_head_stride, a.k_page_stride, flags.head_dim);
  require_page_layout("v", a, a.v_row_stride, a.v_head_stride, a.v_page_stride,
                      flags.value_head_dim());
}

}  // namespace

void validate_attention_args(const AttentionFlags& flags, const AttentionArgs& a) {
  require_pointer(a.q, "q", 16, "always needed");
  require_pointer(a.k, "k", 16, "always needed");
  require_pointer(a.v, "v", 16, "always needed");
  require_pointer(a.o, "o", 16, "always needed");
  require_pointer(a.cu_seqlens_q, "cu_seqlens_q", 4, "always needed");
  if (flags.return_lse) require_pointer(a.lse, "lse", 4, "return_lse is on");
  if (flags.sinks != SinkMode::kNone) {
    require_pointer(a.sinks, "sinks", 4, "a sink mode is on");
  }
  if (flags.mm_prefix) {
    require_pointer(a.mm_span_offsets, "mm_span_offsets", 4, "mm_prefix is on");
    require_pointer(a.mm_spans, "mm_spans", 4, "mm_prefix is on");
  }
  require_strides("q", a.q_row_stride, a.q_head_stride);
  require_strides("k", a.k_row_stride, a.k_head_stride);
  require_strides("v", a.v_row_stride, a.v_head_stride);
  if (flags.kv_dtype == KvDType::kFp8E4M3) {
    require_pointer(a.k_scale, "k_scale", 4, "kv_dtype is fp8_e4m3");
    require_pointer(a.v_scale, "v_scale", 4, "kv_dtype is fp8_e4m3");
    // One byte per element: 16-byte copies need strides of 16 elements.
    ATTNJIT_REQUIRE(a.k_row_stride % 16 == 0 && a.k_head_stride % 16 == 0 &&
                        a.v_row_stride % 16 == 0 && a.v_head_stride % 16 == 0 &&
                        a.k_page_stride % 16 == 0 && a.v_page_stride % 16 == 0,
                    "attention: fp8 `k` and `v` strides must be multiples of 16 elements "
                    "(bytes) for 16-byte loads (k row {}, head {}, page {}; v row {}, head {}, "
                    "page {})",
                    a.k_row_stride, a.k_head_stride, a.k_page_stride, a.v_row_stride,
                    a.v_head_stride, a.v_page_stride);
  }
  require_strides("o", a.o_row_stride, a.o_head_stride);
  ATTNJIT_REQUIRE(a.num_seqs >= 0 && a.num_seqs <= 65535,
                  "attention: num_seqs {} is outside [0, 65535]", a.num_seqs);
  ATTNJIT_REQUIRE(a.num_heads_q > 0 && a.num_heads_kv > 0 && a.num_heads_q % a.num_heads_kv == 0 &&
                      a.num_heads_q <= 65535,
                  "attention: num_heads_q ({}) must be a positive "
                  "multiple of num_heads_kv ({})",
                  a.num_heads_q, a.num_heads_kv);
  ATTNJIT_REQUIRE(a.num_splits >= 0, "attention: num_splits must be >= 0 (0: the library "
                  "chooses), got {}", a.num_splits);
  ATTNJIT_REQUIRE(a.total_q >= 0 && a.max_seqlen_q >= 0 && a.max_seqlen_k >= 0,
                  "attention: total_q and max sequence lengths must be >= 0");
  // The kernels index a sequence's (packed) query rows with 32-bit ints:
  // with GQA packing a block row is (position, one of the Hq / Hkv heads).
  ATTNJIT_REQUIRE(int64_t(a.max_seqlen_q) * (a.num_heads_q / a.num_heads_kv) <= INT32_MAX,
                  "attention: max_seqlen_q {} x {} query heads per kv head is over 2^31 - 1 "
                  "rows; split the sequence",
                  a.max_seqlen_q, a.num_heads_q / a.num_heads_kv);
  const int64_t d = flags.head_dim;
  require_layout("q", a.total_q, a.q_row_stride, a.num_heads_q, a.q_head_stride, d);
  if (flags.kv_layout == KvLayout::kPaged) {
    validate_paged_kv(flags, a);
  } else {
    validate_contiguous_kv(flags, a);
  }
  require_layout("o", a.total_q, a.o_row_stride, a.num_heads_q, a.o_head_stride,
                 flags.value_head_dim());
  ATTNJIT_REQUIRE(std::isfinite(a.scale), "attention: scale {} is not finite", a.scale);
  if (flags.softcap) {
    ATTNJIT_REQUIRE(std::isfinite(a.softcap) && a.softcap > 0,
                    "attention: softcap must be > 0, got {}", a.softcap);
  }
  if (flags.window) {
    ATTNJIT_REQUIRE(a.window_left >= -1 && a.window_right >= -1,
                    "attention: window sizes must be >= -1, got ({}, {})", a.window_left,
                    a.window_right);
  }
}

}  // namespace attnjit

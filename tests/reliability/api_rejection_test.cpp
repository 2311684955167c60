// The runtime API rejects bad arguments before any device work, each with
// a message that names what is wrong: validate_attention_args (every
// launch), resolve_flags / parse_target (unsupported head dims and
// targets), and the C API's status codes for the same cases. No GPU: the
// pointers are never dereferenced, and the C API's kernel comes from an
// entry planted in a temporary cache directory (no NVRTC either).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "attnjit/attention.h"
#include "attnjit/attnjit.h"
#include "attnjit/error.h"
#include "attnjit/target.h"
#include "reliability_support.h"
#include "runtime/cache_test_support.h"

namespace attnjit {
namespace {

using testing::is_clear_message;

constexpr int kD = 64;

// Addresses that are 256-byte aligned and never dereferenced.
template <class T>
T* fake(uintptr_t address) {
  return reinterpret_cast<T*>(address);
}

AttentionFlags base_flags() {
  AttentionFlags f;
  f.head_dim = kD;
  return f;
}

// Well-formed arguments for base_flags(): 2 sequences, 8 query heads over 2
// kv heads, [total, H, D] contiguous.
AttentionArgs good_args() {
  AttentionArgs a;
  a.q = fake<const void>(0x100000);
  a.k = fake<const void>(0x200000);
  a.v = fake<const void>(0x300000);
  a.o = fake<void>(0x400000);
  a.lse = fake<float>(0x500000);
  a.sinks = fake<const float>(0x600000);
  a.cu_seqlens_q = fake<const int32_t>(0x700000);
  a.cu_seqlens_k = fake<const int32_t>(0x800000);
  a.mm_span_offsets = fake<const int32_t>(0x900000);
  a.mm_spans = fake<const int32_t>(0xa00000);
  a.num_seqs = 2;
  a.num_heads_q = 8;
  a.num_heads_kv = 2;
  a.total_q = a.total_k = 100;
  a.max_seqlen_q = a.max_seqlen_k = 60;
  a.q_row_stride = a.o_row_stride = 8 * kD;
  a.k_row_stride = a.v_row_stride = 2 * kD;
  a.q_head_stride = a.k_head_stride = a.v_head_stride = a.o_head_stride = kD;
  return a;
}

// A paged cache of 10 pages of 16 tokens, [page, row, head, D], for the
// same heads; cu_seqlens_k and total_k are not used.
void make_paged(AttentionFlags& f, AttentionArgs& a) {
  f.kv_layout = KvLayout::kPaged;
  a.cu_seqlens_k = nullptr;
  a.total_k = 0;
  a.block_table = fake<const int32_t>(0xb00000);
  a.seqused_k = fake<const int32_t>(0xc00000);
  a.page_size = 16;
  a.num_pages = 10;
  a.block_table_stride = 4;  // 60 keys at most: 4 pages
  a.k_page_stride = a.v_page_stride = 16 * 2 * kD;
}

struct ArgCase {
  const char* name;
  std::function<void(AttentionFlags&, AttentionArgs&)> edit;
  const char* expected;  // in the message; nullptr: accepted
};

template <class T>
T* shifted(T* p, int bytes) {
  return reinterpret_cast<T*>(reinterpret_cast<uintptr_t>(p) + bytes);
}

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

const std::vector<ArgCase>& arg_cases() {
  using F = AttentionFlags;
  using A = AttentionArgs;
  static const std::vector<ArgCase> all = {
      // Accepted: the base, and the layouts and values the API allows.
      {"base", [](F&, A&) {}, nullptr},
      {"head_major_layout",  // [H, total, D]: row stride D, head stride total*D
       [](F&, A& a) {
         a.q_row_stride = a.o_row_stride = kD;
         a.q_head_stride = a.o_head_stride = 100 * kD;
       },
       nullptr},
      {"packed_qkv_rows",  // q, k, v as slices of one [total, 12, D] buffer
       [](F&, A& a) { a.q_row_stride = a.k_row_stride = a.v_row_stride = 12 * kD; }, nullptr},
      {"mqa", [](F&, A& a) { a.num_heads_kv = 1; }, nullptr},
      {"no_sequences", [](F&, A& a) { a.num_seqs = 0; }, nullptr},
      {"default_scale", [](F&, A& a) { a.scale = -1.f; }, nullptr},
      {"softcap_value_ignored_when_off", [](F&, A& a) { a.softcap = kNaN; }, nullptr},
      {"window_value_ignored_when_off", [](F&, A& a) { a.window_left = -7; }, nullptr},
      {"optional_pointers_unused",
       [](F&, A& a) {
         a.lse = nullptr;
         a.sinks = nullptr;
         a.mm_spans = nullptr;
       },
       nullptr},
      {"single_row_any_row_stride",
       [](F&, A& a) {
         a.total_q = 1;
         a.q_row_stride = a.o_row_stride = 8;
       },
       nullptr},
      {"unbounded_windows",
       [](F& f, A& a) {
         f.window = true;
         a.window_left = a.window_right = -1;
       },
       nullptr},
      // Null pointers.
      {"null_q", [](F&, A& a) { a.q = nullptr; }, "`q` is null"},
      {"null_k", [](F&, A& a) { a.k = nullptr; }, "`k` is null"},
      {"null_v", [](F&, A& a) { a.v = nullptr; }, "`v` is null"},
      {"null_o", [](F&, A& a) { a.o = nullptr; }, "`o` is null"},
      {"null_cu_seqlens_q", [](F&, A& a) { a.cu_seqlens_q = nullptr; }, "`cu_seqlens_q` is null"},
      {"null_cu_seqlens_k", [](F&, A& a) { a.cu_seqlens_k = nullptr; }, "`cu_seqlens_k` is null"},
      {"null_lse_with_return_lse",
       [](F& f, A& a) {
         f.return_lse = true;
         a.lse = nullptr;
       },
       "`lse` is null (return_lse is on)"},
      {"null_sinks_with_null_logit",
       [](F& f, A& a) {
         f.sinks = SinkMode::kNullLogit;
         a.sinks = nullptr;
       },
       "`sinks` is null (a sink mode is on)"},
      {"null_sinks_with_bias_key0",
       [](F& f, A& a) {
         f.sinks = SinkMode::kBiasKey0;
         a.sinks = nullptr;
       },
       "`sinks` is null"},
      {"null_span_offsets_with_mm_prefix",
       [](F& f, A& a) {
         f.mm_prefix = true;
         a.mm_span_offsets = nullptr;
       },
       "`mm_span_offsets` is null (mm_prefix is on)"},
      {"null_spans_with_mm_prefix",
       [](F& f, A& a) {
         f.mm_prefix = true;
         a.mm_spans = nullptr;
       },
       "`mm_spans` is null (mm_prefix is on)"},
      // Misaligned pointers: 16 bytes for the tensors, 4 for the rest.
      {"misaligned_q", [](F&, A& a) { a.q = shifted(a.q, 2); }, "`q` must be 16-byte aligned"},
      {"misaligned_k", [](F&, A& a) { a.k = shifted(a.k, 8); }, "`k` must be 16-byte aligned"},
      {"misaligned_v", [](F&, A& a) { a.v = shifted(a.v, 4); }, "`v` must be 16-byte aligned"},
      {"misaligned_o", [](F&, A& a) { a.o = shifted(a.o, 1); }, "`o` must be 16-byte aligned"},
      {"misaligned_cu_seqlens_q", [](F&, A& a) { a.cu_seqlens_q = shifted(a.cu_seqlens_q, 2); },
       "`cu_seqlens_q` must be 4-byte aligned"},
      {"misaligned_lse",
       [](F& f, A& a) {
         f.return_lse = true;
         a.lse = shifted(a.lse, 1);
       },
       "`lse` must be 4-byte aligned"},
      {"misaligned_sinks",
       [](F& f, A& a) {
         f.sinks = SinkMode::kNullLogit;
         a.sinks = shifted(a.sinks, 2);
       },
       "`sinks` must be 4-byte aligned"},
      {"misaligned_spans",
       [](F& f, A& a) {
         f.mm_prefix = true;
         a.mm_spans = shifted(a.mm_spans, 3);
       },
       "`mm_spans` must be 4-byte aligned"},
      // Strides.
      {"zero_row_stride", [](F&, A& a) { a.q_row_stride = 0; }, "`q` strides must be positive"},
      {"negative_head_stride", [](F&, A& a) { a.k_head_stride = -kD; },
       "`k` strides must be positive"},
      {"row_stride_not_multiple_of_8", [](F&, A& a) { a.v_row_stride = 2 * kD + 4; },
       "`v` row and head strides must be multiples of 8"},
      {"o_rows_overlap",  // the row stride of one head, for 8 heads
       [](F&, A& a) { a.o_row_stride = kD; }, "`o` rows or heads overlap"},
      {"o_heads_overlap",  // half a head apart
       [](F&, A& a) { a.o_head_stride = kD / 2; }, "`o` rows or heads overlap"},
      {"q_equal_strides", [](F&, A& a) { a.q_row_stride = a.q_head_stride = kD; },
       "`q` rows or heads overlap"},
      {"k_given_q_row_stride_of_fewer_heads",  // kv has 2 heads, stride covers 1
       [](F&, A& a) { a.k_row_stride = kD; }, "`k` rows or heads overlap"},
      {"v_head_major_too_short",  // [H, total, D] with total*D one row short
       [](F&, A& a) {
         a.v_row_stride = kD;
         a.v_head_stride = 99 * kD;
       },
       "`v` rows or heads overlap"},
      {"strides_spanning_more_than_int64",
       [](F&, A& a) {
         a.q_row_stride = int64_t{1} << 62;
         a.q_head_stride = (int64_t{1} << 62) + 8;
       },
       "`q` rows or heads overlap"},
      // Sizes.
      {"negative_num_seqs", [](F&, A& a) { a.num_seqs = -1; }, "num_seqs -1"},
      {"too_many_seqs", [](F&, A& a) { a.num_seqs = 65536; }, "num_seqs 65536"},
      {"hq_not_multiple_of_hkv", [](F&, A& a) { a.num_heads_kv = 3; },
       "num_heads_q (8) must be a positive multiple of num_heads_kv (3)"},
      {"zero_hkv", [](F&, A& a) { a.num_heads_kv = 0; }, "num_heads_kv (0)"},
      {"zero_hq", [](F&, A& a) { a.num_heads_q = 0; }, "num_heads_q (0)"},
      {"too_many_heads",
       [](F&, A& a) {
         a.num_heads_q = 65536 * 2;
         a.num_heads_kv = 2;
       },
       "num_heads_q"},
      {"negative_total_q", [](F&, A& a) { a.total_q = -1; }, "must be >= 0"},
      {"negative_max_seqlen_k", [](F&, A& a) { a.max_seqlen_k = -5; }, "must be >= 0"},
      {"packed_rows_over_int32",
       [](F&, A& a) {
         a.num_heads_q = 8;
         a.num_heads_kv = 1;
         a.max_seqlen_q = 300000000;
       },
       "over 2^31 - 1 rows"},
      // Scalars.
      {"scale_nan", [](F&, A& a) { a.scale = kNaN; }, "scale nan is not finite"},
      {"scale_inf", [](F&, A& a) { a.scale = kInf; }, "scale inf is not finite"},
      {"scale_minus_inf", [](F&, A& a) { a.scale = -kInf; }, "scale -inf is not finite"},
      {"softcap_zero",
       [](F& f, A& a) {
         f.softcap = true;
         a.softcap = 0.f;
       },
       "softcap must be > 0, got 0"},
      {"softcap_negative",
       [](F& f, A& a) {
         f.softcap = true;
         a.softcap = -30.f;
       },
       "softcap must be > 0, got -30"},
      {"softcap_nan",
       [](F& f, A& a) {
         f.softcap = true;
         a.softcap = kNaN;
       },
       "softcap must be > 0, got nan"},
      {"softcap_inf",
       [](F& f, A& a) {
         f.softcap = true;
         a.softcap = kInf;
       },
       "softcap must be > 0, got inf"},
      {"window_left_below_minus_one",
       [](F& f, A& a) {
         f.window = true;
         a.window_left = -2;
       },
       "window sizes must be >= -1, got (-2, -1)"},
      // The paged layout.
      {"paged_accepted", [](F& f, A& a) { make_paged(f, a); }, nullptr},
      {"paged_heads_outer_accepted",  // [page, head, row, D]
       [](F& f, A& a) {
         make_paged(f, a);
         a.k_row_stride = kD;
         a.k_head_stride = 16 * kD;
       },
       nullptr},
      {"paged_combined_kv_accepted",  // [page, 2, row, head, D]: k and v interleaved by page
       [](F& f, A& a) {
         make_paged(f, a);
         a.k_page_stride = a.v_page_stride = 2 * 16 * 2 * kD;
       },
       nullptr},
      {"paged_null_block_table",
       [](F& f, A& a) {
         make_paged(f, a);
         a.block_table = nullptr;
       },
       "`block_table` is null (kv_layout is paged)"},
      {"paged_null_seqused_k",
       [](F& f, A& a) {
         make_paged(f, a);
         a.seqused_k = nullptr;
       },
       "`seqused_k` is null (kv_layout is paged)"},
      {"contiguous_null_cu_seqlens_k", [](F&, A& a) { a.cu_seqlens_k = nullptr; },
       "`cu_seqlens_k` is null (k and v are contiguous)"},
      {"paged_page_size_not_multiple_of_16",
       [](F& f, A& a) {
         make_paged(f, a);
         a.page_size = 24;
       },
       "page_size must be a multiple of 16 in [16, 4096], got 24"},
      {"paged_no_pages",
       [](F& f, A& a) {
         make_paged(f, a);
         a.num_pages = 0;
       },
       "num_pages must be > 0"},
      {"paged_table_too_narrow",
       [](F& f, A& a) {
         make_paged(f, a);
         a.block_table_stride = 3;
       },
       "block_table_stride 3 is below the 4 pages max_seqlen_k 60 needs"},
      {"paged_pages_overlap",
       [](F& f, A& a) {
         make_paged(f, a);
         a.v_page_stride = 8 * 2 * kD;
       },
       "`v` pages overlap or are misaligned"},
      {"paged_rows_overlap",
       [](F& f, A& a) {
         make_paged(f, a);
         a.k_row_stride = kD;
       },
       "`k` rows or heads overlap"},
      {"window_right_below_minus_one",
       [](F& f, A& a) {
         f.window = true;
         a.window_left = 128;
         a.window_right = std::numeric_limits<int>::min();
       },
       "window sizes must be >= -1"},
  };
  return all;
}

// gtest's "GetParam() = ..." shows the case's name, not its bytes.
void PrintTo(const ArgCase& c, std::ostream* os) { *os << c.name; }

class AttentionArgsValidation : public ::testing::TestWithParam<ArgCase> {};

TEST_P(AttentionArgsValidation, AcceptsOrRejectsNamingTheArgument) {
  AttentionFlags flags = base_flags();
  AttentionArgs args = good_args();
  GetParam().edit(flags, args);
  if (GetParam().expected == nullptr) {
    EXPECT_NO_THROW(validate_attention_args(flags, args));
    return;
  }
  try {
    validate_attention_args(flags, args);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find(GetParam().expected), std::string::npos) << e.what();
    EXPECT_TRUE(is_clear_message(e.what()));
  }
}

INSTANTIATE_TEST_SUITE_P(EveryCase, AttentionArgsValidation, ::testing::ValuesIn(arg_cases()),
                         [](const ::testing::TestParamInfo<ArgCase>& info) {
                           return std::string(info.param.name);
                         });

// The passing path runs on every launch: it must stay a few compares.
TEST(AttentionArgsValidation, PassingPathIsCheap) {
  const AttentionFlags flags = base_flags();
  const AttentionArgs args = good_args();
  constexpr int kCalls = 1000000;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kCalls; ++i) validate_attention_args(flags, args);
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() /
      kCalls;
  RecordProperty("validate_ns_per_call", std::to_string(ns));
  EXPECT_LT(ns, 500.0) << "validate_attention_args takes " << ns << " ns per call";
}

TEST(UnsupportedHeadDimsAndTargets, AreFlagErrorsBeforeAnyCompile) {
  const Spec& spec = attention_spec();
  for (int64_t head_dim : {0, -64, 32, 72, 100, 127, 129, 320, 448, 1024, 1 << 20}) {
    AttentionFlags flags = base_flags();
    flags.head_dim = int(head_dim);
    try {
      resolve_flags(spec, flags.to_flag_map());
      ADD_FAILURE() << "head_dim " << head_dim << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kFlags);
      EXPECT_NE(std::string(e.what()).find("flag 'head_dim': " + std::to_string(head_dim) +
                                           " is not one of"),
                std::string::npos)
          << e.what();
    }
    // The typed API refuses it the same way, compiling nothing.
    KernelCache cache(testing::memory_config());
    const Target target = parse_target("sm_80");
    EXPECT_THROW(AttentionKernel::get(flags, cache, &target), Error);
    EXPECT_EQ(cache.stats().compiles, 0u);
  }
  // Heads wider than 256 are flags only sm_90a has a kernel for: on
  // sm_80 a flag error that names it, compiling nothing.
  for (const int head_dim : {384, 512}) {
    AttentionFlags flags = base_flags();
    flags.head_dim = head_dim;
    KernelCache cache(testing::memory_config());
    const Target target = parse_target("sm_80");
    try {
      AttentionKernel::get(flags, cache, &target);
      ADD_FAILURE() << "head_dim " << head_dim << " accepted on sm_80";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kFlags);
      EXPECT_NE(std::string(e.what()).find("sm_90a"), std::string::npos) << e.what();
    }
    EXPECT_EQ(cache.stats().compiles, 0u);
  }
  for (const char* name : {"sm_75", "sm_70", "sm_100", "sm_100a", "sm_120", "sm_80a", "compute_90",
                           "SM_90A", "sm90a", "sm_90a ", "", "sm_"}) {
    try {
      parse_target(name);
      ADD_FAILURE() << "target '" << name << "' accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kFlags);
      EXPECT_NE(std::string(e.what()).find("supported: sm_80"), std::string::npos) << e.what();
    }
  }
  for (const auto& [major, minor] :
       std::vector<std::pair<int, int>>{{7, 5}, {6, 1}, {0, 0}, {-1, 0}}) {
    EXPECT_THROW(target_for_device(major, minor), Error) << major << "." << minor;
  }
}

TEST(IllegalFlagCombinations, AreFlagErrors) {
  const Spec& spec = attention_spec();
  AttentionFlags clamp_without_window = base_flags();
  clamp_without_window.mm_prefix = true;
  clamp_without_window.mm_clamp = true;
  EXPECT_THROW(resolve_flags(spec, clamp_without_window.to_flag_map()), Error);
  AttentionFlags clamp_without_prefix = base_flags();
  clamp_without_prefix.window = true;
  clamp_without_prefix.mm_clamp = true;
  EXPECT_THROW(resolve_flags(spec, clamp_without_prefix.to_flag_map()), Error);
}

// ---- the C API: the same rejections as status codes --------------------

attnjit_attention_args to_c(const AttentionArgs& a) {
  attnjit_attention_args c;
  attnjit_attention_args_init(&c);
  c.q = a.q;
  c.k = a.k;
  c.v = a.v;
  c.o = a.o;
  c.lse = a.lse;
  c.sinks = a.sinks;
  c.cu_seqlens_q = a.cu_seqlens_q;
  c.cu_seqlens_k = a.cu_seqlens_k;
  c.mm_span_offsets = a.mm_span_offsets;
  c.mm_spans = a.mm_spans;
  c.q_row_stride = a.q_row_stride;
  c.q_head_stride = a.q_head_stride;
  c.k_row_stride = a.k_row_stride;
  c.k_head_stride = a.k_head_stride;
  c.v_row_stride = a.v_row_stride;
  c.v_head_stride = a.v_head_stride;
  c.o_row_stride = a.o_row_stride;
  c.o_head_stride = a.o_head_stride;
  c.num_seqs = a.num_seqs;
  c.num_heads_q = a.num_heads_q;
  c.num_heads_kv = a.num_heads_kv;
  c.total_q = a.total_q;
  c.total_k = a.total_k;
  c.max_seqlen_q = a.max_seqlen_q;
  c.max_seqlen_k = a.max_seqlen_k;
  c.scale = a.scale;
  c.softcap = a.softcap;
  c.window_left = a.window_left;
  c.window_right = a.window_right;
  c.block_table = a.block_table;
  c.seqused_k = a.seqused_k;
  c.block_table_stride = a.block_table_stride;
  c.k_page_stride = a.k_page_stride;
  c.v_page_stride = a.v_page_stride;
  c.page_size = a.page_size;
  c.num_pages = a.num_pages;
  return c;
}

attnjit_attention_flags to_c(const AttentionFlags& f) {
  attnjit_attention_flags c;
  attnjit_attention_flags_init(&c);
  c.dtype = f.dtype == DType::kFP16 ? ATTNJIT_DTYPE_FP16 : ATTNJIT_DTYPE_BF16;
  c.head_dim = f.head_dim;
  c.causal = f.causal;
  c.window = f.window;
  c.sinks = static_cast<int32_t>(f.sinks);
  c.mm_prefix = f.mm_prefix;
  c.mm_clamp = f.mm_clamp;
  c.softcap = f.softcap;
  c.return_lse = f.return_lse;
  c.kv_layout = f.kv_layout == KvLayout::kPaged ? ATTNJIT_KV_PAGED : ATTNJIT_KV_CONTIGUOUS;
  return c;
}

std::string last_message() { return attnjit_last_error_message(); }

class CApiRejection : public ::testing::Test {
 protected:
  void SetUp() override {
    attnjit_context_options options;
    attnjit_context_options_init(&options);
    options.cache_dir = dir_.path().c_str();
    static const char* const kNone[1] = {nullptr};
    options.aot_dirs = kNone;
    options.num_aot_dirs = 0;
    options.no_jit = 1;  // a planted entry or nothing: never NVRTC
    options.log = 0;
    ASSERT_EQ(attnjit_context_create(&options, &context_), ATTNJIT_OK) << last_message();
  }
  void TearDown() override { attnjit_context_destroy(context_); }

  // The kernel of these flags, from an entry planted in the cache dir.
  attnjit_kernel* kernel(const AttentionFlags& flags) {
    testing::plant_attention_entry(dir_.path(), flags, parse_target("sm_80"));
    const attnjit_attention_flags c = to_c(flags);
    attnjit_kernel* out = nullptr;
    EXPECT_EQ(attnjit_get_attention_kernel(context_, &c, "sm_80", &out), ATTNJIT_OK)
        << last_message();
    return out;
  }

  testing::TempDir dir_;
  attnjit_context* context_ = nullptr;
};

TEST_F(CApiRejection, EveryBadArgumentIsAnArgumentStatusWithItsMessage) {
  int checked = 0;
  for (const ArgCase& c : arg_cases()) {
    if (c.expected == nullptr) continue;
    AttentionFlags flags = base_flags();
    AttentionArgs args = good_args();
    c.edit(flags, args);
    attnjit_kernel* k = kernel(flags);
    ASSERT_NE(k, nullptr) << c.name;
    const attnjit_attention_args c_args = to_c(args);
    EXPECT_EQ(attnjit_attention_launch(k, &c_args, nullptr), ATTNJIT_ERROR_ARGUMENT) << c.name;
    EXPECT_NE(last_message().find(c.expected), std::string::npos)
        << c.name << ": " << last_message();
    ++checked;
  }
  EXPECT_GT(checked, 40);
}

TEST_F(CApiRejection, FlagsAndTargetsGiveFlagStatusesAndNoKernel) {
  struct Case {
    const char* name;
    void (*edit)(attnjit_attention_flags&);
    const char* target;
    attnjit_status status;
    const char* expected;
  };
  const Case cases[] = {
      {"head_dim_72", [](attnjit_attention_flags& f) { f.head_dim = 72; }, "sm_80",
       ATTNJIT_ERROR_FLAGS, "head_dim"},
      {"head_dim_negative", [](attnjit_attention_flags& f) { f.head_dim = -128; }, "sm_80",
       ATTNJIT_ERROR_FLAGS, "-128"},
      {"window_flag_2", [](attnjit_attention_flags& f) { f.window = 2; }, "sm_80",
       ATTNJIT_ERROR_FLAGS, "window"},
      {"return_lse_minus_1", [](attnjit_attention_flags& f) { f.return_lse = -1; }, "sm_80",
       ATTNJIT_ERROR_FLAGS, "return_lse"},
      {"sinks_minus_1", [](attnjit_attention_flags& f) { f.sinks = -1; }, "sm_80",
       ATTNJIT_ERROR_FLAGS, "sinks"},
      {"target_sm_70", [](attnjit_attention_flags&) {}, "sm_70", ATTNJIT_ERROR_FLAGS, "sm_70"},
      {"target_injection", [](attnjit_attention_flags&) {}, "sm_80\n#define x", ATTNJIT_ERROR_FLAGS,
       "unsupported target 'sm_80\\n#define x'"},
      {"target_empty", [](attnjit_attention_flags&) {}, "", ATTNJIT_ERROR_FLAGS,
       "unsupported target ''"},
      {"struct_size_0", [](attnjit_attention_flags& f) { f.struct_size = 0; }, "sm_80",
       ATTNJIT_ERROR_ARGUMENT, "struct_size"},
  };
  for (const Case& c : cases) {
    attnjit_attention_flags flags = to_c(base_flags());
    c.edit(flags);
    attnjit_kernel* out = nullptr;
    EXPECT_EQ(attnjit_get_attention_kernel(context_, &flags, c.target, &out), c.status) << c.name;
    EXPECT_EQ(out, nullptr) << c.name;
    EXPECT_NE(last_message().find(c.expected), std::string::npos)
        << c.name << ": " << last_message();
    EXPECT_TRUE(is_clear_message(last_message()));
  }
  attnjit_cache_stats stats;
  attnjit_cache_stats_init(&stats);
  ASSERT_EQ(attnjit_cache_stats_get(context_, &stats), ATTNJIT_OK);
  EXPECT_EQ(stats.compiles, 0u);
  // A failed call leaves no stale message behind the next good one.
  EXPECT_NE(kernel(base_flags()), nullptr);
  EXPECT_STREQ(attnjit_last_error_message(), "");
}

TEST_F(CApiRejection, PrewarmReportsEachBadVariant) {
  attnjit_attention_flags flags[3] = {to_c(base_flags()), to_c(base_flags()), to_c(base_flags())};
  flags[1].head_dim = 72;
  flags[2].mm_clamp = 1;  // without window
  attnjit_prewarm_job* job = nullptr;
  ASSERT_EQ(attnjit_prewarm(context_, flags, 3, "sm_80", 2, &job), ATTNJIT_OK) << last_message();
  // The good one is in no cache (no-JIT): three failures.
  EXPECT_NE(attnjit_prewarm_wait(job), ATTNJIT_OK);
  EXPECT_NE(last_message().find("3 of 3 variants failed"), std::string::npos) << last_message();
}

}  // namespace
}  // namespace attnjit

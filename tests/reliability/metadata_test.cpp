// The checked mode: validate_attention_metadata() over host copies of
// cu_seqlens, multimodal spans and sinks, one test per violation.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "attnjit/error.h"
#include "attnjit/validate.h"
#include "reliability_support.h"

namespace attnjit {
namespace {

constexpr int kD = 128;

// Host arrays, and device-side arguments that match them.
struct Problem {
  AttentionFlags flags;
  AttentionArgs args;
  std::vector<int32_t> cu_q = {0, 3, 3, 10};  // lengths 3, 0, 7
  std::vector<int32_t> cu_k = {0, 5, 6, 16};  // lengths 5, 1, 10
  std::vector<int32_t> span_offsets = {0, 1, 1, 3};
  std::vector<int32_t> spans = {1, 3, /*seq 2:*/ 0, 2, 3, 9};  // adjacent spans are disjoint
  std::vector<float> sinks = {0.5f, -1.f, 2.f, 0.f};

  Problem() {
    flags.head_dim = kD;
    flags.mm_prefix = true;
    flags.sinks = SinkMode::kNullLogit;
    auto fake = [](uintptr_t address) { return reinterpret_cast<void*>(address); };
    args.q = fake(0x10000);
    args.k = fake(0x20000);
    args.v = fake(0x30000);
    args.o = fake(0x40000);
    args.sinks = static_cast<const float*>(fake(0x50000));
    args.cu_seqlens_q = static_cast<const int32_t*>(fake(0x60000));
    args.cu_seqlens_k = static_cast<const int32_t*>(fake(0x70000));
    args.mm_span_offsets = static_cast<const int32_t*>(fake(0x80000));
    args.mm_spans = static_cast<const int32_t*>(fake(0x90000));
    args.num_seqs = 3;
    args.num_heads_q = 4;
    args.num_heads_kv = 2;
    args.total_q = 10;
    args.total_k = 16;
    args.max_seqlen_q = 7;
    args.max_seqlen_k = 10;
    args.q_row_stride = args.o_row_stride = 4 * kD;
    args.k_row_stride = args.v_row_stride = 2 * kD;
    args.q_head_stride = args.k_head_stride = args.v_head_stride = args.o_head_stride = kD;
  }

  virtual ~Problem() = default;
  // The host copies of the arrays, as a caller passes them.
  virtual AttentionMetadata host() const {
    AttentionMetadata h;
    h.cu_seqlens_q = cu_q;
    h.cu_seqlens_k = cu_k;
    h.mm_span_offsets = span_offsets;
    h.mm_spans = spans;
    h.sinks = sinks;
    return h;
  }
  void validate() const { validate_attention_metadata(flags, args, host()); }
};

struct MetadataCase {
  const char* name;
  std::function<void(Problem&)> edit;
  const char* expected;  // nullptr: accepted
};

const float kNaN = std::numeric_limits<float>::quiet_NaN();

const std::vector<MetadataCase>& cases() {
  static const std::vector<MetadataCase> all = {
      {"base", [](Problem&) {}, nullptr},
      {"no_sequences",
       [](Problem& p) {
         p.args.num_seqs = 0;
         p.args.total_q = p.args.total_k = 0;
         p.cu_q = p.cu_k = p.span_offsets = {0};
         p.spans.clear();
       },
       nullptr},
      {"loose_max_seqlen", [](Problem& p) { p.args.max_seqlen_q = 1000; }, nullptr},
      {"no_spans_at_all",
       [](Problem& p) {
         p.span_offsets = {0, 0, 0, 0};
         p.spans.clear();
       },
       nullptr},
      {"modes_off_need_no_arrays",
       [](Problem& p) {
         p.flags.mm_prefix = false;
         p.flags.sinks = SinkMode::kNone;
         p.span_offsets.clear();
         p.spans.clear();
         p.sinks.clear();
       },
       nullptr},
      // cu_seqlens
      {"cu_q_too_short", [](Problem& p) { p.cu_q.pop_back(); },
       "`cu_seqlens_q` holds 3 entries, expected num_seqs + 1 = 4"},
      {"cu_k_too_long", [](Problem& p) { p.cu_k.push_back(16); },
       "`cu_seqlens_k` holds 5 entries, expected num_seqs + 1 = 4"},
      {"cu_q_missing", [](Problem& p) { p.cu_q.clear(); }, "`cu_seqlens_q` holds 0 entries"},
      {"cu_q_not_from_zero", [](Problem& p) { p.cu_q[0] = 1; },
       "`cu_seqlens_q[0]` is 1, expected 0"},
      {"cu_q_decreasing",
       [](Problem& p) {
         p.cu_q = {0, 3, 2, 10};
       },
       "`cu_seqlens_q` decreases at sequence 1: cu_seqlens_q[2] = 2 < cu_seqlens_q[1] = 3"},
      {"cu_k_decreasing",
       [](Problem& p) {
         p.cu_k = {0, 5, 4, 16};
       },
       "`cu_seqlens_k` decreases at sequence 1"},
      {"cu_q_total_mismatch", [](Problem& p) { p.args.total_q = 11; },
       "`cu_seqlens_q[3]` is 10, expected total_q = 11"},
      {"cu_k_total_mismatch", [](Problem& p) { p.cu_k.back() = 15; },
       "`cu_seqlens_k[3]` is 15, expected total_k = 16"},
      {"cu_q_overflowing_total",
       [](Problem& p) {
         p.cu_q = {0, 3, 3, std::numeric_limits<int32_t>::min()};
       },
       "`cu_seqlens_q` decreases at sequence 2"},
      {"max_seqlen_q_too_small", [](Problem& p) { p.args.max_seqlen_q = 6; },
       "sequence 2 has 7 rows in `cu_seqlens_q`, more than max_seqlen_q = 6"},
      {"max_seqlen_k_too_small", [](Problem& p) { p.args.max_seqlen_k = 9; },
       "sequence 2 has 10 rows in `cu_seqlens_k`, more than max_seqlen_k = 9"},
      // spans
      {"span_offsets_too_short",
       [](Problem& p) {
         p.span_offsets = {0, 1, 3};
       },
       "`mm_span_offsets` holds 3 entries, expected num_seqs + 1 = 4"},
      {"span_offsets_not_from_zero", [](Problem& p) { p.span_offsets[0] = 1; },
       "`mm_span_offsets[0]` is 1, expected 0"},
      {"span_offsets_decreasing",
       [](Problem& p) {
         p.span_offsets = {0, 2, 1, 3};
       },
       "`mm_span_offsets` decreases at sequence 1"},
      {"span_offsets_not_matching_spans", [](Problem& p) { p.spans.resize(4); },
       "`mm_span_offsets[3]` is 3, expected the number of spans (mm_spans holds 2 values each) = "
       "2"},
      {"spans_odd_count", [](Problem& p) { p.spans.push_back(12); },
       "`mm_spans` holds 7 values, not pairs [r0, r1]"},
      {"span_negative_start", [](Problem& p) { p.spans[0] = -1; },
       "span 0 [-1, 3] of sequence 0 is outside its keys [0, 5) or reversed"},
      {"span_past_keys", [](Problem& p) { p.spans[5] = 10; },
       "span 2 [3, 10] of sequence 2 is outside its keys [0, 10)"},
      {"span_past_keys_of_its_own_sequence",  // in range of the batch, not of sequence 0
       [](Problem& p) { p.spans[1] = 5; },
       "span 0 [1, 5] of sequence 0 is outside its keys [0, 5)"},
      {"span_reversed",
       [](Problem& p) {
         p.spans[0] = 3;
         p.spans[1] = 1;
       },
       "span 0 [3, 1] of sequence 0 is outside its keys [0, 5) or reversed"},
      {"spans_overlapping", [](Problem& p) { p.spans[4] = 2; },
       "span 2 [2, 9] of sequence 2 overlaps or precedes span 1 (ending at 2)"},
      {"spans_unsorted",
       [](Problem& p) {
         p.spans[2] = 3;
         p.spans[3] = 9;
         p.spans[4] = 0;
         p.spans[5] = 2;
       },
       "span 2 [0, 2] of sequence 2 overlaps or precedes span 1"},
      {"spans_duplicated",
       [](Problem& p) {
         p.spans[4] = 0;
         p.spans[5] = 2;
       },
       "span 2 [0, 2] of sequence 2 overlaps or precedes span 1 (ending at 2)"},
      {"span_in_a_sequence_without_keys",
       [](Problem& p) {
         p.span_offsets = {0, 1, 2, 3};
         p.spans = {1, 3, 0, 0, 3, 9};
         p.cu_k = {0, 5, 5, 16};
         p.args.max_seqlen_k = 11;
       },
       "span 1 [0, 0] of sequence 1 is outside its keys [0, 0)"},
      // sinks
      {"sinks_too_few", [](Problem& p) { p.sinks.pop_back(); },
       "`sinks` holds 3 values, expected num_heads_q = 4"},
      {"sinks_too_many", [](Problem& p) { p.sinks.push_back(1.f); },
       "`sinks` holds 5 values, expected num_heads_q = 4"},
      {"sinks_missing_for_bias_key0",
       [](Problem& p) {
         p.flags.sinks = SinkMode::kBiasKey0;
         p.sinks.clear();
       },
       "`sinks` holds 0 values, expected num_heads_q = 4"},
      {"sink_nan", [](Problem& p) { p.sinks[2] = kNaN; }, "`sinks[2]` is nan, not finite"},
      {"sink_inf", [](Problem& p) { p.sinks[0] = -std::numeric_limits<float>::infinity(); },
       "`sinks[0]` is -inf, not finite"},
      // validate_attention_args runs first.
      {"args_checked_too", [](Problem& p) { p.args.num_heads_kv = 3; }, "num_heads_kv (3)"},
  };
  return all;
}

// gtest's "GetParam() = ..." shows the case's name, not its bytes.
void PrintTo(const MetadataCase& c, std::ostream* os) { *os << c.name; }

class CheckedMode : public ::testing::TestWithParam<MetadataCase> {};

TEST_P(CheckedMode, AcceptsOrNamesTheViolation) {
  Problem problem;
  GetParam().edit(problem);
  if (GetParam().expected == nullptr) {
    EXPECT_NO_THROW(problem.validate());
    return;
  }
  try {
    problem.validate();
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find(GetParam().expected), std::string::npos) << e.what();
    EXPECT_TRUE(testing::is_clear_message(e.what()));
  }
}

INSTANTIATE_TEST_SUITE_P(EveryViolation, CheckedMode, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<MetadataCase>& info) {
                           return std::string(info.param.name);
                         });

TEST(CheckedMode, NullDataWithASizeIsRejected) {
  Problem problem;
  AttentionMetadata host;
  host.cu_seqlens_q = HostSpan<int32_t>(nullptr, 4);
  host.cu_seqlens_k = problem.cu_k;
  EXPECT_THROW(validate_attention_metadata(problem.flags, problem.args, host), Error);
}

// Paged K/V: seqused_k and the block table take cu_seqlens_k's place (none
// is passed), and the spans are bounded by seqused_k.
struct PagedProblem : Problem {
  std::vector<int32_t> used = {5, 3, 20};  // at least each sequence's new queries (3, 0, 7)
  // Pages of 16 keys, 2 columns per row: 1, 1 and 2 pages read; the rest unread.
  std::vector<int32_t> table = {4, -1, 0, 99, 5, 2};

  PagedProblem() {
    flags.kv_layout = KvLayout::kPaged;
    args.cu_seqlens_k = nullptr;
    args.total_k = 0;
    args.max_seqlen_k = 20;
    args.block_table = reinterpret_cast<const int32_t*>(uintptr_t{0xa0000});
    args.seqused_k = reinterpret_cast<const int32_t*>(uintptr_t{0xb0000});
    args.block_table_stride = 2;
    args.page_size = 16;
    args.num_pages = 6;
    args.k_page_stride = args.v_page_stride = 16 * args.k_row_stride;
  }
  AttentionMetadata host() const override {
    AttentionMetadata h = Problem::host();
    h.cu_seqlens_k = {};
    h.seqused_k = used;
    h.block_table = table;
    return h;
  }
};

TEST(CheckedMode, PagedKeysComeFromSequsedKAndTheBlockTable) {
  const auto rejects = [](const std::function<void(PagedProblem&)>& edit, const char* expected) {
    PagedProblem p;
    edit(p);
    try {
      p.validate();
      ADD_FAILURE() << "accepted; expected: " << expected;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  EXPECT_NO_THROW(PagedProblem().validate());  // unread entries may hold anything
  rejects([](PagedProblem& p) { p.used[2] = 6; },
          "`seqused_k[2]` is 6, below the 7 new queries of sequence 2");
  rejects([](PagedProblem& p) { p.used[0] = 21; },
          "`seqused_k[0]` is 21, more than max_seqlen_k = 20");
  rejects([](PagedProblem& p) { p.used.pop_back(); },
          "`seqused_k` holds 2 entries, expected num_seqs = 3");
  rejects([](PagedProblem& p) { p.table[5] = 6; },
          "`block_table[2][1]` is 6, not a page of the cache [0, 6)");
  rejects([](PagedProblem& p) { p.used[1] = 17; },  // now reads row 1's second column
          "`block_table[1][1]` is 99, not a page of the cache");
  rejects([](PagedProblem& p) { p.table.pop_back(); },
          "`block_table` holds 5 entries, expected num_seqs * block_table_stride = 6");
  rejects([](PagedProblem& p) { p.used[2] = 9; },  // span [3, 9] of sequence 2 past its keys
          "span 2 [3, 9] of sequence 2 is outside its keys [0, 9)");
}

// A large batch checks in linear time (debug mode, but not a stall).
TEST(CheckedMode, LargeBatchIsLinear) {
  Problem problem;
  constexpr int kSeqs = 60000;
  problem.args.num_seqs = kSeqs;
  problem.cu_q.assign(1, 0);
  problem.cu_k.assign(1, 0);
  problem.span_offsets.assign(1, 0);
  problem.spans.clear();
  for (int b = 0; b < kSeqs; ++b) {
    problem.cu_q.push_back(problem.cu_q.back() + 3);
    problem.cu_k.push_back(problem.cu_k.back() + 40);
    for (int s = 0; s < 4; ++s) {
      problem.spans.push_back(10 * s);
      problem.spans.push_back(10 * s + 9);
    }
    problem.span_offsets.push_back(problem.span_offsets.back() + 4);
  }
  problem.args.total_q = problem.cu_q.back();
  problem.args.total_k = problem.cu_k.back();
  problem.args.max_seqlen_q = 3;
  problem.args.max_seqlen_k = 40;
  EXPECT_NO_THROW(problem.validate());
}

}  // namespace
}  // namespace attnjit

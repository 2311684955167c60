// The CPU reference against hand-computed cases, one per rule of
// docs/semantics.md. Visibility is read off with q = 0 (uniform weights over the
// visible keys) and v_j = e_j, so o is the indicator of the visible set
// divided by its size.
#include "attnjit/reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <set>

namespace attnjit {
namespace {

using Sinks = ReferenceProblem::Sinks;

// One sequence, one head, D = n_k, q = 0, v_j = e_j.
ReferenceProblem visibility_problem(int n_q, int n_k) {
  ReferenceProblem p;
  p.num_seqs = 1;
  p.num_heads_q = p.num_heads_kv = 1;
  p.head_dim = std::max(n_k, 1);
  p.cu_seqlens_q = {0, n_q};
  p.cu_seqlens_k = {0, n_k};
  p.q.assign(size_t(n_q) * p.head_dim, 0.f);
  p.k.assign(size_t(n_k) * p.head_dim, 0.5f);
  p.v.assign(size_t(n_k) * p.head_dim, 0.f);
  for (int j = 0; j < n_k; ++j) p.v[size_t(j) * p.head_dim + j] = 1.f;
  p.scale = 1.0;
  return p;
}

std::set<int> visible_keys(const ReferenceResult& r, int row, int d) {
  std::set<int> keys;
  for (int j = 0; j < d; ++j) {
    if (r.o[size_t(row) * d + j] > 0) keys.insert(j);
  }
  return keys;
}

TEST(Reference, PlainSoftmaxTwoKeys) {
  ReferenceProblem p = visibility_problem(1, 2);
  p.q = {1.f, 0.f};
  p.k = {0.f, 0.f, 1.f, 0.f};  // s = 0, 1
  p.v = {1.f, 0.f, 3.f, 0.f};
  const auto r = reference_attention(p);
  const double e = std::exp(1.0);
  EXPECT_NEAR(r.o[0], (1 + 3 * e) / (1 + e), 1e-12);
  EXPECT_NEAR(r.lse[0], std::log(1 + e), 1e-12);
}

TEST(Reference, NullLogitJoinsTheDenominatorOnly) {
  ReferenceProblem p = visibility_problem(1, 2);
  p.q = {1.f, 0.f};
  p.k = {0.f, 0.f, 1.f, 0.f};
  p.v = {1.f, 0.f, 3.f, 0.f};
  p.sink_mode = Sinks::kNullLogit;
  p.sinks = {0.5f};
  const auto r = reference_attention(p);
  const double e = std::exp(1.0), s = std::exp(0.5);
  EXPECT_NEAR(r.o[0], (1 + 3 * e) / (s + 1 + e), 1e-12);
  EXPECT_NEAR(r.lse[0], std::log(s + 1 + e), 1e-12);
}

TEST(Reference, BiasKey0ShiftsTheFirstKeyOfEachSequence) {
  ReferenceProblem p = visibility_problem(1, 2);
  p.q = {1.f, 0.f};
  p.k = {0.f, 0.f, 1.f, 0.f};
  p.v = {1.f, 0.f, 3.f, 0.f};
  p.sink_mode = Sinks::kBiasKey0;
  p.sinks = {0.5f};
  const auto r = reference_attention(p);
  const double e = std::exp(1.0), s = std::exp(0.5);
  EXPECT_NEAR(r.o[0], (s * 1 + e * 3) / (s + e), 1e-12);
  EXPECT_NEAR(r.lse[0], std::log(s + e), 1e-12);

  // Two sequences: key 0 of the second sequence is batch row 2.
  ReferenceProblem two = visibility_problem(2, 4);
  two.num_seqs = 2;
  two.cu_seqlens_q = {0, 1, 2};
  two.cu_seqlens_k = {0, 2, 4};
  two.sink_mode = Sinks::kBiasKey0;
  two.sinks = {std::log(3.f)};
  const auto r2 = reference_attention(two);
  // Second query: keys 2 and 3 visible, key 2 weighted 3x.
  EXPECT_NEAR(r2.o[1 * 4 + 2], 0.75, 1e-6);
  EXPECT_NEAR(r2.o[1 * 4 + 3], 0.25, 1e-6);
}

TEST(Reference, SinkFormsDiffer) {
  ReferenceProblem p = visibility_problem(1, 2);
  p.q = {1.f, 0.f};
  p.k = {0.f, 0.f, 1.f, 0.f};
  p.v = {1.f, 0.f, 3.f, 0.f};
  p.sinks = {1.f};
  p.sink_mode = Sinks::kNullLogit;
  const double a = reference_attention(p).o[0];
  p.sink_mode = Sinks::kBiasKey0;
  const double b = reference_attention(p).o[0];
  EXPECT_GT(std::abs(a - b), 0.1);
}

TEST(Reference, WindowEdgesAreInclusive) {
  ReferenceProblem p = visibility_problem(6, 6);
  p.window_left = 2;
  p.window_right = 1;
  const auto r = reference_attention(p);
  EXPECT_EQ(visible_keys(r, 3, 6), (std::set<int>{1, 2, 3, 4}));
  EXPECT_EQ(visible_keys(r, 0, 6), (std::set<int>{0, 1}));
  EXPECT_EQ(visible_keys(r, 5, 6), (std::set<int>{3, 4, 5}));
  EXPECT_NEAR(r.o[3 * 6 + 1], 0.25, 1e-12);
}

TEST(Reference, WindowZeroIsTheDiagonal) {
  ReferenceProblem p = visibility_problem(4, 4);
  p.window_left = 0;
  p.window_right = 0;
  const auto r = reference_attention(p);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(visible_keys(r, i, 4), (std::set<int>{i}));
}

TEST(Reference, CausalIsBottomRightAligned) {
  ReferenceProblem p = visibility_problem(2, 4);
  p.causal = true;
  const auto r = reference_attention(p);
  EXPECT_EQ(visible_keys(r, 0, 4), (std::set<int>{0, 1, 2}));
  EXPECT_EQ(visible_keys(r, 1, 4), (std::set<int>{0, 1, 2, 3}));
}

TEST(Reference, SpansAreBidirectionalAndTheirEdgesInclusive) {
  ReferenceProblem p = visibility_problem(6, 6);
  p.causal = true;
  p.mm_prefix = true;
  p.mm_span_offsets = {0, 1};
  p.mm_spans = {2, 4};
  const auto r = reference_attention(p);
  EXPECT_EQ(visible_keys(r, 1, 6), (std::set<int>{0, 1}));
  EXPECT_EQ(visible_keys(r, 2, 6), (std::set<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(visible_keys(r, 4, 6), (std::set<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(visible_keys(r, 5, 6), (std::set<int>{0, 1, 2, 3, 4, 5}));
}

// The clamp bounds a span by the left window alone: with a causal window
// (1, 0), the query at 2 still sees its image's later keys 3 and 4, and
// the query at 4 loses key 2, more than one position back.
TEST(Reference, ClampBoundsSpansByTheLeftWindowOnly) {
  ReferenceProblem p = visibility_problem(6, 6);
  p.causal = true;
  p.window_left = 1;
  p.window_right = 0;
  p.mm_prefix = true;
  p.mm_span_offsets = {0, 1};
  p.mm_spans = {2, 4};
  EXPECT_EQ(visible_keys(reference_attention(p), 2, 6), (std::set<int>{1, 2, 3, 4}));
  EXPECT_EQ(visible_keys(reference_attention(p), 4, 6), (std::set<int>{2, 3, 4}));
  p.mm_clamp = true;
  EXPECT_EQ(visible_keys(reference_attention(p), 2, 6), (std::set<int>{1, 2, 3, 4}));
  EXPECT_EQ(visible_keys(reference_attention(p), 4, 6), (std::set<int>{3, 4}));
  p.window_right = -1;  // (W, -1) is the same
  EXPECT_EQ(visible_keys(reference_attention(p), 2, 6), (std::set<int>{1, 2, 3, 4}));
  EXPECT_EQ(visible_keys(reference_attention(p), 4, 6), (std::set<int>{3, 4}));
}

TEST(Reference, RowsWithNoVisibleKey) {
  ReferenceProblem p = visibility_problem(3, 1);
  p.causal = true;  // p(0) = -2, p(1) = -1: nothing visible
  auto r = reference_attention(p);
  EXPECT_EQ(r.o[0], 0.0);
  EXPECT_TRUE(std::isinf(r.lse[0]) && r.lse[0] < 0);
  EXPECT_EQ(visible_keys(r, 2, 1), (std::set<int>{0}));
  p.sink_mode = Sinks::kNullLogit;
  p.sinks = {0.7f};
  r = reference_attention(p);
  EXPECT_EQ(r.o[0], 0.0);
  EXPECT_NEAR(r.lse[0], 0.7, 1e-7);

  ReferenceProblem empty = visibility_problem(2, 0);
  r = reference_attention(empty);
  EXPECT_EQ(r.o[0], 0.0);
  EXPECT_TRUE(std::isinf(r.lse[1]));
}

TEST(Reference, SoftcapAppliesBeforeTheSinkBias) {
  ReferenceProblem p = visibility_problem(1, 2);
  p.q = {2.f, 0.f};
  p.k = {1.f, 0.f, 0.f, 0.f};  // s = 2, 0
  p.v = {1.f, 0.f, 0.f, 0.f};
  p.softcap = 1.0;
  p.sink_mode = Sinks::kBiasKey0;
  p.sinks = {0.5f};
  const auto r = reference_attention(p);
  const double s0 = std::tanh(2.0) + 0.5;
  EXPECT_NEAR(r.o[0], std::exp(s0) / (std::exp(s0) + 1.0), 1e-12);
}

TEST(Reference, GqaMapsQueryHeadsToKvHeads) {
  ReferenceProblem p;
  p.num_seqs = 1;
  p.num_heads_q = 4;
  p.num_heads_kv = 2;
  p.head_dim = 1;
  p.cu_seqlens_q = {0, 1};
  p.cu_seqlens_k = {0, 1};
  p.q = {1, 1, 1, 1};
  p.k = {1, 1};
  p.v = {10, 20};
  const auto r = reference_attention(p);
  EXPECT_EQ(r.o, (std::vector<double>{10, 10, 20, 20}));
}

TEST(Reference, RelativeErrorFailsOnNaN) {
  EXPECT_TRUE(std::isnan(relative_error({std::nan(""), 1.0}, {1.0, 1.0})));
  EXPECT_NEAR(relative_error({1.1, 0.0}, {1.0, 0.0}), 0.1, 1e-12);
}

}  // namespace
}  // namespace attnjit

namespace attnjit {
namespace {

// Two sequences over a shuffled page pool: pages out of order, one page
// shared by both (prefix caching), the table's unused tail full of ids
// that do not exist. Gathering gives each sequence its keys in position
// order, and the paged problem's result is the contiguous one's.
TEST(PagedReference, GathersKeysInPositionOrderFromSharedShuffledPages) {
  constexpr int kPage = 4, kHkv = 2, kD = 3, kHq = 4;
  PagedKv paged;
  paged.page_size = kPage;
  paged.num_pages = 5;
  paged.max_pages = 4;
  const size_t row = size_t(kHkv) * kD;
  for (int page = 0; page < paged.num_pages; ++page) {
    for (int r = 0; r < kPage; ++r) {
      for (size_t e = 0; e < row; ++e) {
        // Key value encodes (page, row, element); v its negation.
        paged.k_cache.push_back(float(page * 100 + r * 10) + float(e) * 0.01f);
        paged.v_cache.push_back(-paged.k_cache.back());
      }
    }
  }
  // Sequence 0: 6 keys on pages 3, 1. Sequence 1: 9 keys on pages 3, 0, 4
  // (page 3 shared). -7 marks entries that must never be read.
  paged.block_table = {3, 1, -7, -7, 3, 0, 4, -7};
  paged.seqused_k = {6, 9};

  ReferenceProblem p;
  p.num_seqs = 2;
  p.num_heads_q = kHq;
  p.num_heads_kv = kHkv;
  p.head_dim = kD;
  p.cu_seqlens_q = {0, 2, 5};
  p.q.assign(size_t(5) * kHq * kD, 0.25f);
  p.causal = true;
  const ReferenceProblem gathered = gather_paged(p, paged);
  ASSERT_EQ(gathered.cu_seqlens_k, (std::vector<int32_t>{0, 6, 15}));
  const auto key_at = [&](int token, size_t e) { return gathered.k[token * row + e]; };
  EXPECT_FLOAT_EQ(key_at(0, 0), 300.f);         // seq 0, j 0: page 3 row 0
  EXPECT_FLOAT_EQ(key_at(5, 1), 110.01f);       // seq 0, j 5: page 1 row 1
  EXPECT_FLOAT_EQ(key_at(6, 0), 300.f);         // seq 1, j 0: the shared page
  EXPECT_FLOAT_EQ(key_at(6 + 8, 2), 400.02f);   // seq 1, j 8: page 4 row 0
  EXPECT_FLOAT_EQ(gathered.v[(6 + 4) * row], -0.f);  // seq 1, j 4: page 0 row 0
  EXPECT_EQ(gathered.k.size(), size_t(15) * row);
  EXPECT_EQ(reference_attention(gathered).o.size(), size_t(5) * kHq * kD);
}

}  // namespace
}  // namespace attnjit

namespace attnjit {
namespace {

// A spec's expressions in the reference: the mask ANDs with the built-in
// rules (here causal: keys j <= p and j a multiple of 3), and the score
// replaces s after scale (a bias of -j makes later keys weigh less, in a
// closed form).
TEST(Reference, UserMaskAndScore) {
  ReferenceProblem pr = visibility_problem(2, 9);  // positions 7 and 8
  pr.causal = true;
  pr.user_mask = [](int b, int h, int hk, int p, int j, int n_q, int n_k) {
    EXPECT_EQ(b, 0);
    EXPECT_EQ(h, 0);
    EXPECT_EQ(hk, 0);
    EXPECT_EQ(n_q, 2);
    EXPECT_EQ(n_k, 9);
    EXPECT_LE(j, p);  // the built-in rule first
    return j % 3 == 0;
  };
  const ReferenceResult masked = reference_attention(pr);
  EXPECT_EQ(visible_keys(masked, 0, 9), (std::set<int>{0, 3, 6}));
  EXPECT_EQ(visible_keys(masked, 1, 9), (std::set<int>{0, 3, 6}));
  pr.user_mask = nullptr;
  pr.user_score = [](double s, int, int, int, int, int j, int, int) { return s - j; };
  const ReferenceResult scored = reference_attention(pr);
  // Row 0 (p = 7): weights exp(-j) over j = 0..7, normalized.
  double z = 0;
  for (int j = 0; j <= 7; ++j) z += std::exp(-double(j));
  for (int j = 0; j <= 7; ++j) EXPECT_NEAR(scored.o[j], std::exp(-double(j)) / z, 1e-12) << j;
  EXPECT_EQ(scored.o[8], 0.0);
  EXPECT_NEAR(scored.lse[0], std::log(z), 1e-12);
}

}  // namespace
}  // namespace attnjit

namespace attnjit {
namespace {

// Values of their own width (D_v < D, as DeepSeek's 192/128 heads): the
// output is the first D_v columns of the same attention over values padded
// to D with anything, and the LSE does not change; also through a paged
// cache whose V pages are D_v wide.
TEST(Reference, ValuesOfTheirOwnWidthAreTheFirstColumns) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-1.f, 1.f);
  ReferenceProblem wide;
  wide.num_seqs = 2;
  wide.num_heads_q = 4;
  wide.num_heads_kv = 2;
  wide.head_dim = 8;
  wide.cu_seqlens_q = {0, 5, 8};
  wide.cu_seqlens_k = {0, 9, 20};
  wide.causal = true;
  for (auto* t : {&wide.q, &wide.k, &wide.v}) {
    const int rows = t == &wide.q ? 8 * 4 : 20 * 2;
    for (int i = 0; i < rows * 8; ++i) t->push_back(value(rng));
  }
  const int dv = 3;
  ReferenceProblem narrow = wide;
  narrow.head_dim_v = dv;
  narrow.v.clear();
  for (size_t row = 0; row < wide.v.size() / 8; ++row) {
    for (int d = 0; d < dv; ++d) narrow.v.push_back(wide.v[row * 8 + d]);
  }
  const ReferenceResult w = reference_attention(wide);
  const ReferenceResult n = reference_attention(narrow);
  ASSERT_EQ(n.o.size(), w.o.size() / 8 * dv);
  for (size_t row = 0; row < w.o.size() / 8; ++row) {
    for (int d = 0; d < dv; ++d) EXPECT_DOUBLE_EQ(n.o[row * dv + d], w.o[row * 8 + d]);
  }
  EXPECT_EQ(n.lse, w.lse);

  // The same keys and values in pages of 4 tokens, in reverse order.
  PagedKv paged;
  paged.page_size = 4;
  paged.max_pages = 3;
  paged.seqused_k = {9, 11};
  paged.num_pages = 6;
  paged.k_cache.assign(size_t(6) * 4 * 2 * 8, 0.f);
  paged.v_cache.assign(size_t(6) * 4 * 2 * dv, 0.f);
  paged.block_table = {5, 4, 3, 2, 1, 0};
  for (int b = 0; b < 2; ++b) {
    for (int j = 0; j < paged.seqused_k[b]; ++j) {
      const int page = paged.block_table[b * 3 + j / 4];
      const size_t slot = size_t(page) * 4 + j % 4;
      const size_t key = size_t(narrow.cu_seqlens_k[b] + j);
      for (int x = 0; x < 2 * 8; ++x) paged.k_cache[slot * 16 + x] = narrow.k[key * 16 + x];
      for (int x = 0; x < 2 * dv; ++x) {
        paged.v_cache[slot * 2 * dv + x] = narrow.v[key * 2 * dv + x];
      }
    }
  }
  const ReferenceResult p = reference_attention(gather_paged(narrow, paged));
  EXPECT_EQ(p.o, n.o);
  EXPECT_EQ(p.lse, n.lse);
}

}  // namespace
}  // namespace attnjit

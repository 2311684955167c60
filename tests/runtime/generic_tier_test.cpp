// The generic tier's flags and arguments (runtime/src/generic_tier.cpp),
// no GPU: for every flag set, the generic variant is legal, and the CPU
// reference computes the same o (and lse where asked) with the generic
// flags and arguments as with the requested ones, on random varlen batches
// with empty and one-token sequences, random windows, sinks and spans.
// Host vectors stand in for the device memory the arguments point to; the
// reference problem of each side is read through those pointers, so a
// wrong pointer in generic_args() shows as a wrong result.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include "attnjit/attention.h"
#include "attnjit/reference.h"

namespace attnjit {
namespace {

// Every legal combination of the modes, bf16 D16-shaped flags.
std::vector<AttentionFlags> every_mode() {
  std::vector<AttentionFlags> all;
  for (int bits = 0; bits < 64; ++bits) {
    for (SinkMode sinks : {SinkMode::kNone, SinkMode::kNullLogit, SinkMode::kBiasKey0}) {
      AttentionFlags f;
      f.head_dim = 64;
      f.causal = bits & 1;
      f.window = bits & 2;
      f.mm_prefix = bits & 4;
      f.mm_clamp = bits & 8;
      f.softcap = bits & 16;
      f.return_lse = bits & 32;
      f.sinks = sinks;
      if (f.mm_clamp && !(f.mm_prefix && f.window)) continue;
      all.push_back(f);
    }
  }
  return all;
}

TEST(GenericTier, FlagsAreLegalIdempotentAndFew) {
  std::set<std::string> generic;
  for (const AttentionFlags& f : every_mode()) {
    SCOPED_TRACE(f.canonical_text());
    const AttentionFlags g = generic_flags(f);
    EXPECT_NO_THROW(g.to_flag_set());
    EXPECT_TRUE(g.window && g.mm_prefix && g.return_lse);
    EXPECT_NE(g.sinks, SinkMode::kNone);
    EXPECT_EQ(g.softcap, f.softcap);
    EXPECT_FALSE(g.causal);
    EXPECT_EQ(generic_flags(g).canonical_text(), g.canonical_text());
    generic.insert(g.canonical_text());
  }
  // 192 flag sets (less the illegal clamps) answered by 8 variants: sinks
  // null-logit or key-0 bias, soft-cap or not, clamp or not.
  EXPECT_EQ(generic.size(), 8u);
}

// One random problem's runtime side: what AttentionArgs points to.
struct HostProblem {
  int num_seqs = 0, hq = 4, hkv = 2, d = 16;
  std::vector<int32_t> cu_q, cu_k, span_offsets, spans;
  std::vector<float> q, k, v, sinks, lse;
  int window_left = -1, window_right = -1;
};

HostProblem random_problem(std::mt19937_64& rng) {
  HostProblem h;
  h.num_seqs = 1 + int(rng() % 4);
  std::uniform_real_distribution<float> value(-2.f, 2.f);
  h.cu_q = {0};
  h.cu_k = {0};
  h.span_offsets = {0};
  // Storage even when empty: a null pointer means "not passed" here.
  h.spans.reserve(64);
  h.lse.reserve(1);
  for (int b = 0; b < h.num_seqs; ++b) {
    const int n_k = int(rng() % 40);                        // 0: an empty sequence
    const int n_q = n_k == 0 ? 0 : 1 + int(rng() % n_k);    // 1: a decode
    h.cu_q.push_back(h.cu_q.back() + n_q);
    h.cu_k.push_back(h.cu_k.back() + n_k);
    // Sorted, disjoint spans of key positions.
    for (int at = int(rng() % 6); n_k > 0 && at < n_k; at += 2 + int(rng() % 12)) {
      const int end = std::min(n_k - 1, at + int(rng() % 9));
      h.spans.push_back(at);
      h.spans.push_back(end);
      at = end;
    }
    h.span_offsets.push_back(int32_t(h.spans.size() / 2));
  }
  const auto fill = [&](std::vector<float>& x, size_t n) {
    x.resize(n);
    for (float& e : x) e = value(rng);
  };
  fill(h.q, size_t(h.cu_q.back()) * h.hq * h.d);
  fill(h.k, size_t(h.cu_k.back()) * h.hkv * h.d);
  fill(h.v, size_t(h.cu_k.back()) * h.hkv * h.d);
  fill(h.sinks, size_t(h.hq));
  h.lse.assign(size_t(h.hq) * h.cu_q.back(), 0.f);
  const int windows[] = {-1, 0, 1, 3, 7, 20};
  h.window_left = windows[rng() % 6];
  h.window_right = windows[rng() % 6];
  return h;
}

// The args a caller passes for flags f over h (host pointers as device ones).
AttentionArgs args_for(const AttentionFlags& f, HostProblem& h) {
  AttentionArgs a;
  a.q = h.q.data();
  a.k = h.k.data();
  a.v = h.v.data();
  a.cu_seqlens_q = h.cu_q.data();
  a.cu_seqlens_k = h.cu_k.data();
  a.num_seqs = h.num_seqs;
  a.num_heads_q = h.hq;
  a.num_heads_kv = h.hkv;
  a.total_q = h.cu_q.back();
  if (f.window) {
    a.window_left = h.window_left;
    a.window_right = h.window_right;
  }
  if (f.mm_prefix) {
    a.mm_span_offsets = h.span_offsets.data();
    a.mm_spans = h.spans.data();
  }
  if (f.sinks != SinkMode::kNone) a.sinks = h.sinks.data();
  if (f.return_lse) a.lse = h.lse.data();
  if (f.softcap) a.softcap = 1.5f;
  return a;
}

// The reference problem flags f and args a describe, read through a's
// pointers (the span table and sinks by what they point to).
ReferenceProblem reference_of(const AttentionFlags& f, const AttentionArgs& a,
                              const HostProblem& h) {
  ReferenceProblem p;
  p.num_seqs = a.num_seqs;
  p.num_heads_q = a.num_heads_q;
  p.num_heads_kv = a.num_heads_kv;
  p.head_dim = h.d;
  p.cu_seqlens_q.assign(a.cu_seqlens_q, a.cu_seqlens_q + a.num_seqs + 1);
  p.cu_seqlens_k.assign(a.cu_seqlens_k, a.cu_seqlens_k + a.num_seqs + 1);
  p.q = h.q;
  p.k = h.k;
  p.v = h.v;
  p.causal = f.causal;
  if (f.window) {
    p.window_left = a.window_left;
    p.window_right = a.window_right;
  }
  p.mm_prefix = f.mm_prefix;
  p.mm_clamp = f.mm_clamp;
  // A mode the flags turn on needs its pointer (the kernel would read it).
  if ((f.mm_prefix && (a.mm_span_offsets == nullptr || a.mm_spans == nullptr)) ||
      (f.sinks != SinkMode::kNone && a.sinks == nullptr) || (f.return_lse && a.lse == nullptr)) {
    ADD_FAILURE() << "a pointer the flags need is null";
    p.num_seqs = 0;
    p.cu_seqlens_q = p.cu_seqlens_k = {0};
    return p;
  }
  if (f.mm_prefix) {
    p.mm_span_offsets.assign(a.mm_span_offsets, a.mm_span_offsets + a.num_seqs + 1);
    p.mm_spans.assign(a.mm_spans, a.mm_spans + 2 * p.mm_span_offsets.back());
  }
  if (f.sinks != SinkMode::kNone) {
    p.sinks.assign(a.sinks, a.sinks + a.num_heads_q);
    p.sink_mode = f.sinks == SinkMode::kNullLogit ? ReferenceProblem::Sinks::kNullLogit
                                                  : ReferenceProblem::Sinks::kBiasKey0;
  }
  if (f.softcap) p.softcap = a.softcap;
  return p;
}

TEST(GenericTier, ArgumentsComputeTheRequestedAttention) {
  const uint64_t seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (int trial = 0; trial < 6; ++trial) {
    HostProblem h = random_problem(rng);
    // The scratch the runtime would keep on the device.
    const std::vector<int32_t> zeros(size_t(h.num_seqs) + 1, 0);
    const std::vector<float> null_sinks(size_t(h.hq), -std::numeric_limits<float>::infinity());
    std::vector<float> lse_scratch(size_t(h.hq) * h.cu_q.back());
    lse_scratch.reserve(1);
    const GenericScratch scratch{zeros.data(), null_sinks.data(), lse_scratch.data()};
    for (const AttentionFlags& f : every_mode()) {
      SCOPED_TRACE(f.canonical_text() + " window " + std::to_string(h.window_left) + "," +
                   std::to_string(h.window_right));
      const AttentionArgs a = args_for(f, h);
      const AttentionFlags g = generic_flags(f);
      const AttentionArgs ga = generic_args(f, a, scratch);
      // The request's own pointers stay where it gave them.
      EXPECT_EQ(ga.q, a.q);
      EXPECT_EQ(ga.o, a.o);
      if (f.return_lse) EXPECT_EQ(ga.lse, a.lse);
      if (!f.return_lse) EXPECT_EQ(ga.lse, scratch.lse);
      const ReferenceResult want = reference_attention(reference_of(f, a, h));
      const ReferenceResult got = reference_attention(reference_of(g, ga, h));
      ASSERT_EQ(want.o.size(), got.o.size());
      for (size_t i = 0; i < want.o.size(); ++i) {
        ASSERT_NEAR(got.o[i], want.o[i], 1e-12 * (1 + std::abs(want.o[i]))) << "o[" << i << "]";
      }
      for (size_t i = 0; f.return_lse && i < want.lse.size(); ++i) {
        if (std::isinf(want.lse[i])) {
          ASSERT_EQ(got.lse[i], want.lse[i]) << "lse[" << i << "]";
        } else {
          ASSERT_NEAR(got.lse[i], want.lse[i], 1e-12 * (1 + std::abs(want.lse[i])))
              << "lse[" << i << "]";
        }
      }
    }
  }
}

// Causal folds into window_right = 0 under the clamp too: the clamp reads
// the left window alone, so a span's later keys stay visible. The case
// that tells the two readings apart: a causal window (3, 0), the FlashAttention
// convention, over an image of keys 1..4; the query at position 1 sees key
// 2 of its image through the span, and plain causal window attention
// (no spans) differs.
TEST(GenericTier, CausalFoldsIntoTheRightWindowUnderTheClamp) {
  HostProblem h;
  h.num_seqs = 1;
  h.hq = h.hkv = 1;
  h.d = 4;
  h.cu_q = {0, 6};
  h.cu_k = {0, 6};
  h.span_offsets = {0, 1};
  h.spans = {1, 4};  // an image of keys 1..4, seen both ways
  h.q.assign(6 * 4, 0.5f);
  h.k.assign(6 * 4, 0.25f);
  h.v.resize(6 * 4);
  for (size_t i = 0; i < h.v.size(); ++i) h.v[i] = float(i % 7);
  h.window_left = 3;
  h.window_right = 0;
  AttentionFlags f;
  f.head_dim = 64;
  f.causal = f.window = f.mm_prefix = f.mm_clamp = true;
  const AttentionArgs a = args_for(f, h);
  const std::vector<int32_t> zeros(2, 0);
  const std::vector<float> null_sinks(1, -std::numeric_limits<float>::infinity());
  std::vector<float> lse(6);
  const GenericScratch scratch{zeros.data(), null_sinks.data(), lse.data()};
  const AttentionFlags g = generic_flags(f);
  const AttentionArgs ga = generic_args(f, a, scratch);
  EXPECT_FALSE(g.causal);
  EXPECT_EQ(ga.window_right, 0);
  const ReferenceResult want = reference_attention(reference_of(f, a, h));
  const ReferenceResult got = reference_attention(reference_of(g, ga, h));
  EXPECT_LT(relative_error(got.o, want.o), 1e-12);
  AttentionFlags no_spans = f;
  no_spans.mm_prefix = no_spans.mm_clamp = false;
  const ReferenceResult plain = reference_attention(reference_of(no_spans, a, h));
  EXPECT_GT(relative_error(plain.o, want.o), 1e-3);
}

}  // namespace
}  // namespace attnjit

// Tile classification of mask expressions (classify_mask, the algorithm the
// emitted classify() runs): soundness against element-wise evaluation of
// every pair, on random expressions over the whole grammar, random tiles
// (positions near 0 and near the int32 limits) and random scalars and
// tensors; and precision on the masks of issue 14.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <random>

#include <fmt/format.h>

#include "attnjit/expr.h"
#include "support/expr_random.h"

namespace attnjit {
namespace {

using testing::random_context;
using testing::RandomExpr;

constexpr int kHeadsQ = 8;

// Values that do not decrease within each range [cu[i], cu[i + 1]) (runs
// of equal values, small steps, sometimes negative or near the int32 top).
template <class Pick>
std::vector<int32_t> sorted_ints(const std::vector<int32_t>& cu, Pick&& pick) {
  std::vector<int32_t> v(cu.empty() ? 0 : std::size_t(cu.back()));
  for (std::size_t r = 0; r + 1 < cu.size(); ++r) {
    int value = pick(3) == 0 ? INT_MAX - 8 : pick(6) - 3;
    for (int32_t i = cu[r]; i < cu[r + 1]; ++i) {
      if (pick(3) == 0 && value < INT_MAX - 2) value += 1 + pick(2);
      v[std::size_t(i)] = value;
    }
  }
  return v;
}

// An environment for sequence b of a two-sequence batch with random
// lengths, scalars and tensor contents.
ExprEnv random_env(std::mt19937_64& rng) {
  ExprEnv env;
  const auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  env.b = pick(2);
  const int n_q[2] = {pick(40), pick(40)};
  const int n_k[2] = {n_q[0] + pick(20), n_q[1] + pick(20)};
  env.n_q = n_q[env.b];
  env.n_k = n_k[env.b];
  env.cu_seqlens_q = {0, n_q[0], n_q[0] + n_q[1]};
  env.cu_seqlens_k = {0, n_k[0], n_k[0] + n_k[1]};
  env.num_heads_q = kHeadsQ;
  env.num_heads_kv = 1 << pick(4);  // 1, 2, 4, 8
  static const int kChunks[] = {0, 1, 3, 16, 64, -4, INT_MAX, INT_MIN};
  static const int kWindows[] = {-1, 0, 1, 7, 100, INT_MAX, INT_MIN, -5};
  env.scalars = {double(kChunks[pick(8)]), double(kWindows[pick(8)]), 0.5,
                 double(kWindows[pick(8)])};
  env.tensors.resize(8);
  const auto ints = [&](std::size_t n, int range) {
    std::vector<int32_t> v(n);
    for (auto& x : v) x = pick(range) - range / 4;
    if (pick(8) == 0 && n > 0) v[0] = INT_MAX;
    return v;
  };
  env.tensors[0].ints = ints(env.cu_seqlens_k.back(), 4);   // doc
  env.tensors[1].ints = ints(env.cu_seqlens_q.back(), 4);   // qdoc
  env.tensors[2].ints = ints(2, 60);                        // prefix
  env.tensors[3].ints = ints(8, 8);                         // kvt
  env.tensors[4].ints = ints(6, 10);                        // bias
  env.tensors[5].floats.assign(kHeadsQ, 0.25);              // slopes
  env.tensors[6].ints = sorted_ints(env.cu_seqlens_k, pick);  // sdoc
  env.tensors[7].ints = sorted_ints({0, 6}, pick);            // sbias
  return env;
}

ExprTile random_tile(std::mt19937_64& rng, const ExprEnv& env) {
  const auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  const auto range = [&](int& lo, int& hi, int base) {
    lo = base + pick(70) - 10;
    hi = lo + pick(pick(3) == 0 ? 2 : 12);
  };
  ExprTile tile;
  // Mostly ordinary positions, sometimes near the int32 limits, where
  // every operation wraps.
  const int regime = pick(6);
  const int base = regime == 0 ? INT_MAX - 40 : regime == 1 ? INT_MIN + 20 : 0;
  range(tile.p_lo, tile.p_hi, base);
  range(tile.j_lo, tile.j_hi, regime < 2 && pick(2) ? base : 0);
  (void)env;
  tile.h_lo = pick(kHeadsQ);
  tile.h_hi = std::min(kHeadsQ - 1, tile.h_lo + pick(3));
  return tile;
}

// The class each pair of the tile says, by evaluation.
struct Truth {
  bool any_true = false, any_false = false;
};

// visit(env) for every pair of the tile, env's head, kv head and
// positions set to the pair's.
template <class Visit>
void for_each_pair(const ExprTile& tile, ExprEnv& env, Visit&& visit) {
  const int group = env.num_heads_q / env.num_heads_kv;
  for (int h = tile.h_lo; h <= tile.h_hi; ++h) {
    for (long long p = tile.p_lo; p <= tile.p_hi; ++p) {
      for (long long j = tile.j_lo; j <= tile.j_hi; ++j) {
        env.h = h;
        env.hk = h / group;
        env.p = static_cast<int>(p);
        env.j = static_cast<int>(j);
        visit(env);
      }
    }
  }
}

Truth evaluate_tile(const Expr& mask, const ExprTile& tile, ExprEnv env) {
  Truth truth;
  for_each_pair(tile, env, [&](const ExprEnv& e) {
    (evaluate_mask(mask, e) ? truth.any_true : truth.any_false) = true;
  });
  return truth;
}

std::string describe(const ExprTile& t, const ExprEnv& env) {
  return fmt::format("b={} n_q={} n_k={} heads {}/{} chunk={} wl={} tile h[{},{}] p[{},{}] j[{},{}]",
                     env.b, env.n_q, env.n_k, env.num_heads_q, env.num_heads_kv, env.scalars[0],
                     env.scalars[1], t.h_lo, t.h_hi, t.p_lo, t.p_hi, t.j_lo, t.j_hi);
}

TEST(ExprClassify, SoundOnRandomExpressions) {
  const ExprContext ctx = random_context();
  std::mt19937_64 rng(20261201);
  long long tiles = 0, decided = 0;
  for (int trial = 0; trial < 2500; ++trial) {
    RandomExpr gen(rng());
    const std::string text = gen.mask(1 + trial % 5);
    const Expr mask = parse_expr(text, ExprKind::kMask, ctx, "random", 1, 1);
    for (int k = 0; k < 6; ++k) {
      const ExprEnv env = random_env(rng);
      const ExprTile tile = random_tile(rng, env);
      const TileClass c = classify_mask(mask, tile, env);
      const Truth truth = evaluate_tile(mask, tile, env);
      ++tiles;
      if (c != TileClass::kPartial) ++decided;
      if (c == TileClass::kEmpty) {
        ASSERT_FALSE(truth.any_true) << "empty, but a pair is visible: " << text << "\n"
                                     << describe(tile, env);
      }
      if (c == TileClass::kFull) {
        ASSERT_FALSE(truth.any_false) << "full, but a pair is masked: " << text << "\n"
                                      << describe(tile, env);
      }
    }
  }
  std::printf("classified %lld tiles, %lld decided\n", tiles, decided);
  // Not vacuous: most random tiles get a definite class.
  EXPECT_GT(decided * 2, tiles) << decided << " of " << tiles;
}

// Each interval operation alone, on exhaustive small operands and on
// operands at the int32 limits: the result holds every exact result.
TEST(ExprClassify, SoundOperationByOperation) {
  const ExprContext ctx = random_context();
  std::mt19937_64 rng(7);
  const char* ops[] = {"p + j", "p - j", "p * j", "p / j", "p % j", "min(p, j)", "max(p, j)",
                       "abs(p) + 0 * j", "-p + 0 * j"};
  const int bases[] = {0, 0, 0, INT_MAX - 8, INT_MIN, -20, 46000};
  for (const char* op : ops) {
    for (const char* cmp : {" < ", " <= ", " == ", " != ", " > ", " >= "}) {
      for (const char* rhs : {"0", "chunk", "wl", "7"}) {
        const std::string text = std::string("(") + op + ")" + cmp + rhs;
        const Expr mask = parse_expr(text, ExprKind::kMask, ctx, "op", 1, 1);
        for (int k = 0; k < 60; ++k) {
          ExprEnv env = random_env(rng);
          ExprTile tile;
          tile.p_lo = bases[rng() % 7] + int(rng() % 17) - 4;
          tile.p_hi = tile.p_lo + int(rng() % 9);
          tile.j_lo = bases[rng() % 7] + int(rng() % 17) - 4;
          tile.j_hi = tile.j_lo + int(rng() % 9);
          if (tile.p_hi < tile.p_lo || tile.j_hi < tile.j_lo) continue;  // wrapped base
          const TileClass c = classify_mask(mask, tile, env);
          const Truth truth = evaluate_tile(mask, tile, env);
          ASSERT_FALSE(c == TileClass::kEmpty && truth.any_true) << text << " " << describe(tile, env);
          ASSERT_FALSE(c == TileClass::kFull && truth.any_false) << text << " " << describe(tile, env);
        }
      }
    }
  }
}

// --- Precision on issue 14's masks ---------------------------------------------

struct Fixture {
  ExprContext ctx = random_context();
  ExprEnv env;
  Fixture() {
    env.b = 0;
    env.n_q = env.n_k = 1024;
    env.cu_seqlens_q = env.cu_seqlens_k = {0, 1024};
    env.num_heads_q = 8;
    env.num_heads_kv = 2;
    env.scalars = {64, 100, 0.5, 0};
    env.tensors.resize(8);
    env.tensors[0].ints.assign(1024, 0);
    env.tensors[1].ints.assign(1024, 0);
    env.tensors[2].ints = {100};
    env.tensors[3].ints.assign(8, 0);
    env.tensors[4].ints.assign(6, 0);
    env.tensors[5].floats.assign(8, 0);
    env.tensors[6].ints.assign(1024, 0);
    env.tensors[7].ints.assign(6, 0);
  }
  TileClass classify(const std::string& text, int p_lo, int p_hi, int j_lo, int j_hi) {
    const Expr mask = parse_expr(text, ExprKind::kMask, ctx, "t", 1, 1);
    return classify_mask(mask, ExprTile{0, 0, p_lo, p_hi, j_lo, j_hi}, env);
  }
};

TEST(ExprClassify, ChunkedLocalAttention) {
  Fixture f;  // chunk = 64
  const std::string chunked = "p / chunk == j / chunk";
  EXPECT_EQ(f.classify(chunked, 64, 127, 64, 127), TileClass::kFull);
  EXPECT_EQ(f.classify(chunked, 64, 127, 0, 63), TileClass::kEmpty);
  EXPECT_EQ(f.classify(chunked, 64, 127, 128, 191), TileClass::kEmpty);
  EXPECT_EQ(f.classify(chunked, 64, 95, 96, 127), TileClass::kFull);
  EXPECT_EQ(f.classify(chunked, 0, 127, 64, 127), TileClass::kPartial);  // spans two chunks
  // With the causal rule inside the chunk.
  const std::string causal_chunked = "p / chunk == j / chunk and j <= p";
  EXPECT_EQ(f.classify(causal_chunked, 96, 127, 64, 95), TileClass::kFull);
  EXPECT_EQ(f.classify(causal_chunked, 64, 95, 64, 95), TileClass::kPartial);
  EXPECT_EQ(f.classify(causal_chunked, 64, 95, 96, 127), TileClass::kEmpty);
}

TEST(ExprClassify, PrefixLm) {
  Fixture f;  // prefix[0] = 100
  const std::string prefix_lm = "j < prefix[b] or j <= p";
  EXPECT_EQ(f.classify(prefix_lm, 0, 63, 0, 63), TileClass::kFull);      // inside the prefix
  EXPECT_EQ(f.classify(prefix_lm, 0, 63, 64, 99), TileClass::kFull);     // ahead, in the prefix
  EXPECT_EQ(f.classify(prefix_lm, 0, 63, 128, 191), TileClass::kEmpty);  // ahead, after it
  EXPECT_EQ(f.classify(prefix_lm, 256, 319, 128, 191), TileClass::kFull);
  EXPECT_EQ(f.classify(prefix_lm, 128, 191, 128, 191), TileClass::kPartial);  // the diagonal
  EXPECT_EQ(f.classify(prefix_lm, 0, 63, 64, 127), TileClass::kPartial);  // straddles 100
}

TEST(ExprClassify, DocumentMasking) {
  Fixture f;
  const std::string documents = "doc[p] == doc[j] and j <= p";
  // Tensor values over a range of positions are unknown: partial, except
  // where the causal part alone decides.
  EXPECT_EQ(f.classify(documents, 128, 191, 0, 63), TileClass::kPartial);
  EXPECT_EQ(f.classify(documents, 0, 63, 128, 191), TileClass::kEmpty);
  // A single query and key: the elements are read, the class is exact.
  f.env.tensors[0].ints[5] = 1;
  EXPECT_EQ(f.classify(documents, 7, 7, 6, 6), TileClass::kFull);
  EXPECT_EQ(f.classify(documents, 7, 7, 5, 5), TileClass::kEmpty);
}

// Document ids declared sorted (packed documents: ids do not decrease along
// the sequence): a read over a range of positions lies between the ids at
// its ends, so tiles of different documents are empty and tiles inside one
// document full.
TEST(ExprClassify, SortedDocumentMasking) {
  Fixture f;
  std::vector<int32_t>& sdoc = f.env.tensors[6].ints;  // documents [0, 300), [300, 1024)
  for (int j = 0; j < 1024; ++j) sdoc[std::size_t(j)] = j < 300 ? 4 : 9;
  const std::string documents = "sdoc[p] == sdoc[j] and j <= p";
  EXPECT_EQ(f.classify(documents, 384, 447, 0, 63), TileClass::kEmpty);   // other documents
  EXPECT_EQ(f.classify(documents, 384, 447, 320, 383), TileClass::kFull);  // one, below the diagonal
  EXPECT_EQ(f.classify(documents, 128, 191, 0, 63), TileClass::kFull);
  EXPECT_EQ(f.classify(documents, 320, 383, 256, 319), TileClass::kPartial);  // straddles 300
  EXPECT_EQ(f.classify(documents, 384, 447, 384, 447), TileClass::kPartial);  // the diagonal
  // Past the keys (n_k = 1024) a read is 0: the range takes 0 in.
  EXPECT_EQ(f.classify("sdoc[j] >= 4", 0, 0, 960, 1023), TileClass::kFull);
  EXPECT_EQ(f.classify("sdoc[j] >= 4", 0, 0, 960, 1100), TileClass::kPartial);
  EXPECT_EQ(f.classify("sdoc[j] == 0", 0, 0, 1024, 1100), TileClass::kFull);
  // The unsorted tensor with the same values stays unknown.
  f.env.tensors[0].ints = sdoc;
  EXPECT_EQ(f.classify("doc[p] == doc[j] and j <= p", 384, 447, 0, 63), TileClass::kPartial);
  // A sorted table, its size a literal (6): sbias = {1, 1, 2, 3, 5, 8}.
  f.env.tensors[7].ints = {1, 1, 2, 3, 5, 8};
  EXPECT_EQ(f.classify("sbias[p] < 3", 0, 1, 0, 0), TileClass::kFull);
  EXPECT_EQ(f.classify("sbias[p] < 3", 3, 5, 0, 0), TileClass::kEmpty);
  EXPECT_EQ(f.classify("sbias[p] > 0", 3, 9, 0, 0), TileClass::kPartial);  // 6.. read 0
}

TEST(ExprClassify, CausalAndWindowLikeTheBuiltIns) {
  Fixture f;  // wl = 100
  const std::string causal = "j <= p";
  EXPECT_EQ(f.classify(causal, 128, 191, 0, 127), TileClass::kFull);
  EXPECT_EQ(f.classify(causal, 128, 191, 128, 191), TileClass::kPartial);
  EXPECT_EQ(f.classify(causal, 128, 191, 192, 255), TileClass::kEmpty);
  const std::string window = "(wl < 0 or p - j <= wl) and j <= p";
  EXPECT_EQ(f.classify(window, 128, 191, 0, 27), TileClass::kEmpty);  // 128 - 27 > 100
  EXPECT_EQ(f.classify(window, 128, 191, 0, 28), TileClass::kPartial);
  EXPECT_EQ(f.classify(window, 128, 191, 91, 127), TileClass::kFull);  // 191 - 91 <= 100
  EXPECT_EQ(f.classify(window, 128, 191, 90, 127), TileClass::kPartial);
  f.env.scalars[1] = -1;  // unbounded
  EXPECT_EQ(f.classify(window, 128, 191, 0, 27), TileClass::kFull);
  // tests/reference/expr_device_test.cpp compares these with mask.cuh's
  // key ranges and interior tiles exhaustively.
}

TEST(ExprClassify, HeadsAndKvHeads) {
  Fixture f;  // 8 query heads over 2 kv heads: hk = h / 4
  const Expr mask = parse_expr("hk == 1", ExprKind::kMask, f.ctx, "t", 1, 1);
  EXPECT_EQ(classify_mask(mask, ExprTile{4, 7, 0, 9, 0, 9}, f.env), TileClass::kFull);
  EXPECT_EQ(classify_mask(mask, ExprTile{0, 3, 0, 9, 0, 9}, f.env), TileClass::kEmpty);
  EXPECT_EQ(classify_mask(mask, ExprTile{3, 4, 0, 9, 0, 9}, f.env), TileClass::kPartial);
}

// --- Key bounds (expr_bounds.cpp, user_expr.cuh key_bound) -------------------

// A random int expression free of j (no name of the context holds a `j`).
std::string j_free(RandomExpr& gen, int depth) {
  for (;;) {
    std::string text = gen.integer(depth);
    if (text.find('j') == std::string::npos) return text;
  }
}

// A conjunct in one of the bounding forms, over random j-free parts.
std::string bound_form(RandomExpr& gen, std::mt19937_64& rng) {
  const auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  static const char* kCompare[] = {"<", "<=", ">", ">=", "=="};
  const std::string e = j_free(gen, pick(3)), f = j_free(gen, pick(3));
  static const char* kLinear[] = {"j",        "(j + {})",    "({} + j)",   "(j - {})",
                                  "({} - j)", "(j / {})",    "(j / chunk)", "(j / 16)"};
  const std::string x = fmt::format(fmt::runtime(kLinear[pick(8)]), e);
  switch (pick(4)) {
    case 0:
      return "(" + x + " " + kCompare[pick(5)] + " " + f + ")";
    case 1:
      return "(" + f + " " + kCompare[pick(5)] + " " + x + ")";
    case 2:
      return "(abs(" + x + ") " + (pick(2) ? "<" : "<=") + " " + f + ")";
    default:
      return "(" + f + " " + (pick(2) ? ">" : ">=") + " abs(" + x + "))";
  }
}

TEST(ExprKeyBounds, RecognizedForms) {
  const ExprContext ctx = random_context();
  const auto bounds = [&](const char* text) {
    return key_bounds_of(parse_expr(text, ExprKind::kMask, ctx, "t", 1, 1));
  };
  EXPECT_EQ(bounds("abs(p - j) <= wl").bounds.size(), 1u);
  EXPECT_TRUE(bounds("abs(p - j) <= wl").whole_mask);
  EXPECT_EQ(bounds("j <= p and p - j <= wl").bounds.size(), 2u);
  EXPECT_TRUE(bounds("j <= p and p - j <= wl").whole_mask);
  EXPECT_EQ(bounds("doc[p] == doc[j] and j <= p").bounds.size(), 1u);
  EXPECT_FALSE(bounds("doc[p] == doc[j] and j <= p").whole_mask);
  EXPECT_EQ(bounds("wr > abs(j + chunk)").bounds.size(), 1u);
  // Not bounding: a disjunction, a negation, j under division or
  // multiplication, j on both sides, abs() bounded from below, !=.
  EXPECT_EQ(bounds("p / chunk == j / chunk").bounds.size(), 1u);
  EXPECT_TRUE(bounds("p / chunk == j / chunk").whole_mask);
  for (const char* text : {"j < prefix[b] or j <= p", "not (j > p)", "(j + 1) / chunk == p",
                           "2 * j <= p", "j <= j + p", "abs(p - j) > wl", "j != p"}) {
    EXPECT_TRUE(bounds(text).bounds.empty()) << text;
    EXPECT_FALSE(bounds(text).whole_mask) << text;
  }
}

TEST(ExprKeyBounds, TightOnBandsAndCausal) {
  const ExprContext ctx = random_context();
  ExprEnv env;
  env.n_q = env.n_k = 4096;
  env.scalars = {0, 64, 0.5, 7};
  const auto span = [&](const char* text, int p_lo, int p_hi) {
    return key_bounds(parse_expr(text, ExprKind::kMask, ctx, "t", 1, 1),
                      ExprTile{0, 0, p_lo, p_hi, 0, 0}, env);
  };
  KeySpan s = span("abs(p - j) <= wl", 1000, 1063);
  EXPECT_EQ(s.first, 936);
  EXPECT_EQ(s.last, 1127);
  s = span("j <= p and p - j <= wl", 1000, 1063);
  EXPECT_EQ(s.first, 936);
  EXPECT_EQ(s.last, 1063);
  s = span("j <= p", 10, 73);
  EXPECT_EQ(s.first, 0);
  EXPECT_EQ(s.last, 73);
  s = span("abs(p - j) < wl", 4090, 4095);  // clipped to the keys
  EXPECT_EQ(s.first, 4027);
  EXPECT_EQ(s.last, 4095);
  s = span("j > p + wr", 5000, 5001);  // past the last key: nothing visible
  EXPECT_GT(s.first, s.last);
  env.scalars[0] = 64;  // chunk
  s = span("p / chunk == j / chunk", 100, 120);
  EXPECT_EQ(s.first, 64);
  EXPECT_EQ(s.last, 127);
  s = span("p / chunk == j / chunk", 100, 130);
  EXPECT_EQ(s.first, 64);
  EXPECT_EQ(s.last, 191);
  env.scalars[0] = 0;  // no chunk: j / 0 = 0 for every key, no bound
  s = span("p / chunk == j / chunk", 100, 120);
  EXPECT_EQ(s.first, 0);
  EXPECT_EQ(s.last, 4095);
}

// Soundness: every visible pair of a random tile has its key inside the
// bounds, on random bounding conjuncts (with other conjuncts, and inside
// disjunctions that bound nothing), random scalars near the int32 limits
// and positions near them (the forms whose parts could wrap must say
// nothing there).
TEST(ExprKeyBounds, SoundOnRandomForms) {
  const ExprContext ctx = random_context();
  std::mt19937_64 rng(20261202);
  const auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  long long tiles = 0, trimmed = 0, pairs = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    RandomExpr gen(rng());
    std::string text = bound_form(gen, rng);
    for (int k = pick(3); k > 0; --k) text = "(" + text + " and " + bound_form(gen, rng) + ")";
    if (pick(3) == 0) text = "(" + text + " and " + gen.mask(2) + ")";
    if (pick(6) == 0) text = "(" + text + " or " + gen.mask(1) + ")";
    const Expr mask = parse_expr(text, ExprKind::kMask, ctx, "random", 1, 1);
    for (int k = 0; k < 4; ++k) {
      const ExprEnv env = random_env(rng);
      ExprTile tile = random_tile(rng, env);
      const KeySpan span = key_bounds(mask, tile, env);
      ++tiles;
      if (span.first > 0 || span.last < env.n_k - 1) ++trimmed;
      // Every key of the sequence, not the tile's j range.
      tile.j_lo = 0;
      tile.j_hi = env.n_k - 1;
      if (tile.j_hi < 0) continue;
      const int group = env.num_heads_q / env.num_heads_kv;
      ExprEnv e = env;
      for (int h = tile.h_lo; h <= tile.h_hi; ++h) {
        for (long long p = tile.p_lo; p <= tile.p_hi; ++p) {
          for (int j = 0; j < env.n_k; ++j) {
            e.h = h;
            e.hk = h / group;
            e.p = static_cast<int>(p);
            e.j = j;
            ++pairs;
            if (!evaluate_mask(mask, e)) continue;
            ASSERT_TRUE(j >= span.first && j <= span.last)
                << text << "\n"
                << describe(tile, env) << " key " << j << " visible outside [" << span.first
                << ", " << span.last << "]";
          }
        }
      }
    }
  }
  std::printf("%lld tiles, %lld trimmed, %lld pairs\n", tiles, trimmed, pairs);
  EXPECT_GT(trimmed * 4, tiles) << trimmed << " of " << tiles;  // not vacuous
}

// exact_rows: where it is said, the bounds at one query row (one p, one
// head) are exactly that row's visible keys, whatever the args (scalars
// near the int32 limits included) and for every position a chunk's query
// can have (n_k - n_q to n_k - 1); the kernels then fold them into the
// row's key range and test no key against the mask.
// A random mask of the forms whose key bounds are exact for one row
// (ExprKeyBounds::exact_rows): one to three conjuncts X cmp y, y cmp X or
// abs(X) against y, X = j, j - p or p - j, y a variable, scalar or literal.
std::string exact_row_mask(std::mt19937_64& rng) {
  const auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  static const char* kX[] = {"j", "(j - p)", "(p - j)"};
  static const char* kY[] = {"p", "wl", "wr", "chunk", "7", "-3", "n_k", "n_q", "b", "h", "hk"};
  static const char* kCompare[] = {"<", "<=", ">", ">=", "=="};
  const auto form = [&]() -> std::string {
    const std::string x = kX[pick(3)], y = kY[pick(11)];
    switch (pick(4)) {
      case 0: return "(" + x + " " + kCompare[pick(5)] + " " + y + ")";
      case 1: return "(" + y + " " + kCompare[pick(5)] + " " + x + ")";
      case 2: return "(abs(" + x + ") " + (pick(2) ? "<" : "<=") + " " + y + ")";
      default: return "(" + y + " " + (pick(2) ? ">" : ">=") + " abs(" + x + "))";
    }
  };
  std::string text = form();
  for (int k = pick(3); k > 0; --k) text = "(" + text + " and " + form() + ")";
  return text;
}

TEST(ExprKeyBounds, ExactForOneRowWhereSaid) {
  const ExprContext ctx = random_context();
  const auto exact = [&](const std::string& text) {
    return key_bounds_of(parse_expr(text, ExprKind::kMask, ctx, "t", 1, 1)).exact_rows;
  };
  for (const char* text : {"j <= p", "j <= p and p - j <= wl", "abs(p - j) <= wl",
                           "abs(j - p) < wr and j >= 3", "p >= j"}) {
    EXPECT_TRUE(exact(text)) << text;
  }
  // Not: j + p (it may wrap), a divisor, a y that is an expression or a
  // tensor, a conjunct that bounds nothing, a disjunction.
  for (const char* text : {"j + p <= wl", "p / chunk == j / chunk", "j <= p + 1",
                           "j <= doc[p]", "doc[p] == doc[j] and j <= p", "j <= p or j < 3"}) {
    EXPECT_FALSE(exact(text)) << text;
  }
  // hk is one value for a row only where the head counts are known.
  ASSERT_TRUE(ctx.has_head_counts);
  EXPECT_TRUE(exact("j <= hk"));
  ExprContext no_counts = ctx;
  no_counts.has_head_counts = false;
  EXPECT_FALSE(key_bounds_of(parse_expr("j <= hk", ExprKind::kMask, no_counts, "t", 1, 1)).exact_rows);
  std::mt19937_64 rng(20261201);
  const auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  long long rows = 0, narrowed = 0, keys = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    const std::string text = exact_row_mask(rng);
    const Expr mask = parse_expr(text, ExprKind::kMask, ctx, "random", 1, 1);
    const ExprKeyBounds bounds = key_bounds_of(mask);
    ASSERT_TRUE(bounds.exact_rows) << text;
    for (int k = 0; k < 4; ++k) {
      ExprEnv e = random_env(rng);
      if (e.n_q == 0 || e.n_k == 0) continue;
      const int group = e.num_heads_q / e.num_heads_kv;
      e.h = pick(e.num_heads_q);
      e.hk = e.h / group;
      e.p = e.n_k - e.n_q + pick(e.n_q);
      const KeySpan span = key_bounds(mask, ExprTile{e.h, e.h, e.p, e.p, 0, e.n_k - 1}, e);
      ++rows;
      if (span.first > 0 || span.last < e.n_k - 1) ++narrowed;
      // As the kernels apply it: only the sides the bounds narrow, inside
      // the keys [0, n_k - 1].
      const int64_t lo = bounds.below ? span.first : 0;
      const int64_t hi = bounds.above ? span.last : e.n_k - 1;
      for (int j = 0; j < e.n_k; ++j) {
        e.j = j;
        ++keys;
        ASSERT_EQ(j >= lo && j <= hi, evaluate_mask(mask, e))
            << text << "\nrow p " << e.p << " h " << e.h << " n_q " << e.n_q << " n_k " << e.n_k
            << " key " << j << " span [" << span.first << ", " << span.last << "] sides "
            << bounds.below << bounds.above;
      }
    }
  }
  std::printf("%lld rows, %lld narrowed, %lld keys\n", rows, narrowed, keys);
  EXPECT_GT(narrowed * 4, rows) << narrowed << " of " << rows;  // not vacuous
}

// A folded mask's full keys for a query tile (tile_scheduler.cuh
// note_full_keys): the intersection of key_bounds at the four corners of
// the tile's (p, h) box is the intersection of every row's visible keys,
// by brute force over the box's rows (packed GQA boxes: several heads).
TEST(ExprKeyBounds, CornerIntersectionIsEveryRowsKeys) {
  const ExprContext ctx = random_context();
  std::mt19937_64 rng(20261203);
  const auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  long long boxes = 0, nonempty = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    const std::string text = exact_row_mask(rng);
    const Expr mask = parse_expr(text, ExprKind::kMask, ctx, "random", 1, 1);
    for (int k = 0; k < 4; ++k) {
      ExprEnv e = random_env(rng);
      if (e.n_q == 0 || e.n_k == 0) continue;
      const int group = e.num_heads_q / e.num_heads_kv;
      const int p0 = e.n_k - e.n_q + pick(e.n_q);
      const int p1 = std::min(e.n_k - 1, p0 + pick(6));
      const int h0 = pick(e.num_heads_q);
      const int h1 = std::min(e.num_heads_q - 1, h0 + pick(group + 1));
      // The corners, as the kernels take them.
      int64_t lo = 0, hi = e.n_k - 1;
      for (const int p : {p0, p1}) {
        for (const int h : {h0, h1}) {
          e.h = h;
          e.hk = h / group;
          const KeySpan span = key_bounds(mask, ExprTile{h, h, p, p, 0, e.n_k - 1}, e);
          lo = std::max(lo, span.first);
          hi = std::min(hi, span.last);
        }
      }
      // Every row's keys.
      int64_t all_lo = 0, all_hi = e.n_k - 1;
      for (int h = h0; h <= h1; ++h) {
        for (int p = p0; p <= p1; ++p) {
          e.h = h;
          e.hk = h / group;
          e.p = p;
          int64_t first = e.n_k, last = -1;
          for (int j = 0; j < e.n_k; ++j) {
            e.j = j;
            if (evaluate_mask(mask, e)) {
              first = std::min<int64_t>(first, j);
              last = j;
            }
          }
          all_lo = std::max(all_lo, first);
          all_hi = std::min(all_hi, last);
        }
      }
      ++boxes;
      const bool empty = lo > hi, all_empty = all_lo > all_hi;
      ASSERT_EQ(empty, all_empty) << text << " p [" << p0 << ", " << p1 << "] h [" << h0 << ", "
                                  << h1 << "] n_k " << e.n_k;
      if (!empty) {
        ++nonempty;
        ASSERT_EQ(lo, all_lo) << text << " p [" << p0 << ", " << p1 << "] h [" << h0 << ", "
                              << h1 << "] n_k " << e.n_k;
        ASSERT_EQ(hi, all_hi) << text << " p [" << p0 << ", " << p1 << "] h [" << h0 << ", "
                              << h1 << "] n_k " << e.n_k;
      }
    }
  }
  std::printf("%lld boxes, %lld with keys every row sees\n", boxes, nonempty);
  EXPECT_GT(nonempty * 4, boxes) << nonempty << " of " << boxes;  // not vacuous
}

// A float term that is often zero on a tile (expr.h ExprScoreIdentity's
// forms), and sometimes one that never is.
std::string zero_like(RandomExpr& gen, std::mt19937_64& rng, int depth) {
  const int d = depth > 0 ? depth : 1;
  switch (depth <= 0 ? rng() % 4 : rng() % 7) {
    case 0:
      return "0.0";
    case 1:
      return "select(" + gen.mask(d) + ", " + gen.score(d) + ", 0.0)";
    case 2:
      return "select(" + gen.mask(d) + ", 0.0, " + gen.score(d) + ")";
    case 3:
      return "(0.0 * s + " + gen.integer(d) + ")";  // a product: never zero by the analysis
    case 4:
      return "(" + zero_like(gen, rng, depth - 1) + " + " + zero_like(gen, rng, depth - 1) + ")";
    case 5:
      return "(-" + zero_like(gen, rng, depth - 1) + ")";
    default:
      return "(0.0 + " + gen.integer(d) + ")";  // the int promoted
  }
}

// Where score_is_identity says a tile's score is s, every pair of the tile
// gives s back for every s, on random scores of the forms it recognizes.
TEST(ExprScoreIdentity, SoundOnRandomScores) {
  const ExprContext ctx = random_context();
  std::mt19937_64 rng(20261202);
  long long tiles = 0, identities = 0, pairs = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    RandomExpr gen(rng());
    const std::string t = zero_like(gen, rng, 1 + trial % 3);
    const std::string t2 = zero_like(gen, rng, trial % 2);
    // Sums of s and the terms in several groupings, and sums where s comes
    // with a minus sign or twice (never the identity).
    const std::string forms[] = {"s + " + t,           t + " + s",
                                 "s - " + t,           "s + " + t + " - " + t2,
                                 t + " - (0.0 - s)",   "(" + t + " + s) + " + t2,
                                 t + " - s",           "s + " + t + " + s"};
    const std::string text = forms[trial % 8];
    const Expr score = parse_expr(text, ExprKind::kScore, ctx, "random", 1, 1);
    for (int k = 0; k < 6; ++k) {
      ExprEnv env = random_env(rng);
      const ExprTile tile = random_tile(rng, env);
      ++tiles;
      if (!score_is_identity(score, tile, env)) continue;
      ++identities;
      bool moved = false;
      for_each_pair(tile, env, [&](ExprEnv& e) {
        for (const double s_value : {0.75, -3.5, 0.0, 1e30}) {
          e.s = s_value;
          ++pairs;
          if (moved || evaluate_score(score, e) == s_value) continue;
          moved = true;
          ADD_FAILURE() << "identity, but the score moves: " << text << "\n" << describe(tile, e)
                        << " at h " << e.h << " p " << e.p << " j " << e.j << " s " << s_value;
        }
      });
      ASSERT_FALSE(moved);
    }
  }
  std::printf("%lld tiles, %lld identities, %lld pairs checked\n", tiles, identities, pairs);
  EXPECT_GT(identities * 5, tiles) << identities << " of " << tiles;  // not vacuous
}

TEST(ExprScoreIdentity, KeyZeroBiasSkipsAllButTheFirstTile) {
  const ExprContext ctx = random_context();
  const Expr bias = parse_expr("s + select(j == 0, slopes[h], 0.0)", ExprKind::kScore, ctx,
                               "bias", 1, 1);
  ASSERT_TRUE(score_identity_of(bias).possible());
  std::mt19937_64 rng(3);
  const ExprEnv env = random_env(rng);
  EXPECT_FALSE(score_is_identity(bias, ExprTile{0, 3, 100, 227, 0, 63}, env));
  EXPECT_TRUE(score_is_identity(bias, ExprTile{0, 3, 100, 227, 64, 127}, env));
  EXPECT_TRUE(score_is_identity(bias, ExprTile{0, 3, 100, 227, 1, 1}, env));
  // The same with the sides swapped and an int promoted (min(j, 0) is the
  // point 0 on keys >= 0; the analysis is not relational, so p - p would
  // not be), in any grouping of the sum.
  const Expr swapped = parse_expr("select(j != 0, 0.0, slopes[h]) + s - (0.0 + min(j, 0))",
                                  ExprKind::kScore, ctx, "swapped", 1, 1);
  EXPECT_TRUE(score_is_identity(swapped, ExprTile{0, 3, 100, 227, 64, 127}, env));
  EXPECT_FALSE(score_is_identity(swapped, ExprTile{0, 3, 100, 227, 0, 127}, env));
  for (const char* text : {"slopes[h] * 0.0 - s", "s + s", "0.0 - s"}) {  // s negated or twice
    const Expr e = parse_expr(text, ExprKind::kScore, ctx, "minus", 1, 1);
    EXPECT_FALSE(score_identity_of(e).possible()) << text;
  }
  const Expr promoted =
      parse_expr("s + (select(j != 0, 0.0, slopes[h]) + (0.0 + min(j, 0)))", ExprKind::kScore, ctx,
                 "promoted", 1, 1);
  EXPECT_TRUE(score_is_identity(promoted, ExprTile{0, 3, 100, 227, 64, 127}, env));
  EXPECT_FALSE(score_is_identity(promoted, ExprTile{0, 3, 100, 227, 0, 127}, env));
  // Scores that change every pair have no identity tiles.
  for (const char* text : {"s - slopes[h] * (p - j)", "s * 0.5", "tanh(s)", "s + 0.0 * s"}) {
    const Expr e = parse_expr(text, ExprKind::kScore, ctx, "other", 1, 1);
    EXPECT_FALSE(score_identity_of(e).possible()) << text;
  }
}

}  // namespace
}  // namespace attnjit

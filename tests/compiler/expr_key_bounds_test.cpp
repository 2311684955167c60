// Key bounds of mask expressions (expr_bounds.cpp key_bounds_of,
// user_expr.cuh key_bound, the emitted key_bounds()): the forms recognized,
// tightness on bands and causal masks, soundness on random forms, exactness
// for one query row where said (the folded masks), and the corner
// intersection a query tile takes for its full keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <random>
#include <string>

#include "attnjit/expr.h"
#include "support/expr_random.h"
#include "support/expr_tiles.h"

namespace attnjit {
namespace {

// random_context, RandomExpr (expr_random.h); random_env, random_tile,
// for_each_pair, describe (expr_tiles.h).
using namespace testing;  // attnjit::testing

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
  const auto expect_keys = [&](const char* text, int p_lo, int p_hi, int first, int last) {
    const KeySpan s = span(text, p_lo, p_hi);
    EXPECT_EQ(s.first, first) << text;
    EXPECT_EQ(s.last, last) << text;
  };
  expect_keys("abs(p - j) <= wl", 1000, 1063, 936, 1127);
  expect_keys("j <= p and p - j <= wl", 1000, 1063, 936, 1063);
  expect_keys("j <= p", 10, 73, 0, 73);
  expect_keys("abs(p - j) < wl", 4090, 4095, 4027, 4095);  // clipped to the keys
  const KeySpan past = span("j > p + wr", 5000, 5001);     // past the last key: nothing visible
  EXPECT_GT(past.first, past.last);
  env.scalars[0] = 64;  // chunk
  expect_keys("p / chunk == j / chunk", 100, 120, 64, 127);
  expect_keys("p / chunk == j / chunk", 100, 130, 64, 191);
  env.scalars[0] = 0;  // no chunk: j / 0 = 0 for every key, no bound
  expect_keys("p / chunk == j / chunk", 100, 120, 0, 4095);
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

// exact_rows: where it is said, the bounds at one query row (one p, one
// head) are exactly that row's visible keys, whatever the args (scalars
// near the int32 limits included) and for every position a chunk's query
// can have (n_k - n_q to n_k - 1); the kernels then fold them into the
// row's key range and test no key against the mask.
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

}  // namespace
}  // namespace attnjit

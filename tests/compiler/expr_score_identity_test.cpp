// Key tiles where a score is the identity (expr.h ExprScoreIdentity,
// score_is_identity, the emitted score_identity()): soundness on random
// scores of the recognized forms, every pair of every identity tile
// checked, and precision on a bias on key 0.
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

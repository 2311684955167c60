// Tile classification of mask expressions (classify_mask, the algorithm the
// emitted classify() runs): soundness against element-wise evaluation of
// every pair, on random expressions over the whole grammar, random tiles
// (positions near 0 and near the int32 limits) and random scalars and
// tensors; and precision on the masks of issue 14. The key bounds and the
// score identity have tests of their own (expr_key_bounds_test.cpp,
// expr_score_identity_test.cpp).
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

// The class each pair of the tile says, by evaluation.
struct Truth {
  bool any_true = false, any_false = false;
};

Truth evaluate_tile(const Expr& mask, const ExprTile& tile, ExprEnv env) {
  Truth truth;
  for_each_pair(tile, env, [&](const ExprEnv& e) {
    (evaluate_mask(mask, e) ? truth.any_true : truth.any_false) = true;
  });
  return truth;
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

}  // namespace
}  // namespace attnjit

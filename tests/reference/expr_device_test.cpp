// Code emitted from spec expressions (emit_user_struct), compiled for the
// host with templates/attention/user_expr.cuh: its mask(), score(),
// classify(), key_bounds() and score_identity() agree with the host
// evaluator, classifier, key bounds and score_is_identity (the CPU
// reference's semantics) on random problems; division by a runtime arg's
// multiplier is floored division; and classification of the causal and
// sliding-window rules written as expressions matches
// templates/attention/mask.cuh's built-ins tile for tile (the same key
// tiles visited, the same interior tiles). The expression VM against the
// same code: expr_vm_device_test.cpp.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "expr_device_support.h"

namespace attnjit {
namespace {

using namespace expr_device;  // NOLINT: the shared test support

// Division by a runtime divisor through the runtime's multiplier
// (common/int_divisor.cuh, also the packed GQA rows' quotient) equals the
// floored division it replaces, in both forms (any divisor; one known
// positive): every divisor of magnitude up to 4096 and powers of two and
// their neighbours up to INT_MAX, of both signs, and INT_MIN, against
// numerators at the ends of int32, around multiples of the divisor and at
// random.
TEST(ExprDevice, DivisionByAMultiplierIsFlooredDivision) {
  std::vector<int> divisors;
  for (int d = -4096; d <= 4096; ++d) divisors.push_back(d);
  for (int k = 12; k <= 31; ++k) {
    const long long p = 1ll << k;
    for (long long d : {p - 1, p, p + 1, p / 3 * 2 + 1}) {
      if (d <= INT_MAX) divisors.push_back(int(d));
      if (-d >= INT_MIN) divisors.push_back(int(-d));
    }
  }
  divisors.push_back(INT_MIN);
  divisors.push_back(-INT_MAX);
  std::mt19937_64 rng(5);
  long long checked = 0;
  for (const int d : divisors) {
    const long long magic = expr::divisor_magic(d);
    std::vector<int> numerators = {0, 1, -1, INT_MAX, INT_MIN, INT_MAX - 1, INT_MIN + 1};
    for (int i = 0; i < 24; ++i) numerators.push_back(int(uint32_t(rng())));
    if (d != 0) {
      for (const long long q : {1ll, 2ll, 7ll, 1000ll, -1ll, -2ll, -1000ll, INT_MAX / (long long)d,
                                INT_MIN / (long long)d}) {
        for (int e = -1; e <= 1; ++e) {
          const long long a = q * d + e;
          if (a >= INT_MIN && a <= INT_MAX) numerators.push_back(int(a));
        }
      }
    }
    for (const int a : numerators) {
      ASSERT_EQ(expr::div_by(a, d, magic), expr::div(a, d)) << a << " / " << d;
      ASSERT_EQ(expr::mod_by(a, d, magic), expr::mod(a, d)) << a << " % " << d;
      if (d > 0) {  // the kernels' copy for positive divisors
        ASSERT_EQ(expr::div_by<true>(a, d, magic), expr::div(a, d)) << a << " / " << d;
        ASSERT_EQ(expr::mod_by<true>(a, d, magic), expr::mod(a, d)) << a << " % " << d;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 100000);
}

TEST(ExprDevice, EmittedCodeAgreesWithTheHostEvaluator) {
  const ExprContext ctx = testing::random_context();
  std::mt19937_64 rng(99);
  long long pairs = 0, tiles = 0, bounded = 0, identities = 0, positive_pairs = 0, folded = 0;
  expr_cases::for_each_case<Params>([&](int index, auto user) {
    using User = decltype(user);
    static_assert(User::has_mask && User::has_score, "every case has both");
    const auto& c = expr_cases::kCases[index];
    const Expr mask = parse_expr(c.mask, ExprKind::kMask, ctx, "case", 1, 1);
    const Expr score = parse_expr(c.score, ExprKind::kScore, ctx, "case", 1, 1);
    for (int trial = 0; trial < 24; ++trial) {
      Problem problem(rng);
      ExprEnv env = problem.env;
      const int group = env.num_heads_q / env.num_heads_kv;
      const int p_lo = int(rng() % 50) - 10, p_hi = p_lo + int(rng() % 8);
      const int j_lo = int(rng() % 50) - 10, j_hi = j_lo + int(rng() % 8);
      const int h_lo = int(rng() % 8), h_hi = std::min(7, h_lo + int(rng() % 3));
      // mask() and score() run where a score exists: a sequence with keys
      // and queries (their token reads clamp into those).
      const bool scores = env.n_q >= 1 && env.n_k >= 1;
      for (int h = h_lo; scores && h <= h_hi; ++h) {
        for (int p = p_lo; p <= p_hi; ++p) {
          for (int j = j_lo; j <= j_hi; ++j) {
            env.h = h;
            env.hk = h / group;
            env.p = p;
            env.j = j;
            env.s = double(int(rng() % 17) - 8) * 0.375;
            // The row values as the kernels compute them: once per row.
            const auto row = User::row(problem.prm, env.b, h, env.hk, p, env.n_q, env.n_k);
            // The column values as the kernels compute them: stepped from
            // the first column (j_lo), here by ones.
            const auto cols = cols_at<User, false>(problem.prm, j_lo, j);
            const bool visible = evaluate_mask(mask, env);
            ASSERT_EQ((mask_of<User, false>(problem.prm, row, cols, env.b, h, env.hk, p, j,
                                            env.n_q, env.n_k)),
                      visible)
                << c.mask << " p=" << p << " j=" << j << " h=" << h;
            // Where the kernels fold the row-exact conjuncts into the row's
            // key range: inside it the rest of the mask, outside nothing,
            // for every key of the sequence and every row position a
            // sequence has (p in [n_k - n_q, n_k - 1]).
            if constexpr (User::has_row_key_bounds) {
              if (j >= 0 && j < env.n_k && p >= env.n_k - env.n_q && p < env.n_k) {
                long long first = 0, last = env.n_k - 1;
                User::row_key_bounds(problem.prm, env.b, h, env.hk, p, env.n_q, env.n_k, first,
                                     last);
                const bool rest = mask_rest_of<User, false>(problem.prm, row, cols, env.b, h,
                                                            env.hk, p, j, env.n_q, env.n_k);
                ASSERT_EQ(first <= j && j <= last && rest, visible)
                    << c.mask << " p=" << p << " j=" << j << " h=" << h << " (folded)";
                ++folded;
              }
            }
            const double want = evaluate_score(score, env);
            const float got = score_of<User, false>(problem.prm, row, cols, float(env.s), env.b,
                                                    h, env.hk, p, j, env.n_q, env.n_k);
            ASSERT_TRUE(close(want, got)) << c.score << ": " << want << " vs " << got;
            if (User::divisors_positive(problem.prm)) {
              const auto pcols = cols_at<User, true>(problem.prm, j_lo, j);
              ASSERT_EQ((mask_of<User, true>(problem.prm, row, pcols, env.b, h, env.hk, p, j,
                                             env.n_q, env.n_k)),
                        visible)
                  << c.mask << " p=" << p << " j=" << j << " h=" << h << " (positive divisors)";
              const float positive = score_of<User, true>(problem.prm, row, pcols, float(env.s),
                                                          env.b, h, env.hk, p, j, env.n_q,
                                                          env.n_k);
              ASSERT_TRUE(close(want, positive)) << c.score << " (positive divisors)";
              if (User::has_divisors) ++positive_pairs;
            }
            ++pairs;
          }
        }
      }
      const int emitted = User::classify(problem.prm, env.b, h_lo, h_hi, p_lo, p_hi, j_lo, j_hi,
                                         env.n_q, env.n_k);
      const TileClass host = classify_mask(mask, ExprTile{h_lo, h_hi, p_lo, p_hi, j_lo, j_hi}, env);
      ASSERT_EQ(emitted, int(host)) << c.mask;
      const KeySpan span = key_bounds(mask, ExprTile{h_lo, h_hi, p_lo, p_hi, 0, 0}, env);
      if constexpr (User::has_key_bounds) {
        long long first = 0, last = env.n_k - 1;
        User::key_bounds(problem.prm, env.b, h_lo, h_hi, p_lo, p_hi, env.n_q, env.n_k, first,
                         last);
        ASSERT_EQ(first, span.first) << c.mask;
        ASSERT_EQ(last, span.last) << c.mask;
        ++bounded;
      } else {
        ASSERT_EQ(span.first, 0) << c.mask;
        ASSERT_EQ(span.last, env.n_k - 1) << c.mask;
      }
      const ExprTile tile{h_lo, h_hi, p_lo, p_hi, j_lo, j_hi};
      if constexpr (User::has_score && User::has_score_identity) {
        const bool emitted_identity = User::score_identity(problem.prm, env.b, h_lo, h_hi, p_lo,
                                                           p_hi, j_lo, j_hi, env.n_q, env.n_k);
        ASSERT_EQ(emitted_identity, score_is_identity(score, tile, env)) << c.score;
        identities += emitted_identity;
      } else {
        ASSERT_FALSE(score_identity_of(score).possible()) << c.score;
        ASSERT_FALSE(score_is_identity(score, tile, env)) << c.score;
      }
      ++tiles;
    }
  });
  std::printf("%lld pairs %lld tiles (%lld with key bounds, %lld where the score is s), %lld "
              "pairs of folded row bounds\n",
              pairs, tiles, bounded, identities, folded);
  EXPECT_GT(identities, 24);  // the three identity cases' tiles away from their keys
  EXPECT_GT(pairs, 10000);
  EXPECT_GT(positive_pairs, 1000);  // the cases that divide, in their positive copy
  EXPECT_GT(tiles, 400);
  EXPECT_GE(bounded, 5 * 24);  // the five bound cases at least
  EXPECT_GT(folded, 200);      // the cases with row-exact conjuncts beside other terms
}

template <bool kCausal, bool kWindow>
struct MaskConfig {
  static constexpr bool causal = kCausal;
  static constexpr bool window = kWindow;
  static constexpr bool mm_prefix = false;
  static constexpr bool mm_clamp = false;
};

// The built-in rule as an expression; emitted code and host classifier
// agree (above), so the host classifier stands for both.
template <bool kCausal, bool kWindow>
void check_like_builtin(const std::string& text, uint64_t seed) {
  using Mask = attention::Mask<MaskConfig<kCausal, kWindow>>;
  const Expr expr = parse_expr(text, ExprKind::kMask, testing::random_context(), "t", 1, 1);
  std::mt19937_64 rng(seed);
  const int windows[] = {-1, 0, 1, 3, 7, 64, 127, 1000, INT_MAX};
  long long compared = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int n_k = 1 + int(rng() % 300);
    const int wl = kWindow ? windows[rng() % 9] : -1;
    const int wr = kWindow ? windows[rng() % 9] : -1;
    const Mask mask{n_k, wl, wr, nullptr, 0};
    ExprEnv env;
    env.n_k = n_k;
    env.n_q = n_k;
    env.scalars = {0, double(wl), 0.5, double(wr)};
    for (int block_n : {16, 32, 64, 128}) {
      for (int block_m : {1, 16, 64, 128}) {
        const int p0 = int(rng() % unsigned(n_k + 20)) - 10;
        const int p1 = p0 + block_m - 1;
        const attention::KeyRange range = mask.key_range(p0, p1, block_n);
        for (int t = 0; t * block_n < n_k; ++t) {
          const int j0 = t * block_n;
          const int j1 = std::min(j0 + block_n - 1, n_k - 1);  // keys past n_k are invalid
          const TileClass c = classify_mask(expr, ExprTile{0, 0, p0, p1, j0, j1}, env);
          const bool visited = t >= range.first_tile && t <= range.last_tile;
          const std::string what = fmt::format("{} n_k={} window=({}, {}) p=[{}, {}] tile {}x{}",
                                               text, n_k, wl, wr, p0, p1, t, block_n);
          ASSERT_EQ(c != TileClass::kEmpty, visited) << what;
          if (j0 + block_n - 1 < n_k) {  // a whole tile: interior() applies
            ASSERT_EQ(c == TileClass::kFull, mask.interior(p0, p1, j0, block_n)) << what;
          }
          ++compared;
        }
      }
    }
  }
  EXPECT_GT(compared, 1000);
}

TEST(ExprDevice, CausalAndWindowClassifyLikeMaskCuh) {
  const std::string window = "(wl < 0 or p - j <= wl) and (wr < 0 or j - p <= wr)";
  check_like_builtin<true, false>("j <= p", 1);
  check_like_builtin<false, true>(window, 2);
  check_like_builtin<true, true>(window + " and j <= p", 3);
}

}  // namespace
}  // namespace attnjit

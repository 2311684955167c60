// Random problems and tiles for the expression analyses' property tests
// (expr_classify_test.cpp, expr_key_bounds_test.cpp,
// expr_score_identity_test.cpp): an environment of a two-sequence batch
// with random lengths, scalars and tensors (random_context()'s args), a
// random tile of it, every pair of a tile, and a tile's description for
// failure messages.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "attnjit/expr.h"

namespace attnjit::testing {

inline constexpr int kHeadsQ = 8;  // query heads of random_env's batches

// Values that do not decrease within each range [cu[i], cu[i + 1]) (runs
// of equal values, small steps, sometimes negative or near the int32 top).
template <class Pick>
inline std::vector<int32_t> sorted_ints(const std::vector<int32_t>& cu, Pick&& pick) {
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
inline ExprEnv random_env(std::mt19937_64& rng) {
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

inline ExprTile random_tile(std::mt19937_64& rng, const ExprEnv& env) {
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

// visit(env) for every pair of the tile, env's head, kv head and
// positions set to the pair's.
template <class Visit>
inline void for_each_pair(const ExprTile& tile, ExprEnv& env, Visit&& visit) {
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

inline std::string describe(const ExprTile& t, const ExprEnv& env) {
  return fmt::format("b={} n_q={} n_k={} heads {}/{} chunk={} wl={} tile h[{},{}] p[{},{}] j[{},{}]",
                     env.b, env.n_q, env.n_k, env.num_heads_q, env.num_heads_kv, env.scalars[0],
                     env.scalars[1], t.h_lo, t.h_hi, t.p_lo, t.p_hi, t.j_lo, t.j_hi);
}

}  // namespace attnjit::testing

// What the tests of emitted expression code share (expr_device_test.cpp:
// the emitted code against the host evaluator; expr_vm_device_test.cpp: the
// expression VM against the emitted code): the templates and the generated
// cases compiled for the host, the params the cases read, random problems,
// and the emitted functions called in each of their forms.
#pragma once

#include <climits>
#include <cmath>
#include <map>
#include <random>
#include <type_traits>
#include <vector>

#include "attnjit/expr.h"
#include "support/expr_random.h"

// clang-format off
#include "host_device.h"
#include "attention/mask.cuh"
#include "attention/user_expr.cuh"
#include "attention/user_vm.cuh"
#include "expr_cases.h"
#include "host_device_end.h"
// clang-format on

namespace attnjit::expr_device {

// The fields the emitted code reads (random_context()), as a generated
// params struct would hold them.
struct Params {
  int chunk, wl;
  float temp;
  int wr;
  const int* doc;
  const int* qdoc;
  const int* prefix;
  const int* kvt;
  const int* bias;
  const float* slopes;
  const int* cu_seqlens_q;
  const int* cu_seqlens_k;
  int num_heads_q, num_heads_kv;
  const int* sdoc;   // sorted
  const int* sbias;  // sorted
  // The runtime's multipliers for division by chunk, wl, wr (hidden fields).
  long long attnjit_div_chunk, attnjit_div_wl, attnjit_div_wr;
};

struct Problem {
  ExprEnv env;
  std::vector<int> doc, qdoc, prefix, kvt, bias, sdoc, sbias, cu_q, cu_k;
  std::vector<float> slopes;
  Params prm{};

  explicit Problem(std::mt19937_64& rng) {
    const auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
    const int n_q[2] = {pick(30), pick(30)};
    const int n_k[2] = {n_q[0] + pick(20), n_q[1] + pick(20)};
    cu_q = {0, n_q[0], n_q[0] + n_q[1]};
    cu_k = {0, n_k[0], n_k[0] + n_k[1]};
    const auto fill = [&](std::vector<int>& v, std::size_t n, int range) {
      v.resize(n);
      for (int& x : v) x = pick(range) - range / 4;
    };
    fill(doc, std::size_t(cu_k[2]), 4);
    fill(qdoc, std::size_t(cu_q[2]), 4);
    fill(prefix, 2, 40);
    fill(kvt, 8, 8);
    fill(bias, 6, 10);
    // Non-decreasing within each sequence (sdoc) and over the table (sbias).
    const auto fill_sorted = [&](std::vector<int>& v, const std::vector<int>& cu) {
      v.resize(std::size_t(cu.back()));
      for (std::size_t r = 0; r + 1 < cu.size(); ++r) {
        int value = pick(6) - 3;
        for (int i = cu[r]; i < cu[r + 1]; ++i) v[std::size_t(i)] = value += pick(3) == 0;
      }
    };
    fill_sorted(sdoc, cu_k);
    fill_sorted(sbias, {0, 6});
    slopes.resize(8);
    for (float& x : slopes) x = 0.125f * float(pick(8));
    static const int kChunks[] = {0, 1, 3, 16, -4, INT_MAX};
    static const int kWindows[] = {-1, 0, 1, 7, 100, INT_MAX};
    prm = Params{kChunks[pick(6)], kWindows[pick(6)], 0.5f, kWindows[pick(6)], doc.data(),
                 qdoc.data(), prefix.data(), kvt.data(), bias.data(), slopes.data(),
                 cu_q.data(), cu_k.data(), 8, 1 << pick(4), sdoc.data(), sbias.data()};
    prm.attnjit_div_chunk = expr::divisor_magic(prm.chunk);
    prm.attnjit_div_wl = expr::divisor_magic(prm.wl);
    prm.attnjit_div_wr = expr::divisor_magic(prm.wr);
    env.b = pick(2);
    env.n_q = n_q[env.b];
    env.n_k = n_k[env.b];
    env.cu_seqlens_q = cu_q;
    env.cu_seqlens_k = cu_k;
    env.num_heads_q = prm.num_heads_q;
    env.num_heads_kv = prm.num_heads_kv;
    env.scalars = {double(prm.chunk), double(prm.wl), double(prm.temp), double(prm.wr)};
    env.tensors.resize(8);
    env.tensors[0].ints.assign(doc.begin(), doc.end());
    env.tensors[1].ints.assign(qdoc.begin(), qdoc.end());
    env.tensors[2].ints.assign(prefix.begin(), prefix.end());
    env.tensors[3].ints.assign(kvt.begin(), kvt.end());
    env.tensors[4].ints.assign(bias.begin(), bias.end());
    env.tensors[5].floats.assign(slopes.begin(), slopes.end());
    env.tensors[6].ints.assign(sdoc.begin(), sdoc.end());
    env.tensors[7].ints.assign(sbias.begin(), sbias.end());
  }
};

// The emitted mask and score at one element, in the copy that takes every
// runtime divisor as positive (kPositive, which the kernels call only when
// divisors_positive() holds) or in the general one.
// A struct with column values (`j % d`, expr_columns.cpp) takes them too:
// cols_at() computes key j's as the kernels do, from column j0's (col())
// stepped by col_next(): eight keys at a time (col_step(8)), then by ones.
template <class User, class = void>
struct HasCols {
  static constexpr bool value = false;
};
template <class User>
struct HasCols<User, std::void_t<typename User::col_values>> {
  static constexpr bool value = true;
};
struct NoCols {};
template <class User, bool kPositive, class P>
auto cols_at(const P& prm, int j0, int j) {
  if constexpr (HasCols<User>::value) {
    auto c = User::template col<kPositive>(prm, j0);
    const auto eight = User::template col_step<kPositive>(prm, 8);
    const auto one = User::template col_step<kPositive>(prm, 1);
    int k = j0;
    for (; k + 8 <= j; k += 8) c = User::col_next(prm, c, eight);
    for (; k < j; ++k) c = User::col_next(prm, c, one);
    return c;
  } else {
    return NoCols{};
  }
}
template <class User, bool kPositive, class P, class R, class C, class... A>
bool mask_of(const P& prm, const R& row, const C& cols, const A&... a) {
  if constexpr (HasCols<User>::value) {
    return User::template mask<kPositive>(prm, row, cols, a...);
  } else if constexpr (User::has_divisors) {
    return User::template mask<kPositive>(prm, row, a...);
  } else {
    return User::mask(prm, row, a...);
  }
}
// The rest of the mask (without the conjuncts folded into the row's key
// range) where the struct has one, in the same forms.
template <class User, bool kPositive, class P, class R, class C, class... A>
bool mask_rest_of(const P& prm, const R& row, const C& cols, const A&... a) {
  if constexpr (HasCols<User>::value) {
    return User::template mask_rest<kPositive>(prm, row, cols, a...);
  } else if constexpr (User::has_divisors) {
    return User::template mask_rest<kPositive>(prm, row, a...);
  } else {
    return User::mask_rest(prm, row, a...);
  }
}
template <class User, bool kPositive, class P, class R, class C, class... A>
float score_of(const P& prm, const R& row, const C& cols, float s, const A&... a) {
  if constexpr (HasCols<User>::value) {
    return User::template score<kPositive>(prm, row, cols, s, a...);
  } else if constexpr (User::has_divisors) {
    return User::template score<kPositive>(prm, row, s, a...);
  } else {
    return User::score(prm, row, s, a...);
  }
}

inline bool close(double host, float device) {
  if (std::isnan(host) || std::isnan(device)) return std::isnan(host) == std::isnan(device);
  if (std::isinf(host) || std::isinf(device)) {
    return std::isinf(device) || std::fabs(host) > 1e38;  // fp32 overflows first
  }
  return std::fabs(host - double(device)) <= 1e-4 * (1 + std::fabs(host));
}

}  // namespace attnjit::expr_device

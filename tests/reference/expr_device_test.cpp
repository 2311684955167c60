// Code emitted from spec expressions (emit_user_struct), compiled for the
// host with templates/attention/user_expr.cuh: its mask(), score(),
// classify(), key_bounds() and score_identity() agree with the host
// evaluator, classifier, key bounds and score_is_identity (the CPU
// reference's semantics) on random problems; the expression VM
// (user_vm.cuh, compile_vm) computes what the emitted code computes, bit
// for bit; and classification of the
// causal and sliding-window rules written as expressions matches
// templates/attention/mask.cuh's built-ins tile for tile (the same key
// tiles visited, the same interior tiles).
#include <gtest/gtest.h>

#include <climits>
#include <cstdio>
#include <cmath>
#include <map>
#include <random>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

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

namespace attnjit {
namespace {

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

bool close(double host, float device) {
  if (std::isnan(host) || std::isnan(device)) return std::isnan(host) == std::isnan(device);
  if (std::isinf(host) || std::isinf(device)) {
    return std::isinf(device) || std::fabs(host) > 1e38;  // fp32 overflows first
  }
  return std::fabs(host - double(device)) <= 1e-4 * (1 + std::fabs(host));
}

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

// The VM's inputs for a problem: random_context()'s args in the slots
// compile_vm gave them.
struct VmProblem {
  int ints[vm::kIntSlots] = {};
  float floats[vm::kFloatSlots] = {};
  const void* tensors[vm::kTensorSlots] = {};

  VmProblem(const VmSlots& slots, const Params& prm) {
    const std::map<std::string, int> int_args = {
        {"chunk", prm.chunk}, {"wl", prm.wl}, {"wr", prm.wr}};
    const std::map<std::string, const void*> tensor_args = {
        {"doc", prm.doc},   {"qdoc", prm.qdoc},     {"prefix", prm.prefix}, {"kvt", prm.kvt},
        {"bias", prm.bias}, {"slopes", prm.slopes}, {"sdoc", prm.sdoc},     {"sbias", prm.sbias}};
    for (std::size_t i = 0; i < slots.ints.size(); ++i) ints[i] = int_args.at(slots.ints[i]);
    for (std::size_t i = 0; i < slots.floats.size(); ++i) floats[i] = prm.temp;  // the one float
    for (std::size_t i = 0; i < slots.tensors.size(); ++i) {
      tensors[i] = tensor_args.at(slots.tensors[i]);
    }
  }
  vm::Inputs inputs(const ExprEnv& env, const Params& prm) const {
    return vm::Inputs{env.b, env.h, env.hk, env.p, env.j, env.n_q, env.n_k, float(env.s),
                      ints, floats, tensors, prm.cu_seqlens_q, prm.cu_seqlens_k,
                      prm.num_heads_q, prm.num_heads_kv};
  }
};

bool same_float(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || vm::as_bits(a) == vm::as_bits(b);
}

// Slots in order of first use, shared by the programs of one VmSlots; a
// table sized by an arg gives it a slot.
TEST(ExprVm, SlotsAreGivenInOrderOfFirstUse) {
  const ExprContext ctx = testing::random_context();
  const Expr mask = parse_expr("p - j <= wr and chunk < 3 and temp > 0.5 and doc[j] == sbias[1]",
                               ExprKind::kMask, ctx, "t", 1, 1);
  const Expr score = parse_expr("s + slopes[h] * wl + wr", ExprKind::kScore, ctx, "t", 1, 1);
  VmSlots slots;
  VmProgram m, sc;
  ASSERT_TRUE(compile_vm(mask, slots, m));
  EXPECT_EQ(slots.ints, (std::vector<std::string>{"wr", "chunk"}));
  EXPECT_EQ(slots.floats, (std::vector<std::string>{"temp"}));
  EXPECT_EQ(slots.tensors, (std::vector<std::string>{"doc", "sbias"}));
  ASSERT_TRUE(compile_vm(score, slots, sc));
  EXPECT_EQ(slots.ints, (std::vector<std::string>{"wr", "chunk", "wl"}));
  EXPECT_EQ(slots.tensors, (std::vector<std::string>{"doc", "sbias", "slopes"}));
  EXPECT_EQ(m.count, int(mask.nodes.size()));
  EXPECT_EQ(m.code.size(), 2 * mask.nodes.size());
  EXPECT_EQ(m.result, mask.root);
  ExprContext sized = ctx;
  sized.tensors.push_back({"tab", ExprType::kInt, TensorDomain::kTable, 0, "chunk"});
  VmSlots table_slots;
  ASSERT_TRUE(compile_vm(parse_expr("tab[j] > 0", ExprKind::kMask, sized, "t", 1, 1),
                         table_slots, m));
  EXPECT_EQ(table_slots.ints, (std::vector<std::string>{"chunk"}));
}

// Every case of the emitted code (the fixed list and the random ones over
// the whole grammar): the VM's mask and score equal the emitted mask() and
// score() on random problems and elements, floats to the bit.
TEST(ExprVm, RunsWhatTheEmittedCodeComputes) {
  const ExprContext ctx = testing::random_context();
  std::mt19937_64 rng(7);
  long long elements = 0;
  expr_cases::for_each_case<Params>([&](int index, auto user) {
    using User = decltype(user);
    const auto& c = expr_cases::kCases[index];
    const Expr mask = parse_expr(c.mask, ExprKind::kMask, ctx, "case", 1, 1);
    const Expr score = parse_expr(c.score, ExprKind::kScore, ctx, "case", 1, 1);
    VmProgram mask_vm, score_vm;
    VmSlots vm_slots;
    std::string why;
    ASSERT_TRUE(compile_vm(mask, vm_slots, mask_vm, &why)) << c.mask << ": " << why;
    ASSERT_TRUE(compile_vm(score, vm_slots, score_vm, &why)) << c.score << ": " << why;
    for (int trial = 0; trial < 12; ++trial) {
      Problem problem(rng);
      const VmProblem slots(vm_slots, problem.prm);
      ExprEnv env = problem.env;
      const int group = env.num_heads_q / env.num_heads_kv;
      const bool scores = env.n_q >= 1 && env.n_k >= 1;  // (as above)
      for (int e = 0; scores && e < 64; ++e) {
        env.h = int(rng() % 8);
        env.hk = env.h / group;
        env.p = int(rng() % 60) - 10;
        env.j = int(rng() % 60) - 10;
        env.s = double(int(rng() % 33) - 16) * 0.375;
        const vm::Inputs in = slots.inputs(env, problem.prm);
        const auto row = User::row(problem.prm, env.b, env.h, env.hk, env.p, env.n_q, env.n_k);
        const auto cols = cols_at<User, false>(problem.prm, env.j, env.j);
        ASSERT_EQ(vm::run_mask(mask_vm.code.data(), mask_vm.count, mask_vm.result, in),
                  (mask_of<User, false>(problem.prm, row, cols, env.b, env.h, env.hk, env.p,
                                        env.j, env.n_q, env.n_k)))
            << c.mask << " p=" << env.p << " j=" << env.j << " h=" << env.h;
        const float want = score_of<User, false>(problem.prm, row, cols, float(env.s), env.b,
                                                 env.h, env.hk, env.p, env.j, env.n_q, env.n_k);
        const float got = vm::run_score(score_vm.code.data(), score_vm.count, score_vm.result, in);
        ASSERT_TRUE(same_float(want, got)) << c.score << ": " << want << " vs " << got;
        ++elements;
      }
    }
  });
  std::printf("%lld elements\n", elements);
  EXPECT_GT(elements, 20000);
}

// Each operation on edge values, against the host evaluator: int results
// exactly (the VM's register of the int subtree), comparisons with ties
// and NaN, and a table sized by an int32 arg read through that arg's slot.
TEST(ExprVm, EveryOperationOnEdgeValues) {
  ExprContext ctx;
  ctx.scalars = {{"x", ExprType::kInt}, {"n", ExprType::kInt}, {"f", ExprType::kFloat},
                 {"y", ExprType::kInt}};
  ctx.tensors = {{"tab", ExprType::kInt, TensorDomain::kTable, 0, "n"}};
  const int tab[] = {10, 11, 12, 13, 14, 15, 16, 17};
  const void* tensors[vm::kTensorSlots] = {tab};
  const int ints_values[] = {INT_MIN, INT_MIN + 1, -7, -2, -1, 0, 1, 2, 3, 7, INT_MAX};
  const float float_values[] = {-2.f, 0.f, 0.5f, 1.f, NAN, INFINITY, -INFINITY};
  const char* int_ops[] = {"x + y", "x - y", "x * y", "x / y", "x % y", "min(x, y)",
                           "max(x, y)", "-x", "abs(x)", "select(x < y, x, y)"};
  const char* masks[] = {"x < y", "x <= y", "x > y", "x >= y", "x == y", "x != y",
                         "f < 0.5", "f <= 0.5", "f > 0.5", "f >= 0.5", "f == 0.5", "f != 0.5",
                         "(x < y) == (y < x)", "(x < y) != (f < 0.5)", "x < y and f < 0.5",
                         "x < y or f < 0.5", "not (x < y)", "tab[x] == y", "tab[y] > 12"};
  long long checked = 0;
  for (const int x : ints_values) {
    for (const int y : ints_values) {
      for (const float f : float_values) {
        const int n = 3;  // tab's size: reads at 3.. and below 0 give 0
        const std::map<std::string, int> int_args = {{"x", x}, {"n", n}, {"y", y}};
        ExprEnv env;
        env.scalars = {double(x), double(n), double(f), double(y)};
        env.tensors.resize(1);
        env.tensors[0].ints.assign(std::begin(tab), std::end(tab));
        // The inputs for the slots compile_vm gave (x, n, y in any order; f).
        const auto inputs = [&](const VmSlots& slots, int* ints, float* floats) {
          for (std::size_t i = 0; i < slots.ints.size(); ++i) ints[i] = int_args.at(slots.ints[i]);
          floats[0] = f;
          return vm::Inputs{0, 0, 0, 0, 0, 0, 0, 0.f, ints, floats, tensors, nullptr, nullptr,
                            1, 1};
        };
        int ints[vm::kIntSlots] = {};
        float floats[vm::kFloatSlots] = {};
        for (const char* text : int_ops) {
          const Expr m = parse_expr(std::string("(") + text + ") == 0", ExprKind::kMask, ctx, "t",
                                    1, 1);
          Expr sub = m;
          sub.root = m.nodes[std::size_t(m.root)].kids[0];
          VmProgram program;
          VmSlots slots;
          ASSERT_TRUE(compile_vm(m, slots, program));
          const vm::Inputs in = inputs(slots, ints, floats);
          ASSERT_EQ(vm::run(program.code.data(), program.count, sub.root, in), evaluate(sub, env).i)
              << text << " x=" << x << " y=" << y;
          ++checked;
        }
        for (const char* text : masks) {
          const Expr m = parse_expr(text, ExprKind::kMask, ctx, "t", 1, 1);
          VmProgram program;
          VmSlots slots;
          ASSERT_TRUE(compile_vm(m, slots, program));
          const vm::Inputs in = inputs(slots, ints, floats);
          ASSERT_EQ(vm::run_mask(program.code.data(), program.count, program.result, in),
                    evaluate_mask(m, env))
              << text << " x=" << x << " y=" << y << " f=" << f;
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 20000);
}

// The VM variant's params as its generated struct holds them (the fields
// params_mask / params_score read).
struct VmParams {
  const int* cu_seqlens_q;
  const int* cu_seqlens_k;
  int num_heads_q, num_heads_kv;
  const int* vm_mask_code;
  int vm_mask_count, vm_mask_result;
  const int* vm_score_code;
  int vm_score_count, vm_score_result;
  int vm_i0, vm_i1, vm_i2, vm_i3, vm_i4, vm_i5, vm_i6, vm_i7;
  float vm_f0, vm_f1, vm_f2, vm_f3, vm_f4, vm_f5, vm_f6, vm_f7;
  const int *vm_t0, *vm_t1, *vm_t2, *vm_t3, *vm_t4, *vm_t5, *vm_t6, *vm_t7;
};

// Slot k is field vm_ik / vm_fk / vm_tk, the programs come from their
// fields, and count 0 means no mask (all visible) and no score (s).
TEST(ExprVm, ParamsFieldsAreTheSlots) {
  ExprContext ctx;
  for (int i = 0; i < vm::kIntSlots; ++i) ctx.scalars.push_back({"i" + std::to_string(i)});
  for (int i = 0; i < vm::kFloatSlots; ++i) {
    ctx.scalars.push_back({"f" + std::to_string(i), ExprType::kFloat});
  }
  for (int i = 0; i < vm::kTensorSlots; ++i) {
    ctx.tensors.push_back({"t" + std::to_string(i), ExprType::kInt, TensorDomain::kTable, 4, ""});
  }
  std::string mask_text = "i0 == 0", tensor_text = "t0[1] == 0", score_text = "s + f0";
  for (int i = 1; i < 8; ++i) {
    mask_text += fmt::format(" and i{} == {}", i, 10 * i);
    tensor_text += fmt::format(" and t{}[1] == {}", i, 100 * i);
    score_text += fmt::format(" + f{}", i);
  }
  const Expr mask = parse_expr(mask_text, ExprKind::kMask, ctx, "t", 1, 1);
  const Expr tensor_mask = parse_expr(tensor_text, ExprKind::kMask, ctx, "t", 1, 1);
  const Expr score = parse_expr(score_text, ExprKind::kScore, ctx, "t", 1, 1);
  VmProgram m, tm, sc;
  VmSlots mask_slots, tensor_slots, score_slots;  // each in order: i0.., t0.., f0..
  ASSERT_TRUE(compile_vm(mask, mask_slots, m));
  ASSERT_TRUE(compile_vm(tensor_mask, tensor_slots, tm));
  ASSERT_TRUE(compile_vm(score, score_slots, sc));
  ASSERT_EQ(mask_slots.ints.back(), "i7");
  ASSERT_EQ(tensor_slots.tensors.back(), "t7");
  ASSERT_EQ(score_slots.floats.back(), "f7");
  std::vector<int> code_t(tm.code.begin(), tm.code.end());
  std::vector<std::vector<int>> tabs(8);
  for (int i = 0; i < 8; ++i) tabs[std::size_t(i)] = {0, 100 * i, 0, 0};
  std::vector<int> code_m(m.code.begin(), m.code.end()), code_s(sc.code.begin(), sc.code.end());
  VmParams prm{nullptr, nullptr, 1, 1, code_m.data(), m.count, m.result, code_s.data(), sc.count,
               sc.result, 0, 10, 20, 30, 40, 50, 60, 70, 1, 2, 4, 8, 16, 32, 64, 128,
               tabs[0].data(), tabs[1].data(), tabs[2].data(), tabs[3].data(), tabs[4].data(),
               tabs[5].data(), tabs[6].data(), tabs[7].data()};
  EXPECT_TRUE(vm::params_mask(prm, 0, 0, 0, 0, 0, 1, 1));
  EXPECT_EQ(vm::params_score(prm, 0.5f, 0, 0, 0, 0, 0, 1, 1), 255.5f);
  prm.vm_i7 = 71;  // the last int slot's field
  EXPECT_FALSE(vm::params_mask(prm, 0, 0, 0, 0, 0, 1, 1));
  prm.vm_i7 = 70;
  VmParams tensors = prm;
  tensors.vm_mask_code = code_t.data();
  tensors.vm_mask_count = tm.count;
  tensors.vm_mask_result = tm.result;
  EXPECT_TRUE(vm::params_mask(tensors, 0, 0, 0, 0, 0, 1, 1));
  tabs[7][1] = 7;  // the last tensor slot's field
  EXPECT_FALSE(vm::params_mask(tensors, 0, 0, 0, 0, 0, 1, 1));
  prm.vm_mask_count = 0;
  prm.vm_score_count = 0;
  EXPECT_TRUE(vm::params_mask(prm, 0, 0, 0, 0, 0, 1, 1));
  EXPECT_EQ(vm::params_score(prm, 0.5f, 0, 0, 0, 0, 0, 1, 1), 0.5f);
}

// What does not fit is refused with the reason, not truncated.
TEST(ExprVm, RefusesWhatExceedsItsLimits) {
  const ExprContext ctx = testing::random_context();
  std::string text = "p";
  for (int i = 0; i < 40; ++i) text = "(" + text + " + j)";
  const Expr big = parse_expr(text + " >= 0", ExprKind::kMask, ctx, "t", 1, 1);
  VmProgram program;
  VmSlots slots;
  std::string why;
  EXPECT_FALSE(compile_vm(big, slots, program, &why));
  EXPECT_NE(why.find("nodes"), std::string::npos) << why;
  ExprContext many = ctx;
  std::string sum = "extra0";
  for (int i = 0; i <= vm::kIntSlots; ++i) {
    many.scalars.push_back({"extra" + std::to_string(i)});
    if (i > 0) sum = "(" + sum + " + extra" + std::to_string(i) + ")";
  }
  // Args that are declared but not read take no slot.
  EXPECT_TRUE(compile_vm(parse_expr("p >= extra7", ExprKind::kMask, many, "t", 1, 1), slots,
                         program));
  VmSlots fresh;
  EXPECT_FALSE(compile_vm(parse_expr(sum + " > 0", ExprKind::kMask, many, "t", 1, 1), fresh,
                          program, &why));
  EXPECT_NE(why.find("int32"), std::string::npos) << why;
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

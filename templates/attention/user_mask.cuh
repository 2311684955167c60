// A spec's own `mask` and `score` expressions (docs/expressions.md) in the
// kernels: the generated `struct attnjit_user` (Config::user) supplies
// mask(), score() and classify(); variants without expressions see
// expr::no_user and compile none of this. The mask is ANDed with key
// validity and the built-in causal / window / span rules; the score runs
// where the soft-cap runs, on the natural-log score after scale and cap.
#pragma once

#include "attention/params.cuh"
#include "attention/user_expr.cuh"

namespace attnjit {
namespace attention {

template <class C>
using UserOf = typename expr::user_of<C>::type;

template <class C>
__host__ __device__ constexpr bool user_mask() {
  return UserOf<C>::has_mask;
}
template <class C>
__host__ __device__ constexpr bool user_score() {
  return UserOf<C>::has_score;
}
// The spec's score is s itself on some key tiles, which skip it
// (UserOf<C>::score_identity, WorkTile::score_tile).
template <class C>
__host__ __device__ constexpr bool user_score_identity() {
  if constexpr (user_score<C>()) {
    return UserOf<C>::has_score_identity;
  } else {
    return false;
  }
}
// The spec's mask is folded into each row's key range (row_setup) instead
// of tested per key: its bounds are the whole mask and exact for one row
// (ExprKeyBounds::exact_rows), and no span rule ORs keys outside that
// range back in (the mask ANDs the spans too).
template <class C>
__host__ __device__ constexpr bool user_mask_in_row_keys() {
  return user_mask<C>() && UserOf<C>::key_bounds_exact_rows && !C::mm_prefix;
}
// The spec's mask tested per key, less its top-level conjuncts that bound
// j exactly for one row: those are folded into each row's key range
// (UserOf<C>::row_key_bounds, row_setup) and the keys test mask_rest(). Not
// with multimodal spans, which OR keys outside that range back in.
template <class C>
__host__ __device__ constexpr bool user_row_keys_folded() {
  if constexpr (user_mask<C>() && !user_mask_in_row_keys<C>()) {
    return UserOf<C>::has_row_key_bounds && !C::mm_prefix;
  } else {
    return false;
  }
}
// Whether a row carries its expressions' view (UserRow): a score, or a
// mask tested per key.
template <class C>
__host__ __device__ constexpr bool user_row_values() {
  return (user_mask<C>() && !user_mask_in_row_keys<C>()) || user_score<C>();
}

// Whether the spec's per-element code divides by runtime args (it is then a
// template of whether they are all positive, tested once per tile:
// UserOf<C>::divisors_positive).
template <class C>
__host__ __device__ constexpr bool user_divides() {
  return UserOf<C>::has_divisors;
}

// What a row's expressions read besides the key position j: its position
// and head, and the row values of the generated struct (the parts of the
// expressions that do not depend on j or s, computed once per row).
template <class User>
struct UserRow {
  int b, h, hk, p, n_q, n_k;
  typename User::row_values r;

  template <class P>
  __device__ __forceinline__ static UserRow make(const P& prm, int b, int h, int hk, int p,
                                                 int n_q, int n_k) {
    return UserRow{b, h, hk, p, n_q, n_k, User::row(prm, b, h, hk, p, n_q, n_k)};
  }
};
struct NoUserRow {};
template <class C, bool kUser>
struct UserRowPick {
  using type = UserRow<UserOf<C>>;
};
template <class C>
struct UserRowPick<C, false> {
  using type = NoUserRow;
};
template <class C>
using UserRowOf = typename UserRowPick<C, user_row_values<C>()>::type;

// Column values (the generated struct's col_values, when it has them):
// its `j % d` at each key column of a thread's fragment in a key tile,
// read by both of the thread's rows (user_columns).
struct NoUserCols {};
template <class User, class = void>
struct UserColsPick {
  __host__ __device__ static constexpr bool has() { return false; }
  using type = NoUserCols;
};
template <class User>
struct UserColsPick<User, typename expr::void_of<typename User::col_values>::type> {
  __host__ __device__ static constexpr bool has() { return true; }
  using type = typename User::col_values;
};
template <class C>
__host__ __device__ constexpr bool user_col_values() {
  return UserColsPick<UserOf<C>>::has();
}
template <class C>
using UserColsOf = typename UserColsPick<UserOf<C>>::type;

// The column values at a thread's key columns of one key tile: cols[n][i]
// at key first + n * kStepN + i * kStepI (to_logits_as). The first by
// division (col), each next from a neighbour (col_next: an add and a min
// per `j % d`), with the steps' residues computed once (col_step).
template <class C, bool kPositive, int kStepN, int kStepI, int kBlocks, class P>
__device__ __forceinline__ void user_columns(const P& prm, int first,
                                             UserColsOf<C> (&cols)[kBlocks][2]) {
  if constexpr (user_col_values<C>()) {
    using User = UserOf<C>;
    ATTNJIT_EXPR_ASSUME(first >= 0);
    const auto step_n = User::template col_step<kPositive>(prm, kStepN);
    const auto step_i = User::template col_step<kPositive>(prm, kStepI);
#pragma unroll
    for (int n = 0; n < kBlocks; ++n) {
      cols[n][0] = n == 0 ? User::template col<kPositive>(prm, first)
                          : User::col_next(prm, cols[n - 1][0], step_n);
      cols[n][1] = User::col_next(prm, cols[n][0], step_i);
    }
  }
}

// The spec's mask and score at key j of a row (u: the row's UserRow; c:
// key j's column values, when the struct has them); kPositive: every
// runtime divisor is positive at this launch.
// A key position is never negative (a visited tile's keys), which spares
// the expressions' sign cases of j (a quotient's, a clamped read's).
template <class C, bool kPositive, class P, class Row, class Col>
__device__ __forceinline__ bool user_mask_at(const P& prm, const Row& u, const Col& c, int j) {
  ATTNJIT_EXPR_ASSUME(j >= 0);
  using User = UserOf<C>;
  if constexpr (user_row_keys_folded<C>()) {
    if constexpr (user_col_values<C>()) {
      return User::template mask_rest<kPositive>(prm, u.r, c, u.b, u.h, u.hk, u.p, j, u.n_q,
                                                 u.n_k);
    } else if constexpr (user_divides<C>()) {
      return User::template mask_rest<kPositive>(prm, u.r, u.b, u.h, u.hk, u.p, j, u.n_q, u.n_k);
    } else {
      return User::mask_rest(prm, u.r, u.b, u.h, u.hk, u.p, j, u.n_q, u.n_k);
    }
  } else if constexpr (user_col_values<C>()) {
    return User::template mask<kPositive>(prm, u.r, c, u.b, u.h, u.hk, u.p, j, u.n_q, u.n_k);
  } else if constexpr (user_divides<C>()) {
    return User::template mask<kPositive>(prm, u.r, u.b, u.h, u.hk, u.p, j, u.n_q, u.n_k);
  } else {
    return User::mask(prm, u.r, u.b, u.h, u.hk, u.p, j, u.n_q, u.n_k);
  }
}
template <class C, bool kPositive, class P, class Row, class Col>
__device__ __forceinline__ float user_score_at(const P& prm, const Row& u, const Col& c, float s,
                                               int j) {
  ATTNJIT_EXPR_ASSUME(j >= 0);
  using User = UserOf<C>;
  if constexpr (user_col_values<C>()) {
    return User::template score<kPositive>(prm, u.r, c, s, u.b, u.h, u.hk, u.p, j, u.n_q, u.n_k);
  } else if constexpr (user_divides<C>()) {
    return User::template score<kPositive>(prm, u.r, s, u.b, u.h, u.hk, u.p, j, u.n_q, u.n_k);
  } else {
    return User::score(prm, u.r, s, u.b, u.h, u.hk, u.p, j, u.n_q, u.n_k);
  }
}

}  // namespace attention
}  // namespace attnjit

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

// What a row's expressions read besides the key position j.
struct UserRow {
  int b, h, hk, p, n_q, n_k;
};
struct NoUserRow {};
template <bool kUser>
struct UserRowPick {
  using type = UserRow;
};
template <>
struct UserRowPick<false> {
  using type = NoUserRow;
};
template <class C>
using UserRowOf = typename UserRowPick<user_mask<C>() || user_score<C>()>::type;

}  // namespace attention
}  // namespace attnjit

// The functions that code generated from a spec's `mask` and `score`
// expressions calls (docs/expressions.md): int32 arithmetic with defined
// results for every input, bounds-checked reads of the expression tensors,
// and the interval arithmetic of tile classification. Plain C++17 on
// purpose: NVRTC compiles it into a variant's unit (the generated unit
// includes it only when the spec has an expression), the compiler's host
// evaluator and classifier (compiler/src/expr_eval.cpp) call the same
// functions, and the host tests compile it through tests/reference/
// host_device.h. It includes no CUDA toolkit header.
#pragma once

#include "common/int_divisor.cuh"

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define ATTNJIT_EXPR_FN __device__ __forceinline__
#define ATTNJIT_EXPR_COLD __device__ __noinline__
#define ATTNJIT_EXPR_ASSUME(x) __builtin_assume(x)
#else
#define ATTNJIT_EXPR_COLD inline
#include <cmath>
#define ATTNJIT_EXPR_FN inline
#define ATTNJIT_EXPR_ASSUME(x) ((void)0)
#endif

namespace attnjit {
namespace expr {

constexpr int kIntMin = -2147483647 - 1;
constexpr int kIntMax = 2147483647;

// ---------------------------------------------------------------------------
// int32: two's-complement wrap-around; `/` and `%` floored; x / 0 = 0,
// x % 0 = x (so INT_MIN / -1 = INT_MIN and INT_MIN % -1 = 0).

ATTNJIT_EXPR_FN int wrap(unsigned x) { return static_cast<int>(x); }
ATTNJIT_EXPR_FN int add(int a, int b) {
  return wrap(static_cast<unsigned>(a) + static_cast<unsigned>(b));
}
ATTNJIT_EXPR_FN int sub(int a, int b) {
  return wrap(static_cast<unsigned>(a) - static_cast<unsigned>(b));
}
ATTNJIT_EXPR_FN int mul(int a, int b) {
  return wrap(static_cast<unsigned>(a) * static_cast<unsigned>(b));
}
ATTNJIT_EXPR_FN int neg(int a) { return wrap(0u - static_cast<unsigned>(a)); }
ATTNJIT_EXPR_FN int iabs(int a) { return a < 0 ? neg(a) : a; }
ATTNJIT_EXPR_FN int imin(int a, int b) { return a < b ? a : b; }
ATTNJIT_EXPR_FN int imax(int a, int b) { return a < b ? b : a; }
ATTNJIT_EXPR_FN int div(int a, int b) {
  if (b == 0) return 0;
  if (b == -1) return neg(a);
  int q = a / b;
  if (q * b != a && ((a < 0) != (b < 0))) --q;
  return q;
}
ATTNJIT_EXPR_FN int mod(int a, int b) {
  if (b == 0) return a;
  if (b == -1) return 0;
  int r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// Division by a runtime int32 arg d (a chunk size, a stride) without the
// hardware-less division routine: the runtime computes `magic` once per
// launch (divisor_magic, common/int_divisor.cuh) into a hidden params
// field, and each quotient is a multiply, two shifts and two XORs (a
// negative a divides as ~(~a / d), floored). d <= 0 (magic 0) takes div()
// and mod(), compiled once (a chunk size is positive; the branch is not
// taken). kPositive: the caller knows d > 0 (divisors_positive() of the
// generated struct, tested once per tile), so the quotient has no branch.
using ::attnjit::divisor_magic;
ATTNJIT_EXPR_COLD int div_cold(int a, int d) { return div(a, d); }
ATTNJIT_EXPR_COLD int mod_cold(int a, int d) { return mod(a, d); }
template <bool kPositive = false>
ATTNJIT_EXPR_FN int div_by(int a, int d, long long magic) {
  if constexpr (!kPositive) {
    if (d <= 0) return div_cold(a, d);
  }
  const unsigned sign = static_cast<unsigned>(a >> 31);  // all ones for a < 0
  return static_cast<int>(::attnjit::divide_by_magic(static_cast<unsigned>(a) ^ sign, magic) ^
                          sign);
}
template <bool kPositive = false>
ATTNJIT_EXPR_FN int mod_by(int a, int d, long long magic) {
  if constexpr (!kPositive) {
    if (d <= 0) return mod_cold(a, d);
  }
  return sub(a, mul(d, div_by<true>(a, d, magic)));
}

// (m + step) mod d for m and step in [0, d), d > 0: the value of `j % d`
// at a key column from its value `delta` keys before and delta mod d (the
// generated struct's col_next): an add and an unsigned min, as m + step -
// d wraps above m + step exactly when m + step < d.
ATTNJIT_EXPR_FN int mod_add(int m, int step, int d) {
  const unsigned t = static_cast<unsigned>(m) + static_cast<unsigned>(step);
  const unsigned u = t - static_cast<unsigned>(d);
  return static_cast<int>(u < t ? u : t);
}

// `and` and `or` evaluate both operands, which have no side effects (a
// tensor read outside its domain reads 0): short-circuit operators put a
// branch around each element's right operand.
ATTNJIT_EXPR_FN bool land(bool a, bool b) { return a & b; }
ATTNJIT_EXPR_FN bool lor(bool a, bool b) { return a | b; }

// ---------------------------------------------------------------------------
// float: fp32 on the device (under the variant's fast-math option), fp64 in
// the host evaluator; min/max ignore a NaN operand (IEEE minNum/maxNum).

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
ATTNJIT_EXPR_FN float fmin_(float a, float b) { return fminf(a, b); }
ATTNJIT_EXPR_FN float fmax_(float a, float b) { return fmaxf(a, b); }
ATTNJIT_EXPR_FN float fabs_(float a) { return fabsf(a); }
ATTNJIT_EXPR_FN float fexp(float a) { return expf(a); }
ATTNJIT_EXPR_FN float flog(float a) { return logf(a); }
ATTNJIT_EXPR_FN float ftanh(float a) { return tanhf(a); }
ATTNJIT_EXPR_FN float fsqrt(float a) { return sqrtf(a); }
#else
template <class T>
inline T fmin_(T a, T b) { return std::fmin(a, b); }
template <class T>
inline T fmax_(T a, T b) { return std::fmax(a, b); }
template <class T>
inline T fabs_(T a) { return std::fabs(a); }
template <class T>
inline T fexp(T a) { return std::exp(a); }
template <class T>
inline T flog(T a) { return std::log(a); }
template <class T>
inline T ftanh(T a) { return std::tanh(a); }
template <class T>
inline T fsqrt(T a) { return std::sqrt(a); }
#endif

// ---------------------------------------------------------------------------
// Tensor reads (the `per` domains of docs/expressions.md). An index outside
// the domain reads 0 and touches no memory outside the domain.

// The group size of grouped heads (query heads per kv head), 1 when the
// counts are not usable.
ATTNJIT_EXPR_FN int group_size(int num_heads_q, int num_heads_kv) {
  return num_heads_kv > 0 && num_heads_q >= num_heads_kv ? num_heads_q / num_heads_kv : 1;
}

// per: key_token: x is a key position of sequence b, row cu_seqlens_k[b] + x.
template <class T>
ATTNJIT_EXPR_FN T load_key_token(const T* t, const int* cu_seqlens_k, int b, int n_k, int x) {
  return x >= 0 && x < n_k ? t[cu_seqlens_k[b] + x] : T(0);
}
// per: query_token: x is a query position (the key axis, docs/semantics.md
// "Positions"); query i = x - (n_k - n_q) of sequence b, row
// cu_seqlens_q[b] + i. Valid for 0 <= i < n_q.
template <class T>
ATTNJIT_EXPR_FN T load_query_token(const T* t, const int* cu_seqlens_q, int b, int n_q, int n_k,
                                   int x) {
  const long long i = static_cast<long long>(x) - (static_cast<long long>(n_k) - n_q);
  return i >= 0 && i < n_q ? t[cu_seqlens_q[b] + static_cast<int>(i)] : T(0);
}
// The same two reads in the element code (mask() and score(), which the
// kernels call only for a score, so the sequence has at least one key
// and one query): the index clamped into the domain, both loads
// unconditional, 0 outside. The guarded forms put each load behind its
// own branch, which the compiler does not merge across a thread's rows,
// which read the same key.
template <class T>
ATTNJIT_EXPR_FN T load_key_token_at(const T* t, const int* cu_seqlens_k, int b, int n_k, int x) {
  const int i = imin(imax(x, 0), n_k - 1);  // n_k >= 1
  const T value = t[cu_seqlens_k[b] + i];
  return i == x ? value : T(0);
}
template <class T>
ATTNJIT_EXPR_FN T load_query_token_at(const T* t, const int* cu_seqlens_q, int b, int n_q,
                                      int n_k, int x) {
  const long long at = static_cast<long long>(x) - (static_cast<long long>(n_k) - n_q);
  const int i = at < 0 ? 0 : at < n_q ? static_cast<int>(at) : n_q - 1;  // n_q >= 1
  const T value = t[cu_seqlens_q[b] + i];
  return i == at ? value : T(0);
}
// per: sequence (indexed by b only), per: head / kv_head / table: x in [0, n).
template <class T>
ATTNJIT_EXPR_FN T load_sequence(const T* t, int b) {
  return t[b];
}
template <class T>
ATTNJIT_EXPR_FN T load_bounded(const T* t, int n, int x) {
  return x >= 0 && x < n ? t[x] : T(0);
}

// ---------------------------------------------------------------------------
// Tile classification: an int expression over a tile is an interval that
// holds every value it takes there (lo <= hi always); a bool one is the set
// of values it takes ({false}, {true} or both). Each operation returns an
// interval that holds every result of the operation on members of its
// operands' intervals (the top interval where the exact range would leave
// int32, since the operation then wraps), so the analysis is sound.

struct ival {
  int lo, hi;
};
struct bval {
  bool f, t;  // whether the expression can be false, can be true
};

ATTNJIT_EXPR_FN ival ipoint(int v) { return ival{v, v}; }
ATTNJIT_EXPR_FN ival itop() { return ival{kIntMin, kIntMax}; }
ATTNJIT_EXPR_FN ival irange(int lo, int hi) { return lo <= hi ? ival{lo, hi} : itop(); }
ATTNJIT_EXPR_FN ival ifit(long long lo, long long hi) {
  return lo < kIntMin || hi > kIntMax ? itop() : ival{static_cast<int>(lo), static_cast<int>(hi)};
}
ATTNJIT_EXPR_FN long long lmin(long long a, long long b) { return a < b ? a : b; }
ATTNJIT_EXPR_FN long long lmax(long long a, long long b) { return a < b ? b : a; }
ATTNJIT_EXPR_FN ival ihull(ival a, ival b) { return ival{imin(a.lo, b.lo), imax(a.hi, b.hi)}; }

ATTNJIT_EXPR_FN ival iadd(ival a, ival b) {
  return ifit(static_cast<long long>(a.lo) + b.lo, static_cast<long long>(a.hi) + b.hi);
}
ATTNJIT_EXPR_FN ival isub(ival a, ival b) {
  return ifit(static_cast<long long>(a.lo) - b.hi, static_cast<long long>(a.hi) - b.lo);
}
ATTNJIT_EXPR_FN ival ineg(ival a) {
  return ifit(-static_cast<long long>(a.hi), -static_cast<long long>(a.lo));
}
ATTNJIT_EXPR_FN ival imul(ival a, ival b) {
  const long long p0 = static_cast<long long>(a.lo) * b.lo;
  const long long p1 = static_cast<long long>(a.lo) * b.hi;
  const long long p2 = static_cast<long long>(a.hi) * b.lo;
  const long long p3 = static_cast<long long>(a.hi) * b.hi;
  return ifit(lmin(lmin(p0, p1), lmin(p2, p3)), lmax(lmax(p0, p1), lmax(p2, p3)));
}
ATTNJIT_EXPR_FN ival iabs_(ival a) {
  if (a.lo >= 0) return a;
  if (a.hi <= 0) return ineg(a);
  return ifit(0, lmax(-static_cast<long long>(a.lo), a.hi));
}
ATTNJIT_EXPR_FN ival imin_(ival a, ival b) { return ival{imin(a.lo, b.lo), imin(a.hi, b.hi)}; }
ATTNJIT_EXPR_FN ival imax_(ival a, ival b) { return ival{imax(a.lo, b.lo), imax(a.hi, b.hi)}; }

// floor(a / c) in 64 bits, c != 0 (no overflow: |a| <= 2^31).
ATTNJIT_EXPR_FN long long floordiv64(long long a, long long c) {
  long long q = a / c;
  if (q * c != a && ((a < 0) != (c < 0))) --q;
  return q;
}

// Floored division is monotone in a for a divisor of one sign, and in the
// divisor (of one sign) for a fixed a: over a box its extremes lie on the
// corners. The divisor's interval is split at 0, and 0 itself gives 0.
ATTNJIT_EXPR_FN ival idiv(ival a, ival b) {
  // One positive divisor (a runtime chunk size, a literal): floored
  // division is monotone in a, so the ends map to the ends, in 32 bits
  // (|floor(a / c)| <= |a| for c >= 1: no overflow).
  if (b.lo == b.hi && b.lo > 0) return ival{div(a.lo, b.lo), div(a.hi, b.lo)};
  bool any = false;
  long long lo = 0, hi = 0;
  if (b.lo <= 0 && 0 <= b.hi) {
    any = true;  // x / 0 = 0
  }
  for (int side = 0; side < 2; ++side) {
    const long long c_lo = side == 0 ? lmax(b.lo, 1) : b.lo;
    const long long c_hi = side == 0 ? b.hi : lmin(b.hi, -1);
    if (c_lo > c_hi) continue;
    const long long q0 = floordiv64(a.lo, c_lo);
    const long long q1 = floordiv64(a.lo, c_hi);
    const long long q2 = floordiv64(a.hi, c_lo);
    const long long q3 = floordiv64(a.hi, c_hi);
    const long long q_lo = lmin(lmin(q0, q1), lmin(q2, q3));
    const long long q_hi = lmax(lmax(q0, q1), lmax(q2, q3));
    lo = any ? lmin(lo, q_lo) : q_lo;
    hi = any ? lmax(hi, q_hi) : q_hi;
    any = true;
  }
  return ifit(lo, hi);
}

// classify() of `a / arg` and `a % arg` for an int32 arg d with its
// multiplier (div_by): for d > 0 what idiv and imod give a one-value
// divisor, without their 64-bit divisions (which every use of a runtime
// divisor would otherwise compile in); d <= 0 (no chunk size means that)
// is unknown, every int, which is sound.
ATTNJIT_EXPR_FN ival idiv_by(ival a, int d, long long magic) {
  if (d <= 0) return itop();
  return ival{div_by<true>(a.lo, d, magic), div_by<true>(a.hi, d, magic)};
}
ATTNJIT_EXPR_FN ival imod_by(ival a, int d, long long magic) {
  if (d <= 0) return itop();
  const int q = div_by<true>(a.lo, d, magic);
  if (q == div_by<true>(a.hi, d, magic)) {
    // Both residues lie in [0, d): the wrapping differences are exact.
    const int base = mul(q, d);
    return ival{sub(a.lo, base), sub(a.hi, base)};
  }
  return ival{0, a.lo >= 0 ? imin(d - 1, a.hi) : d - 1};
}

// a mod c for a divisor interval of one sign [c_lo, c_hi] (c_lo > 0 or
// c_hi < 0): the exact range when c is one value and a stays within one
// quotient, a itself when 0 <= a < c, otherwise the residues' range.
ATTNJIT_EXPR_FN ival imod_side(ival a, long long c_lo, long long c_hi) {
  if (c_lo == c_hi && floordiv64(a.lo, c_lo) == floordiv64(a.hi, c_lo)) {
    const long long q = floordiv64(a.lo, c_lo);
    return ifit(a.lo - q * c_lo, a.hi - q * c_lo);
  }
  if (c_lo > 0) {
    if (a.lo >= 0 && a.hi < c_lo) return a;
    const long long hi = a.lo >= 0 ? lmin(c_hi - 1, a.hi) : c_hi - 1;
    return ifit(0, hi);
  }
  if (a.hi <= 0 && a.lo > c_hi) return a;
  const long long lo = a.hi <= 0 ? lmax(c_lo + 1, a.lo) : c_lo + 1;
  return ifit(lo, 0);
}

ATTNJIT_EXPR_FN ival imod(ival a, ival b) {
  bool any = false;
  ival r = a;
  if (b.lo <= 0 && 0 <= b.hi) any = true;  // x % 0 = x
  if (b.hi >= 1) {
    const ival s = imod_side(a, lmax(b.lo, 1), b.hi);
    r = any ? ihull(r, s) : s;
    any = true;
  }
  if (b.lo <= -1) {
    const ival s = imod_side(a, b.lo, lmin(b.hi, -1));
    r = any ? ihull(r, s) : s;
  }
  return r;
}

// The last index of a domain of n elements (-1: empty, also for n <= 0).
ATTNJIT_EXPR_FN int last_index(int n) { return n > 0 ? n - 1 : -1; }

// A read of a sorted tensor (`sorted: true`: values that do not decrease
// over its domain [d_lo, d_hi]) at every index of x: between the values at
// the ends of x clipped to the domain (first, last: read there; reads
// outside the domain are 0 and touch nothing), and 0 as well where x
// leaves the domain.
ATTNJIT_EXPR_FN int clip_lo(ival x, int d_lo) { return imax(x.lo, d_lo); }
ATTNJIT_EXPR_FN int clip_hi(ival x, int d_hi) { return imin(x.hi, d_hi); }
ATTNJIT_EXPR_FN ival sorted_read(ival x, int d_lo, int d_hi, int first, int last) {
  if (clip_lo(x, d_lo) > clip_hi(x, d_hi)) return ipoint(0);
  ival r = ihull(ipoint(first), ipoint(last));  // first <= last when sorted
  if (x.lo < d_lo || x.hi > d_hi) r = ihull(r, ipoint(0));
  return r;
}

ATTNJIT_EXPR_FN ival iselect(bval c, ival a, ival b) {
  if (!c.f) return a;
  if (!c.t) return b;
  return ihull(a, b);
}

ATTNJIT_EXPR_FN bval bconst(bool v) { return bval{!v, v}; }
ATTNJIT_EXPR_FN bval bunknown() { return bval{true, true}; }
ATTNJIT_EXPR_FN bval bnot(bval a) { return bval{a.t, a.f}; }
ATTNJIT_EXPR_FN bval band(bval a, bval b) { return bval{a.f || b.f, a.t && b.t}; }
ATTNJIT_EXPR_FN bval bor(bval a, bval b) { return bval{a.f && b.f, a.t || b.t}; }
ATTNJIT_EXPR_FN bval bselect(bval c, bval a, bval b) {
  if (!c.f) return a;
  if (!c.t) return b;
  return bval{a.f || b.f, a.t || b.t};
}
// a == b for bools: known only when both are.
ATTNJIT_EXPR_FN bval beq(bval a, bval b) {
  if (a.f != a.t && b.f != b.t) return bconst(a.t == b.t);
  return bunknown();
}
ATTNJIT_EXPR_FN bval bne(bval a, bval b) { return bnot(beq(a, b)); }

ATTNJIT_EXPR_FN bval ilt(ival a, ival b) { return bval{a.hi >= b.lo, a.lo < b.hi}; }
ATTNJIT_EXPR_FN bval ile(ival a, ival b) { return bval{a.hi > b.lo, a.lo <= b.hi}; }
ATTNJIT_EXPR_FN bval igt(ival a, ival b) { return ilt(b, a); }
ATTNJIT_EXPR_FN bval ige(ival a, ival b) { return ile(b, a); }
ATTNJIT_EXPR_FN bval ieq(ival a, ival b) {
  const bool single = a.lo == a.hi && b.lo == b.hi && a.lo == b.lo;
  const bool disjoint = a.hi < b.lo || b.hi < a.lo;
  return bval{!single, !disjoint};
}
ATTNJIT_EXPR_FN bval ine(ival a, ival b) { return bnot(ieq(a, b)); }

// 0: no pair of the tile satisfies the mask; 2: every pair does; 1: unknown.
ATTNJIT_EXPR_FN int tile_class(bval m) { return !m.t ? 0 : !m.f ? 2 : 1; }

// ---------------------------------------------------------------------------
// Key bounds: the key positions a query tile can see, from the mask's
// conjuncts that compare a linear form of j with an expression free of j
// (docs/expressions.md "Key bounds"). A conjunct says X cmp y or
// abs(X) cmp y with X = sj * j + t or X = j / c (sj = +1 or -1; t, c and
// y free of j, as intervals over the tile); for j in [d_lo, d_hi] (the sequence's keys)
// X is computed exactly when its range fits int32 (no wrap), and then
// the comparison bounds sj * j, so j. Where X could wrap, the conjunct
// says nothing. first and last only shrink.

constexpr int kCmpLt = 0, kCmpLe = 1, kCmpGt = 2, kCmpGe = 3, kCmpEq = 4;
constexpr long long kNoBound = 1ll << 40;  // past any int32 sum

// With a divisor (X = j / c, floored; c an interval that must be one
// value >= 1, else the conjunct says nothing), X is exact for j >= 0 and
// X in [x_min, x_max] means j in [x_min * c, x_max * c + c - 1]. Without
// one, c is the point 1.
ATTNJIT_EXPR_FN void key_bound(int cmp, int sj, ival t, ival y, bool abs_form, ival c, int d_lo,
                               int d_hi, long long& first, long long& last) {
  const bool divided = !(c.lo == 1 && c.hi == 1);
  if (divided && (c.lo != c.hi || c.lo < 1 || d_lo < 0)) return;
  long long x_lo = (sj > 0 ? static_cast<long long>(d_lo) : -static_cast<long long>(d_hi)) + t.lo;
  long long x_hi = (sj > 0 ? static_cast<long long>(d_hi) : -static_cast<long long>(d_lo)) + t.hi;
  if (divided) {
    x_lo = d_lo / c.lo;  // d_lo >= 0: floored is truncated
    x_hi = d_hi / c.lo;
  }
  if (x_lo < kIntMin || x_hi > kIntMax) return;
  // X in [x_min, x_max] for every visible key.
  long long x_min = -kNoBound, x_max = kNoBound;
  if (abs_form) {
    if (x_lo == kIntMin) return;  // abs(INT_MIN) wraps
    // abs(X) < y or <= y: -y.hi <= X <= y.hi (one less for <).
    const long long h = static_cast<long long>(y.hi) - (cmp == kCmpLt ? 1 : 0);
    x_min = -h;
    x_max = h;
  } else {
    if (cmp == kCmpLt) x_max = static_cast<long long>(y.hi) - 1;
    if (cmp == kCmpLe || cmp == kCmpEq) x_max = y.hi;
    if (cmp == kCmpGt) x_min = static_cast<long long>(y.lo) + 1;
    if (cmp == kCmpGe || cmp == kCmpEq) x_min = y.lo;
  }
  if (divided) {  // j / c in [x_min, x_max]
    const long long d = c.lo;
    first = lmax(first, x_min == -kNoBound ? -kNoBound : x_min * d);
    last = lmin(last, x_max == kNoBound ? kNoBound : x_max * d + d - 1);
    return;
  }
  // sj * j = X - t.
  long long lo = x_min == -kNoBound ? -kNoBound : x_min - t.hi;
  long long hi = x_max == kNoBound ? kNoBound : x_max - t.lo;
  if (sj < 0) {
    const long long neg_lo = hi == kNoBound ? -kNoBound : -hi;
    hi = lo == -kNoBound ? kNoBound : -lo;
    lo = neg_lo;
  }
  first = lmax(first, lo);
  last = lmin(last, hi);
}

// One bounding comparison at one query row (the generated row(); expr_tree.h
// RowBoundCompare): the keys of [0, n_k - 1] it leaves, as int bounds the
// element code compares j with. No bound on a side is the int's end; an
// empty side is past every key.
ATTNJIT_EXPR_FN void row_bound(int cmp, int sj, ival t, ival y, bool abs_form, int n_k, int& lo,
                               int& hi) {
  long long first = kIntMin, last = kIntMax;
  key_bound(cmp, sj, t, y, abs_form, ipoint(1), 0, n_k - 1, first, last);
  lo = static_cast<int>(lmin(lmax(first, kIntMin), kIntMax));
  hi = static_cast<int>(lmin(lmax(last, kIntMin), kIntMax));
}

// The defaults for a config without expressions: no mask, no score.
struct no_user {
  static constexpr bool has_mask = false;
  static constexpr bool has_score = false;
  static constexpr bool has_divisors = false;
  static constexpr bool has_key_bounds = false;
  static constexpr bool key_bounds_whole_mask = false;
  static constexpr bool key_bounds_exact_rows = false;
  static constexpr bool key_bounds_below = false;
  static constexpr bool key_bounds_above = false;
  static constexpr bool has_row_key_bounds = false;
};

// user_of<C>::type: C::user when the generated config has one, else no_user.
template <class C, class = void>
struct user_of {
  using type = no_user;
};
template <class T>
struct void_of {
  using type = void;
};
template <class C>
struct user_of<C, typename void_of<typename C::user>::type> {
  using type = typename C::user;
};

}  // namespace expr
}  // namespace attnjit

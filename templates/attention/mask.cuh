// Visibility (docs/semantics.md "Visibility") for one query tile: which key tiles
// it must visit, which of those are interior (every pair visible by the base
// rule, so no per-element mask), and the per-element test for edge tiles.
// Modes a variant does not use compile to nothing.
#pragma once

#include "attention/params.cuh"
#include "attention/user_mask.cuh"
#include "common/ptx.cuh"

namespace attnjit {
namespace attention {

struct KeyRange {
  int first_tile;  // inclusive
  int last_tile;   // inclusive; < first_tile when no key is visible
};

template <class C>
struct Mask {
  static constexpr bool kCausal = C::causal;
  static constexpr bool kWindow = C::window;
  static constexpr bool kPrefix = C::mm_prefix;
  static constexpr bool kClamp = C::mm_clamp;
  static_assert(!kClamp || (kPrefix && kWindow), "mm_clamp requires mm_prefix and window");

  int n_k;
  int window_left, window_right;  // -1: unbounded
  const int* spans;               // this sequence's spans
  int span_count;

  __device__ __forceinline__ bool in_window(int p, int j) const {
    if constexpr (!kWindow) {
      return true;
    } else {
      return (window_left < 0 || p - j <= window_left) &&
             (window_right < 0 || j - p <= window_right);
    }
  }

  __device__ __forceinline__ bool base(int p, int j) const {
    return (!kCausal || j <= p) && in_window(p, j);
  }

  // The first and last key of [0, n_k) inside the window of position p
  // (lo > hi when none). 64-bit: p +- a window of up to INT_MAX must not
  // wrap (it did, and dropped every key, before tests/reference/
  // device_mask_test.cpp).
  __device__ __forceinline__ int window_lo(int p) const {
    if (!kWindow || window_left < 0) return 0;
    const long long l = static_cast<long long>(p) - window_left;
    return l <= 0 ? 0 : l >= n_k ? n_k : static_cast<int>(l);
  }
  __device__ __forceinline__ int window_hi(int p) const {
    if (!kWindow || window_right < 0) return n_k - 1;
    const long long h = static_cast<long long>(p) + window_right;
    return h >= n_k - 1 ? n_k - 1 : h < -1 ? -1 : static_cast<int>(h);
  }

  // True when the clamp lets row p see key j of its span: the left window
  // alone bounds a span (Gemma-4's `q - k < sliding_window`); the right
  // bound never applies, so a causal window (W, 0) keeps an image's later
  // tokens visible to its earlier ones.
  __device__ __forceinline__ bool in_left_window(int p, int j) const {
    if constexpr (!kWindow) {
      return true;
    } else {
      return window_left < 0 || p - j <= window_left;
    }
  }

  // Key tiles that queries at positions [p0, p1] may see: the base range,
  // widened by every span that holds one of those queries (its lower end
  // raised to the left window when mm_clamp is on). The hull of the union
  // is returned; tiles inside it that see nothing are masked out by
  // `visible`.
  __device__ KeyRange key_range(int p0, int p1, int block_n) const {
    int lo = 0;
    int hi = n_k - 1;
    if constexpr (kCausal) hi = ptx::imin(hi, p1);
    if constexpr (kWindow) {
      lo = window_lo(p0);
      hi = ptx::imin(hi, window_hi(p1));
    }
    if constexpr (kPrefix) {
      for (int s = 0; s < span_count; ++s) {
        const int r0 = spans[2 * s];
        const int r1 = spans[2 * s + 1];
        if (r1 < p0) continue;
        if (r0 > p1) break;
        int span_lo = ptx::imax(r0, 0);
        int span_hi = ptx::imin(r1, n_k - 1);
        if constexpr (kClamp) span_lo = ptx::imax(span_lo, window_lo(p0));
        if (span_lo > span_hi) continue;
        if (lo > hi) {
          lo = span_lo;
          hi = span_hi;
        } else {
          lo = ptx::imin(lo, span_lo);
          hi = ptx::imax(hi, span_hi);
        }
      }
    }
    if (lo > hi) return {0, -1};
    return {lo / block_n, hi / block_n};
  }

  // True when every query in [p0, p1] sees every key of [j0, j0 + n) by the
  // base rule alone and all those keys exist.
  __device__ __forceinline__ bool interior(int p0, int p1, int j0, int n) const {
    const int j1 = j0 + n - 1;
    if (j1 >= n_k) return false;
    if constexpr (kCausal) {
      if (j1 > p0) return false;
    }
    if constexpr (kWindow) {
      if (window_left >= 0 && p1 - j0 > window_left) return false;
      if (window_right >= 0 && j1 - p0 > window_right) return false;
    }
    return true;
  }

  // The span holding position p, as [lo, hi]; lo > hi when none does.
  __device__ void span_of(int p, int& lo, int& hi) const {
    lo = 1;
    hi = 0;
    if constexpr (kPrefix) {
      for (int s = 0; s < span_count; ++s) {
        const int r0 = spans[2 * s];
        const int r1 = spans[2 * s + 1];
        if (r0 > p) break;
        if (p <= r1) {
          lo = r0;
          hi = r1;
          return;
        }
      }
    }
  }

  // visible(p, j) for a key j of this sequence; span_lo/hi from span_of(p).
  __device__ __forceinline__ bool visible(int p, int j, int span_lo, int span_hi) const {
    if (j >= n_k) return false;
    if (base(p, j)) return true;
    if constexpr (kPrefix) {
      const bool same = span_lo <= j && j <= span_hi;
      if constexpr (kClamp) {
        return same && in_left_window(p, j);
      } else {
        return same;
      }
    } else {
      return false;
    }
  }

  // The keys row p sees, as at most two intervals computed once per row:
  // the base rule's [lo, hi] and, with mm_prefix, the part of its span it
  // sees [span_lo, span_hi] (its lower end raised to the left window with
  // mm_clamp). Empty
  // intervals have lo > hi. visible_in(row_keys(p, ...), j) == visible(p, j,
  // ...) for every key j >= 0 (tests/reference/device_mask_test.cpp); the
  // edge tiles then cost two or four compares per score.
  struct RowKeys {
    int lo, hi, span_lo, span_hi;
    UserRowOf<C> user;  // a spec's expressions' view of the row (empty without)
  };

  __device__ __forceinline__ RowKeys row_keys(int p, int span_lo, int span_hi) const {
    RowKeys keys{window_lo(p), window_hi(p), 1, 0, {}};
    if constexpr (kCausal) keys.hi = ptx::imin(keys.hi, p);
    if constexpr (kPrefix) {
      keys.span_lo = span_lo;
      keys.span_hi = ptx::imin(span_hi, n_k - 1);
      if constexpr (kClamp) keys.span_lo = ptx::imax(keys.span_lo, window_lo(p));
    }
    return keys;
  }

  // keys with every bound moved down by `by` (relative to key `by`).
  static __device__ __forceinline__ RowKeys shifted(RowKeys keys, int by) {
    keys.lo -= by;
    keys.hi -= by;
    if constexpr (kPrefix) {
      keys.span_lo -= by;
      keys.span_hi -= by;
    }
    return keys;
  }

  // kCheckLo false: the caller knows keys.lo is the sequence's first key
  // (no window, no spec's bound raising it), which every key passes.
  // keys and j may both be shifted by one amount (relative to a tile's
  // first key): the comparisons are the same.
  template <bool kCheckLo = true>
  static __device__ __forceinline__ bool visible_in(const RowKeys& keys, int j) {
    const bool base = (!kCheckLo || keys.lo <= j) && j <= keys.hi;
    if constexpr (kPrefix) {
      return base || (keys.span_lo <= j && j <= keys.span_hi);
    } else {
      return base;
    }
  }
};

}  // namespace attention
}  // namespace attnjit

// The key tiles one work tile visits, in order, and how many it visited
// before each (its index in the K/V ring). Without skipping, every tile of
// [first, last]. With it (a spec's mask whose visible keys need not be one
// interval per query tile: sink tokens and a window, global tokens and a
// band, block-sparse layouts), only the tiles the mask's interval analysis
// does not prove empty, wherever they are in the range; the producer loads
// and the consumers compute exactly those. Every warp walks on its own and
// finds the same tiles: the classes of the next 32 tiles are taken at once,
// one per lane, whenever the walk passes the end of the previous 32, and
// kept (full or not), so a tile's edge test is a bit.
#pragma once

#include "attention/tile_config.cuh"
#include "common/ptx.cuh"

namespace attnjit {
namespace attention {

// Bit l holds pred(l) for lane l of the calling warp, whose 32 lanes all
// call it together. (Compiled for the host, the lanes run in turn.)
template <class Pred>
__device__ __forceinline__ unsigned warp_ballot(Pred pred) {
#ifdef __CUDA_ARCH__
  return __ballot_sync(0xffffffffu, pred(static_cast<int>(threadIdx.x & 31)));
#else
  unsigned bits = 0;
  for (int lane = 0; lane < 32; ++lane) bits |= pred(lane) ? 1u << lane : 0u;
  return bits;
#endif
}

__device__ __forceinline__ int lowest_set_bit(unsigned bits) {
#ifdef __CUDA_ARCH__
  return __ffs(bits) - 1;
#else
  return __builtin_ctz(bits);
#endif
}

// The first t in [lo, hi] where keep(t) holds (none: hi + 1, or lo for an
// empty range, as the loop leaves it): the answer
// of a loop from lo, found 32 candidates at a time, one per lane, so a
// long run of tiles that fail costs n / 32 steps of parallel tests. Every
// lane of the warp calls it with the same arguments.
template <class Keep>
__device__ __forceinline__ int first_where(int lo, int hi, Keep keep) {
  for (int base = lo; base <= hi; base += 32) {
    const unsigned hits =
        warp_ballot([&](int lane) { return base + lane <= hi && keep(base + lane); });
    if (hits != 0) return base + lowest_set_bit(hits);
  }
  return lo > hi ? lo : hi + 1;
}
// The last t in [lo, hi] where keep(t) holds (none: lo - 1, or hi for an
// empty range), likewise.
template <class Keep>
__device__ __forceinline__ int last_where(int lo, int hi, Keep keep) {
  for (int top = hi; top >= lo; top -= 32) {
    const unsigned hits =
        warp_ballot([&](int lane) { return top - lane >= lo && keep(top - lane); });
    if (hits != 0) return top - lowest_set_bit(hits);
  }
  return lo > hi ? hi : lo - 1;
}

__device__ __forceinline__ int set_bits(unsigned bits) {
#ifdef __CUDA_ARCH__
  return __popc(bits);
#else
  return __builtin_popcount(bits);
#endif
}

// How many t in [lo, hi] keep(t) holds for, 32 candidates at a time (as
// first_where).
template <class Keep>
__device__ __forceinline__ int count_where(int lo, int hi, Keep keep) {
  int count = 0;
  for (int base = lo; base <= hi; base += 32) {
    count += set_bits(
        warp_ballot([&](int lane) { return base + lane <= hi && keep(base + lane); }));
  }
  return count;
}

// The t in [lo, hi] where keep(t) holds for the n-th time, n from 0 (hi + 1
// when it holds n times or fewer), 32 candidates at a time.
template <class Keep>
__device__ __forceinline__ int nth_where(int lo, int hi, int n, Keep keep) {
  for (int base = lo; base <= hi; base += 32) {
    unsigned hits = warp_ballot([&](int lane) { return base + lane <= hi && keep(base + lane); });
    const int found = set_bits(hits);
    if (n < found) {
      for (int k = 0; k < n; ++k) hits &= hits - 1u;  // drop the n lowest
      return base + lowest_set_bit(hits);
    }
    n -= found;
  }
  return hi + 1;
}

// Split-KV over a walk that skips tiles: the parts divide the tiles of
// [first, last] that keep() holds for (the visited ones) by split_keys'
// rule, and part x's range runs from its first visited tile to its last.
// Every lane of the warp calls it with the same arguments.
struct WalkSplit {
  int parts;        // parts with a visited tile (1 when there is none)
  int first, last;  // part x's tiles (the whole range for one part)
};
template <class Keep>
__device__ __forceinline__ WalkSplit split_walk(int first, int last, int x, int num_splits,
                                                int min_tiles, Keep keep) {
  const int count = count_where(first, last, keep);
  const KeySplit ks = split_keys(0, count - 1, num_splits, min_tiles);
  if (ks.parts <= 1 || x >= ks.parts) return WalkSplit{ks.parts, first, last};
  const int n0 = x * ks.per;
  const int n1 = (count < n0 + ks.per ? count : n0 + ks.per) - 1;
  const int part_first = nth_where(first, last, n0, keep);
  return WalkSplit{ks.parts, part_first, nth_where(part_first, last, n1 - n0, keep)};
}

// Bits of the classes (0 empty, 1 partial, 2 full) of tiles base + l,
// l < 32; tiles past `last` are empty. A whole warp takes a tile per lane;
// a part of one (the producer's copying lanes) has each of its lanes take
// all 32 in turn, with the same result.
template <class Classify>
__device__ __forceinline__ void warp_classes(int base, int last, const Classify& classify,
                                             unsigned& nonempty, unsigned& full) {
#ifdef __CUDA_ARCH__
  if (__activemask() == 0xffffffffu) {
    const int t = base + static_cast<int>(threadIdx.x & 31);
    const int c = t <= last ? classify(t) : 0;
    nonempty = __ballot_sync(0xffffffffu, c != 0);
    full = __ballot_sync(0xffffffffu, c == 2);
    return;
  }
#endif
  nonempty = full = 0;
#pragma unroll 1
  for (int l = 0; l < 32; ++l) {
    const int c = base + l <= last ? classify(base + l) : 0;
    nonempty |= c != 0 ? 1u << l : 0u;
    full |= c == 2 ? 1u << l : 0u;
  }
}

// A visited key tile: its index in the key range and how many tiles were
// visited before it (its K/V ring index); full: a spec's mask leaves
// every pair of it visible (walks that skip only).
struct KeyTile {
  int kt;
  int i;
  bool full;
};

template <bool kSkips>
struct TileWalk {
  static constexpr bool kSkipsEmpty = kSkips;
  int kt = 0;    // the current key tile; past `last` once the walk is done
  int i = 0;     // kSkips: tiles visited before it (else kt - first)
  int first = 0, last = -1;
  // kSkips: bit t says tile base + t is not empty (full); kt is in
  // [base, base + 32) while the walk is on.
  unsigned nonempty = 0, full = 0;
  int base = 0;

  __device__ __forceinline__ bool on() const { return kt <= last; }

  // Classify(kt) -> 0 empty, 1 partial, 2 full; every lane of the warp
  // calls start and next together (a ballot), with the same arguments.
  template <class Classify>
  __device__ __forceinline__ void start(int first_tile, int last_tile, const Classify& classify) {
    kt = first_tile;
    first = first_tile;
    i = 0;
    last = last_tile;
    if constexpr (kSkips) {
      base = first_tile;
      warp_classes(base, last, classify, nonempty, full);
      seek(classify);
    }
  }

  template <class Classify>
  __device__ __forceinline__ void next(const Classify& classify) {
    if constexpr (kSkips) {
      previous_ = tile();
      ++i;
      ++kt;
      seek(classify);
    } else {
      ++kt;
    }
  }

  // Whether the current tile is full by the mask's classes (kSkips).
  __device__ __forceinline__ bool is_full() const { return (full >> (kt - base)) & 1u; }

  __device__ __forceinline__ KeyTile tile() const {
    if constexpr (kSkips) {
      return {kt, i, is_full()};
    } else {
      return {kt, kt - first, false};
    }
  }
  // The tile visited before the current one (after a next()).
  __device__ __forceinline__ KeyTile previous() const {
    if constexpr (kSkips) {
      return previous_;
    } else {
      return {kt - 1, kt - 1 - first, false};
    }
  }

 private:
  KeyTile previous_{0, 0, false};

  // On to the first non-empty tile from kt (or past last).
  template <class Classify>
  __device__ __forceinline__ void seek(const Classify& classify) {
    while (kt <= last) {
      if (kt - base >= 32) {
        base = kt;
        warp_classes(base, last, classify, nonempty, full);
      }
      const unsigned rest = nonempty >> (kt - base);
      if (rest != 0) {
        kt += lowest_set_bit(rest);
        return;
      }
      kt = base + 32;
    }
  }
};

}  // namespace attention
}  // namespace attnjit

// The tile scheduler: which query tile a block works on, and what that tile
// knows of its sequence (rows, keys, mask, the key tiles to visit). One
// block per tile over the grid of grid_shape (tile_config.cuh): (query
// tiles, heads, sequences), grid.y over kv heads when packing GQA, else
// over query heads. blockIdx.x counts query tiles from the last, so with a
// causal mask the tiles with the most keys go in the first wave. Another
// order would be another scheduler type: the mainloops and the epilogue
// only see the work tile. With split-KV each query tile has its key range
// split over blocks (set_split); the epilogue combines the parts.
#pragma once

#include "attention/gqa_rows.cuh"
#include "attention/mask.cuh"
#include "attention/params.cuh"
#include "attention/sinks.cuh"
#include "attention/tile_config.cuh"
#include "attention/tile_walk.cuh"
#include "common/ptx.cuh"

namespace attnjit {
namespace attention {

// Whether a variant's key loop skips the tiles a spec's mask leaves empty
// inside the range (on sm_90a the producers and consumers walk them, the
// warpgroup path's and the decode block's); the mma.sync path visits the
// whole range.
template <class C>
__host__ __device__ constexpr bool walks_past_empty_tiles() {
  if constexpr (user_mask<C>() && !user_mask_in_row_keys<C>()) {
    return C::wgmma != 0;
  } else {
    return false;
  }
}

// One query tile of kBlockM (packed) rows of one sequence and head slot.
template <class C, int kBlockM, int kBlockN>
struct WorkTile {
  using T = typename C::dtype;

  int seq;      // the sequence
  int hk;       // kv head
  int q_begin;  // first token of the sequence in q / o
  int n_q, n_k;
  int k_begin;  // first key row of the sequence in k / v (0 in a paged cache)
  PackedRows<C::pack_gqa != 0> map;
  int row0, row_end;  // the tile's (packed) rows [row0, row_end)
  int shift;          // bottom-right alignment: p(i) = i + shift
  const T* q;         // the sequence's first q row
  const T* k;         // the sequence's first k row of head hk
  const T* v;
  Mask<C> mask;
  int p_first, p_last;  // key positions of the tile's first and last rows
  KeyRange range;       // key tiles to visit (this split's, with split-KV)
  int split;            // split-KV: which part of the row's keys this block has
  int splits;           // ... of how many (1: the block sees every key of its rows)
  int tile_x;           // split-KV: the query tile's index from the sequence's last
  // A spec's mask: bit t is set when key tile full_base + t is full by the
  // spec's mask (classified once per query tile, a tile per lane).
  unsigned full_bits;
  int full_base;
  // A spec's mask folded into the rows' key ranges (user_mask_in_row_keys):
  // the keys [full_lo, full_hi] every row of the tile sees by it, in place
  // of the class bits.
  int full_lo, full_hi;

  // Sequence b, kv head kv_head and its group = Hq / Hkv query heads when
  // packing GQA, else query head `head` alone.
  __device__ __forceinline__ void set_sequence(const Params<T>& prm, int b, int kv_head, int head) {
    constexpr bool kPack = C::pack_gqa != 0;
    seq = b;
    hk = kv_head;
    q_begin = prm.cu_seqlens_q[b];
    n_q = prm.cu_seqlens_q[b + 1] - q_begin;
    if constexpr (paged_kv<C>()) {
      k_begin = 0;  // the key source finds each key's page
      n_k = prm.seqused_k[b];
    } else {
      k_begin = prm.cu_seqlens_k[b];
      n_k = prm.cu_seqlens_k[b + 1] - k_begin;
    }
    const int group = prm.gqa_group;
    map = PackedRows<kPack>{kPack ? group : 1, kPack ? hk * group : head, kPack ? n_q * group : n_q,
                            kPack ? prm.gqa_group_magic : 0LL};
  }

  // Query tiles of the sequence (set_sequence first).
  __device__ __forceinline__ int m_tiles() const { return (map.rows + kBlockM - 1) / kBlockM; }

  // Query tile m_tile of sequence b (set_sequence first).
  __device__ __forceinline__ void set_tile(const Params<T>& prm, int b, int m_tile) {
    row0 = m_tile * kBlockM;
    row_end = ptx::imin(row0 + kBlockM, map.rows);
    shift = n_k - n_q;
    q = prm.q + q_begin * prm.q_row_stride;
    k = prm.k + k_begin * prm.k_row_stride + hk * prm.k_head_stride;
    v = prm.v + k_begin * prm.v_row_stride + hk * prm.v_head_stride;
    mask = Mask<C>{n_k, prm.window_left, prm.window_right, nullptr, 0};
    if constexpr (C::mm_prefix) {
      const int s0 = prm.mm_span_offsets[b];
      mask.spans = prm.mm_spans + 2 * s0;
      mask.span_count = prm.mm_span_offsets[b + 1] - s0;
    }
    p_first = map.position(row0) + shift;
    p_last = map.position(row_end - 1) + shift;
    range = mask.key_range(p_first, p_last, kBlockN);
    if constexpr (user_mask<C>()) trim_user_empty(prm);
    split = 0;
    splits = 1;
    tile_x = 0;
  }

  // The tile's query heads [h_lo(), h_hi()]: its query head, or (packing
  // GQA) every head of the group, which a tile's rows cycle through.
  __device__ __forceinline__ int h_lo() const { return map.head0; }
  __device__ __forceinline__ int h_hi() const { return map.head0 + map.group - 1; }
  // The last key of key tile kt that the sequence has.
  __device__ __forceinline__ int last_key(int kt) const {
    return ptx::imin(kt * kBlockN + kBlockN - 1, n_k - 1);
  }
  // A key range from key_bounds (first >= 0, last <= n_k - 1) clamped into
  // int: an empty range stays empty.
  __device__ __forceinline__ int first_key_of(long long first) const {
    return static_cast<int>(first < n_k ? first : n_k);
  }
  static __device__ __forceinline__ int last_key_of(long long last) {
    return static_cast<int>(last > -1 ? last : -1);
  }

  // A spec's mask: the class of key tile kt for the tile's rows (0 empty,
  // 1 partial, 2 full), by the interval analysis generated from it.
  __device__ __forceinline__ int user_class(const Params<T>& prm, int kt) const {
    return UserOf<C>::classify(prm, seq, h_lo(), h_hi(), p_first, p_last, kt * kBlockN,
                               last_key(kt), n_q, n_k);
  }

  // user_class where the walk skips tiles (never called otherwise).
  __device__ __forceinline__ int tile_class(const Params<T>& prm, int kt) const {
    if constexpr (kSkipsEmpty) {
      return user_class(prm, kt);
    } else {
      return 1;
    }
  }

  // Key tiles the spec's mask leaves empty at either end of the range are
  // not visited (nor loaded); the warp's lanes classify 32 tiles at a time
  // (a sorted tensor's reads make each class a few loads, and a query late
  // in a long sequence may pass a hundred empty tiles). Empty tiles
  // between visible ones are skipped by the warpgroup path's walk
  // (walk_start) and visited with the element mask elsewhere. Every thread
  // of the block gets here together (TileScheduler::get); each warp finds
  // the same range on its own (sharing one would need a block barrier).
  // A mask with bounding conjuncts (abs(p - j) <= r, j <= p + c, ...)
  // first narrows the range to the keys they leave the tile's rows
  // (key_bounds, exact arithmetic); when they are the whole mask, the
  // scans have nothing left to find at the ends and are skipped.
  __device__ __forceinline__ void trim_user_empty(const Params<T>& prm) {
    using User = UserOf<C>;
    if constexpr (User::has_key_bounds) {
      long long first = 0, last = static_cast<long long>(n_k) - 1;
      User::key_bounds(prm, seq, h_lo(), h_hi(), p_first, p_last, n_q, n_k, first, last);
      if (first > last) {
        range.last_tile = range.first_tile - 1;
      } else {
        range.first_tile = ptx::imax(range.first_tile, static_cast<int>(first / kBlockN));
        range.last_tile = ptx::imin(range.last_tile, static_cast<int>(last / kBlockN));
      }
    }
    if constexpr (!User::key_bounds_whole_mask) {
      const auto visible = [&](int kt) { return user_class(prm, kt) != 0; };
      range.first_tile = first_where(range.first_tile, range.last_tile, visible);
      range.last_tile = last_where(range.first_tile, range.last_tile, visible);
    }
    if constexpr (user_mask_in_row_keys<C>()) {
      note_full_keys(prm);
    } else if constexpr (!kSkipsEmpty) {
      note_full_tiles(prm);  // (a walk keeps the classes of its own tiles)
    }
  }

  // A folded mask: the keys every row of the tile sees, the intersection
  // of the rows' exact key ranges. Each bound of such a mask compares j,
  // j - p or p - j with a literal, an int scalar or a variable, so a row's
  // first and last key are monotone in p and in the head h (hk = h / group
  // included) separately; their largest first and smallest last over the
  // box [p_first, p_last] x [h_lo, h_hi] are at its corners, and the
  // tile's rows lie inside the box. The box only narrows the result, so a
  // tile inside [full_lo, full_hi] is full for every row (sound), and one
  // outside gets the element mask, which is exact anyway.
  __device__ __forceinline__ void note_full_keys(const Params<T>& prm) {
    long long lo = 0, hi = static_cast<long long>(n_k) - 1;
    const int ps[2] = {p_first, p_last};
    const int hs[2] = {h_lo(), h_hi()};
#pragma unroll
    for (int a = 0; a < 2; ++a) {
#pragma unroll
      for (int c = 0; c < (C::pack_gqa != 0 ? 2 : 1); ++c) {
        // (key_bounds narrows [lo, hi] to one corner row's keys.)
        UserOf<C>::key_bounds(prm, seq, hs[c], hs[c], ps[a], ps[a], n_q, n_k, lo, hi);
      }
    }
    full_lo = first_key_of(lo);
    full_hi = last_key_of(hi);
  }

  // The classes of the first 32 tiles of the range, kept for edge_tile:
  // the main loop then tests a bit per key tile instead of classifying it
  // again in every thread (narrow bands visit a handful of tiles, each of
  // little work next to its classification). Again after set_split moves
  // the range's start, so a split's own tiles have their bits.
  __device__ __forceinline__ void note_full_tiles(const Params<T>& prm) {
    full_base = range.first_tile;
    full_bits = warp_ballot([&](int lane) {
      return full_base + lane <= range.last_tile && user_class(prm, full_base + lane) == 2;
    });
  }

  // Whether key tile kt needs the element mask: not interior by the
  // built-in rules, or not full by the spec's mask.
  __device__ __forceinline__ bool edge_tile(const Params<T>& prm, int kt) const {
    const bool edge = !mask.interior(p_first, p_last, kt * kBlockN, kBlockN);
    if constexpr (user_mask_in_row_keys<C>()) {
      const int j0 = kt * kBlockN;
      return edge || j0 < full_lo || j0 + kBlockN - 1 > full_hi;
    } else if constexpr (user_mask<C>()) {
      const unsigned t = unsigned(kt - full_base);
      return edge || (t < 32 ? ((full_bits >> t) & 1u) == 0 : user_class(prm, kt) != 2);
    } else {
      return edge;
    }
  }

  // The key tiles to visit, in order (tile_walk.cuh): on the warpgroup
  // path (not the decode block), with a spec's mask that is not folded into
  // the rows' key ranges, those of `range` its classes do not call empty,
  // wherever they are; otherwise every tile of `range`. Every warp that
  // walks finds the same tiles.
  static constexpr bool kSkipsEmpty = walks_past_empty_tiles<C>();
  using Walk = TileWalk<kSkipsEmpty>;
  __device__ __forceinline__ void walk_start(const Params<T>& prm, Walk& walk) const {
    walk.start(range.first_tile, range.last_tile, [&](int kt) { return tile_class(prm, kt); });
  }
  __device__ __forceinline__ void walk_next(const Params<T>& prm, Walk& walk) const {
    walk.next([&](int kt) { return tile_class(prm, kt); });
  }
  // Whether a visited tile needs the element mask: the walk knows its
  // class by the spec's mask.
  __device__ __forceinline__ bool edge_tile(const Params<T>& prm, const KeyTile& t) const {
    if constexpr (kSkipsEmpty) {
      return !mask.interior(p_first, p_last, t.kt * kBlockN, kBlockN) || !t.full;
    } else {
      return edge_tile(prm, t.kt);
    }
  }

  // Whether key tile kt runs the spec's score: not where the score is s
  // itself for every pair of the tile (score_identity, from the interval
  // analysis of its terms; a bias on key 0 skips every tile but the first).
  __device__ __forceinline__ bool score_tile(const Params<T>& prm, int kt) const {
    if constexpr (user_score_identity<C>()) {
      return !UserOf<C>::score_identity(prm, seq, h_lo(), h_hi(), p_first, p_last, kt * kBlockN,
                                        last_key(kt), n_q, n_k);
    } else {
      return user_score<C>();
    }
  }

  // Split-KV: the tile's counter in prm.split_counters, [query tile from
  // the last, sequence, head slot] over the grid (gridDim.x / num_splits
  // tiles; the host sizes them in split_plan). The blocks of one tile's
  // parts count there (epilogue.cuh's last_part).
  __device__ __forceinline__ int split_counter() const {
    return (tile_x * static_cast<int>(gridDim.z) + seq) * static_cast<int>(gridDim.y) +
           static_cast<int>(blockIdx.y);
  }

  // Split-KV: this block takes part x of the tile's key range (set_tile
  // first); false when the range has fewer parts (split_keys in
  // tile_config.cuh).
  // A walk that skips empty tiles splits the tiles it visits instead: part
  // x takes the visited tiles [x per, (x + 1) per) of the range, so a mask
  // whose visible tiles are a few runs (sink tokens and a window) spreads
  // them over the parts rather than leaving most parts empty. Every block
  // of the tile counts the same classes, so all agree on the parts.
  __device__ __forceinline__ bool set_split(const Params<T>& prm, int x, int num_splits,
                                            int min_tiles) {
    if constexpr (kSkipsEmpty) {
      const WalkSplit ws = split_walk(range.first_tile, range.last_tile, x, num_splits, min_tiles,
                                      [&](int kt) { return user_class(prm, kt) != 0; });
      if (x >= ws.parts) return false;
      split = x;
      splits = ws.parts;
      range.first_tile = ws.first;
      range.last_tile = ws.last;
      return true;
    }
    const KeySplit ks = split_keys(range.first_tile, range.last_tile, num_splits, min_tiles);
    if (x >= ks.parts) return false;
    split = x;
    splits = ks.parts;
    if (ks.parts > 1) {
      range.first_tile += x * ks.per;
      range.last_tile = ptx::imin(range.last_tile, range.first_tile + ks.per - 1);
      // (A folded mask's full keys do not depend on the range.)
      if constexpr (user_mask<C>() && !user_mask_in_row_keys<C>() && !kSkipsEmpty) {
        note_full_tiles(prm);
      }
    }
    return true;
  }

  // A row's keys narrowed to [first, last] (key_bounds' range) on the
  // sides kBelow / kAbove only: a side the bounds leave keeps its built-in
  // value and costs no compare per key.
  template <bool kBelow, bool kAbove>
  __device__ __forceinline__ void narrow(typename Mask<C>::RowKeys& keys, long long first,
                                         long long last) const {
    if constexpr (kBelow) keys.lo = ptx::imax(keys.lo, first_key_of(first));
    if constexpr (kAbove) keys.hi = ptx::imin(keys.hi, last_key_of(last));
  }

  // Per query row, once: the keys it sees (edge-tile masks) and its sink
  // logit in base 2. A spec's mask whose bounds are exact for one row
  // (user_mask_in_row_keys) is folded into the row's key range here, so
  // the edge tiles test no key against it and its row values need not
  // live through the key loop; so are the conjuncts of a mask that are
  // (user_row_keys_folded), whose keys then test the rest.
  __device__ __forceinline__ void row_setup(const Params<T>& prm, int row,
                                            typename Mask<C>::RowKeys& keys, float& sink2) const {
    const int p = map.position(row) + shift;
    int span_lo, span_hi;
    mask.span_of(p, span_lo, span_hi);
    keys = mask.row_keys(p, span_lo, span_hi);
    if constexpr (user_mask_in_row_keys<C>()) {
      const int h = map.head(row);
      long long first = 0, last = static_cast<long long>(n_k) - 1;
      UserOf<C>::key_bounds(prm, seq, h, h, p, p, n_q, n_k, first, last);
      narrow<UserOf<C>::key_bounds_below, UserOf<C>::key_bounds_above>(keys, first, last);
    }
    if constexpr (user_row_keys_folded<C>()) {
      // The mask's conjuncts that are one row's key range (the keys then
      // test only the rest of the mask, mask_rest()).
      long long first = 0, last = static_cast<long long>(n_k) - 1;
      UserOf<C>::row_key_bounds(prm, seq, map.head(row), hk, p, n_q, n_k, first, last);
      narrow<UserOf<C>::row_key_bounds_below, UserOf<C>::row_key_bounds_above>(keys, first, last);
    }
    if constexpr (user_row_values<C>()) {
      keys.user = UserRowOf<C>::make(prm, seq, map.head(row), hk, p, n_q, n_k);
    }
    sink2 = Sinks<C>::logit2(prm.sinks, map.head(row));
  }
};

// The tile of cell (x, y, b) of the launch grid (grid_shape): x counts
// query tiles from the last (with split-KV, num_splits cells per tile, one
// per part of its keys), y is a head slot (a kv head when packing GQA,
// else a query head), b the sequence. False when the cell has no tile
// (the grid covers the longest sequence).
template <class C, int kBlockM, int kBlockN>
__device__ __forceinline__ bool tile_at(const Params<typename C::dtype>& prm,
                                        WorkTile<C, kBlockM, kBlockN>& work, int x, int y, int b) {
  constexpr bool kPack = C::pack_gqa != 0;
  const int hk =
      kPack ? y : static_cast<int>(divide_by_magic(static_cast<unsigned>(y), prm.gqa_group_magic));
  work.set_sequence(prm, b, hk, y);
  if constexpr (C::split_kv) {
    // Each query tile is split over its keys: cell x is part
    // x % num_splits of tile x / num_splits from the last.
    if (prm.num_splits > 1) {
      constexpr int kMinTiles =
          C::split_keys > kBlockN ? (C::split_keys + kBlockN - 1) / kBlockN : 1;
      const int from_last = x / prm.num_splits;
      const int m_tile = work.m_tiles() - 1 - from_last;
      if (m_tile < 0) return false;
      work.set_tile(prm, b, m_tile);
      work.tile_x = from_last;
      return work.set_split(prm, x - from_last * prm.num_splits, prm.num_splits, kMinTiles);
    }
  }
  const int m_tile = work.m_tiles() - 1 - x;
  if (m_tile < 0) return false;
  work.set_tile(prm, b, m_tile);
  return true;
}

// A block per cell of the launch grid.
template <class C, int kBlockM, int kBlockN>
struct TileScheduler {
  using Work = WorkTile<C, kBlockM, kBlockN>;

  // This block's tile; false when its cell has none.
  static __device__ __forceinline__ bool get(const Params<typename C::dtype>& prm, Work& work) {
    return tile_at(prm, work, static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y),
                   static_cast<int>(blockIdx.z));
  }
};

}  // namespace attention
}  // namespace attnjit

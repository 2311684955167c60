// Where a work tile's keys and values come from, apart from how a mainloop
// consumes them: the varlen layout, in which a sequence's keys are rows
// [k_begin, k_begin + n_k) of k and v ([total_k, Hkv, D] at the args' row
// and head strides; the work tile holds the first row's address of its kv
// head). Each path copies key tile kt its own way: cp.async into padded
// rows, zero-filled past the sequence's keys (mma.sync), or TMA boxes into
// swizzled tiles through the maps the runtime encodes (wgmma). A K/V cache
// in another layout (pages) is another source type with the same members.
#pragma once

#include "attention/page_window.cuh"
#include "attention/params.cuh"
#include "attention/tile_config.cuh"
#include "attention/tile_io.cuh"
#include "common/fp8.cuh"
#include "common/ptx.cuh"
#include "common/tma.cuh"
#include "common/types.cuh"

namespace attnjit {
namespace attention {

// The bytes of one raw fp8 row a TMA box holds: the decode block's
// swizzled row (TileConfig::tma_chunk, 64 or 128), else fp8_raw_chunk's
// unswizzled chunk; runtime/src/kv_tensor_maps.cpp encodes the same box.
template <class C>
__device__ constexpr int fp8_box_bytes() {
  constexpr TileConfig kTile = tile_config<C>();
  return kTile.mma_decode ? kTile.tma_chunk : fp8_raw_chunk(C::head_dim);
}

// fp8 K/V (kv_dtype = fp8_e4m3): rows of D bytes, converted to T on the
// way into the tiles the MMAs read (exactly: every e4m3 value is a T). A
// source gives each key row's address through row8(is_v, j); rows at or
// past the sequence's keys become zeros. The mma.sync path converts while
// it copies (plain loads, then stores into padded rows); on the warpgroup
// path the sources' tma_stage_fp8 copies raw tiles into a staging ring and
// the producer converts them into the swizzled tiles (mainloop_sm90.cuh).
template <class C>
struct Fp8Tiles {
  using T = typename C::dtype;
  using Byte = unsigned char;
  static constexpr int D = C::head_dim;
  static constexpr int BN = C::block_n;
  static constexpr int kUnits = D / 16;  // 16-byte units of an fp8 row
  static_assert(D % 16 == 0, "fp8 K/V: head dim must be a multiple of 16");
  // A staged raw tile: rows of D bytes, or past 256 bytes [chunk][row][256]
  // (fp8_raw_chunk: one TMA box per chunk).
  static constexpr int kRawChunk = fp8_raw_chunk(D);
  static_assert(D % kRawChunk == 0, "fp8 K/V: whole 256-byte chunks of a row");
  static __device__ __forceinline__ unsigned raw_offset(int r, int byte) {
    return static_cast<unsigned>((byte / kRawChunk) * BN * kRawChunk + r * kRawChunk +
                                 byte % kRawChunk);
  }

  // Key tile kt of K (or V) into padded rows of T, spread over kThreads.
  template <int kThreads, class Source>
  static __device__ __forceinline__ void load_padded(T* tile, const Source& kv, bool is_v, int kt,
                                                     int tid) {
    constexpr int kTotal = BN * kUnits;
    constexpr int kStride = SmemRow<D>::kStride;
#pragma unroll 4
    for (int c = tid; c < kTotal; c += kThreads) {
      const int r = c / kUnits;
      const int u = c % kUnits;
      const int j = kt * BN + r;
      uint4_t in{0u, 0u, 0u, 0u};
      if (j < kv.n_k) in = ptx::ld_global_nc_16(kv.row8(is_v, j) + 16 * u);
      uint4_t lo, hi;
      fp8::e4m3x16_to<T>(in, lo, hi);
      uint4_t* dst = reinterpret_cast<uint4_t*>(tile + r * kStride + 16 * u);
      dst[0] = lo;
      dst[1] = hi;
    }
  }

  // A staged raw tile into the swizzled tile of T at `tile` (Rows: the
  // warpgroup layout, SwizzledRows<D>).
  template <int kThreads, class Rows>
  static __device__ __forceinline__ void convert_swizzled(unsigned staging, unsigned tile,
                                                          int tid) {
    constexpr int kTotal = BN * kUnits;
#pragma unroll 4
    for (int c = tid; c < kTotal; c += kThreads) {
      const int r = c / kUnits;
      const int u = c % kUnits;
      uint4_t in;
      if constexpr (kRawChunk == D) {
        in = ptx::ld_shared_16(staging + static_cast<unsigned>(r * D + 16 * u));
      } else {
        in = ptx::ld_shared_16(staging + raw_offset(r, 16 * u));
      }
      uint4_t lo, hi;
      fp8::e4m3x16_to<T>(in, lo, hi);
      ptx::st_shared_16(tile + Rows::template offset<BN>(r, 2 * u), lo);
      ptx::st_shared_16(tile + Rows::template offset<BN>(r, 2 * u + 1), hi);
    }
  }
};

template <class C>
struct VarlenKV {
  using T = typename C::dtype;
  static constexpr int D = C::head_dim;
  static constexpr int DV = value_dim<C>();  // V's rows (head_dim_v)
  static constexpr int BN = C::block_n;
  // Its V boxes are whole tiles' chunks: V's tile is one block (small_pages
  // is for a paged cache, as the spec's constraint says too).
  static_assert(tile_config<C>().v_block_rows == BN, "small_pages needs kv_layout paged");
  // Whether producer thread `ptid` (of the producer warpgroups) issues the
  // TMA copies: the first alone (a tile is D / tma_chunk boxes at one
  // address).
  static __device__ __forceinline__ bool issues_copies(int ptid) { return ptid == 0; }
  // The copying threads' state across tiles (PagedKV's window on the block
  // table); none here.
  struct Pages {};

  const T* k;  // the sequence's first k row of kv head hk (the work tile's)
  const T* v;
  long long k_row_stride, v_row_stride;
  int n_k;                         // the sequence's keys
  int k_begin, hk;                 // the TMA maps' row and head coordinates
  const TensorMap *k_map, *v_map;  // [rows, heads, D], boxes of one swizzle chunk
  const unsigned char *k8, *v8;    // fp8: the sequence's first row of head hk, in bytes

  template <class Work>
  __device__ __forceinline__ VarlenKV(const Params<T>& prm, const Work& work)
      : k(work.k),
        v(work.v),
        k_row_stride(prm.k_row_stride),
        v_row_stride(prm.v_row_stride),
        n_k(work.n_k),
        k_begin(work.k_begin),
        hk(work.hk),
        k_map(&prm.k_map),
        v_map(&prm.v_map),
        k8(reinterpret_cast<const unsigned char*>(prm.k) + work.k_begin * prm.k_row_stride +
           work.hk * prm.k_head_stride),
        v8(reinterpret_cast<const unsigned char*>(prm.v) + work.k_begin * prm.v_row_stride +
           work.hk * prm.v_head_stride) {}

  // fp8: key row j's bytes (Fp8Tiles).
  __device__ __forceinline__ const unsigned char* row8(bool is_v, int j) const {
    return is_v ? v8 + j * v_row_stride : k8 + j * k_row_stride;
  }

  // cp.async of key tile kt of K (or V) into padded shared rows (SmemRow),
  // spread over kThreads threads (fp8: converting loads).
  template <int kThreads>
  __device__ __forceinline__ void load_k_async(T* tile, int kt, int tid) const {
    if constexpr (fp8_kv<C>()) {
      Fp8Tiles<C>::template load_padded<kThreads>(tile, *this, false, kt, tid);
    } else {
      load_tile_async<BN, D, kThreads>(tile, k, k_row_stride, kt * BN, n_k, tid);
    }
  }
  template <int kThreads>
  __device__ __forceinline__ void load_v_async(T* tile, int kt, int tid) const {
    static_assert(DV == D, "mma.sync: v as wide as k");
    if constexpr (fp8_kv<C>()) {
      Fp8Tiles<C>::template load_padded<kThreads>(tile, *this, true, kt, tid);
    } else {
      load_tile_async<BN, D, kThreads>(tile, v, v_row_stride, kt * BN, n_k, tid);
    }
  }

  __device__ __forceinline__ void prefetch_maps() const {
    ptx::prefetch_tensor_map(k_map);
    ptx::prefetch_tensor_map(v_map);
  }

  // TMA of key tile kt of K (or V) into the swizzled tile at shared address
  // `tile`, as D / tma_chunk boxes whose bytes complete the phase of the
  // mbarrier `full`. Issued by the one copying thread (issues_copies), so
  // `lane` is always 0. Whole boxes: the rows past the sequence's keys
  // arrive too (the next sequence's, or zeros past the tensor).
  __device__ __forceinline__ void tma_load_k(unsigned tile, unsigned full, int kt, int,
                                             Pages&) const {
    tma_load<D>(k_map, tile, full, kt);
  }
  __device__ __forceinline__ void tma_load_v(unsigned tile, unsigned full, int kt, int,
                                             Pages&) const {
    tma_load<DV>(v_map, tile, full, kt);
  }

  // fp8: TMA of key tile kt of K and of V as raw rows of D bytes (one box
  // each, the maps' element a byte) at shared addresses raw_k and raw_v,
  // completing the phase of `bar`; rows past the tensor arrive as zeros.
  // Issued by the one copying thread, as tma_load_k.
  __device__ __forceinline__ void tma_stage_fp8(unsigned raw_k, unsigned raw_v, unsigned bar,
                                                int kt, int, Pages&) const {
    const int row = k_begin + kt * BN;
    ptx::mbarrier_arrive_expect_tx(bar, 2u * unsigned(BN * D));
    constexpr int kChunk = fp8_box_bytes<C>();
#pragma unroll
    for (int c = 0; c < D / kChunk; ++c) {
      const unsigned at = static_cast<unsigned>(c * BN * kChunk);
      ptx::tma_load_3d(raw_k + at, k_map, bar, c * kChunk, hk, row);
      ptx::tma_load_3d(raw_v + at, v_map, bar, c * kChunk, hk, row);
    }
  }

 private:
  // (kWidth: the tensor's row, D of K or DV of V.)
  template <int kWidth>
  __device__ __forceinline__ void tma_load(const TensorMap* map, unsigned tile, unsigned full,
                                           int kt) const {
    constexpr TileConfig kTile = tile_config<C>();
    const int row = k_begin + kt * BN;
    ptx::mbarrier_arrive_expect_tx(full, kWidth == D ? kTile.kv_tile_bytes : kTile.v_tile_bytes);
#pragma unroll
    for (int c = 0; c < kWidth / kTile.tma_chunk; ++c) {
      ptx::tma_load_3d(tile + c * kTile.tma_box_bytes, map, full, c * kTile.tma_chunk, hk, row);
    }
  }
};

// An engine's paged cache (kv_layout = paged): key position j of the
// sequence is row j % page_size of page block_table[seq, j / page_size],
// pages [page_size, Hkv, D] at the args' page, row and head strides. Only
// pages that hold the sequence's keys are read: the table's entries past
// them may hold anything.
template <class C>
struct PagedKV {
  using T = typename C::dtype;
  static constexpr int D = C::head_dim;
  static constexpr int DV = value_dim<C>();  // V's rows (head_dim_v)
  static constexpr int BN = C::block_n;
  // The first producer warp, every lane of it (its lanes hold the window
  // on the block table; one elected lane issues the copies: for_each_box).
  static __device__ __forceinline__ bool issues_copies(int ptid) { return ptid < 32; }

  // The producer warp's window on the sequence's row of the block table,
  // kept across its tiles (page_window.cuh), so a tile's lookups are
  // shuffles of entries loaded 32 pages before they are needed, not loads
  // from memory that its copies wait for.
  using Pages = PageWindow;

  const T* k;  // kv head hk of page 0
  const T* v;
  long long k_row_stride, v_row_stride, k_page_stride, v_page_stride;
  const int* table;  // the sequence's row of the block table
  int page_size;
  int page_shift;  // log2 of a page size that is a power of two, else -1
  int n_k, hk;
  int n_pages;  // the pages that hold the sequence's keys (the table's entries read)
  // [pages, rows of a page, heads, D] (D innermost); small_pages' v_map:
  // [pages, heads, swizzle chunks of D, rows of a page, chunk columns].
  const TensorMap *k_map, *v_map;
  const unsigned char *k8, *v8;  // fp8: head hk of page 0, in bytes

  template <class Work>
  __device__ __forceinline__ PagedKV(const Params<T>& prm, const Work& work)
      : k(prm.k + work.hk * prm.k_head_stride),
        v(prm.v + work.hk * prm.v_head_stride),
        k_row_stride(prm.k_row_stride),
        v_row_stride(prm.v_row_stride),
        k_page_stride(prm.k_page_stride),
        v_page_stride(prm.v_page_stride),
        table(prm.block_table + work.seq * prm.block_table_stride),
        page_size(prm.page_size),
        page_shift((prm.page_size & (prm.page_size - 1)) == 0 ? __ffs(prm.page_size) - 1 : -1),
        n_k(work.n_k),
        hk(work.hk),
        n_pages((work.n_k + prm.page_size - 1) / prm.page_size),
        k_map(&prm.k_map),
        v_map(&prm.v_map),
        k8(reinterpret_cast<const unsigned char*>(prm.k) + work.hk * prm.k_head_stride),
        v8(reinterpret_cast<const unsigned char*>(prm.v) + work.hk * prm.v_head_stride) {}

  // fp8: key row j's bytes, from its page (Fp8Tiles).
  __device__ __forceinline__ const unsigned char* row8(bool is_v, int j) const {
    const long long page = table[j / page_size];
    const long long row = j % page_size;
    return is_v ? v8 + page * v_page_stride + row * v_row_stride
                : k8 + page * k_page_stride + row * k_row_stride;
  }

  // cp.async of key tile kt, each row from its page; rows past the
  // sequence's keys become zeros and their pages are not looked up (fp8:
  // converting loads).
  template <int kThreads>
  __device__ __forceinline__ void load_k_async(T* tile, int kt, int tid) const {
    if constexpr (fp8_kv<C>()) {
      Fp8Tiles<C>::template load_padded<kThreads>(tile, *this, false, kt, tid);
    } else {
      load_rows<kThreads>(tile, k, k_row_stride, k_page_stride, kt, tid);
    }
  }
  template <int kThreads>
  __device__ __forceinline__ void load_v_async(T* tile, int kt, int tid) const {
    static_assert(DV == D, "mma.sync: v as wide as k");
    if constexpr (fp8_kv<C>()) {
      Fp8Tiles<C>::template load_padded<kThreads>(tile, *this, true, kt, tid);
    } else {
      load_rows<kThreads>(tile, v, v_row_stride, v_page_stride, kt, tid);
    }
  }

  __device__ __forceinline__ void prefetch_maps() const {
    ptx::prefetch_tensor_map(k_map);
    ptx::prefetch_tensor_map(v_map);
  }

  // TMA of key tile kt: boxes of paged_box_rows(block_n, page_size) rows,
  // each inside one page (the runtime encodes the maps' boxes so; issued
  // by for_each_page).
  // Boxes past the sequence's last page are not issued, and the barrier
  // expects only the bytes issued; their rows keep stale data, which the
  // consumers mask (K) or zero (V, the tail tile) like any row past the
  // sequence's keys.
  // Every lane of the producer warp calls these (the window's shuffles).
  __device__ __forceinline__ void tma_load_k(unsigned tile, unsigned full, int kt, int lane,
                                             Pages& pages) const {
    tma_load<D>(k_map, tile, full, kt, lane, pages);
  }
  // small_pages (TileConfig::v_block_rows below block_n): V in blocks of
  // v_block_rows keys (BlockedRows, smem_sm90.cuh), each one box of all of
  // D through the 5-D map [pages, heads, swizzle chunks, rows of a page,
  // chunk columns]. Every page size is a multiple of the block's 16 rows,
  // so a block lies inside one page.
  __device__ __forceinline__ void tma_load_v(unsigned tile, unsigned full, int kt, int lane,
                                             Pages& pages) const {
    constexpr TileConfig kTile = tile_config<C>();
    if constexpr (kTile.v_block_rows < BN) {
      const int j0 = kt * BN;
      for_each_box(full, 2u * unsigned(DV), j0, tile_boxes_of(BN, kTile.v_block_rows, j0, n_k),
                   lane, pages, [&](int row, int in_page, int page) {
                     ptx::tma_load_5d(tile + static_cast<unsigned>(row * DV * 2), v_map, full, 0,
                                      in_page, 0, hk, page);
                   });
    } else {
      tma_load<DV>(v_map, tile, full, kt, lane, pages);
    }
  }

  // fp8: TMA of key tile kt of K and of V as raw rows of D bytes, a box
  // per page the tile spans (as tma_load), each page looked up once for
  // both; boxes past the sequence's last page are not issued (their rows
  // keep stale bytes: masked in K, zeroed in V after conversion).
  __device__ __forceinline__ void tma_stage_fp8(unsigned raw_k, unsigned raw_v, unsigned bar,
                                                int kt, int lane, Pages& pages) const {
    constexpr int kChunk = fp8_box_bytes<C>();
    for_each_page(bar, 2u * unsigned(D), kt, lane, pages, [&](int row, int in_page, int page) {
#pragma unroll
      for (int c = 0; c < D / kChunk; ++c) {
        const unsigned offset = static_cast<unsigned>(c * BN * kChunk + row * kChunk);
        ptx::tma_load_4d(raw_k + offset, k_map, bar, c * kChunk, hk, in_page, page);
        ptx::tma_load_4d(raw_v + offset, v_map, bar, c * kChunk, hk, in_page, page);
      }
    });
  }

 private:
  // The page of page index `index` in [w.base, w.base + 64), the same in
  // every lane (`index` is): one shuffle from the lane that holds it, of
  // the entry chosen first (entries loaded before this tile:
  // page_window.cuh).
  static __device__ __forceinline__ int window_page(const Pages& w, int index) {
    const WindowSlot slot = window_slot(w.base, index);
    return __shfl_sync(0xffffffffu, slot.in_next ? w.next : w.cur, slot.lane);
  }

  // The boxes of key tile kt (every lane of the producer warp calls it):
  // one elected lane first sets the bytes the barrier `bar` expects
  // (`row_bytes` per row issued), then issues each box b as issue(first
  // row of the box in the tile, its row in the page, the page), the page
  // shuffled from the window's lane that holds it, a lane every lane
  // agrees on, so the TMA's coordinates are warp-uniform and ptxas issues
  // each box as it is, not as a loop over lanes that hold different
  // pages. The table's entries past the sequence's pages are never read
  // (its row may end there).
  template <class Issue>
  __device__ __forceinline__ void for_each_page(unsigned bar, unsigned row_bytes, int kt, int lane,
                                                Pages& pages, Issue issue) const {
    const int j0 = kt * BN;
    for_each_box(bar, row_bytes, j0, tile_boxes(BN, page_size, j0, n_k), lane, pages, issue);
  }

  // The same for the boxes `t` of the tile whose first key is j0 (each
  // inside one page).
  template <class Issue>
  __device__ __forceinline__ void for_each_box(unsigned bar, unsigned row_bytes, int j0,
                                               const TileBoxes& t, int lane, Pages& pages,
                                               Issue issue) const {
    static_assert(BN / 16 <= 32, "a tile's boxes span at most 32 pages (page_window.cuh)");
    // The divisions by the page size and the box rows are shifts where
    // those are powers of two (the box rows always are with a key tile
    // that is one; page sizes mostly are).
    int index = page_shift >= 0 ? j0 >> page_shift : j0 / page_size;
    int in_page = j0 - index * page_size;
    window_to(pages, index, lane, n_pages, [this](int i) { return table[i]; });
    int boxes = t.boxes;
    if constexpr ((BN & (BN - 1)) == 0) {
      const int left = (n_k - j0 + t.rows - 1) >> (__ffs(t.rows) - 1);
      boxes = BN / t.rows < left ? BN / t.rows : left;
    }
    const bool leader = ptx::elect_one_sync();
    if (leader) {
      ptx::mbarrier_arrive_expect_tx(bar, static_cast<unsigned>(boxes * t.rows) * row_bytes);
    }
    // Box b's key is box_key(t, j0, b); its page index and row in the page
    // step on from the first box's (the boxes' rows divide the page size),
    // with no division per box.
#pragma unroll
    for (int b = 0; b < BN / 16; ++b) {
      if (b < boxes) {
        const int page = window_page(pages, index);
        if (leader) issue(b * t.rows, in_page, page);
        in_page += t.rows;
        if (in_page == page_size) {
          in_page = 0;
          ++index;
        }
      }
    }
  }

  template <int kThreads>
  __device__ __forceinline__ void load_rows(T* tile, const T* base, long long row_stride,
                                            long long page_stride, int kt, int tid) const {
    const int row0 = kt * BN;
    load_rows_async<BN, D, kThreads>(
        tile,
        [&](int r, const T*& src) {
          const int j = row0 + r;
          const bool valid = j < n_k;
          src = valid ? base + static_cast<long long>(table[j / page_size]) * page_stride +
                            (j % page_size) * row_stride
                      : base;
          return valid;
        },
        tid);
  }

  // (kWidth: the tensor's row, D of K or DV of V.)
  template <int kWidth>
  __device__ __forceinline__ void tma_load(const TensorMap* map, unsigned tile, unsigned full,
                                           int kt, int lane, Pages& pages) const {
    constexpr TileConfig kTile = tile_config<C>();
    for_each_page(full, 2u * unsigned(kWidth), kt, lane, pages, [&](int row, int in_page, int page) {
      const unsigned dst = tile + static_cast<unsigned>(row * kTile.swizzle_bytes);
#pragma unroll
      for (int c = 0; c < kWidth / kTile.tma_chunk; ++c) {
        ptx::tma_load_4d(dst + c * kTile.tma_box_bytes, map, full, c * kTile.tma_chunk, hk,
                         in_page, page);
      }
    });
  }
};

// The source a variant reads its keys and values from.
template <class C, bool kPaged = paged_kv<C>()>
struct KVSourceOf {
  using type = VarlenKV<C>;
};
template <class C>
struct KVSourceOf<C, true> {
  using type = PagedKV<C>;
};
template <class C>
using KVSource = typename KVSourceOf<C>::type;

}  // namespace attention
}  // namespace attnjit

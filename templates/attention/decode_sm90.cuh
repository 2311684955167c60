// The decode block on sm_90a (tuning param decode_mma, TileConfig::
// mma_decode: split-KV, D 64 or 128, swapped also 256, 384 and 512), for
// an fp8 (e4m3) K/V cache above
// all. A decode's work tile has a few packed rows (the query heads of one
// kv head) and many keys, so the block spends its time moving K/V, not
// multiplying: the converting producer of the warpgroup path (raw tile ->
// producer converts into a second ring -> wgmma) made that a chain of
// hand-offs per tile, and the H200 showed the consumers waiting for
// converted K while the converters waited for each other, slower than
// bf16 for half the bytes (a profile of 64 x 8k D128 paged:
// bench/results/2026-12-01-h200-91ec9f4-ncu-decode-attnjit_paged_fp8.txt).
// Here nothing is converted in shared memory:
//
// - One producer warp copies each key tile's K and V by TMA into a ring of
//   kStages stages, swizzled (e4m3: as a tile of D / 2 16-bit elements, the
//   TMA's 64 or 128-byte swizzle; DecodeLayout), which makes every ldmatrix
//   below conflict-free. A stage's "staged" mbarrier completes with its
//   bytes, its "empty" one with the release of every warp that read it.
// - The consumer warps split the rows into groups of 16 (g = ceil(rows /
//   16)) and the key tiles among the warps of a group (phases = warps /
//   g): warp w has the rows of group w % g and the tiles t with (t - first)
//   % phases == w / g. Each reads its tile's fragments with ldmatrix and
//   runs m16n8k16 MMAs with fp32 accumulation. e4m3 fragments are
//   converted in registers (cvt e4m3x2 -> f16x2, exact) and the MMAs are
//   fp16: Q is scaled per row by a power of two into fp16's range (exact
//   but for elements below 2^-28 of the row's largest), P is in [0, 1], V
//   is exact. 16-bit K/V are used as they are, in q's type.
// - e4m3 Q K^T: a K fragment from ldmatrix holds 4 consecutive bytes of D,
//   so the MMA's reduction index k of step u is D element 16u + 4(k / 2 %
//   4) + 2(k / 8) + k % 2, and Q's fragments are stored in the same order
//   (a reduction may be summed in any order). e4m3 P V: ldmatrix.trans
//   gives each thread two keys of two adjacent D columns; one byte permute
//   splits them, so n8 block 2u of O holds D columns 16u + 2n and block
//   2u + 1 columns 16u + 2n + 1. The parts are written back in D order.
// - At the end the warps of a group combine (max, sum and output of each
//   phase, through shared memory over the ring) and the group's first warp
//   runs the shared epilogue for its 16 rows (split-KV parts included).
// Masks, sinks, soft-cap, spans and a spec's expressions come from the
// same pieces as the other paths (the m16n8 fragment layout of S is the
// standard one; decode_mma 2 swaps the products, DecodeSwapLayout, in
// decode_swap_sm90.cuh, and the pieces take its fragments by their
// kSwapped option).
#pragma once

#include "attention/decode_layout.cuh"
#include "attention/decode_swap_sm90.cuh"
#include "attention/logits.cuh"
#include "attention/mask.cuh"
#include "attention/params.cuh"
#include "attention/sinks.cuh"
#include "attention/smem_sm90.cuh"
#include "attention/softmax.cuh"
#include "attention/tile_config.cuh"
#include "common/fp8.cuh"
#include "common/ptx.cuh"
#include "common/tma.cuh"
#include "common/types.cuh"

namespace attnjit {
namespace attention {

// The 16-bit type the decode block's MMAs take: fp16 over e4m3 K/V, else
// q's.
template <bool kFp8Kv, class T>
struct DecodeMmaType {
  using type = T;
};
template <class T>
struct DecodeMmaType<true, T> {
  using type = types::fp16;
};

template <class C, class KV>
struct DecodeSm90 {
  using T = typename C::dtype;
  static constexpr TileConfig kTile = tile_config<C>();
  static constexpr int D = C::head_dim;
  static_assert(value_dim<C>() == D, "the decode block: v as wide as k");
  static constexpr int BM = C::block_m;
  static constexpr int BN = C::block_n;
  static constexpr int kWarps = C::warps;
  static constexpr int kConsumerThreads = kWarps * 32;
  static constexpr int kStages = kTile.raw_stages;
  static constexpr int kScoreBlocks = BN / 8;
  static constexpr int kOutBlocks = D / 8;
  static constexpr bool kFp8 = fp8_kv<C>();  // e4m3 K/V, converted in registers; else q's type
  static constexpr int kSteps = D / 16;      // k16 steps of Q K^T (Q's 8-byte words per row)
  static constexpr unsigned kTileBytes = unsigned(BN * D * (kFp8 ? 1 : 2));  // one K (or V) tile
  static constexpr int kRowFloats = D + 4;                       // a part's output row (padded)
  static constexpr unsigned kQTileBytes = unsigned(16 * D * 2);  // a warp's rows of Q, 16-bit
  // The combine and epilogue in passes of kSliceCols columns of O
  // (decode_out_slice: all of D up to 128).
  static constexpr int kSliceCols = decode_out_slice(D);
  static constexpr int kSlices = D / kSliceCols;
  static constexpr int kSliceBlocks = kSliceCols / 8;
  // e4m3 K/V multiply in fp16 (exact for e4m3): bf16 q is scaled into
  // fp16's range. 16-bit K/V multiply in q's type.
  static constexpr bool kScaleQ = kFp8 && element<T>::is_bf16;
  static constexpr bool kMmaBF16 = !kFp8 && element<T>::is_bf16;
  using MmaT = typename DecodeMmaType<kFp8, T>::type;
  using Layout = DecodeLayout<D, BN, kFp8 ? 1 : 2>;
  // decode_mma 2: the products swapped (DecodeSwapLayout): keys and D as M,
  // the work tile's <= 8 rows as N, its own softmax over those fragments.
  static constexpr bool kSwap = kTile.mma_decode_swap;
  using Swap = DecodeSwapLayout<D, BN, kFp8 ? 1 : 2>;
  // A row group's rows: 16 (a warp's m16 tiles), swapped 8 (its n8 block).
  static constexpr int kGroupRows = decode_group_rows(kSwap);
  using KvSourceType = KV;
  using Softmax = OnlineSoftmax<kScoreBlocks, kOutBlocks, false>;
  // The key loop's fragment blocks (scores, output) and softmax: the
  // standard m16n8 ones, or swapped (Softmax's layout again in the parts).
  static constexpr int kLoopScores = kSwap ? Swap::kKeyTiles : kScoreBlocks;
  static constexpr int kLoopOut = kSwap ? Swap::kOutTiles : kOutBlocks;
  using LoopSoftmax = OnlineSoftmax<kLoopScores, kLoopOut, false, kSwap>;
  // The swapped products (decode_swap_sm90.cuh).
  using SwapProducts = DecodeSwapProducts<DecodeSm90>;
  using RowKeys = typename Mask<C>::RowKeys;
  static_assert(kTile.mma_decode, "the decode block is TileConfig::mma_decode's");
  static_assert(kTile.smem_bytes <= kMaxSmemPerBlockSm90,
                "decode block: the ring, the Q tiles and the barriers need more shared memory "
                "than a block may have (227 KiB): fewer stages (they round up to a multiple of "
                "the warps) or a shorter key tile");
  static_assert(BN % 16 == 0 && kSteps % 2 == 0, "decode block: 16-key steps, pairs of units");
  static_assert(kStages % kWarps == 0, "decode block: the ring's stages a multiple of the warps");
  static_assert(Layout::kRawSwizzle == kTile.swizzle_bytes,
                "the raw tiles' swizzle is the TMA box's (tile_config.cuh)");
  static_assert(decode_part_bytes(D) == unsigned(4 * (4 * 32 + 16 * kRowFloats)),
                "a warp's part as tile_config.cuh counts it");
  static_assert(16 * SmemRow<D>::kStride * sizeof(T) <= decode_part_bytes(D),
                "the epilogue's staged rows fit the warp's part");
  static_assert(D % kSliceCols == 0 &&
                    (kSlices == 1 || 16 * SmemRow<D>::kStride * sizeof(T) <= decode_stage_bytes(D)),
                "the epilogue's passes cover D, and their staged rows fit a warp's region");

  // The ring from a 1024-byte aligned base: stage s holds K then V; the
  // parts overlay it at the end; the barriers follow (tile_config.cuh).
  struct Smem {
    unsigned char* raw;
    unsigned pad;
    unsigned base;

    __device__ __forceinline__ Smem(unsigned char* smem, unsigned address)
        : raw(smem), pad((1024u - (address & 1023u)) & 1023u), base(address + pad) {}
    __device__ __forceinline__ unsigned k(int i) const {
      return base + unsigned(i % kStages) * 2u * kTileBytes;
    }
    __device__ __forceinline__ unsigned v(int i) const { return k(i) + kTileBytes; }
    // Warp w's 16 rows of Q in the MMAs' 16-bit type, past the ring
    // (DecodeLayout::q_word).
    __device__ __forceinline__ unsigned q(int w) const {
      return base + 2u * unsigned(kStages) * kTileBytes + unsigned(w) * kQTileBytes;
    }
    __device__ __forceinline__ unsigned staged(int i) const {
      return base + kTile.barrier_offset + 8u * unsigned(i % kStages);
    }
    __device__ __forceinline__ unsigned empty(int i) const {
      return staged(i) + 8u * unsigned(kStages);
    }
    // Warp w's part: 4 x 32 floats (row max and sum of its lanes' two rows),
    // then 16 output rows of kRowFloats.
    __device__ __forceinline__ float* part(int w) const {
      return reinterpret_cast<float*>(raw + pad + w * decode_part_bytes(D));
    }
    // Where warp w's epilogue stages its 16-bit rows: over its own part
    // when one pass holds all of D (the combine has read it all then),
    // else a region of its own past every part (decode_stage_bytes).
    __device__ __forceinline__ T* stage(int w) const {
      if constexpr (kSlices == 1) return reinterpret_cast<T*>(part(w));
      return reinterpret_cast<T*>(raw + pad + kWarps * decode_part_bytes(D) +
                                  w * decode_stage_bytes(D));
    }
  };

  // The warps' tiles and the ring's parities (decode_layout.cuh).
  template <class Work>
  static __device__ __forceinline__ DecodeSchedule schedule_of(const Work& work) {
    return DecodeSchedule::of(work.row_end - work.row0, kWarps, kGroupRows);
  }

  // By one thread before the block's barrier.
  static __device__ __forceinline__ void init(const Smem& sm, const DecodeSchedule& schedule) {
#pragma unroll 1
    for (int st = 0; st < kStages; ++st) {
      // (16-bit K/V: the copies of K and of V each arrive with their bytes)
      ptx::mbarrier_init(sm.staged(st), kFp8 ? 1u : 2u);
      ptx::mbarrier_init(sm.empty(st), unsigned(schedule.groups));
    }
    ptx::fence_mbarrier_init();
  }

  // The producer warp's copying lanes (KV::issues_copies): the i-th tile
  // of the work tile's walk (tile_walk.cuh: every tile of its range, or,
  // with a spec's mask, those it does not leave empty) into stage
  // i % kStages once the warps that read the stage's previous tile
  // released it.
  template <class Work>
  static __device__ __forceinline__ void produce(const Smem& sm, const KV& kv,
                                                 const Params<T>& prm, const Work& work,
                                                 int lane) {
    if (lane == 0) kv.prefetch_maps();
    typename KV::Pages pages;
    typename Work::Walk walk;
#pragma unroll 1
    for (work.walk_start(prm, walk); walk.on(); work.walk_next(prm, walk)) {
      const int kt = walk.kt;
      const int i = walk.tile().i;
      if (i >= kStages) ptx::mbarrier_wait(sm.empty(i), DecodeSchedule::empty_parity(i, kStages));
      // The consumers' reads of the stage (generic proxy) before the TMA's
      // writes (async proxy).
      ptx::fence_proxy_async_shared();
      if constexpr (kFp8) {
        kv.tma_stage_fp8(sm.k(i), sm.v(i), sm.staged(i), kt, lane, pages);
      } else {
        kv.tma_load_k(sm.k(i), sm.staged(i), kt, lane, pages);
        kv.tma_load_v(sm.v(i), sm.staged(i), kt, lane, pages);
      }
    }
  }

  // Two e4m3 bytes (the low half of `two`) as an f16x2 pair.
  static __device__ __forceinline__ unsigned f16x2_of(unsigned two) {
    return fp8::e4m3x2_to<types::fp16>(static_cast<unsigned short>(two & 0xffffu));
  }

  struct Consumer {
    const Params<T>& prm;
    const Smem& sm;
    const int first, last;  // the work tile's key tiles
    const int tid, warp, lane;
    const int groups, phases;  // row groups of 16, and warps (phases) per group
    const int group, phase;    // this warp's
    int warp_row;              // its group's first row in the work tile

    __device__ __forceinline__ Consumer(const Params<T>& params, const Smem& smem, int first_tile,
                                        int last_tile, int thread, const DecodeSchedule& schedule)
        : prm(params),
          sm(smem),
          first(first_tile),
          last(last_tile),
          tid(thread),
          warp(thread / 32),
          lane(thread % 32),
          groups(schedule.groups),
          phases(schedule.phases),
          group(schedule.group(thread / 32)),
          phase(schedule.phase(thread / 32)) {}

    template <class Epilogue, class Work>
    __device__ __forceinline__ void run(const Work& work) {
      warp_row = work.row0 + kGroupRows * group;
      LoopSoftmax state;
      const bool active = phase < phases;  // (DecodeSchedule::active)
      float o[kLoopOut][4];
#pragma unroll
      for (int db = 0; db < kLoopOut; ++db) o[db][0] = o[db][1] = o[db][2] = o[db][3] = 0.f;
      state.init_empty();
      if (active) key_loop(work, state, o);
      ptx::named_barrier_sync(1, kConsumerThreads);  // every warp is done with the ring
      if (active) {
        if constexpr (kSwap) {
          SwapProducts::write_part(state, o, sm.part(warp), lane);
        } else {
          write_part(state, o);
        }
      }
      ptx::named_barrier_sync(1, kConsumerThreads);
      if (phase == 0) {
#pragma unroll 1
        for (int col0 = 0; col0 < D; col0 += kSliceCols) {
          Softmax softmax;
          float out[kSliceBlocks][4];
          combine(softmax, out, col0);
          __syncwarp();  // (one pass: the epilogue stages its rows over this warp's part)
          // Swapped, a group is 8 rows: the epilogue's 16 stop at its end
          // (the next group's rows are another warp's, or another block's).
          Work bounded = work;
          if constexpr (kSwap) bounded.map.rows = ptx::imin(work.map.rows, warp_row + kGroupRows);
          Epilogue::store(prm, bounded, softmax, out, sm.stage(warp), warp_row, lane, col0);
        }
      }
      Epilogue::finish_split(prm, work, tid, kConsumerThreads,
                             [] { ptx::named_barrier_sync(1, kConsumerThreads); });
    }

   private:
    // This warp's key tiles. Standard, its rows are g and g + 8 of its
    // group's 16; swapped, 2c and 2c + 1 of the work tile's <= 8
    // (DecodeSwapLayout).
    template <class Work>
    __device__ __forceinline__ void key_loop(const Work& work, LoopSoftmax& softmax,
                                             float (&o)[kLoopOut][4]) {
      float unscale[2];
      store_q(work, unscale);
      if constexpr (kSwap && kScaleQ) {
        // (store_q's factors are for rows g and g + 8: row 2c + i's is lane
        // 4 (2c + i)'s first.)
        const float mine = unscale[0];
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          unscale[i] = __shfl_sync(0xffffffffu, mine, 4 * (2 * (lane % 4) + i));
        }
      }
      RowKeys keys[2];
      float sink2[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        if constexpr (kSwap) {
          work.row_setup(prm, warp_row + 2 * (lane % 4) + r, keys[r], sink2[r]);
        } else {
          work.row_setup(prm, warp_row + lane / 4 + 8 * r, keys[r], sink2[r]);
        }
      }
      // The null logit once per row: in the first phase's state (the
      // combine adds the others), or in the split combine.
      Sinks<C>::template init<kSwap>(softmax, sink2, lane, work.splits == 1 && phase == 0);
      const float multiplier = LogitScale<C>::score_multiplier(score_scale<C>(prm));
      const int tail_tile = work.n_k % BN != 0 ? work.n_k / BN : -1;
      // The walk's tiles i with i % phases == phase. Without skipping, the
      // walk is every tile of the range, stepped through directly.
      const auto tile = [&](const KeyTile& t) {
        const int kt = t.kt, i = t.i;
        ptx::mbarrier_wait(sm.staged(i), DecodeSchedule::staged_parity(i, kStages));
        float s[kLoopScores][4];
        if constexpr (kSwap) {
          SwapProducts::scores(s, sm.k(i), sm.q(warp), lane);
        } else {
          scores(s, sm.k(i));
        }
        if constexpr (kScaleQ) {
#pragma unroll
          for (int nb = 0; nb < kLoopScores; ++nb) {
#pragma unroll
            for (int e = 0; e < 4; ++e) s[nb][e] *= unscale[kSwap ? e % 2 : e / 2];
          }
        }
        to_logits<C, kSwap>(s, prm, sink2, keys, kt * BN, work.edge_tile(prm, t),
                            work.score_tile(prm, kt), lane);
        softmax.update(s, o, multiplier);
        if (kt == tail_tile) {
          accumulate_tile<true>(o, s, sm.v(i), work.n_k - kt * BN);
        } else {
          accumulate_tile<false>(o, s, sm.v(i), BN);
        }
        __syncwarp();
        if (lane == 0) ptx::mbarrier_arrive(sm.empty(i));
      };
      if constexpr (Work::kSkipsEmpty) {
        typename Work::Walk walk;
#pragma unroll 1
        for (work.walk_start(prm, walk); walk.on(); work.walk_next(prm, walk)) {
          if (walk.i % phases == phase) tile(walk.tile());
        }
      } else {
#pragma unroll 1
        for (int kt = first + phase; kt <= last; kt += phases) tile(KeyTile{kt, kt - first, false});
      }
    }

    template <bool kTail>
    __device__ __forceinline__ void accumulate_tile(float (&o)[kLoopOut][4],
                                                    const float (&s)[kLoopScores][4], unsigned tile,
                                                    int valid) const {
      if constexpr (kSwap) {
        SwapProducts::template accumulate<kTail>(o, s, tile, valid, lane);
      } else {
        accumulate<kTail>(o, s, tile, valid);
      }
    }

    // Q's rows of this warp's group into its own tile, in the MMAs' type
    // and, over e4m3 K/V, in the reduction order of the K fragments
    // (DecodeLayout::q_position), so ldmatrix of the tile gives the A
    // fragments. Over e4m3 K/V bf16 rows are scaled by a power of two into
    // [2^14, 2^15) first (`unscale` undoes it on the scores). Rows past
    // the tile's are zero.
    template <class Work>
    __device__ __forceinline__ void store_q(const Work& work, float (&unscale)[2]) const {
      const int c = lane % 4;
      const unsigned tile = sm.q(warp);
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int row_in_tile = lane / 4 + 8 * r;
        const int row = warp_row + row_in_tile;
        // (Swapped: the tile's 8 rows only.)
        const bool valid = row < work.map.rows && (!kSwap || row_in_tile < 8);
        const T* src = work.q + (valid ? work.map.position(row) * prm.q_row_stride +
                                             work.map.head(row) * prm.q_head_stride
                                       : 0);
        unsigned words[kSteps][2];
#pragma unroll
        for (int u = 0; u < kSteps; ++u) {
          words[u][0] = words[u][1] = 0u;
          if (valid) {
            const uint2 w = *reinterpret_cast<const uint2*>(src + 16 * u + 4 * c);
            words[u][0] = w.x;
            words[u][1] = w.y;
          }
        }
        unscale[r] = 1.f;
        if constexpr (kScaleQ) {
          float largest = 0.f;
#pragma unroll
          for (int u = 0; u < kSteps; ++u) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              // |x| of both halves: the sign bits cleared
              largest = ptx::max(largest, __uint_as_float((words[u][h] << 16) & 0x7fff0000u));
              largest = ptx::max(largest, __uint_as_float(words[u][h] & 0x7fff0000u));
            }
          }
          largest = ptx::quad_max(largest);
          // (DecodeLayout::q_scale_bits: into [2^14, 2^15), and back.)
          const unsigned exponent = __float_as_uint(largest) >> 23;
          const float scale = __uint_as_float(Layout::q_scale_bits(exponent));
          unscale[r] = __uint_as_float(Layout::q_unscale_bits(exponent));
#pragma unroll
          for (int u = 0; u < kSteps; ++u) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              words[u][h] =
                  element<types::fp16>::pack(__uint_as_float(words[u][h] << 16) * scale,
                                             __uint_as_float(words[u][h] & 0xffff0000u) * scale);
            }
          }
        }
#pragma unroll
        for (int u = 0; u < kSteps; ++u) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            ptx::st_shared_4(tile + Layout::q_word(row_in_tile, 16 * u + 4 * c + 2 * h), words[u][h]);
          }
        }
      }
      __syncwarp();
    }

    // The A fragments of k16 step u from this warp's Q tile.
    __device__ __forceinline__ void load_qa(unsigned (&a)[4], int u) const {
      ptx::warp_ldmatrix_x4(a, sm.q(warp) + Layout::q_lane(lane, u));
    }

    // S = Q K^T of the K tile at `tile`. e4m3: an ldmatrix of four 8 x 8
    // blocks (keys 16 nb2 .. + 15 by units 2 kk2, 2 kk2 + 1) feeds four
    // MMAs; 16-bit: one of step kk feeds two (DecodeLayout::k_lane).
    __device__ __forceinline__ void scores(float (&s)[kScoreBlocks][4], unsigned tile) const {
#pragma unroll
      for (int nb = 0; nb < kScoreBlocks; ++nb) s[nb][0] = s[nb][1] = s[nb][2] = s[nb][3] = 0.f;
      if constexpr (!kFp8) {
#pragma unroll 1
        for (int kk = 0; kk < kSteps; ++kk) {
          unsigned qa[4];
          load_qa(qa, kk);
#pragma unroll
          for (int nb2 = 0; nb2 < BN / 16; ++nb2) {
            unsigned r[4];
            ptx::warp_ldmatrix_x4(r, tile + Layout::k_lane(lane, nb2, kk));
            ptx::warp_mma_16816<kMmaBF16>(s[2 * nb2], qa, r[0], r[1]);
            ptx::warp_mma_16816<kMmaBF16>(s[2 * nb2 + 1], qa, r[2], r[3]);
          }
        }
        return;
      }
      // (Not unrolled: the fragments of every step at once would not fit
      // the two blocks' registers.)
#pragma unroll 1
      for (int kk2 = 0; kk2 < kSteps / 2; ++kk2) {
        unsigned qa[2][4];
        load_qa(qa[0], 2 * kk2);
        load_qa(qa[1], 2 * kk2 + 1);
#pragma unroll
        for (int nb2 = 0; nb2 < BN / 16; ++nb2) {
          unsigned r[4];
          ptx::warp_ldmatrix_x4(r, tile + Layout::k_lane(lane, nb2, kk2));
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            ptx::warp_mma_16816<false>(s[Layout::k_block(nb2, j)],
                                       qa[Layout::k_step(kk2, j) - 2 * kk2], f16x2_of(r[j]),
                                       f16x2_of(r[j] >> 16));
          }
        }
      }
    }

    // O += P V of the raw V tile at `tile`; `valid`: its keys that exist
    // (the tail tile's rows past them hold stale bytes, NaN among them, and
    // 0 * NaN is NaN: their B halves are zeroed after conversion).
    template <bool kTail>
    __device__ __forceinline__ void accumulate(float (&o)[kOutBlocks][4],
                                               const float (&s)[kScoreBlocks][4], unsigned tile,
                                               int valid) const {
      const int c = lane % 4;
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) {
        // P of these 16 keys as the A fragment, in the MMAs' type (fp16
        // over e4m3: P is in [0, 1]).
        unsigned pa[4];
        pack_p_fragment<MmaT>(pa, s, kk);
        unsigned keep[2] = {0xffffffffu, 0xffffffffu};
        if constexpr (kTail) {
#pragma unroll
          for (int i = 0; i < 2; ++i) keep[i] = Layout::v_keep(kk, i, c, valid);
        }
        if constexpr (!kFp8) {
          // 16-bit: unit 2 u2 + h is O's n8 block of that index.
#pragma unroll
          for (int u2 = 0; u2 < Layout::kUnits / 2; ++u2) {
            unsigned r[4];
            ptx::warp_ldmatrix_x4_trans(r, tile + Layout::v_lane(lane, kk, u2));
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              ptx::warp_mma_16816<kMmaBF16>(o[2 * u2 + h], pa, r[2 * h] & keep[0],
                                            r[2 * h + 1] & keep[1]);
            }
          }
          continue;
        }
#pragma unroll
        for (int u2 = 0; u2 < Layout::kUnits / 2; ++u2) {
          unsigned r[4];
          ptx::warp_ldmatrix_x4_trans(r, tile + Layout::v_lane(lane, kk, u2));
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            // r[2h] keys 0-7 of the step, r[2h + 1] keys 8-15, of unit
            // 2 u2 + h; the permute puts the even column's two keys low and
            // the odd column's high (DecodeLayout).
            const unsigned lo = __byte_perm(r[2 * h], 0u, Layout::kVPermute);
            const unsigned hi = __byte_perm(r[2 * h + 1], 0u, Layout::kVPermute);
            const int u = 2 * u2 + h;
            ptx::warp_mma_16816<false>(o[2 * u], pa, f16x2_of(lo) & keep[0],
                                       f16x2_of(hi) & keep[1]);
            ptx::warp_mma_16816<false>(o[2 * u + 1], pa, f16x2_of(lo >> 16) & keep[0],
                                       f16x2_of(hi >> 16) & keep[1]);
          }
        }
      }
    }

    // This warp's state and output into its part, the output in D order
    // (DecodeLayout::o_column says where each fragment value belongs).
    __device__ __forceinline__ void write_part(const Softmax& softmax,
                                               const float (&o)[kOutBlocks][4]) const {
      float* part = sm.part(warp);
      part[lane] = softmax.row_max[0];
      part[32 + lane] = softmax.row_max[1];
      part[64 + lane] = softmax.row_sum[0];
      part[96 + lane] = softmax.row_sum[1];
      float* rows = part + 128;
      const int c = lane % 4;
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float* row = rows + (lane / 4 + 8 * r) * kRowFloats;
        // (Once per work tile: one store per value, at its column.)
#pragma unroll
        for (int db = 0; db < kOutBlocks; ++db) {
#pragma unroll
          for (int e = 0; e < 2; ++e) row[Layout::o_column(db, 2 * c + e)] = o[db][2 * r + e];
        }
      }
    }

    // The group's phases into one state and the output's columns [col0,
    // col0 + kSliceCols) (this warp is the group's first), the output in
    // the standard fragment layout.
    __device__ __forceinline__ void combine(Softmax& softmax, float (&out)[kSliceBlocks][4],
                                            int col0) const {
      float top[2] = {ptx::neg_inf(), ptx::neg_inf()};
#pragma unroll 1
      for (int ph = 0; ph < phases; ++ph) {
        const float* part = sm.part(group + groups * ph);
        top[0] = ptx::max(top[0], part[lane]);
        top[1] = ptx::max(top[1], part[32 + lane]);
      }
#pragma unroll
      for (int db = 0; db < kSliceBlocks; ++db)
        out[db][0] = out[db][1] = out[db][2] = out[db][3] = 0.f;
      float sum[2] = {0.f, 0.f};
      const int c = lane % 4;
#pragma unroll 1
      for (int ph = 0; ph < phases; ++ph) {
        const float* part = sm.part(group + groups * ph);
        float weight[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const float m = part[32 * r + lane];
          // (a phase that saw no key has -inf and contributes nothing)
          weight[r] = m == ptx::neg_inf() ? 0.f : ptx::exp2(m - top[r]);
          sum[r] += weight[r] * part[64 + 32 * r + lane];
        }
        const float* rows = part + 128;
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const float* row = rows + (lane / 4 + 8 * r) * kRowFloats + col0;
#pragma unroll
          for (int db = 0; db < kSliceBlocks; ++db) {
            const float2 x = *reinterpret_cast<const float2*>(row + 8 * db + 2 * c);
            out[db][2 * r] += weight[r] * x.x;
            out[db][2 * r + 1] += weight[r] * x.y;
          }
        }
      }
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        softmax.row_max[r] = top[r];
        softmax.row_sum[r] = sum[r];
      }
    }
  };
};

// The block program: the scheduler's work tile, the ring's barriers, then
// the producer warp (the last) and the consumer warps.
template <class C, class Scheduler, class Decode, class Epilogue>
__device__ void forward_decode_sm90(const Params<typename C::dtype>& prm) {
  using KV = typename Decode::KvSourceType;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const typename Decode::Smem sm(smem_raw, ptx::smem_addr(smem_raw));
  typename Scheduler::Work work;
  if (!Scheduler::get(prm, work)) return;
  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const DecodeSchedule schedule = Decode::schedule_of(work);
  if (tid == 0) Decode::init(sm, schedule);
  __syncthreads();
  if (warp >= C::warps) {
    const int lane = tid % 32;
    if (KV::issues_copies(lane)) Decode::produce(sm, KV(prm, work), prm, work, lane);
    return;
  }
  typename Decode::Consumer consumer(prm, sm, work.range.first_tile, work.range.last_tile, tid,
                                     schedule);
  consumer.template run<Epilogue>(work);
}

}  // namespace attention
}  // namespace attnjit

// Where the decode block (decode_sm90.cuh) keeps each byte and which
// fragment each ldmatrix register feeds, as plain index arithmetic with no
// device code: the kernel uses it, and tests/reference/decode_layout_test.cpp
// compiles it for the host and runs the block's data path on models of the
// TMA's swizzle, ldmatrix and mma.sync written from the PTX manual, so a
// wrong permutation fails on the CPU before any GPU sees it.
//
// The tiles are swizzled as the TMA writes them (1024-byte aligned, rows
// of 16-byte units XOR-swizzled by the row; SwizzledRows, smem_sm90.cuh):
// a raw K or V tile has BN rows of D elements (e4m3: the layout of a
// 16-bit tile of D / 2 elements), a warp's Q tile 16 rows of D 16-bit
// elements (fp16 with e4m3 K/V, else q's type).
#pragma once

#include "attention/swizzle.cuh"
#include "attention/tile_config.cuh"

#if defined(__CUDACC_RTC__)
#define ATTNJIT_LAYOUT_FN __host__ __device__ constexpr
#else
#define ATTNJIT_LAYOUT_FN constexpr
#endif

namespace attnjit {
namespace attention {

// kBytes: bytes per K/V element, 1 (e4m3, converted in registers) or 2
// (q's 16-bit type, used as it is).
template <int D, int BN, int kBytes = 1>
struct DecodeLayout {
  static constexpr bool kFp8 = kBytes == 1;
  static constexpr int kRowBytes = D * kBytes;                          // one raw row
  static constexpr int kUnits = kRowBytes / 16;                         // its 16-byte units
  static constexpr int kRawSwizzle = 2 * swizzle_chunk(kRowBytes / 2);  // the TMA box's swizzle
  static constexpr int kQSwizzle = 2 * swizzle_chunk(D);
  static_assert(kBytes == 1 || kBytes == 2, "decode layout: e4m3 or 16-bit K/V");
  static_assert(D % 32 == 0 && BN % 16 == 0, "decode layout: pairs of units, 16-key steps");

  // Bytes 16 unit .. 16 unit + 15 of key `key`'s raw row.
  static ATTNJIT_LAYOUT_FN unsigned raw(int key, int unit) {
    return swizzled_offset(BN, kRawSwizzle, key, unit);
  }
  // The 16-bit elements 8 unit .. 8 unit + 7 of row `row` of a Q tile.
  static ATTNJIT_LAYOUT_FN unsigned q(int row, int unit) {
    return swizzled_offset(16, kQSwizzle, row, unit);
  }

  // Where Q's element d sits in its row of the Q tile. With 16-bit K/V, at
  // d: the fragments are the standard ones. With e4m3, Q K^T sums over D
  // in the order a K fragment brings it: thread (g, c)'s register from
  // ldmatrix of key g's unit u holds D elements 16u + 4c .. 16u + 4c + 3,
  // its low half taken as the MMA's k = 2c, 2c + 1 and its high half as
  // k = 2c + 8, 2c + 9; so elements 16u + 4c + 2h + i (h, i = 0, 1) sit at
  // 16u + 8h + 2c + i, where ldmatrix of the Q tile brings k.
  static ATTNJIT_LAYOUT_FN int q_position(int d) {
    if (!kFp8) return d;
    const int u = d / 16, c = (d % 16) / 4, h = (d % 4) / 2, i = d % 2;
    return 16 * u + 8 * h + 2 * c + i;
  }
  // The 32-bit word of Q's elements d, d + 1 (d even) in row `row`.
  static ATTNJIT_LAYOUT_FN unsigned q_word(int row, int d) {
    const int at = q_position(d);
    return q(row, at / 8) + static_cast<unsigned>(2 * (at % 8));
  }

  // The row each lane gives ldmatrix.x4 (matrix lane / 8, row lane % 8):
  // Q's A fragment of step u (rows 0-7 / 8-15 by positions 0-7 / 8-15).
  static ATTNJIT_LAYOUT_FN unsigned q_lane(int lane, int u) {
    const int m = lane / 8;
    return q((m & 1) * 8 + lane % 8, 2 * u + (m >> 1));
  }
  // K, e4m3: matrix j of ldmatrix (k_lane(lane, nb2, kk2)) is the B
  // fragment, both halves, of score block k_block(nb2, j) for step
  // k_step(kk2, j). 16-bit: k_lane(lane, nb2, kk) of step kk gives block
  // 2 nb2's b0, b1 in matrices 0, 1 and block 2 nb2 + 1's in 2, 3.
  static ATTNJIT_LAYOUT_FN unsigned k_lane(int lane, int nb2, int kk2) {
    const int m = lane / 8;
    if (!kFp8) return raw(nb2 * 16 + (m >> 1) * 8 + lane % 8, kk2 * 2 + (m & 1));
    return raw(nb2 * 16 + (m & 1) * 8 + lane % 8, kk2 * 2 + (m >> 1));
  }
  static ATTNJIT_LAYOUT_FN int k_block(int nb2, int j) { return 2 * nb2 + (j & 1); }
  static ATTNJIT_LAYOUT_FN int k_step(int kk2, int j) { return 2 * kk2 + (j >> 1); }

  // V: ldmatrix.trans of v_lane(lane, kk, u2) gives, in register 2h + i,
  // keys 16 kk + 8i .. + 7 of unit 2 u2 + h. 16-bit: those are the b_i of
  // O's n8 block 2 u2 + h. e4m3: thread (g, c) gets the bytes (key 2c, col
  // 2g), (2c, 2g + 1), (2c + 1, 2g), (2c + 1, 2g + 1); kVPermute (a byte
  // permute) makes that the even column's two keys, then the odd one's:
  // the b_i of O's n8 blocks 2u and 2u + 1 (u = 2 u2 + h).
  static ATTNJIT_LAYOUT_FN unsigned v_lane(int lane, int kk, int u2) {
    const int m = lane / 8;
    return raw(kk * 16 + (m & 1) * 8 + lane % 8, u2 * 2 + (m >> 1));
  }
  static constexpr unsigned kVPermute = 0x3120;
  // In a tile whose first `valid` keys exist: the mask of thread c's B
  // halves from register 2h + i (keys 16 kk + 8i + 2c, + 1), which zeroes
  // a missing key's value (stale bytes, NaN among them: 0 * NaN is NaN).
  static ATTNJIT_LAYOUT_FN unsigned v_keep(int kk, int i, int c, int valid) {
    const int key = kk * 16 + 8 * i + 2 * c;
    return (key < valid ? 0x0000ffffu : 0u) | (key + 1 < valid ? 0xffff0000u : 0u);
  }

  // e4m3 K/V multiply in fp16: a bf16 q row whose largest |element| has
  // float exponent field E (its bits >> 23) is multiplied by 2^(141 - E),
  // which takes [2^(E-127), 2^(E-126)) to [2^14, 2^15) (fp16's largest is
  // 65504), and the row's scores by 2^(E - 141) after. Rows under 2^-112
  // (E < 15, zero among them) stay as they are; inf and NaN (E = 255) keep
  // their value. Both factors are normal floats for every E, as bits.
  static ATTNJIT_LAYOUT_FN unsigned q_scale_bits(unsigned exponent) {
    return exponent >= 15u ? (268u - exponent) << 23 : 127u << 23;
  }
  static ATTNJIT_LAYOUT_FN unsigned q_unscale_bits(unsigned exponent) {
    return exponent >= 15u ? (exponent - 14u) << 23 : 127u << 23;
  }

  // The D column of O's n8 block `block`, MMA column n: 16-bit, 8 block +
  // n; e4m3, block 2u + h holds columns 16u + 2n + h (thread c's four
  // values of unit u, blocks 2u and 2u + 1 at n = 2c and 2c + 1, are then
  // columns 16u + 4c .. + 3 in the order (2u, 2c), (2u + 1, 2c), (2u, 2c +
  // 1), (2u + 1, 2c + 1)).
  static ATTNJIT_LAYOUT_FN int o_column(int block, int n) {
    if (!kFp8) return 8 * block + n;
    return 16 * (block / 2) + 2 * n + block % 2;
  }
};

// The decode block's products swapped: keys (and D) as the MMAs' M, the
// query rows as N, S^T = K Q^T and O^T = V^T P^T (m16n8k16). A decode's
// work tile has the query heads of one kv head, usually at most 8, which
// fill an n8 block exactly, where as M they leave rows 8-15 of every m16
// tile empty: half the MMAs, half the scores per thread and half the
// output accumulators (D / 4 instead of D / 2 per thread for 8 rows). The
// tiles in shared memory and their ldmatrix addresses are DecodeLayout's:
//
// - K is the A operand of S^T: ldmatrix.x4 of k_lane(lane, mt, kk2) (m16
//   tile mt of 16 keys; e4m3: steps 2 kk2, 2 kk2 + 1; 16-bit: step kk2).
//   16-bit: register j is A register k_a(j). e4m3: register j holds keys
//   16 mt + 8 k_half(j) .. + 7 of step k_step(kk2, j), its low half
//   converted a_{k_half(j)} and its high half a_{2 + k_half(j)} (the
//   reduction order q_position describes).
// - Q^T is the B operand: ldmatrix.x4 of q_b_lane(lane, s2, nb) gives the
//   b0, b1 of steps 2 s2 and 2 s2 + 1 (registers 0, 1 and 2, 3) for rows
//   8 nb .. 8 nb + 7 (16-bit: the unit pairs of D; e4m3: of positions).
// - S^T's element e of thread (g, c) in m16 tile mt, n8 block nb is key
//   s_key(mt, g, e) of row s_row(nb, c, e): each thread holds two rows'
//   scores, the keys of a row spread over the 8 threads of equal c.
// - P^T is the B operand of O^T: the f16x2 of a thread's (e0, e1) and of
//   its (e2, e3) of m16 tile mt, each transposed by movmatrix.trans (an
//   8 x 8 b16 matrix held as the standard fragment), are b0 and b1 of
//   O^T's k16 step mt.
// - V^T is the A operand: ldmatrix.trans of v_lane(lane, kk, u2) gives in
//   register 2h + i (DecodeLayout) keys 16 kk + 8i + 2c, + 1 of unit
//   2 u2 + h. 16-bit: those are a_{v_a(h, i)} of O^T's m16 tile u2 (D
//   columns 16 u2 .. + 15). e4m3: after kVPermute, the low half converted
//   is a_{v_a(h, i)} of m16 tile 2 u2 and the high half of tile 2 u2 + 1.
//   Missing keys of a tail tile are zeroed by v_keep(kk, i, c, valid).
// - O^T's element e of thread (g, c) in m16 tile mt, n8 block nb is D
//   column ot_column(mt, g + 8 (e / 2)) of row s_row(nb, c, e).
template <int D, int BN, int kBytes = 1>
struct DecodeSwapLayout : DecodeLayout<D, BN, kBytes> {
  using Base = DecodeLayout<D, BN, kBytes>;
  using Base::kFp8;
  static constexpr int kKeyTiles = BN / 16;  // S^T's m16 tiles, O^T's k16 steps
  static constexpr int kOutTiles = D / 16;   // O^T's m16 tiles

  // K: which 8 keys of the m16 tile register j holds (e4m3), and (16-bit)
  // the A register it is.
  static ATTNJIT_LAYOUT_FN int k_half(int j) { return j & 1; }
  static ATTNJIT_LAYOUT_FN int k_a(int j) { return (j >> 1) | ((j & 1) << 1); }

  // Q^T: matrix m = lane / 8 is Q units 4 s2 + m of rows 8 nb .. + 7.
  static ATTNJIT_LAYOUT_FN unsigned q_b_lane(int lane, int s2, int nb) {
    return Base::q(8 * nb + lane % 8, 4 * s2 + lane / 8);
  }

  // S^T and O^T: the key (D row) and the query row of element e.
  static ATTNJIT_LAYOUT_FN int s_key(int mt, int g, int e) { return 16 * mt + g + 8 * (e / 2); }
  static ATTNJIT_LAYOUT_FN int s_row(int nb, int c, int e) { return 8 * nb + 2 * c + e % 2; }

  // V: the A register of O^T that register 2h + i of v_lane's load is.
  static ATTNJIT_LAYOUT_FN int v_a(int h, int i) { return h + 2 * i; }

  // The D column of row m of O^T's m16 tile mt: 16-bit, 16 mt + m; e4m3,
  // tile 2 u2 + odd holds unit 2 u2 + m / 8's columns 2 (m % 8) + odd.
  static ATTNJIT_LAYOUT_FN int ot_column(int mt, int m) {
    if (!kFp8) return 16 * mt + m;
    return 16 * (2 * (mt / 2) + m / 8) + 2 * (m % 8) + mt % 2;
  }
};

// The decode block's schedule: which key tiles each consumer warp takes and
// the mbarrier parities of the ring, for `warps` consumer warps over a
// work tile of `rows` rows in groups of `group_rows` (16; the swapped
// block's 8) (tests/reference/decode_layout_test.cpp runs
// the producer and the warps on a model of the mbarriers with it). Tile i
// of the work tile (counted from its first) sits in stage i % stages; the
// n-th use of a stage completes phase n of its barriers.
struct DecodeSchedule {
  int groups;  // row groups (1 .. warps)
  int phases;  // warps per group: warp w takes the tiles i with i % phases == w / groups

  static ATTNJIT_LAYOUT_FN DecodeSchedule of(int rows, int warps, int group_rows = 16) {
    const int g = (rows + group_rows - 1) / group_rows;
    const int groups = g < 1 ? 1 : g > warps ? warps : g;
    return DecodeSchedule{groups, warps / groups};
  }
  ATTNJIT_LAYOUT_FN int group(int warp) const { return warp % groups; }
  ATTNJIT_LAYOUT_FN int phase(int warp) const { return warp / groups; }
  // Warps past groups x phases (3 groups of 4 warps) take no tiles.
  ATTNJIT_LAYOUT_FN bool active(int warp) const { return phase(warp) < phases; }
  // The parity a consumer waits on for tile i to have landed, and the one
  // the producer waits on before refilling tile i's stage (the release of
  // tile i - stages, the stage's previous use).
  static ATTNJIT_LAYOUT_FN unsigned staged_parity(int i, int stages) {
    return static_cast<unsigned>(i / stages) & 1u;
  }
  static ATTNJIT_LAYOUT_FN unsigned empty_parity(int i, int stages) {
    return (static_cast<unsigned>(i / stages) & 1u) ^ 1u;
  }
};

}  // namespace attention
}  // namespace attnjit

#undef ATTNJIT_LAYOUT_FN

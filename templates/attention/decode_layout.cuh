// Where the fp8 decode block (decode_sm90.cuh) keeps each byte and which
// fragment each ldmatrix register feeds, as plain index arithmetic with no
// device code: the kernel uses it, and tests/reference/decode_layout_test.cpp
// compiles it for the host and runs the block's data path on models of the
// TMA's swizzle, ldmatrix and mma.sync written from the PTX manual, so a
// wrong permutation fails on the CPU before any GPU sees it.
//
// The tiles are swizzled as the TMA writes them (1024-byte aligned, rows
// of 16-byte units XOR-swizzled by the row; SwizzledRows, smem_sm90.cuh):
// a raw K or V tile has BN rows of D bytes (the layout of a 16-bit tile of
// D / 2 elements), a warp's Q tile 16 rows of D fp16.
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

template <int D, int BN>
struct DecodeLayout {
  static constexpr int kUnits = D / 16;                        // 16-byte units of a raw row
  static constexpr int kRawSwizzle = 2 * swizzle_chunk(D / 2);  // bytes: the TMA box's swizzle
  static constexpr int kQSwizzle = 2 * swizzle_chunk(D);
  static_assert(D % 32 == 0 && BN % 16 == 0, "decode layout: pairs of units, 16-key steps");

  // Byte `unit` x 16 .. + 15 of key `key`'s raw row.
  static ATTNJIT_LAYOUT_FN unsigned raw(int key, int unit) {
    return swizzled_offset(BN, kRawSwizzle, key, unit);
  }
  // The fp16 elements 8 unit .. 8 unit + 7 of row `row` of a Q tile.
  static ATTNJIT_LAYOUT_FN unsigned q(int row, int unit) {
    return swizzled_offset(16, kQSwizzle, row, unit);
  }

  // Q K^T sums over D in the order a K fragment brings it: thread (g, c)'s
  // register from ldmatrix of key g's unit u holds D elements 16u + 4c ..
  // 16u + 4c + 3, its low half taken as the MMA's k = 2c, 2c + 1 and its
  // high half as k = 2c + 8, 2c + 9. So Q's elements 16u + 4c + 2h, + 1
  // (one 32-bit word, h = 0, 1) go to positions 8h + 2c, + 1 of step u:
  // unit 2u + h, byte 4c.
  static ATTNJIT_LAYOUT_FN unsigned q_word(int row, int u, int h, int c) {
    return q(row, 2 * u + h) + static_cast<unsigned>(4 * c);
  }

  // The row each lane gives ldmatrix.x4 (matrix lane / 8, row lane % 8):
  // Q's A fragment of step u (rows 0-7 / 8-15 by positions 0-7 / 8-15).
  static ATTNJIT_LAYOUT_FN unsigned q_lane(int lane, int u) {
    const int m = lane / 8;
    return q((m & 1) * 8 + lane % 8, 2 * u + (m >> 1));
  }
  // K: matrix j of ldmatrix (k_lane(lane, nb2, kk2)) is the B fragment of
  // score block k_block(nb2, j) for step k_step(kk2, j).
  static ATTNJIT_LAYOUT_FN unsigned k_lane(int lane, int nb2, int kk2) {
    const int m = lane / 8;
    return raw(nb2 * 16 + (m & 1) * 8 + lane % 8, kk2 * 2 + (m >> 1));
  }
  static ATTNJIT_LAYOUT_FN int k_block(int nb2, int j) { return 2 * nb2 + (j & 1); }
  static ATTNJIT_LAYOUT_FN int k_step(int kk2, int j) { return 2 * kk2 + (j >> 1); }

  // V: ldmatrix.trans of v_lane(lane, kk, u2) gives, in register 2h + i,
  // keys 16 kk + 8i .. + 7 of unit 2 u2 + h: thread (g, c) the bytes (key
  // 2c, col 2g), (2c, 2g + 1), (2c + 1, 2g), (2c + 1, 2g + 1). kVPermute
  // (a byte permute) makes that the even column's two keys, then the odd
  // one's: the B fragments of O's n8 blocks 2u and 2u + 1 (u = 2 u2 + h).
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

  // The D column of O's n8 block `block`, MMA column n: block 2u + h holds
  // columns 16u + 2n + h. (Thread c's four values of unit u, blocks 2u and
  // 2u + 1 at n = 2c and 2c + 1, are columns 16u + 4c .. + 3 in the order
  // (2u, 2c), (2u + 1, 2c), (2u, 2c + 1), (2u + 1, 2c + 1).)
  static ATTNJIT_LAYOUT_FN int o_column(int block, int n) {
    return 16 * (block / 2) + 2 * n + block % 2;
  }
};

}  // namespace attention
}  // namespace attnjit

#undef ATTNJIT_LAYOUT_FN

// The decode block's data path (templates/attention/decode_sm90.cuh), over
// e4m3 and 16-bit K/V, on the host: its layout (decode_layout.cuh, the kernel's own index
// arithmetic) run on models of the hardware written from the PTX manual,
// not from the kernel: the TMA's swizzled writes, ldmatrix (plain and
// .trans), the byte permute, e4m3 -> f16x2 and mma.sync m16n8k16's
// fragment layouts. One warp's Q K^T and P V over a raw tile must come out
// as the plain products, element by element, for every head dim and key
// tile the block takes, and a tail tile's missing keys must not reach O
// even when their bytes are NaN. No GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "attention/decode_layout.cuh"
#include "attnjit/selfcheck.h"

namespace attnjit {
namespace {

using Regs = std::array<std::array<uint32_t, 4>, 32>;  // per lane, four registers

// fp16 of a value fp16 holds exactly as a normal number (or zero); the
// test's values are chosen so.
uint16_t f16_bits(float x) {
  if (x == 0.f) return std::signbit(x) ? 0x8000 : 0;
  int e = 0;
  const float m = std::frexp(std::fabs(x), &e);  // x = m 2^e, m in [0.5, 1)
  const int exponent = e - 1 + 15;
  const float mantissa = (m * 2.f - 1.f) * 1024.f;
  EXPECT_TRUE(exponent >= 1 && exponent <= 30 && mantissa == std::floor(mantissa)) << x;
  return uint16_t((x < 0 ? 0x8000 : 0) | (exponent << 10) | int(mantissa));
}

float f16_value(uint16_t bits) {
  const int exponent = (bits >> 10) & 31;
  const int mantissa = bits & 1023;
  float v = exponent == 0 ? std::ldexp(float(mantissa), -24)
                          : std::ldexp(float(1024 + mantissa), exponent - 25);
  if (exponent == 31) v = mantissa ? NAN : INFINITY;
  return (bits & 0x8000) ? -v : v;
}

uint32_t f16x2(float lo, float hi) { return f16_bits(lo) | (uint32_t(f16_bits(hi)) << 16); }

// cvt.rn.f16x2.e4m3x2 of the low 16 bits: the low byte into the low half.
uint32_t e4m3x2_to_f16x2(uint32_t two) {
  const float lo = e4m3_to_float(uint8_t(two & 0xff));
  const float hi = e4m3_to_float(uint8_t((two >> 8) & 0xff));
  const auto half = [](float x) { return std::isnan(x) ? uint16_t(0x7e00) : f16_bits(x); };
  return half(lo) | (uint32_t(half(hi)) << 16);
}

// __byte_perm(x, 0, selector).
uint32_t byte_perm(uint32_t x, uint32_t selector) {
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t pick = (selector >> (4 * i)) & 7;
    const uint32_t byte = pick < 4 ? (x >> (8 * pick)) & 0xff : 0;
    r |= byte << (8 * i);
  }
  return r;
}

uint32_t word_at(const std::vector<uint8_t>& smem, unsigned address) {
  uint32_t w;
  std::memcpy(&w, smem.data() + address, 4);
  return w;
}

uint16_t half_at(const std::vector<uint8_t>& smem, unsigned address) {
  uint16_t h;
  std::memcpy(&h, smem.data() + address, 2);
  return h;
}

// ldmatrix.sync.aligned.m8n8.x4(.trans).b16: lane 8j + i gives the address
// of row i of matrix j (16 bytes: eight b16 elements). Without .trans
// thread t gets elements (row t / 4, cols 2 (t % 4), + 1) of each matrix;
// with it (rows 2 (t % 4), + 1, col t / 4), the first in the low half.
Regs ldmatrix_x4(const std::vector<uint8_t>& smem, const std::array<unsigned, 32>& rows,
                 bool trans) {
  Regs r{};
  for (int t = 0; t < 32; ++t) {
    for (int j = 0; j < 4; ++j) {
      if (!trans) {
        r[t][j] = word_at(smem, rows[8 * j + t / 4] + 4 * (t % 4));
      } else {
        const unsigned col = 2 * (t / 4);
        r[t][j] = half_at(smem, rows[8 * j + 2 * (t % 4)] + col) |
                  (uint32_t(half_at(smem, rows[8 * j + 2 * (t % 4) + 1] + col)) << 16);
      }
    }
  }
  return r;
}

// mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32, d += a b: A 16 x 16
// (a0: row g, k 2c, 2c + 1; a1: row g + 8; a2: k + 8; a3: both), B 16 x 8
// (b0: k 2c, 2c + 1 of column g; b1: k + 8), D (d0, d1: row g, columns
// 2c, 2c + 1; d2, d3: row g + 8), g = lane / 4, c = lane % 4.
void mma(std::array<std::array<float, 4>, 32>& d, const Regs& a, int a_reg,
         const std::array<std::array<uint32_t, 2>, 32>& b) {
  float A[16][16], B[16][8];
  for (int t = 0; t < 32; ++t) {
    const int g = t / 4, c = t % 4;
    for (int i = 0; i < 4; ++i) {
      const uint32_t w = a[t][a_reg + i];
      const int row = g + 8 * (i & 1), k = 2 * c + 8 * (i >> 1);
      A[row][k] = f16_value(uint16_t(w & 0xffff));
      A[row][k + 1] = f16_value(uint16_t(w >> 16));
    }
    for (int i = 0; i < 2; ++i) {
      const uint32_t w = b[t][i];
      B[2 * c + 8 * i][g] = f16_value(uint16_t(w & 0xffff));
      B[2 * c + 8 * i + 1][g] = f16_value(uint16_t(w >> 16));
    }
  }
  for (int t = 0; t < 32; ++t) {
    const int g = t / 4, c = t % 4;
    for (int i = 0; i < 4; ++i) {
      const int row = g + 8 * (i / 2), col = 2 * c + i % 2;
      double sum = d[t][i];
      for (int k = 0; k < 16; ++k) sum += double(A[row][k]) * B[k][col];
      d[t][i] = float(sum);
    }
  }
}

// The TMA's write of raw rows of `row_bytes` into a 1024-byte aligned tile
// with the 128/64/32-byte swizzle: 16-byte unit bits [4, 4 + b) of a byte's
// address XOR address bits [7, 7 + b), b = 3, 2, 1.
unsigned tma_swizzled(unsigned address, int swizzle_bytes) {
  const unsigned bits = swizzle_bytes == 128 ? 7u : swizzle_bytes == 64 ? 3u : 1u;
  return address ^ (((address >> 7) & bits) << 4);
}

// The bytes of K/V element (key, d) in a tile the TMA wrote: boxes of one
// swizzled row's width (`chunk_bytes`), chunk c of the row in region c of
// BN rows.
template <int BN>
unsigned tma_tile_offset(int key, int byte, int chunk_bytes) {
  const unsigned within = unsigned(key * chunk_bytes + byte % chunk_bytes);
  return unsigned(byte / chunk_bytes) * BN * chunk_bytes + tma_swizzled(within, chunk_bytes);
}

// One warp's operands in shared memory as the decode block has them: Q
// (16 rows of multiples of 1/64, exact in fp16), K and V (e4m3 codes that
// are not NaN, or multiples of 1/64) by the TMA model with the box's
// swizzle, Q by the kernel's own stores (q_word); and P (multiples of
// 1/256 in [0, 1]) as plain values. kBytes 1: e4m3 K/V; 2: fp16 K/V (the
// 16-bit path's index arithmetic is the same for bf16, whose MMAs only
// read the halves differently).
template <int D, int BN, int kBytes>
struct WarpTiles {
  using L = attention::DecodeLayout<D, BN, kBytes>;
  static constexpr bool kFp8 = kBytes == 1;
  static constexpr unsigned kTile = BN * D * kBytes;
  static constexpr unsigned k_base = 0, v_base = kTile, q_base = 2 * kTile;
  std::vector<float> q = std::vector<float>(16 * D), p = std::vector<float>(16 * BN),
                     k = std::vector<float>(BN * D), v = std::vector<float>(BN * D);
  std::vector<uint16_t> k_el = std::vector<uint16_t>(BN * D),
                        v_el = std::vector<uint16_t>(BN * D);  // the stored elements
  std::vector<uint8_t> smem = std::vector<uint8_t>(2 * kTile + 16 * D * 2 + 64, 0);
  std::string what;

  static void put(std::vector<uint8_t>& mem, unsigned base, int key, int d, uint16_t x) {
    for (int b = 0; b < kBytes; ++b) {
      mem[base + tma_tile_offset<BN>(key, d * kBytes + b, L::kRawSwizzle)] = uint8_t(x >> (8 * b));
    }
  }

  explicit WarpTiles(std::mt19937& rng)
      : what("D " + std::to_string(D) + " BN " + std::to_string(BN) + (kFp8 ? " e4m3" : " fp16")) {
    std::uniform_int_distribution<int> small(-64, 64), code(0, 255), prob(0, 256);
    for (float& x : q) x = small(rng) / 64.f;
    for (float& x : p) x = prob(rng) / 256.f;
    for (int i = 0; i < BN * D; ++i) {
      for (auto [value, stored] : {std::pair{&k[i], &k_el[i]}, std::pair{&v[i], &v_el[i]}}) {
        if (kFp8) {
          uint8_t b;
          do b = uint8_t(code(rng));
          while ((b & 0x7f) == 0x7f);
          *stored = b;
          *value = e4m3_to_float(b);
        } else {
          *value = small(rng) / 64.f;
          *stored = f16_bits(*value);
        }
      }
    }
    for (int key = 0; key < BN; ++key) {
      for (int d = 0; d < D; ++d) {
        put(smem, k_base, key, d, k_el[key * D + d]);
        put(smem, v_base, key, d, v_el[key * D + d]);
      }
    }
    for (int row = 0; row < 16; ++row) {
      for (int d = 0; d < D; d += 2) {
        const uint32_t w = f16x2(q[row * D + d], q[row * D + d + 1]);
        std::memcpy(smem.data() + q_base + L::q_word(row, d), &w, 4);
      }
    }
  }
  // The V tile with keys `valid` .. BN - 1 NaN (a tail tile's stale bytes).
  std::vector<uint8_t> with_nan_tail(int valid) const {
    std::vector<uint8_t> vmem = smem;
    for (int key = valid; key < BN; ++key) {
      for (int d = 0; d < D; ++d) put(vmem, v_base, key, d, kFp8 ? 0x7f : 0x7e00);
    }
    return vmem;
  }
  float qk(int row, int key) const {
    double sum = 0;
    for (int d = 0; d < D; ++d) sum += double(q[row * D + d]) * k[key * D + d];
    return float(sum);
  }
  float pv(int row, int col, int valid) const {
    double sum = 0;
    for (int key = 0; key < valid; ++key) sum += double(p[row * BN + key]) * v[key * D + col];
    return float(sum);
  }
  // A register's two K/V values as an f16x2 (e4m3: the low or high half converted).
  static uint32_t b_of(uint32_t reg, bool high) {
    return kFp8 ? e4m3x2_to_f16x2(high ? reg >> 16 : reg & 0xffff) : reg;
  }
};

template <int D, int BN, int kBytes>
void check_decode_layout(std::mt19937& rng) {
  using L = attention::DecodeLayout<D, BN, kBytes>;
  using Tiles = WarpTiles<D, BN, kBytes>;
  constexpr bool kFp8 = kBytes == 1;
  const Tiles tiles(rng);
  const std::vector<uint8_t>& smem = tiles.smem;
  const std::string& what = tiles.what;
  const std::vector<float>& p = tiles.p;
  constexpr unsigned k_base = Tiles::k_base, v_base = Tiles::v_base, q_base = Tiles::q_base;
  // The layout's raw() must name the same bytes the TMA wrote.
  for (int key = 0; key < BN; ++key) {
    for (int u = 0; u < L::kUnits; ++u) {
      ASSERT_EQ(L::raw(key, u), tma_tile_offset<BN>(key, 16 * u, L::kRawSwizzle))
          << what << " key " << key << " unit " << u;
    }
  }
  const auto b_of = [](uint32_t reg, bool high) { return Tiles::b_of(reg, high); };

  // S = Q K^T as scores() computes it.
  std::vector<std::array<std::array<float, 4>, 32>> s(BN / 8);
  for (auto& block : s) {
    for (auto& lane : block) lane.fill(0.f);
  }
  std::array<unsigned, 32> rows{};
  const auto load = [&](const std::vector<uint8_t>& mem, bool trans, auto address) {
    for (int t = 0; t < 32; ++t) rows[t] = address(t);
    return ldmatrix_x4(mem, rows, trans);
  };
  if (kFp8) {
    for (int kk2 = 0; kk2 < D / 32; ++kk2) {
      const Regs qa0 = load(smem, false, [&](int t) { return q_base + L::q_lane(t, 2 * kk2); });
      const Regs qa1 = load(smem, false, [&](int t) { return q_base + L::q_lane(t, 2 * kk2 + 1); });
      for (int nb2 = 0; nb2 < BN / 16; ++nb2) {
        const Regs kr = load(smem, false, [&](int t) { return k_base + L::k_lane(t, nb2, kk2); });
        for (int j = 0; j < 4; ++j) {
          std::array<std::array<uint32_t, 2>, 32> b{};
          for (int t = 0; t < 32; ++t) b[t] = {b_of(kr[t][j], false), b_of(kr[t][j], true)};
          const int step = L::k_step(kk2, j) - 2 * kk2;
          mma(s[L::k_block(nb2, j)], step == 0 ? qa0 : qa1, 0, b);
        }
      }
    }
  } else {
    for (int kk = 0; kk < D / 16; ++kk) {
      const Regs qa = load(smem, false, [&](int t) { return q_base + L::q_lane(t, kk); });
      for (int nb2 = 0; nb2 < BN / 16; ++nb2) {
        const Regs kr = load(smem, false, [&](int t) { return k_base + L::k_lane(t, nb2, kk); });
        for (int j = 0; j < 2; ++j) {
          std::array<std::array<uint32_t, 2>, 32> b{};
          for (int t = 0; t < 32; ++t) b[t] = {kr[t][2 * j], kr[t][2 * j + 1]};
          mma(s[2 * nb2 + j], qa, 0, b);
        }
      }
    }
  }
  for (int t = 0; t < 32; ++t) {
    const int g = t / 4, c = t % 4;
    for (int nb = 0; nb < BN / 8; ++nb) {
      for (int e = 0; e < 4; ++e) {
        const int row = g + 8 * (e / 2), key = 8 * nb + 2 * c + e % 2;
        const double want = tiles.qk(row, key);
        ASSERT_NEAR(s[nb][t][e], want, 1e-4 * (1 + std::fabs(want)))
            << what << " S row " << row << " key " << key;
      }
    }
  }

  // O = P V as accumulate() computes it, over every key and over a tail
  // whose missing keys hold NaN.
  for (const int valid : {BN, BN - 5, 1}) {
    const std::vector<uint8_t> vmem = tiles.with_nan_tail(valid);
    std::vector<std::array<std::array<float, 4>, 32>> o(D / 8);
    for (auto& block : o) {
      for (auto& lane : block) lane.fill(0.f);
    }
    for (int kk = 0; kk < BN / 16; ++kk) {
      Regs pa{};
      for (int t = 0; t < 32; ++t) {
        const int g = t / 4, c = t % 4;
        const auto at = [&](int row, int key) { return p[row * BN + key]; };
        const int k0 = 16 * kk + 2 * c;
        pa[t] = {f16x2(at(g, k0), at(g, k0 + 1)), f16x2(at(g + 8, k0), at(g + 8, k0 + 1)),
                 f16x2(at(g, k0 + 8), at(g, k0 + 9)), f16x2(at(g + 8, k0 + 8), at(g + 8, k0 + 9))};
      }
      const auto keep = [&](int i, int c) { return valid < BN ? L::v_keep(kk, i, c, valid) : ~0u; };
      for (int u2 = 0; u2 < L::kUnits / 2; ++u2) {
        const Regs vr = load(vmem, true, [&](int t) { return v_base + L::v_lane(t, kk, u2); });
        for (int h = 0; h < 2; ++h) {
          if (!kFp8) {
            std::array<std::array<uint32_t, 2>, 32> b{};
            for (int t = 0; t < 32; ++t) {
              b[t] = {vr[t][2 * h] & keep(0, t % 4), vr[t][2 * h + 1] & keep(1, t % 4)};
            }
            mma(o[2 * u2 + h], pa, 0, b);
            continue;
          }
          std::array<std::array<uint32_t, 2>, 32> even{}, odd{};
          for (int t = 0; t < 32; ++t) {
            const uint32_t lo = byte_perm(vr[t][2 * h], L::kVPermute);
            const uint32_t hi = byte_perm(vr[t][2 * h + 1], L::kVPermute);
            even[t] = {b_of(lo, false) & keep(0, t % 4), b_of(hi, false) & keep(1, t % 4)};
            odd[t] = {b_of(lo, true) & keep(0, t % 4), b_of(hi, true) & keep(1, t % 4)};
          }
          const int u = 2 * u2 + h;
          mma(o[2 * u], pa, 0, even);
          mma(o[2 * u + 1], pa, 0, odd);
        }
      }
    }
    for (int t = 0; t < 32; ++t) {
      const int g = t / 4, c = t % 4;
      for (int block = 0; block < D / 8; ++block) {
        for (int e = 0; e < 4; ++e) {
          const int row = g + 8 * (e / 2), col = L::o_column(block, 2 * c + e % 2);
          const double want = tiles.pv(row, col, valid);
          ASSERT_NEAR(o[block][t][e], want, 1e-4 * (1 + std::fabs(want)))
              << what << " valid " << valid << " O row " << row << " col " << col;
        }
      }
    }
  }
  // The parts are written in D order through o_column (write_part): every
  // column once per row, by the thread and block the products above put it
  // in.
  std::vector<int> seen(D, 0);
  for (int block = 0; block < D / 8; ++block) {
    for (int n = 0; n < 8; ++n) ++seen[L::o_column(block, n)];
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), D) << what;
}

// movmatrix.sync.aligned.m8n8.trans.b16: thread t holds elements (row
// t / 4, cols 2 (t % 4), + 1) of an 8 x 8 matrix, the first in the low
// half, and gets the same elements of its transpose.
std::array<uint32_t, 32> movmatrix_trans(const std::array<uint32_t, 32>& in) {
  uint16_t m[8][8];
  for (int t = 0; t < 32; ++t) {
    m[t / 4][2 * (t % 4)] = uint16_t(in[t] & 0xffff);
    m[t / 4][2 * (t % 4) + 1] = uint16_t(in[t] >> 16);
  }
  std::array<uint32_t, 32> out{};
  for (int t = 0; t < 32; ++t) {
    out[t] = m[2 * (t % 4)][t / 4] | (uint32_t(m[2 * (t % 4) + 1][t / 4]) << 16);
  }
  return out;
}

// The swapped products (DecodeSwapLayout: S^T = K Q^T, O^T = V^T P^T) of
// one warp on the same models and tiles: for both n8 blocks of rows, every
// score and output element must be the plain product, with a tail's NaN
// keys kept out of O.
template <int D, int BN, int kBytes>
void check_swap_layout(std::mt19937& rng) {
  using L = attention::DecodeSwapLayout<D, BN, kBytes>;
  using Tiles = WarpTiles<D, BN, kBytes>;
  constexpr bool kFp8 = kBytes == 1;
  const Tiles tiles(rng);
  const std::string what = tiles.what + " swapped";
  using Acc = std::array<std::array<float, 4>, 32>;
  std::array<unsigned, 32> rows{};
  const auto load = [&](const std::vector<uint8_t>& mem, bool trans, auto address) {
    for (int t = 0; t < 32; ++t) rows[t] = address(t);
    return ldmatrix_x4(mem, rows, trans);
  };
  for (int nb = 0; nb < 2; ++nb) {
    // S^T, m16 tile by m16 tile of keys.
    for (int mt = 0; mt < L::kKeyTiles; ++mt) {
      Acc s{};
      for (auto& lane : s) lane.fill(0.f);
      for (int kk2 = 0; kk2 < D / 32; ++kk2) {
        // Q^T's b0, b1 of steps 2 kk2 and 2 kk2 + 1 (registers 0, 1 and 2, 3).
        const Regs qb =
            load(tiles.smem, false, [&](int t) { return Tiles::q_base + L::q_b_lane(t, kk2, nb); });
        for (int step = 0; step < 2; ++step) {
          Regs a{};
          if (kFp8) {
            const Regs kr = load(tiles.smem, false,
                                 [&](int t) { return Tiles::k_base + L::k_lane(t, mt, kk2); });
            for (int j = 0; j < 4; ++j) {
              if (L::k_step(kk2, j) != 2 * kk2 + step) continue;
              for (int t = 0; t < 32; ++t) {
                a[t][L::k_half(j)] = Tiles::b_of(kr[t][j], false);
                a[t][2 + L::k_half(j)] = Tiles::b_of(kr[t][j], true);
              }
            }
          } else {
            const Regs kr = load(tiles.smem, false, [&](int t) {
              return Tiles::k_base + L::k_lane(t, mt, 2 * kk2 + step);
            });
            for (int t = 0; t < 32; ++t) {
              for (int j = 0; j < 4; ++j) a[t][L::k_a(j)] = kr[t][j];
            }
          }
          std::array<std::array<uint32_t, 2>, 32> b{};
          for (int t = 0; t < 32; ++t) b[t] = {qb[t][2 * step], qb[t][2 * step + 1]};
          mma(s, a, 0, b);
        }
      }
      for (int t = 0; t < 32; ++t) {
        for (int e = 0; e < 4; ++e) {
          const int key = L::s_key(mt, t / 4, e), row = L::s_row(nb, t % 4, e);
          const double want = tiles.qk(row, key);
          ASSERT_NEAR(s[t][e], want, 1e-4 * (1 + std::fabs(want)))
              << what << " S row " << row << " key " << key;
        }
      }
    }
    // O^T over every key and over tails whose missing keys hold NaN, P^T
    // from P in S^T's fragments (as the softmax leaves it) by movmatrix.
    for (const int valid : {BN, BN - 5, 1}) {
      const std::vector<uint8_t> vmem = tiles.with_nan_tail(valid);
      std::vector<Acc> o(L::kOutTiles);
      for (auto& tile : o) {
        for (auto& lane : tile) lane.fill(0.f);
      }
      for (int kk = 0; kk < L::kKeyTiles; ++kk) {
        std::array<uint32_t, 32> lo{}, hi{};
        for (int t = 0; t < 32; ++t) {
          const auto at = [&](int e) {
            return tiles.p[L::s_row(nb, t % 4, e) * BN + L::s_key(kk, t / 4, e)];
          };
          lo[t] = f16x2(at(0), at(1));
          hi[t] = f16x2(at(2), at(3));
        }
        const std::array<uint32_t, 32> b0 = movmatrix_trans(lo), b1 = movmatrix_trans(hi);
        std::array<std::array<uint32_t, 2>, 32> b{};
        for (int t = 0; t < 32; ++t) b[t] = {b0[t], b1[t]};
        const auto keep = [&](int i, int c) {
          return valid < BN ? L::v_keep(kk, i, c, valid) : ~0u;
        };
        for (int u2 = 0; u2 < L::kUnits / 2; ++u2) {
          const Regs vr =
              load(vmem, true, [&](int t) { return Tiles::v_base + L::v_lane(t, kk, u2); });
          Regs even{}, odd{};
          for (int t = 0; t < 32; ++t) {
            for (int h = 0; h < 2; ++h) {
              for (int i = 0; i < 2; ++i) {
                const uint32_t reg = vr[t][2 * h + i];
                const uint32_t mask = keep(i, t % 4);
                if (!kFp8) {
                  even[t][L::v_a(h, i)] = reg & mask;
                  continue;
                }
                const uint32_t two = byte_perm(reg, L::kVPermute);
                even[t][L::v_a(h, i)] = Tiles::b_of(two, false) & mask;
                odd[t][L::v_a(h, i)] = Tiles::b_of(two, true) & mask;
              }
            }
          }
          if (kFp8) {
            mma(o[2 * u2], even, 0, b);
            mma(o[2 * u2 + 1], odd, 0, b);
          } else {
            mma(o[u2], even, 0, b);
          }
        }
      }
      for (int t = 0; t < 32; ++t) {
        for (int mt = 0; mt < L::kOutTiles; ++mt) {
          for (int e = 0; e < 4; ++e) {
            const int row = L::s_row(nb, t % 4, e);
            const int col = L::ot_column(mt, L::s_key(0, t / 4, e));
            const double want = tiles.pv(row, col, valid);
            ASSERT_NEAR(o[mt][t][e], want, 1e-4 * (1 + std::fabs(want)))
                << what << " valid " << valid << " O row " << row << " col " << col;
          }
        }
      }
    }
  }
  std::vector<int> seen(D, 0);
  for (int mt = 0; mt < L::kOutTiles; ++mt) {
    for (int m = 0; m < 16; ++m) ++seen[L::ot_column(mt, m)];
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), D) << what;
}

TEST(DecodeLayout, SwappedProductsOnModelsOfTheHardware) {
  std::mt19937 rng(20261202);
  for (int trial = 0; trial < 2; ++trial) {
    check_swap_layout<128, 32, 1>(rng);
    check_swap_layout<128, 64, 1>(rng);
    check_swap_layout<64, 64, 1>(rng);
    check_swap_layout<64, 32, 1>(rng);
    check_swap_layout<128, 32, 2>(rng);
    check_swap_layout<64, 64, 2>(rng);
    // Heads past 128 (swapped only): rows of several swizzled boxes.
    check_swap_layout<256, 64, 1>(rng);
    check_swap_layout<384, 32, 1>(rng);
    check_swap_layout<512, 32, 1>(rng);
    check_swap_layout<512, 16, 2>(rng);
  }
}

TEST(DecodeLayout, OneWarpsProductsOnModelsOfTheHardware) {
  std::mt19937 rng(20261201);
  for (int trial = 0; trial < 3; ++trial) {
    check_decode_layout<128, 32, 1>(rng);
    check_decode_layout<128, 64, 1>(rng);
    check_decode_layout<64, 64, 1>(rng);
    check_decode_layout<64, 32, 1>(rng);
    check_decode_layout<128, 32, 2>(rng);
    check_decode_layout<64, 64, 2>(rng);
  }
}

// The scaling of a bf16 q row into fp16's range (e4m3 K/V): the largest
// element lands in [2^14, 2^15), the scores' factor undoes it exactly, and
// zero, tiny, huge and non-finite rows are safe.
TEST(DecodeLayout, QRowScaleFitsFp16AndUndoes) {
  using L = attention::DecodeLayout<128, 32, 1>;
  const auto bits_of = [](float x) {
    uint32_t b;
    std::memcpy(&b, &x, 4);
    return b;
  };
  const auto float_of = [](uint32_t b) {
    float x;
    std::memcpy(&x, &b, 4);
    return x;
  };
  for (int e = -149; e <= 127; ++e) {
    for (const float m : {1.f, 1.5f, 1.9999999f}) {
      const float largest = std::ldexp(m, e);
      if (largest == 0.f || !std::isfinite(largest)) continue;
      const unsigned exponent = bits_of(largest) >> 23;
      const float scale = float_of(L::q_scale_bits(exponent));
      const float unscale = float_of(L::q_unscale_bits(exponent));
      ASSERT_TRUE(std::isnormal(scale) && std::isnormal(unscale)) << largest;
      EXPECT_EQ(double(scale) * double(unscale), 1.0) << largest;
      if (e >= -112) {
        EXPECT_GE(largest * scale, 16384.f) << largest;
        EXPECT_LT(largest * scale, 32768.f) << largest;
      } else {
        EXPECT_EQ(scale, 1.f) << largest;  // under 2^-112: as it is
      }
    }
  }
  EXPECT_EQ(float_of(L::q_scale_bits(0)), 1.f);  // a zero row
  const unsigned inf = bits_of(INFINITY) >> 23;
  EXPECT_TRUE(std::isinf(INFINITY * float_of(L::q_scale_bits(inf))));
  EXPECT_TRUE(std::isnormal(float_of(L::q_unscale_bits(inf))));
}

// The swizzle arithmetic every swizzled tile shares (SwizzledRows too) is
// the TMA's, for each width, across chunks of a D 256 row.
TEST(DecodeLayout, SwizzledOffsetIsTheTmasSwizzle) {
  for (const int swizzle : {128, 64, 32}) {
    const int units = swizzle / 16;
    for (int r = 0; r < 64; ++r) {
      for (int u = 0; u < units; ++u) {
        EXPECT_EQ(attention::swizzled_offset(64, swizzle, r, u),
                  tma_swizzled(unsigned(r * swizzle + 16 * u), swizzle))
            << swizzle << " " << r << " " << u;
      }
      // Unit u of a later chunk: the chunk's own region, the same pattern.
      EXPECT_EQ(attention::swizzled_offset(64, swizzle, r, units + 1),
                64u * unsigned(swizzle) + attention::swizzled_offset(64, swizzle, r, 1));
    }
  }
}

}  // namespace
}  // namespace attnjit

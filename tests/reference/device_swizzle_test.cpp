// The sm_90a path's shared-memory layout (templates/attention/smem_sm90.cuh,
// compiled for the host): every (row, 16-byte unit) of a tile has its own
// 16-byte slot inside the tile, and the slot is the hardware's swizzle
// (address bits [4, 4 + B) XOR bits [7, 7 + B), B = log2(row bytes / 16))
// of the plain chunked layout, for every head dim and tile height; the
// descriptors point at the right chunk and carry the right byte offsets.
// The GPU test WgmmaLayout checks the same layout against the tensor cores.
#include <gtest/gtest.h>

#include <set>

// clang-format off
#include "host_device.h"
#include "attention/smem_sm90.cuh"
#include "host_device_end.h"
// clang-format on

namespace attnjit {
namespace {

template <int D, int kRows>
void check_layout() {
  using Rows = attention::SwizzledRows<D>;
  SCOPED_TRACE(testing::Message() << "D=" << D << " rows=" << kRows);
  constexpr int kBits = Rows::kUnits == 8 ? 3 : Rows::kUnits == 4 ? 2 : 1;
  std::set<unsigned> slots;
  for (int r = 0; r < kRows; ++r) {
    for (int u = 0; u < Rows::kUnitsPerRow; ++u) {
      const unsigned got = Rows::template offset<kRows>(r, u);
      const unsigned plain = unsigned((u / Rows::kUnits) * kRows * Rows::kSwizzleBytes +
                                      r * Rows::kSwizzleBytes + (u % Rows::kUnits) * 16);
      const unsigned swizzled = plain ^ (((plain >> 7) & ((1u << kBits) - 1)) << 4);
      ASSERT_EQ(got, swizzled) << "r=" << r << " u=" << u;
      ASSERT_EQ(got % 16, 0u);
      ASSERT_LT(got, unsigned(kRows * D * 2));
      ASSERT_TRUE(slots.insert(got).second) << "r=" << r << " u=" << u;
    }
  }
  // Descriptors: start address (>> 4) at the chunk of k-step kk, leading
  // and stride byte offsets (>> 4), swizzle mode in the top bits.
  const unsigned tile = 4096;  // 1024-aligned
  for (int kk = 0; kk < D / 16; ++kk) {
    const unsigned long long desc = Rows::template k_major<kRows>(tile, 0, kk);
    const unsigned start = tile + (kk * 16 / Rows::kChunk) * kRows * Rows::kSwizzleBytes +
                           (kk * 16 % Rows::kChunk) * 2;
    ASSERT_EQ(desc & 0x3FFF, start >> 4) << "kk=" << kk;
    ASSERT_EQ((desc >> 32) & 0x3FFF, unsigned(8 * Rows::kSwizzleBytes) >> 4);
    ASSERT_EQ(desc >> 62, Rows::kUnits == 8 ? 1u : Rows::kUnits == 4 ? 2u : 3u);
  }
  for (int kk = 0; kk < kRows / 16; ++kk) {
    const unsigned long long desc = Rows::template mn_major<kRows>(tile, kk);
    ASSERT_EQ(desc & 0x3FFF, (tile + kk * 16 * Rows::kSwizzleBytes) >> 4);
    ASSERT_EQ((desc >> 16) & 0x3FFF, unsigned(kRows * Rows::kSwizzleBytes) >> 4);
    ASSERT_EQ((desc >> 32) & 0x3FFF, unsigned(8 * Rows::kSwizzleBytes) >> 4);
  }
  // Each k-step's descriptor is the tile's first plus a constant
  // (ptx::descriptor_advance): the whole descriptor equals a fresh encoding
  // of the step's address, for a warpgroup's rows inside the tile and for
  // tiles up to the top of the largest block's shared memory (227 KiB;
  // the start field holds address / 16 in 14 bits).
  constexpr unsigned kTop = 227u * 1024u;
  const unsigned tile_bytes = unsigned(kRows * D * 2);
  for (const unsigned base : {0u, 4096u, 100u * 1024u, (kTop - tile_bytes) / 1024u * 1024u}) {
    for (int row0 = 0; row0 < kRows; row0 += 64) {
      for (int kk = 0; kk < D / 16; ++kk) {
        const unsigned start = base + (kk * 16 / Rows::kChunk) * kRows * Rows::kSwizzleBytes +
                               row0 * Rows::kSwizzleBytes + (kk * 16 % Rows::kChunk) * 2;
        ASSERT_EQ(Rows::template k_major<kRows>(base, row0, kk),
                  ptx::smem_descriptor<Rows::kSwizzleBytes>(start, 16, 8 * Rows::kSwizzleBytes))
            << "base " << base << " row0 " << row0 << " kk " << kk;
      }
    }
    for (int kk = 0; kk < kRows / 16; ++kk) {
      ASSERT_EQ(Rows::template mn_major<kRows>(base, kk),
                ptx::smem_descriptor<Rows::kSwizzleBytes>(base + kk * 16 * Rows::kSwizzleBytes,
                                                          kRows * Rows::kSwizzleBytes,
                                                          8 * Rows::kSwizzleBytes))
          << "base " << base << " kk " << kk;
    }
  }
}

template <int D>
void check_heights() {
  check_layout<D, 16>();
  check_layout<D, 64>();
  check_layout<D, 128>();
  check_layout<D, 176>();
  check_layout<D, 192>();
}

TEST(DeviceSwizzle, TilesAreTheHardwareSwizzleOfTheChunkedLayout) {
  check_heights<64>();
  check_heights<80>();
  check_heights<96>();
  check_heights<128>();
  check_heights<192>();
  check_heights<256>();
}

}  // namespace
}  // namespace attnjit

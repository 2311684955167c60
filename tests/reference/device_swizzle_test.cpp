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

// The address of 16-byte unit u of the MN-major operand's key k (0..15) in
// the k-step that `desc` describes, as wgmma reads it: the start, the
// leading offset per swizzle chunk of the N (D) units, the stride offset
// per 8 keys, a swizzled row per key, then the hardware's swizzle of the
// address (1024-byte aligned atoms).
template <class Rows>
unsigned mn_major_address(unsigned long long desc, int k, int u) {
  constexpr int kBits = Rows::kUnits == 8 ? 3 : Rows::kUnits == 4 ? 2 : 1;
  const unsigned start = unsigned(desc & 0x3FFF) << 4;
  const unsigned lbo = unsigned((desc >> 16) & 0x3FFF) << 4;
  const unsigned sbo = unsigned((desc >> 32) & 0x3FFF) << 4;
  const unsigned plain = start + unsigned(u / Rows::kUnits) * lbo + unsigned(k / 8) * sbo +
                         unsigned(k % 8) * Rows::kSwizzleBytes + unsigned(u % Rows::kUnits) * 16;
  return plain ^ (((plain >> 7) & ((1u << kBits) - 1)) << 4);
}

// small_pages' V tile (BlockedRows): blocks of kBlockRows rows, each what
// one TMA box of kBlockRows rows x D writes (its swizzle chunks as the
// box's third dimension, innermost the chunk's columns, then rows, then
// chunks), and every k-step's descriptor reads the rows the tile holds
// there, by the model of wgmma's MN-major addressing that SwizzledRows'
// tiles (checked on the tensor cores by WgmmaLayout) satisfy too.
template <int D, int kBlockRows, int kRows>
void check_blocked_layout() {
  using Blocked = attention::BlockedRows<D, kBlockRows>;
  using Rows = attention::SwizzledRows<D>;
  SCOPED_TRACE(testing::Message() << "D=" << D << " block=" << kBlockRows << " rows=" << kRows);
  constexpr int kBits = Rows::kUnits == 8 ? 3 : Rows::kUnits == 4 ? 2 : 1;
  constexpr unsigned kBlockBytes = unsigned(kBlockRows * D * 2);
  std::set<unsigned> slots;
  for (int r = 0; r < kRows; ++r) {
    for (int u = 0; u < Rows::kUnitsPerRow; ++u) {
      const unsigned got = Blocked::template offset<kRows>(r, u);
      // The box of block r / kBlockRows, written densely from the block's
      // (1024-aligned) start, then swizzled by the address.
      const int in_block = r % kBlockRows;
      const unsigned dense =
          unsigned(((u / Rows::kUnits) * kBlockRows + in_block) * Rows::kSwizzleBytes +
                   (u % Rows::kUnits) * 16);
      const unsigned want = unsigned(r / kBlockRows) * kBlockBytes +
                            (dense ^ (((dense >> 7) & ((1u << kBits) - 1)) << 4));
      ASSERT_EQ(got, want) << "r=" << r << " u=" << u;
      ASSERT_LT(got, unsigned(kRows * D * 2));
      ASSERT_TRUE(slots.insert(got).second) << "r=" << r << " u=" << u;
      if constexpr (kBlockRows == kRows) ASSERT_EQ(got, (Rows::template offset<kRows>(r, u)));
    }
  }
  for (const unsigned tile : {0u, 4096u, 100u * 1024u}) {
    for (int kk = 0; kk < kRows / 16; ++kk) {
      const unsigned long long desc = Blocked::template mn_major<kRows>(tile, kk);
      ASSERT_EQ(desc, (Blocked::mn_major_step(Blocked::template mn_major_first<kRows>(tile), kk)));
      if constexpr (kBlockRows == kRows)
        ASSERT_EQ(desc, (Rows::template mn_major<kRows>(tile, kk)));
      for (int k = 0; k < 16; ++k) {
        for (int u = 0; u < Rows::kUnitsPerRow; ++u) {
          ASSERT_EQ(mn_major_address<Rows>(desc, k, u),
                    tile + Blocked::template offset<kRows>(16 * kk + k, u))
              << "tile " << tile << " kk " << kk << " k " << k << " u " << u;
        }
      }
    }
  }
}

// Heads wider than 256 (mainloop_sm90.cuh, kDSplit 2): a warpgroup's P V
// reads its half of D through a descriptor at the V tile plus
// column_offset(its first column), stepping by the whole tile's blocks;
// by wgmma's MN-major addressing (the model above) every unit of its part
// is the unit of the whole tile at the part's columns, in either layout.
template <int D, int kBlockRows, int kRows>
void check_part_read() {
  using Blocked = attention::BlockedRows<D, kBlockRows>;
  using Rows = attention::SwizzledRows<D>;
  constexpr int kPart = D / 2;
  SCOPED_TRACE(testing::Message() << "D=" << D << " block=" << kBlockRows << " rows=" << kRows);
  for (int part = 0; part < 2; ++part) {
    const unsigned columns = Blocked::column_offset(part * kPart);
    ASSERT_EQ(columns % 1024, 0u) << "a descriptor's swizzle atoms stay aligned";
    for (const unsigned tile : {0u, 4096u, 100u * 1024u}) {
      const unsigned long long first = Blocked::template mn_major_first<kRows>(tile + columns);
      for (int kk = 0; kk < kRows / 16; ++kk) {
        const unsigned long long desc = Blocked::mn_major_step(first, kk);
        for (int k = 0; k < 16; ++k) {
          for (int u = 0; u < kPart / 8; ++u) {
            ASSERT_EQ(mn_major_address<Rows>(desc, k, u),
                      tile + Blocked::template offset<kRows>(16 * kk + k, part * kPart / 8 + u))
                << "part " << part << " tile " << tile << " kk " << kk << " k " << k << " u "
                << u;
          }
        }
      }
    }
  }
}

TEST(DeviceSwizzle, AWarpgroupsPartOfDIsReadWhereTheTileHoldsIt) {
  // The wide-head rules' key tiles (32 keys; fp8 16), and with small
  // pages V in blocks of 16 keys.
  check_part_read<512, 32, 32>();
  check_part_read<512, 16, 16>();
  check_part_read<512, 16, 32>();
  check_part_read<384, 32, 32>();
  check_part_read<384, 16, 16>();
  check_part_read<384, 16, 32>();
}

TEST(DeviceSwizzle, SmallPagesBlocksAreWhatOneBoxPerBlockWritesAndWgmmaReads) {
  // The small_pages head dims (two or more swizzle chunks of 32, 64 or
  // 128 bytes), their 16-key blocks in the tiles of the rules' block_n.
  check_blocked_layout<96, 16, 64>();
  check_blocked_layout<128, 16, 64>();
  check_blocked_layout<128, 16, 128>();
  check_blocked_layout<192, 16, 64>();
  check_blocked_layout<256, 16, 64>();
  check_blocked_layout<256, 16, 128>();
  // One block: SwizzledRows' layout and descriptors, which the model above
  // reads as the tensor cores do.
  check_blocked_layout<64, 64, 64>();
  check_blocked_layout<128, 128, 128>();
  check_blocked_layout<96, 64, 64>();
  check_blocked_layout<80, 64, 64>();
  check_blocked_layout<80, 16, 16>();  // 2560-byte tiles of 16 keys (one block)
}

}  // namespace
}  // namespace attnjit

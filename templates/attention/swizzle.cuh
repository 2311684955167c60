// The swizzled shared-memory tile layout as plain index arithmetic, for
// the device and the host (the layout tests): the TMA's 128, 64 and 32-byte
// swizzle on a 1024-byte aligned tile, which wgmma's descriptors, ldmatrix
// and the kernels' own stores all address the same way (SwizzledRows,
// smem_sm90.cuh; DecodeLayout, decode_layout.cuh).
#pragma once

#if defined(__CUDACC_RTC__)
#define ATTNJIT_SWIZZLE_FN __host__ __device__ constexpr
#else
#define ATTNJIT_SWIZZLE_FN constexpr
#endif

namespace attnjit {
namespace attention {

// Byte offset of 16-byte unit u (of a row's D / 8 for 16-bit elements) of
// row r in a tile of `rows` rows, split into column chunks whose swizzled
// rows are `swizzle_bytes` wide (128, 64 or 32), one chunk after the other.
ATTNJIT_SWIZZLE_FN unsigned swizzled_offset(int rows, int swizzle_bytes, int r, int u) {
  const int units = swizzle_bytes / 16;
  const int shift = units == 8 ? 0 : units == 4 ? 1 : 2;
  const int unit = (u % units) ^ ((r >> shift) & (units - 1));
  return static_cast<unsigned>((u / units) * rows * swizzle_bytes + r * swizzle_bytes + unit * 16);
}

// The same for a tile stored as blocks of `block_rows` rows one after the
// other (BlockedRows, smem_sm90.cuh), each laid out as a tile of that many
// rows: what one TMA box per block writes when the box holds all of a
// row's `head_dim` elements (16-bit), its swizzle chunks as the box's third
// dimension.
ATTNJIT_SWIZZLE_FN unsigned blocked_swizzled_offset(int block_rows, int swizzle_bytes, int head_dim,
                                                    int r, int u) {
  return static_cast<unsigned>((r / block_rows) * block_rows * head_dim * 2) +
         swizzled_offset(block_rows, swizzle_bytes, r % block_rows, u);
}

}  // namespace attention
}  // namespace attnjit

#undef ATTNJIT_SWIZZLE_FN

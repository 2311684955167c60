// The TMA maps of k and v (kv_tensor_maps.h), encoded on the launch path
// (Variant::launch, variant.cpp).
#include "kv_tensor_maps.h"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "attention/tile_config.h"
#include "attnjit/error.h"

namespace attnjit {
namespace {

// The TMA maps of k and v for the warpgroup kernels: [rows, heads, D] as a
// 3-D tensor (D innermost), boxes of the tile config's TMA box: block_n rows
// of one head and one swizzle chunk of D, as the kernel's shared-memory
// tiles are laid out (templates/attention/tile_config.cuh). Rows past a
// sequence's keys belong to the next sequence (the kernel zeroes those V
// rows) or lie past total_k (zeros). Encoding both maps adds 0.2-0.4 us to
// a launch (H200 host), so each thread keeps the maps of its last launch
// and re-encodes only when a tensor changed.
bool same_tensor(const TiledTensor& x, const TiledTensor& y) {
  return x.base == y.base && x.element == y.element && x.rank == y.rank &&
         std::equal(x.dims, x.dims + 5, y.dims) &&
         std::equal(x.strides, x.strides + 4, y.strides) && std::equal(x.box, x.box + 5, y.box) &&
         x.swizzle_bytes == y.swizzle_bytes;
}

}  // namespace

void kv_tensor_maps(const AttentionFlags& flags, const AttentionArgs& a, const TmaBox& box,
                    const TensorMapBytes* (&out)[2]) {
  struct Cached {
    TiledTensor tensor;  // base null (never a valid k or v) until encoded
    TensorMapBytes map;
  };
  thread_local Cached cached[2];
  const int widths[2] = {flags.head_dim, flags.value_head_dim()};  // k's rows, v's
  const bool paged = flags.kv_layout == KvLayout::kPaged;
  const void* bases[2] = {a.k, a.v};
  const int64_t row_strides[2] = {a.k_row_stride, a.v_row_stride};
  const int64_t head_strides[2] = {a.k_head_stride, a.v_head_stride};
  const int64_t page_strides[2] = {a.k_page_stride, a.v_page_stride};
  // fp8 K/V: rows of D bytes, copied unswizzled into the producer's
  // staging tiles (one box D bytes wide, or 256-byte chunks of the row
  // past that: attention::fp8_raw_chunk), converted there; or, for the
  // decode block that converts in registers, swizzled boxes of the tile
  // configuration's width in bytes (TmaBox::fp8_swizzled).
  const bool fp8 = flags.kv_dtype == KvDType::kFp8E4M3;
  const bool raw_rows = fp8 && !box.fp8_swizzled;
  const uint64_t element_bytes = fp8 ? 1 : 2;
  for (int i = 0; i < 2; ++i) {
    const int d = widths[i];
    TiledTensor t;
    t.base = bases[i];
    t.element = fp8                           ? TiledElement::kByte
                : flags.dtype == DType::kBF16 ? TiledElement::kBF16
                                              : TiledElement::kF16;
    // One head: its coordinate is always 0, so the head stride is never
    // stepped; keep it at least a row of D so the strides nest.
    const uint64_t head_stride =
        uint64_t(a.num_heads_kv == 1 ? std::max<int64_t>(head_strides[i], d) : head_strides[i]) *
        element_bytes;
    const uint64_t row_stride = uint64_t(row_strides[i]) * element_bytes;
    const uint64_t page_stride = uint64_t(page_strides[i]) * element_bytes;
    t.swizzle_bytes = raw_rows ? 0 : box.swizzle_bytes;
    if (paged && i == 1 && box.v_block_rows > 0 && !fp8) {
      // small_pages' V: [pages, heads, chunks of D, rows of a page, chunk
      // columns], a box of v_block_rows rows and every chunk, so that one
      // box writes a block of the tile's layout (BlockedRows). The chunk
      // stride (its bytes) lies below the row stride: the map's strides
      // need not grow outwards.
      const uint64_t chunks = uint64_t(d / box.chunk);
      t.rank = 5;
      const uint64_t dims[5] = {uint64_t(box.chunk), uint64_t(a.page_size), chunks,
                                uint64_t(a.num_heads_kv), uint64_t(a.num_pages)};
      const uint64_t strides[4] = {row_stride, uint64_t(box.chunk) * element_bytes, head_stride,
                                   page_stride};
      const uint32_t boxes[5] = {uint32_t(box.chunk), uint32_t(box.v_block_rows), uint32_t(chunks),
                                 1, 1};
      std::copy(dims, dims + 5, t.dims);
      std::copy(strides, strides + 4, t.strides);
      std::copy(boxes, boxes + 5, t.box);
    } else {
      t.dims[0] = uint64_t(d);
      t.dims[1] = uint64_t(a.num_heads_kv);
      t.strides[0] = head_stride;
      t.strides[1] = row_stride;
      t.box[0] = uint32_t(raw_rows ? attention::fp8_raw_chunk(d) : box.chunk);
      t.box[1] = 1;
      if (paged) {
        // [pages, rows of a page, heads, D]; a box never crosses a page: a
        // tile of block_n keys is boxes of gcd(block_n, page_size) rows
        // (attention::paged_box_rows, which the kernels use too).
        t.rank = 4;
        t.dims[2] = uint64_t(a.page_size);
        t.dims[3] = uint64_t(a.num_pages);
        t.strides[2] = page_stride;
        t.box[2] = uint32_t(attention::paged_box_rows(box.rows, a.page_size));
        t.box[3] = 1;
      } else {
        t.dims[2] = uint64_t(a.total_k > 0 ? a.total_k : 1);
        t.box[2] = uint32_t(box.rows);
      }
    }
    Cached& c = cached[i];
    if (!same_tensor(c.tensor, t)) {
      // Checked only here: a cached map's strides passed already.
      constexpr int64_t kMaxStride = int64_t(1) << 39;  // elements: the TMA's 2^40 bytes
      if (row_strides[i] >= kMaxStride || head_strides[i] >= kMaxStride ||
          (paged && page_strides[i] >= kMaxStride)) {
        throw Error(
            ErrorKind::kArgument,
            fmt::format("attention: k and v strides must stay below 2^39 elements on sm_90a "
                        "(the TMA's limit); got k ({}, {}), v ({}, {})",
                        a.k_row_stride, a.k_head_stride, a.v_row_stride, a.v_head_stride));
      }
      c.tensor = TiledTensor{};  // a failed encode leaves no stale hit behind
      Driver::get().encode_tensor_map(c.map, t);
      c.tensor = t;
    }
    out[i] = &c.map;
  }
}

}  // namespace attnjit

// The host's name for the attention kernels' tile configuration: the
// runtime, the tools and the tests include this with the host compiler.
// The rules live in tile_config.cuh, the header the kernels include: only
// templates/**/*.cuh are embedded for NVRTC, so the one definition must
// sit there to reach both sides. TileShapeBuilder, below, is host code
// only.
#pragma once

#include "tile_config.cuh"

namespace attnjit {
namespace attention {

// A TileShape by named fields, for host code that spells one out (the
// tests, the autotuner's grid): C++17 has no designated initializers, and
// positional braces would take a bool for pack_gqa or shift every field
// after one that TileShape gains. The fields not named keep TileShape's
// defaults (zero, but producer_warps 1):
//   make_tile_config(TileShapeBuilder().head_dim(128).block_m(64).wgmma(true))
class TileShapeBuilder {
 public:
  constexpr TileShapeBuilder() = default;
  constexpr explicit TileShapeBuilder(const TileShape& from) : s_(from) {}
  constexpr operator TileShape() const { return s_; }  // NOLINT: converts where a shape goes

#define ATTNJIT_TILE_SHAPE_FIELD(name)                                \
  constexpr TileShapeBuilder& name(decltype(TileShape::name) value) { \
    s_.name = value;                                                  \
    return *this;                                                     \
  }
  ATTNJIT_TILE_SHAPE_FIELD(head_dim)
  ATTNJIT_TILE_SHAPE_FIELD(block_m)
  ATTNJIT_TILE_SHAPE_FIELD(block_n)
  ATTNJIT_TILE_SHAPE_FIELD(warps)
  ATTNJIT_TILE_SHAPE_FIELD(stages)
  ATTNJIT_TILE_SHAPE_FIELD(min_blocks)
  ATTNJIT_TILE_SHAPE_FIELD(pack_gqa)
  ATTNJIT_TILE_SHAPE_FIELD(wgmma)
  ATTNJIT_TILE_SHAPE_FIELD(register_cap)
  ATTNJIT_TILE_SHAPE_FIELD(kv_fp8)
  ATTNJIT_TILE_SHAPE_FIELD(split_kv)
  ATTNJIT_TILE_SHAPE_FIELD(smem_per_sm)
  ATTNJIT_TILE_SHAPE_FIELD(decode_mma)
  ATTNJIT_TILE_SHAPE_FIELD(decode_swap)
  ATTNJIT_TILE_SHAPE_FIELD(small_pages)
  ATTNJIT_TILE_SHAPE_FIELD(producer_warps)
  ATTNJIT_TILE_SHAPE_FIELD(head_dim_v)
#undef ATTNJIT_TILE_SHAPE_FIELD

 private:
  TileShape s_{};
};

}  // namespace attention
}  // namespace attnjit

// Varlen prefill attention on tensor cores, one block per (query tile,
// head, sequence): the entry points of the generated unit (specs/README.md,
// "template contract"), attention_prefill_traits<C> and
// attention_prefill_body<C>. The body gathers the args and picks a path
// and its pieces, so a new kind of piece arrives as a type chosen here.
// Each path is a block program (forward_sm80.cuh, forward_sm90.cuh) over a
// tile scheduler (tile_scheduler.cuh), a mainloop (mainloop_sm80.cuh:
// mma.sync on any target; mainloop_sm90.cuh: a TMA producer and wgmma
// consumers, tuning parameter wgmma = 1 on sm_90a), a K/V source
// (kv_source.cuh) and an epilogue (epilogue.cuh); both share the masks,
// sinks, logits and softmax. Every derived size is tile_config.cuh's.
#pragma once

#include "attention/epilogue.cuh"
#include "attention/forward_sm80.cuh"
#include "attention/kv_source.cuh"
#include "attention/mainloop_sm80.cuh"
#include "attention/params.cuh"
#include "attention/tile_config.cuh"
#include "attention/tile_scheduler.cuh"
#include "common/types.cuh"
// The warpgroup path (and its 40 KB of generated wrappers) only where it
// can run: NVRTC defines the feature macro for sm_90a.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define ATTNJIT_HAS_WGMMA 1
#include "attention/decode_sm90.cuh"
#include "attention/forward_sm90.cuh"
#include "attention/mainloop_sm90.cuh"
#else
#define ATTNJIT_HAS_WGMMA 0
#endif

namespace attnjit {

template <class C>
struct attention_prefill_traits {
  static_assert(ATTNJIT_HAS_WGMMA || C::wgmma == 0, "wgmma = 1 needs the sm_90a target");
  // The tuning params that choose among ways, each one of its values (a
  // value the kernels do not know is an error, not one of the others).
  static_assert(C::wgmma == 0 || C::wgmma == 1, "tuning param wgmma is 0 or 1");
  static_assert(C::wgmma != 0 || C::head_dim <= attention::kMaxHeadDimMmaSync,
                "heads wider than 256 need the warpgroup path (wgmma = 1, sm_90a)");
  static_assert(C::wgmma != 0 || attention::value_dim<C>() == C::head_dim,
                "v narrower than q and k (head_dim_v) needs the warpgroup path (wgmma = 1, sm_90a)");
  static_assert(C::pack_gqa == 0 || C::pack_gqa == 1,
                "tuning param pack_gqa is 0 (a query head per tile) or 1 (GQA packed)");
  static_assert(C::decode_mma >= 0 && C::decode_mma <= 2, "tuning param decode_mma is 0, 1 or 2");
  static_assert(C::producer_warps == 1 || C::producer_warps == 2,
                "tuning param producer_warps is 1 or 2");
  static constexpr unsigned threads = attention::tile_config<C>().threads;
  static constexpr unsigned smem_bytes = attention::tile_config<C>().smem_bytes;
  // Blocks per SM to fit: the tuning's min_blocks, fewer where the shared
  // memory does not hold that many (tile_config.cuh).
  static constexpr unsigned min_blocks = attention::tile_config<C>().blocks_per_sm;
};

template <class C>
__device__ __forceinline__ void attention_prefill_body(
    const attention::Params<typename C::dtype>& prm) {
  // The pieces of a path: a later feature (another scheduler, K/V source
  // or epilogue) is another type picked here by a flag, not a branch in
  // these.
  using Scheduler = attention::TileScheduler<C, C::block_m, C::block_n>;
  using KV = attention::KVSource<C>;
  using Epilogue = attention::Epilogue<C>;
#if ATTNJIT_HAS_WGMMA
  static_assert(!attention::tile_config<C>().decode_rows_mismatch,
                "tuning: decode_mma 1 needs block_m = 16 x warps, decode_mma 2 a multiple of 8 "
                "up to 8 x warps");
  if constexpr (C::wgmma != 0 && attention::tile_config<C>().mma_decode) {
    // The decode block (tuning param decode_mma, decode_sm90.cuh).
    attention::forward_decode_sm90<C, Scheduler, attention::DecodeSm90<C, KV>, Epilogue>(prm);
    return;
  } else if constexpr (C::wgmma != 0) {
    attention::forward_sm90<C, Scheduler, attention::MainloopSm90<C, KV>, Epilogue>(prm);
    return;
  }
#endif
  if constexpr (C::wgmma == 0) {
    attention::forward_sm80<C, Scheduler, attention::MainloopSm80<C, KV>, Epilogue>(prm);
  }
}

}  // namespace attnjit

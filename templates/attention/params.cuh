// The runtime arguments of one launch, gathered from the kernel's parameter
// list (specs/attention.yaml `args`) so the pieces below can share them.
#pragma once

#include "common/types.cuh"

namespace attnjit {
namespace attention {

template <class T>
struct Params {
  const T* q;                             // [total_q, Hq, D]
  const T* k;                             // [total_k, Hkv, D]
  const T* v;                             // [total_k, Hkv, D]
  T* o;                                   // [total_q, Hq, D]
  float* lse;                             // [Hq, total_q], natural log
  const float* sinks;                     // [Hq], natural-log units
  const int* cu_seqlens_q;                // [B+1]
  const int* cu_seqlens_k;                // [B+1]
  const int* mm_span_offsets;             // [B+1], CSR over mm_spans
  const int* mm_spans;                    // [R, 2], inclusive key positions, sorted
  long long q_row_stride, q_head_stride;  // elements
  long long k_row_stride, k_head_stride;
  long long v_row_stride, v_head_stride;
  long long o_row_stride, o_head_stride;
  int num_heads_q, num_heads_kv, total_q;
  float scale;                    // softmax scale (natural units)
  float softcap;                  // c > 0 when the softcap flag is on
  int window_left, window_right;  // -1: unbounded
  // TMA maps of k and v, [rows, heads, D] boxes of (block_n rows, 1 head,
  // one swizzle chunk of D) (smem_sm90.cuh); the warpgroup path only.
  const TensorMap* k_map;
  const TensorMap* v_map;
};

}  // namespace attention
}  // namespace attnjit

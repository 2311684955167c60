/* The launch arguments of the attention family, listed once.
 *
 * Every list below is an X-macro: X(TYPE, NAME, DEFAULT) per argument, in
 * the order of the C struct attnjit_attention_args (attnjit.h), with its
 * doc beside it. The C struct's fields and its *_init function, the C++
 * struct attnjit::AttentionArgs (attention_args.h), the C API's copy of one
 * into the other and the parameters of the Python binding's launch are
 * all expanded from these lists: an argument is one line here, plus the
 * code that fills or reads it. (The kernel's params are the spec's args,
 * specs/attention.yaml, copied from AttentionArgs by name.)
 *
 * The C struct is a versioned ABI: each group arrived with one API version
 * and is only ever appended after the groups before it; a caller's
 * struct_size says which groups its struct holds, and the fields of a
 * group it lacks read as their DEFAULT. So a new argument goes into a new
 * group at the end, with a new ATTNJIT_C_API_VERSION (attnjit.h): the
 * group's macro, its line in ATTNJIT_ATTENTION_ARG_GROUPS, then one line
 * per argument.
 *
 * Why a list in a header rather than a struct generated at build time from
 * the spec: a user reads these declarations in the source tree and in an
 * installed include directory alike, the ABI's field order stays in a
 * file under review, and the host's arguments are not the spec's args
 * (the launch derives some of those, and the host takes some that no
 * kernel sees: the grid's sizes, the workspace).
 *
 * Pointers are device pointers; strides are in elements and the last
 * dimension of q, k, v and o is contiguous. Semantics: docs/semantics.md.
 * Plain C (C99 and later) and C++. */
#ifndef ATTNJIT_ATTENTION_ARGS_LIST_H_
#define ATTNJIT_ATTENTION_ARGS_LIST_H_

#include <stddef.h>
#include <stdint.h>

/* Since API version 1. */
#define ATTNJIT_ATTENTION_ARGS_V1(X)                                                               \
  X(const void*, q, 0)                     /* [total_q, Hq, D] */                                  \
  X(const void*, k, 0)                     /* [total_k, Hkv, D] */                                 \
  X(const void*, v, 0)                     /* [total_k, Hkv, Dv] (Dv: head_dim_v, or D) */         \
  X(void*, o, 0)                           /* [total_q, Hq, Dv] */                                 \
  X(float*, lse, 0)                        /* [Hq, total_q], when return_lse */                    \
  X(const float*, sinks, 0)                /* [Hq], when sinks != none */                          \
  X(const int32_t*, cu_seqlens_q, 0)       /* [B+1] */                                             \
  X(const int32_t*, cu_seqlens_k, 0)       /* [B+1] */                                             \
  /* Multimodal spans in CSR form, when mm_prefix: the spans of sequence b                         \
   * are mm_spans[2s], mm_spans[2s+1] (inclusive key positions) for s in                           \
   * [mm_span_offsets[b], mm_span_offsets[b+1]), sorted and disjoint. */                           \
  X(const int32_t*, mm_span_offsets, 0)    /* [B+1] */                                             \
  X(const int32_t*, mm_spans, 0)           /* [R, 2] */                                            \
  X(int64_t, q_row_stride, 0)                                                                      \
  X(int64_t, q_head_stride, 0)                                                                     \
  X(int64_t, k_row_stride, 0)                                                                      \
  X(int64_t, k_head_stride, 0)                                                                     \
  X(int64_t, v_row_stride, 0)                                                                      \
  X(int64_t, v_head_stride, 0)                                                                     \
  X(int64_t, o_row_stride, 0)                                                                      \
  X(int64_t, o_head_stride, 0)                                                                     \
  X(int32_t, num_seqs, 0)                  /* B */                                                 \
  X(int32_t, num_heads_q, 0)               /* Hq */                                                \
  X(int32_t, num_heads_kv, 0)              /* Hkv, divides Hq */                                   \
  X(int32_t, total_q, 0)                   /* rows of q and o (and lse's row length) */            \
  X(int32_t, total_k, 0)                   /* rows of k and v */                                   \
  X(int32_t, max_seqlen_q, 0)              /* >= every query length; bounds the grid */            \
  X(int32_t, max_seqlen_k, 0)              /* >= every key length */                               \
  X(float, scale, 0)                       /* <= 0: 1/sqrt(D) */                                   \
  X(float, softcap, 0)                     /* > 0, used when the softcap flag is on */             \
  X(int32_t, window_left, -1)              /* used when the window flag is on; -1: unbounded */    \
  X(int32_t, window_right, -1)

/* Since API version 2: the paged layout (kv_layout = paged; docs/semantics.md,
 * "Paged K/V cache"). k and v are caches of num_pages pages of page_size
 * tokens; the token at row r of page g, head h is at g * page_stride + r *
 * row_stride + h * head_stride (elements). Key position j of sequence b is
 * row j % page_size of page block_table[b * block_table_stride + j /
 * page_size]; seqused_k[b] is its key count; cu_seqlens_k and total_k are
 * not used. Pages may be shared and in any order. */
#define ATTNJIT_ATTENTION_ARGS_V2_PAGED(X)                                                         \
  X(const int32_t*, block_table, 0)        /* [B, block_table_stride] */                           \
  X(const int32_t*, seqused_k, 0)          /* [B] */                                               \
  X(int64_t, block_table_stride, 0)        /* >= the pages of the longest sequence */              \
  X(int64_t, k_page_stride, 0)                                                                     \
  X(int64_t, v_page_stride, 0)                                                                     \
  X(int32_t, page_size, 0)                 /* a multiple of 16 */                                  \
  X(int32_t, num_pages, 0)                 /* pages in the k and v caches */

/* Since API version 3: split-KV decode (docs/semantics.md, "Split-KV
 * decode"). A decode-shaped launch (every sequence's new tokens times
 * Hq / Hkv within one query tile) splits its keys over blocks where the
 * GPU would otherwise idle; the split count depends only on host-known
 * sizes (num_seqs, heads, max_seqlen_q/k, window), so one CUDA graph
 * serves a batch-size bucket. workspace: scratch for the parts, zeroed
 * before its first use and used by one stream at a time (the kernels leave
 * it zeroed); attnjit_split_workspace_bytes (AttentionKernel::workspace_bytes)
 * says how many bytes a launch needs. Null: the library keeps one per
 * (context, stream), allocated zeroed outside any CUDA graph capture (a
 * capture that would need it to grow fails). */
#define ATTNJIT_ATTENTION_ARGS_V3_SPLIT_KV(X)                                                      \
  X(int32_t, num_splits, 0)                /* 0: the library's choice; 1: never; n: at most n */   \
  X(void*, workspace, 0)                   /* 256-byte aligned */                                  \
  X(size_t, workspace_bytes, 0)

/* Since API version 3: kv_dtype fp8_e4m3's per-tensor scales, device
 * pointers to one float each (> 0), so that a CUDA graph captures the
 * pointer, not the value: k = k8 * k_scale, v = v8 * v_scale. k and v then
 * hold e4m3 bytes, their strides multiples of 16. */
#define ATTNJIT_ATTENTION_ARGS_V3_FP8(X)                                                           \
  X(const float*, k_scale, 0)                                                                      \
  X(const float*, v_scale, 0)

/* The groups in ABI order, the unit of the struct_size check: a caller's
 * struct holds all of a group's fields or none of them. G(GROUP, X) for
 * each, X passed through (GROUP(X) expands the group's fields). */
#define ATTNJIT_ATTENTION_ARG_GROUPS(G, X) \
  G(ATTNJIT_ATTENTION_ARGS_V1, X)          \
  G(ATTNJIT_ATTENTION_ARGS_V2_PAGED, X)    \
  G(ATTNJIT_ATTENTION_ARGS_V3_SPLIT_KV, X) \
  G(ATTNJIT_ATTENTION_ARGS_V3_FP8, X)

/* Every argument, in ABI order: X(TYPE, NAME, DEFAULT) for each. */
#define ATTNJIT_ATTENTION_ARG_GROUP_FIELDS(GROUP, X) GROUP(X)
#define ATTNJIT_ATTENTION_ARGS(X) \
  ATTNJIT_ATTENTION_ARG_GROUPS(ATTNJIT_ATTENTION_ARG_GROUP_FIELDS, X)

#endif /* ATTNJIT_ATTENTION_ARGS_LIST_H_ */

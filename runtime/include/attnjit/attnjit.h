/* attnjit's C API: a stable ABI over the typed C++ API (attention.h).
 *
 * - Handles are opaque (attnjit_context, attnjit_kernel, attnjit_prewarm_job).
 * - Every struct passed in or out starts with `struct_size`: the caller sets
 *   it to sizeof the struct it was compiled with (the *_init functions below
 *   do), and the library reads or writes only the fields that fit. New
 *   fields are only ever appended, past the previous version's sizeof (never
 *   into its tail padding, which a struct_size could not tell apart; explicit
 *   `reserved` fields keep the gap). Versions 1 and 2 of the flags struct
 *   share one sizeof: a caller that fills one by hand, without its *_init
 *   function, zeroes it first.
 * - Every function that can fail returns an attnjit_status; on failure
 *   attnjit_last_error_message() holds the reason (thread-local). No C++
 *   exception crosses this boundary.
 * - Strings returned by the library are owned by it; their lifetime is
 *   documented per function.
 *
 * Semantics of the attention arguments: docs/semantics.md. */
#ifndef ATTNJIT_ATTNJIT_H_
#define ATTNJIT_ATTNJIT_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "attnjit/attention_args_list.h"

#if defined(_WIN32)
#define ATTNJIT_API
#else
#define ATTNJIT_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when a function is added or a struct grows. */
#define ATTNJIT_C_API_VERSION 4

/* Status codes; one per attnjit::ErrorKind, plus OK and INTERNAL. */
typedef enum attnjit_status {
  ATTNJIT_OK = 0,
  ATTNJIT_ERROR_SPEC = 1,     /* malformed spec (file:line:column) */
  ATTNJIT_ERROR_FLAGS = 2,    /* unknown flag, value outside its domain,
                                 illegal combination, unknown target */
  ATTNJIT_ERROR_CODEGEN = 3,  /* template missing, identifier check failed */
  ATTNJIT_ERROR_COMPILE = 4,  /* NVRTC failed: the message holds its log */
  ATTNJIT_ERROR_CACHE = 5,    /* a cache problem that could not be degraded */
  ATTNJIT_ERROR_NO_JIT = 6,   /* no-JIT mode and the variant is in no cache */
  ATTNJIT_ERROR_DRIVER = 7,   /* libcuda missing, no device, a driver call */
  ATTNJIT_ERROR_ARGUMENT = 8, /* a bad argument (null, size, stride, ...) */
  ATTNJIT_ERROR_INTERNAL = 9  /* anything else (out of memory, a bug) */
} attnjit_status;

typedef struct attnjit_context attnjit_context;
typedef struct attnjit_kernel attnjit_kernel;
typedef struct attnjit_prewarm_job attnjit_prewarm_job;

/* "0.1.0" */
ATTNJIT_API const char* attnjit_version(void);
/* "ATTNJIT_ERROR_FLAGS"; "ATTNJIT_UNKNOWN_STATUS" for other values. */
ATTNJIT_API const char* attnjit_status_name(attnjit_status status);
/* The message of the last failed call on this thread ("" after a call
 * that succeeded: every function returning a status resets it). Valid
 * until the next attnjit call on this thread. */
ATTNJIT_API const char* attnjit_last_error_message(void);

/* ---- contexts: a kernel cache and the kernels got through it ---------- */

/* Tri-state for options that the environment can also set. */
#define ATTNJIT_FROM_ENV (-1)

typedef struct attnjit_context_options {
  size_t struct_size;
  /* Writable cache directory. NULL: $ATTNJIT_CACHE_DIR, else
   * $XDG_CACHE_HOME/attnjit, else ~/.cache/attnjit. "": no disk cache. */
  const char* cache_dir;
  /* Read-only directories searched before cache_dir (an offline build's
   * output). NULL: $ATTNJIT_AOT_DIRS; otherwise num_aot_dirs entries. */
  const char* const* aot_dirs;
  size_t num_aot_dirs;
  /* 1: a miss in every cache is ATTNJIT_ERROR_NO_JIT instead of a compile.
   * 0: compile on a miss. ATTNJIT_FROM_ENV: $ATTNJIT_NO_JIT. */
  int32_t no_jit;
  /* 1: print every cold compile to stderr. ATTNJIT_FROM_ENV: $ATTNJIT_LOG. */
  int32_t log;
} attnjit_context_options;

/* Everything from the environment. */
static inline void attnjit_context_options_init(attnjit_context_options* options) {
  memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
  options->no_jit = ATTNJIT_FROM_ENV;
  options->log = ATTNJIT_FROM_ENV;
}

/* options may be NULL (everything from the environment). Works without a
 * GPU. ATTNJIT_NO_JIT or ATTNJIT_LOG set to anything but 1/0, true/false,
 * yes/no or on/off (any case) is ATTNJIT_ERROR_FLAGS, so that a misspelt
 * switch is never read as off. */
ATTNJIT_API attnjit_status attnjit_context_create(const attnjit_context_options* options,
                                                  attnjit_context** out);
/* Frees the context and its kernels, first waiting for any of their
 * variants still compiling in the background (while a tier answered for
 * them: docs/tiers.md). Prewarm jobs still running keep what they need
 * alive and finish on their own. NULL is ignored. */
ATTNJIT_API void attnjit_context_destroy(attnjit_context* context);

typedef struct attnjit_cache_stats {
  size_t struct_size;
  uint64_t memory_hits;
  uint64_t disk_hits; /* user dir or AOT dir */
  uint64_t aot_hits;  /* of which from an AOT dir */
  uint64_t compiles;
  uint64_t corrupt_entries; /* found, rejected, recompiled */
  uint64_t write_failures;
  int32_t disk_disabled; /* 1 once the user dir proved unwritable */
} attnjit_cache_stats;

static inline void attnjit_cache_stats_init(attnjit_cache_stats* stats) {
  memset(stats, 0, sizeof(*stats));
  stats->struct_size = sizeof(*stats);
}

/* The counters of the context's cache (out->struct_size must be set). */
ATTNJIT_API attnjit_status attnjit_cache_stats_get(const attnjit_context* context,
                                                   attnjit_cache_stats* out);

/* ---- the attention family (specs/attention.yaml) ---------------------- */

typedef enum attnjit_dtype { ATTNJIT_DTYPE_BF16 = 0, ATTNJIT_DTYPE_FP16 = 1 } attnjit_dtype;

typedef enum attnjit_sinks {
  ATTNJIT_SINKS_NONE = 0,
  ATTNJIT_SINKS_NULL_LOGIT = 1, /* GPT-OSS: an extra logit in the denominator */
  ATTNJIT_SINKS_BIAS_KEY0 = 2   /* MiMo-V2.5 vision: a bias on key 0 */
} attnjit_sinks;

typedef enum attnjit_kv_dtype {
  ATTNJIT_KV_SAME = 0,
  ATTNJIT_KV_FP8_E4M3 = 1
} attnjit_kv_dtype;

typedef enum attnjit_kv_layout {
  ATTNJIT_KV_CONTIGUOUS = 0, /* k, v: varlen [total_k, Hkv, D] with cu_seqlens_k */
  ATTNJIT_KV_PAGED = 1       /* k, v: an engine's paged cache (block_table, seqused_k) */
} attnjit_kv_layout;

/* The constexpr flags of one variant. Booleans are 0 or 1. */
typedef struct attnjit_attention_flags {
  size_t struct_size;
  int32_t dtype;    /* attnjit_dtype */
  int32_t head_dim; /* 64, 80, 96, 128, 192, 256; 384, 512 on sm_90a */
  int32_t causal;
  int32_t window;    /* window_left / window_right are launch arguments */
  int32_t sinks;     /* attnjit_sinks */
  int32_t mm_prefix; /* multimodal spans attend bidirectionally */
  int32_t mm_clamp;  /* ... bounded by the left window alone (needs window) */
  int32_t softcap;
  int32_t return_lse;
  /* Since API version 2 (a struct_size without it reads as contiguous). */
  int32_t kv_layout; /* attnjit_kv_layout */
  /* Since API version 3: ATTNJIT_KV_SAME (q's dtype) or ATTNJIT_KV_FP8_E4M3
   * (args->k_scale, v_scale needed; strides in bytes, multiples of 16). */
  int32_t kv_dtype; /* attnjit_kv_dtype */
  int32_t reserved0; /* version 3's tail padding: 0 */
  /* Since API version 4: D of v and o where narrower than head_dim
   * (DeepSeek's 128 under 192; sm_90a, 16-bit K/V); 0 (a struct_size
   * without it reads so): head_dim. v's and o's strides count these. */
  int32_t head_dim_v;
} attnjit_attention_flags;

/* bf16, head_dim 128, every mode off. */
static inline void attnjit_attention_flags_init(attnjit_attention_flags* flags) {
  memset(flags, 0, sizeof(*flags));
  flags->struct_size = sizeof(*flags);
  flags->dtype = ATTNJIT_DTYPE_BF16;
  flags->head_dim = 128;
}

/* Launch arguments: struct_size, then the fields of attention_args_list.h
 * in its order, each with its type, default and doc there, group by group
 * in the order of the API versions they arrived with. Pointers are device
 * pointers; strides are in elements and the last dimension of q, k, v and
 * o is contiguous. */
#define ATTNJIT_ATTENTION_ARG_FIELD(type, name, init) type name;
typedef struct attnjit_attention_args {
  size_t struct_size;
  ATTNJIT_ATTENTION_ARGS(ATTNJIT_ATTENTION_ARG_FIELD)
} attnjit_attention_args;
#undef ATTNJIT_ATTENTION_ARG_FIELD

/* Null pointers, zero sizes, default scale, unbounded windows: each
 * field's DEFAULT in the list. */
#define ATTNJIT_ATTENTION_ARG_INIT(type, name, init) args->name = init;
static inline void attnjit_attention_args_init(attnjit_attention_args* args) {
  memset(args, 0, sizeof(*args));
  args->struct_size = sizeof(*args);
  ATTNJIT_ATTENTION_ARGS(ATTNJIT_ATTENTION_ARG_INIT)
}
#undef ATTNJIT_ATTENTION_ARG_INIT

/* Resolves the flags (an illegal combination is ATTNJIT_ERROR_FLAGS) and
 * gets the variant through the context's cache: memory, AOT dirs, cache
 * dir, then NVRTC (unless no-JIT). target: "sm_80", "sm_86", "sm_89",
 * "sm_90a", or NULL for the device of the calling thread's current CUDA
 * context (the primary context of device 0 when none is current). With an
 * explicit target no GPU is needed. The kernel is owned by the context and
 * valid until it is destroyed; asking again returns the same handle. */
ATTNJIT_API attnjit_status attnjit_get_attention_kernel(attnjit_context* context,
                                                        const attnjit_attention_flags* flags,
                                                        const char* target, attnjit_kernel** out);

/* Checks the arguments on the host, then launches on `stream` (a CUstream
 * or cudaStream_t; NULL is the legacy default stream) in the calling
 * thread's current CUDA context, loading the module there on first use.
 * No synchronization and, after the first launch in a context, no
 * allocation: safe inside CUDA graph capture once warmed up (a split-KV
 * decode needs its workspace then: args->workspace, or an eager launch of
 * the largest shape on the capturing stream before). */
ATTNJIT_API attnjit_status attnjit_attention_launch(attnjit_kernel* kernel,
                                                    const attnjit_attention_args* args,
                                                    void* stream);

/* Since API version 3: the workspace bytes a launch with `args` needs
 * (split-KV parts; 0: none), into *bytes. Checks the arguments as the
 * launch does; launches nothing. Reads the current context's SM count. */
ATTNJIT_API attnjit_status attnjit_split_workspace_bytes(attnjit_kernel* kernel,
                                                         const attnjit_attention_args* args,
                                                         size_t* bytes);

/* The checked mode: validates the launch metadata from HOST copies before
 * a launch - cu_seqlens (start at 0, non-decreasing, ending at total_q /
 * total_k, no length above max_seqlen), the spans (inside their sequence's
 * keys, sorted, disjoint) and the sinks (Hq finite values) - with an
 * ATTNJIT_ERROR_ARGUMENT naming the array, index and values. A host pass
 * over the metadata: for debug builds, and for engines that build it on the
 * host anyway. Sizes come from `args` (num_seqs + 1 cu_seqlens and span
 * offsets, num_heads_q sinks) and `num_spans`; arrays the flags do not use
 * may be NULL. */
ATTNJIT_API attnjit_status attnjit_validate_attention_metadata(
    const attnjit_attention_flags* flags, const attnjit_attention_args* args,
    const int32_t* cu_seqlens_q, const int32_t* cu_seqlens_k, const int32_t* mm_span_offsets,
    const int32_t* mm_spans, size_t num_spans, const float* sinks);

/* The same for a paged cache (flags->kv_layout ATTNJIT_KV_PAGED), with
 * seqused_k (num_seqs entries: each at least its sequence's new queries and
 * at most max_seqlen_k) and block_table (num_seqs * block_table_stride
 * entries: the first ceil(seqused_k[b] / page_size) of row b pages of the
 * cache) in place of cu_seqlens_k; spans are bounded by seqused_k. */
ATTNJIT_API attnjit_status attnjit_validate_paged_attention_metadata(
    const attnjit_attention_flags* flags, const attnjit_attention_args* args,
    const int32_t* cu_seqlens_q, const int32_t* seqused_k, const int32_t* block_table,
    const int32_t* mm_span_offsets, const int32_t* mm_spans, size_t num_spans,
    const float* sinks);

/* Owned by the kernel: "attention_prefill_16a7b034". */
ATTNJIT_API const char* attnjit_kernel_name(const attnjit_kernel* kernel);
/* The cache key: 64 lowercase hex digits. */
ATTNJIT_API const char* attnjit_kernel_key(const attnjit_kernel* kernel);
/* The canonical signature (flags, tile config, target, options). */
ATTNJIT_API const char* attnjit_kernel_signature(const attnjit_kernel* kernel);
/* Where the binary came from when first got: "memory", "aot", "disk" or
 * "compiled". */
ATTNJIT_API const char* attnjit_kernel_source(const attnjit_kernel* kernel);

/* ---- prewarm: fill the cache on background threads --------------------- */

/* Starts getting every variant of `flags` (as attnjit_get_attention_kernel
 * would) on `threads` background threads (<= 0: one per core, at most one
 * per variant) and returns at once. Flag structs are checked before it
 * returns; flag values against the spec, compiles and cache reads happen
 * in the background and are reported by attnjit_prewarm_wait. target NULL
 * resolves the current device now, on the calling thread. Prewarmed
 * variants are then memory hits for attnjit_get_attention_kernel. */
ATTNJIT_API attnjit_status attnjit_prewarm(attnjit_context* context,
                                           const attnjit_attention_flags* flags, size_t num_flags,
                                           const char* target, int threads,
                                           attnjit_prewarm_job** out);

/* Variants finished so far (succeeded or failed), without blocking. */
ATTNJIT_API attnjit_status attnjit_prewarm_progress(const attnjit_prewarm_job* prewarm,
                                                    size_t* done, size_t* total);

/* Blocks until every variant is done, frees the handle (call it exactly
 * once per handle) and returns ATTNJIT_OK, or the status of the first
 * variant that failed with a message that counts the failures. */
ATTNJIT_API attnjit_status attnjit_prewarm_wait(attnjit_prewarm_job* prewarm);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ATTNJIT_ATTNJIT_H_ */

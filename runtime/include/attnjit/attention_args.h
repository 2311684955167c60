// The attention API's values: the flags of a variant, the arguments of a
// launch, and the plans and grids the runtime derives from them, apart
// from the kernel object (attention.h), so that the runtime's own parts
// (the TMA maps, the launch scratch) depend on these and not on it.
// Semantics: docs/semantics.md of the repository.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <variant>

#include "attnjit/attention_args_list.h"
#include "attnjit/spec.h"

// The public C++ API: exported from libattnjit.so (the build hides the rest).
#pragma GCC visibility push(default)

namespace attnjit {

enum class DType { kBF16, kFP16 };
enum class SinkMode { kNone, kNullLogit, kBiasKey0 };
enum class KvLayout { kContiguous, kPaged };
enum class KvDType { kSame, kFp8E4M3 };  // kSame: q's dtype

const char* to_string(DType dtype);
const char* to_string(SinkMode mode);
const char* to_string(KvLayout layout);
const char* to_string(KvDType dtype);

struct Schedule;  // below

// The constexpr flags of the attention family.
struct AttentionFlags {
  DType dtype = DType::kBF16;
  int head_dim = 128;
  // D of v and o where narrower than head_dim (DeepSeek's 128 under 192;
  // sm_90a, 16-bit K/V); 0: head_dim.
  int head_dim_v = 0;
  bool causal = false;
  bool window = false;  // window_left / window_right are runtime args
  SinkMode sinks = SinkMode::kNone;
  bool mm_prefix = false;  // multimodal spans attend bidirectionally
  bool mm_clamp = false;   // ... bounded by the left window alone
  bool softcap = false;
  bool return_lse = false;
  KvLayout kv_layout = KvLayout::kContiguous;  // paged: an engine's page table
  // K/V in q's dtype, or fp8 e4m3 with per-tensor scales (k_scale, v_scale):
  // attention over the dequantized k = k8 * k_scale, v = v8 * v_scale.
  KvDType kv_dtype = KvDType::kSame;

  // D of v and o: head_dim_v, or head_dim.
  int value_head_dim() const { return head_dim_v > 0 ? head_dim_v : head_dim; }

  // The typed view of the spec's flags, without its schedule flags (below).
  // The canonical form, which keys the memo and the cache, is the spec's
  // FlagSet: to_flag_set() resolves these, and a schedule, against the
  // spec (throws Error(kFlags) for an illegal combination).
  std::map<std::string, FlagValue> to_flag_map() const;
  // ... with a schedule's flags too (for a spec's own resolve_flags).
  std::map<std::string, FlagValue> to_flag_map(const Schedule& schedule) const;
  FlagSet to_flag_set(const Schedule& schedule) const;
  FlagSet to_flag_set() const;  // with the default schedule
  // to_flag_set(schedule).str() for legal flags, spelled without resolving
  // them (the memo's key on a hit; tests hold the two equal on every
  // variant).
  std::string canonical_text(const Schedule& schedule) const;
  std::string canonical_text() const;  // with the default schedule
  // The flags of a FlagSet; its schedule flags are Schedule::of's.
  static AttentionFlags from_flag_set(const FlagSet& flags);
};

// The planner's choices that are part of a variant's signature and cache
// key but not of what it computes (the spec's schedule flags; the results
// agree up to fp32 rounding). Users do not set them: launch() picks the
// variant per launch (AttentionArgs::num_splits asks for or rules out
// splits; ATTNJIT_SMALL_PAGES=0 turns small pages off). A FlagSet that
// names them (a build step's, a spec-driven test's) gets that variant.
struct Schedule {
  // A decode's query tiles split their keys over several blocks, the last
  // of which combines the parts.
  bool split_kv = false;
  // On sm_90a, V copied as one TMA box per 16 keys of a page (all of D)
  // instead of one per page and swizzle chunk (pages of 16 mod 32 keys;
  // kv_layout paged).
  bool small_pages = false;

  static Schedule of(const FlagSet& flags);
  bool operator==(const Schedule& o) const {
    return split_kv == o.split_kv && small_pages == o.small_pages;
  }
};

// Runtime arguments: the fields of attention_args_list.h, in its order (the
// C struct's, attnjit.h), each with its type, default and doc there. One
// list makes both structs and the C API's copy between them, so they
// cannot drift apart; the list is plain C so that the C header can hold
// it. Pointers are device pointers; strides are in elements.
struct AttentionArgs {
#define ATTNJIT_ATTENTION_ARG_MEMBER(type, name, init) type name = init;
  ATTNJIT_ATTENTION_ARGS(ATTNJIT_ATTENTION_ARG_MEMBER)
#undef ATTNJIT_ATTENTION_ARG_MEMBER
};

// The split schedule of one launch of a split variant: the split count and
// the workspace it needs (0 bytes for one split): counters [query tiles,
// B, grid.y] int32 at counters_offset, then lse parts [splits, total_q,
// Hq] and output parts [splits, total_q, Hq, D] fp32, each 256-byte
// aligned.
struct SplitPlan {
  int num_splits = 1;
  size_t counters_offset = 0, lse_offset = 0, o_offset = 0;
  size_t workspace_bytes = 0;
};

// Host-side checks that need no device access: null pointers the flags
// need, alignment (16 bytes for q/k/v/o, 4 for the rest), strides (last
// dimension contiguous, row strides a multiple of 8 elements), Hq % Hkv,
// scale and softcap values. Throws Error(kArgument) naming the argument.
void validate_attention_args(const AttentionFlags& flags, const AttentionArgs& args);

// The generic tier (docs/tiers.md): one variant that answers, exactly, for
// the flag sets that differ from it only in modes a runtime argument can
// switch off. generic_flags(f) turns on the window (causal becomes
// window_right = 0, except with mm_clamp, whose clamp reads the window
// arguments alone), mm_prefix (no spans), the null-logit sink where no sink
// was asked (a sink of -inf adds exp(-inf) = 0 to every denominator) and
// return_lse (scratch where not asked); soft-cap, the key-0 bias and the
// storage flags stay as asked (and a variant's schedule is its generic
// variant's). Idempotent; legal whenever f is.
AttentionFlags generic_flags(const AttentionFlags& requested);

// Device memory the generic variant's arguments point into where the
// request has none: num_seqs + 1 zero int32 span offsets, Hq float sinks
// of -inf, and Hq * total_q floats of LSE.
struct GenericScratch {
  const int32_t* zero_span_offsets = nullptr;
  const float* null_sinks = nullptr;
  float* lse = nullptr;
};

// The arguments with which generic_flags(requested) computes what
// `requested` computes with `args`: the same o, and the same lse where the
// request returns it (tests/runtime/generic_tier_test.cpp holds the CPU
// reference to that for every flag set).
AttentionArgs generic_args(const AttentionFlags& requested, const AttentionArgs& args,
                           const GenericScratch& scratch);

// The grid of one launch: x query tiles of block_m (packed) rows over the
// longest sequence, y heads (kv heads when packing GQA, else query heads),
// z sequences. The kernels' tile scheduler (templates/attention/tile_scheduler.cuh)
// maps each block to its rows; tests/reference/device_grid_test.cpp checks
// the two together write every output row exactly once.
struct LaunchGrid {
  unsigned x = 0, y = 0, z = 0;
};
// pack_gqa: 0 one query head per tile, 1 packed GQA.
LaunchGrid attention_grid(const AttentionArgs& args, int block_m, int pack_gqa, int num_splits = 1);

// The planner's whole answer for one launch (AttentionKernel::plan): the
// schedule of the variant it runs, its split-KV parts and their workspace,
// and its grid.
struct LaunchPlan {
  Schedule schedule;
  SplitPlan split;
  LaunchGrid grid;
};

// A TMA box of k or v: `chunk` elements of D (one swizzle chunk), one
// head, `rows` keys; rows of `swizzle_bytes` in shared memory.
struct TmaBox {
  int chunk = 0, rows = 0, swizzle_bytes = 0;
  // fp8 K/V: the raw rows arrive swizzled, boxes `chunk` bytes wide (the
  // decode block's layout, TileConfig::mma_decode), instead of unswizzled
  // rows of D bytes for a converting producer.
  bool fp8_swizzled = false;
  // small_pages (TileConfig::v_block_rows < block_n): V's boxes are this
  // many rows of a page and all of D (a 5-D map: the swizzle chunks as a
  // dimension of their own); 0: V's boxes are K's.
  int v_block_rows = 0;
};

// The value of one of a user spec's own args (a spec that extends the
// attention spec with `mask` / `score` expressions and args of its own,
// docs/expressions.md): an int32 or float scalar, or a device pointer to a
// declared tensor.
struct UserArg {
  std::string name;
  std::variant<int32_t, float, const void*> value;
};

}  // namespace attnjit

#pragma GCC visibility pop

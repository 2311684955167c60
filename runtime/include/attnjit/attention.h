// The typed attention API over the `attention` spec (specs/attention.yaml).
// Semantics: docs/semantics.md of the repository.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "attnjit/cache.h"
#include "attnjit/driver.h"
#include "attnjit/kernel.h"
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

// The constexpr flags of the attention family.
struct AttentionFlags {
  DType dtype = DType::kBF16;
  int head_dim = 128;
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
  // A schedule, not a mode (the result is the same up to fp32 rounding):
  // a decode's query tiles split their keys over several blocks. launch()
  // picks a split variant by itself for decode-shaped batches (see
  // AttentionArgs::num_splits); set it to ask for one directly.
  bool split_kv = false;
  // A schedule too: on sm_90a, V copied as one TMA box per 16 keys of a
  // page (all of D) instead of one per page and swizzle chunk. launch()
  // picks it by itself for pages of 16 keys (page_size % 32 == 16; off
  // with ATTNJIT_SMALL_PAGES=0); needs kv_layout paged.
  bool small_pages = false;

  // The typed view of the spec's flags. The canonical form, which keys the
  // memo and the cache, is the spec's FlagSet: to_flag_set() resolves
  // these against the spec (throws Error(kFlags) for an illegal
  // combination).
  std::map<std::string, FlagValue> to_flag_map() const;
  FlagSet to_flag_set() const;
  // to_flag_set().str() for legal flags, spelled without resolving them
  // (the memo's key on a hit; tests hold the two equal on every variant).
  std::string canonical_text() const;
  static AttentionFlags from_flag_set(const FlagSet& flags);
};

// Runtime arguments. Pointers are device pointers. Strides are in elements.
struct AttentionArgs {
  const void* q = nullptr;                // [total_q, Hq, D]
  const void* k = nullptr;                // [total_k, Hkv, D]
  const void* v = nullptr;                // [total_k, Hkv, D]
  void* o = nullptr;                      // [total_q, Hq, D]
  float* lse = nullptr;                   // [Hq, total_q], when return_lse
  const float* sinks = nullptr;           // [Hq], when sinks != none
  const int32_t* cu_seqlens_q = nullptr;  // [B+1]
  const int32_t* cu_seqlens_k = nullptr;  // [B+1]
  // Multimodal spans, CSR by sequence: spans of sequence b are
  // mm_spans[2*s], mm_spans[2*s+1] (inclusive key positions) for
  // s in [mm_span_offsets[b], mm_span_offsets[b+1]), sorted, disjoint.
  const int32_t* mm_span_offsets = nullptr;  // [B+1], when mm_prefix
  const int32_t* mm_spans = nullptr;         // [R, 2], when mm_prefix

  int64_t q_row_stride = 0, q_head_stride = 0;
  int64_t k_row_stride = 0, k_head_stride = 0;
  int64_t v_row_stride = 0, v_head_stride = 0;
  int64_t o_row_stride = 0, o_head_stride = 0;

  int num_seqs = 0;      // B
  int num_heads_q = 0;   // Hq
  int num_heads_kv = 0;  // Hkv, divides Hq
  int total_q = 0;       // rows of q and o (and lse's row length)
  int total_k = 0;
  int max_seqlen_q = 0;  // bounds the grid; >= every n_q(b)
  int max_seqlen_k = 0;

  float scale = 0.f;     // <= 0: 1/sqrt(D)
  float softcap = 0.f;   // used when the softcap flag is on; must be > 0
  int window_left = -1;  // used when the window flag is on; -1: unbounded
  int window_right = -1;

  // The paged layout (kv_layout = paged; docs/semantics.md, "Paged K/V"):
  // k and v are caches of num_pages pages of page_size tokens; the token
  // at row r of page g, head h sits at g * page_stride + r * row_stride +
  // h * head_stride. Key position j of sequence b is row j % page_size of
  // page block_table[b * block_table_stride + j / page_size]; n_k(b) is
  // seqused_k[b], and cu_seqlens_k and total_k are not used.
  const int32_t* block_table = nullptr;  // [B, block_table_stride]
  const int32_t* seqused_k = nullptr;    // [B]
  int64_t block_table_stride = 0;        // >= the pages of the longest sequence
  int64_t k_page_stride = 0, v_page_stride = 0;
  int page_size = 0;  // a multiple of 16
  int num_pages = 0;  // pages in the k and v caches

  // kv_dtype fp8_e4m3: k and v hold e4m3 bytes (strides still in elements,
  // now bytes: multiples of 16); the scales are device pointers to one
  // float each, so a CUDA graph captures the pointer, not the value.
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;

  // Split-KV (decode; docs/semantics.md "Split-KV"). num_splits: 0 lets
  // the library choose (a decode-shaped batch, every sequence within one
  // query tile, goes to the split variant, with a split count from the
  // spec's tuning rules and the GPU's SM count); 1 never splits; n > 1
  // uses the split variant with at most n splits. The count depends only
  // on host-known sizes (num_seqs, heads, max_seqlen_q/k, window), so one
  // CUDA graph serves a batch-size bucket.
  int num_splits = 0;
  // Scratch for the parts (split_plan says how many bytes).
  // Null: the library keeps one per (context, stream), allocated zeroed on
  // first need outside a CUDA-graph capture. A caller's must be zeroed
  // once before first use and used by one stream at a time; the kernels
  // leave its counters at zero.
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
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
// return_lse (scratch where not asked); soft-cap, the key-0 bias, the
// storage flags and split_kv stay as asked. Idempotent; legal whenever f is.
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

class AttentionKernel {
 public:
  // Gets the variant through `cache`, memoized per process by (cache,
  // canonical flags, compile options). `flags` must come from the
  // attention spec (resolve_flags / resolve_preset / to_flag_set).
  static std::shared_ptr<AttentionKernel> get(
      const FlagSet& flags, KernelCache& cache = KernelCache::global(),
      const Target* target = nullptr,                                // null: the current device's
      const std::map<std::string, int64_t>& tuning_overrides = {});  // autotuner
  // The same from the typed view (resolved first; illegal combinations
  // throw Error(kFlags)).
  static std::shared_ptr<AttentionKernel> get(
      const AttentionFlags& flags, KernelCache& cache = KernelCache::global(),
      const Target* target = nullptr,
      const std::map<std::string, int64_t>& tuning_overrides = {});

  // The requested flags. kernel(), block_m(), pack_gqa() and source()
  // describe the kernel that launches run now: the generic variant's while
  // the specialized one compiles (tier() == kGeneric), else this variant's.
  const AttentionFlags& flags() const { return flags_; }
  Kernel& kernel() { return *current().kernel_; }
  int block_m() const { return current().block_m_; }
  // GQA packing: 0 none, 1 packed.
  int pack_gqa() const { return current().pack_gqa_; }
  EntrySource source() const { return current().source_; }

  // Tiers (docs/tiers.md). Unless ATTNJIT_TIERED=0, get() of a variant that
  // no cache holds returns at once when a cache holds its generic variant
  // (generic_flags): launches run that one, through generic_args(), while
  // the specialized variant compiles on a background thread, and the
  // specialized one from the launch after it lands. A launch on a stream
  // being captured into a CUDA graph waits for the specialized variant (a
  // graph never records the generic one).
  enum class Tier { kSpecialized, kGeneric };
  Tier tier() const;
  // Blocks until the specialized variant is ready (at once when it is);
  // rethrows its compile error.
  void wait_specialized();
  // Process-wide: launches the generic tier answered.
  static uint64_t generic_launches();

  // A variant of a user spec that extends the attention spec (its own
  // mask, score and args). Not memoized: callers keep the kernel. A
  // variant no cache holds may be answered by the expression VM while it
  // compiles, where the VM's variant is cached (ATTNJIT_USER_VM=0 turns
  // that off; docs/tiers.md "User specs").
  static std::shared_ptr<AttentionKernel> get_user(
      std::shared_ptr<const Spec> spec, const FlagSet& flags,
      KernelCache& cache = KernelCache::global(), const Target* target = nullptr,
      const std::map<std::string, int64_t>& tuning_overrides = {});

  // validate_attention_args, then one launch on `stream` (of this variant,
  // or of its split sibling for a decode-shaped batch: AttentionArgs::
  // num_splits).
  void launch(const AttentionArgs& args, CuStream stream);
  // The same for a user spec's variant: every arg of the spec's own, by
  // name, with the declared type (Error(kArgument) otherwise).
  void launch(const AttentionArgs& args, CuStream stream, const std::vector<UserArg>& user_args);
  // The user spec of a get_user() kernel (null for the built-in spec's).
  const Spec* user_spec() const { return user_spec_.get(); }

  // The split schedule this variant (a split_kv one) would use for `args`
  // on a GPU of `sm_count` SMs (0: the current device's), and the
  // workspace the launch needs: the parts and their counters.
  SplitPlan split_plan(const AttentionArgs& args, int sm_count = 0) const;
  // The kernel a launch with `args` runs: this one, its split sibling for
  // a decode-shaped batch, and (of either) the small_pages sibling for
  // pages of 16 keys where that changes the kernel (fetched, and compiled
  // if needed, on first use).
  AttentionKernel& for_args(const AttentionArgs& args);

 private:
  // A sibling variant (the same flags but a schedule flag), fetched once.
  struct Sibling {
    std::mutex mutex;
    std::shared_ptr<AttentionKernel> kernel;
    std::atomic<AttentionKernel*> ready{nullptr};
  };
  // `sibling`'s kernel, fetched through this variant's cache and target
  // (and its user spec) with `flags` and `tuning` on its first use.
  AttentionKernel& sibling(Sibling& sibling, const AttentionFlags& flags,
                           const std::map<std::string, int64_t>& tuning = {});
  void launch_this(const AttentionArgs& args, CuStream stream,
                   const std::vector<UserArg>& user_args);
  // A user spec's variant (user_kernel.cpp): its args checked by name and
  // type, then written after the inherited fields of a params buffer.
  static constexpr size_t kMaxUserParamsBytes = 4096;
  void require_no_user_args() const;
  void check_user_args(const AttentionArgs& args, const std::vector<UserArg>& user_args) const;
  void write_user_args(unsigned char* params, const std::vector<UserArg>& user_args) const;
  void init_from(const Signature& sig, const LookupResult& found, KernelCache& cache,
                 const Target& target);
  // The generic tier (attention_tier.cpp; get() calls it unless
  // ATTNJIT_TIERED=0): the kernel for `sig` if a cache holds it, else
  // one answered by its generic variant while it compiles; null where
  // neither is cached (or `sig` is generic), and get() compiles it as
  // always.
  static std::shared_ptr<AttentionKernel> tiered(const Signature& sig, KernelCache& cache,
                                                 const Target& target);
  const AttentionKernel& current() const;
  AttentionKernel& current();
  void launch_generic(const AttentionArgs& args, CuStream stream);
  // A tiered kernel's own variant once it has landed, waited for on a
  // stream being captured (a graph never records a tier); null while the
  // tier answers.
  AttentionKernel* landed(CuStream stream);
  // Starts the background compile of a tiered kernel's own variant
  // (`build` gets it from the cache) and publishes it, or keeps its error.
  void compile_specialized(const Signature& sig, KernelCache& cache,
                           std::function<std::shared_ptr<AttentionKernel>()> build);
  // A user spec's variant from its cache entry (user_kernel.cpp), and the
  // spec's own args' places (set_user_spec; checked by get_user).
  static std::shared_ptr<AttentionKernel> make_user_kernel(std::shared_ptr<const Spec> spec,
                                                           const Signature& sig,
                                                           const LookupResult& found,
                                                           KernelCache& cache,
                                                           const Target& target);
  void set_user_spec(std::shared_ptr<const Spec> spec);
  // The expression VM's tier of user specs (user_vm_tier.cpp; get_user
  // calls it when ATTNJIT_USER_VM is on): a kernel answered by the VM
  // variant of its flags while its own variant compiles, or null where
  // the variant is cached, the VM variant is not, or the expressions do
  // not fit the VM.
  static std::shared_ptr<AttentionKernel> user_tiered(const std::shared_ptr<const Spec>& spec,
                                                      const Signature& sig, KernelCache& cache,
                                                      const Target& target);
  void launch_vm(const AttentionArgs& args, CuStream stream, const std::vector<UserArg>& user_args);
  struct UserVm;  // the spec's programs (device copies shared: user_vm_tier.cpp)

  AttentionFlags flags_;
  std::unique_ptr<Kernel> kernel_;
  // What the launch needs of the tile configuration (computed once, by the
  // kernels' own rule: templates/attention/tile_config.cuh).
  int block_m_ = 0;
  int pack_gqa_ = 0;  // as pack_gqa()
  bool tma_ = false;  // the sm_90a warpgroup path: k and v through TMA maps
  TmaBox tma_box_;
  int block_n_ = 0, min_blocks_ = 1, split_keys_ = 0;
  // The rows of V's blocks in this variant's small_pages sibling where that
  // is another kernel (TileConfig::v_block_rows below block_n), else 0: a
  // paged launch whose boxes are that many rows goes to the sibling.
  int small_pages_rows_ = 0;
  // That sibling could not be had (no cache holds it and the JIT is off,
  // or it failed to build): this one serves.
  std::atomic<bool> small_pages_missing_{false};
  // The tuning overrides this variant was got with (the autotuner's, the
  // tile-config tests'): its small_pages sibling takes them too, so that
  // it runs the same tiles.
  std::map<std::string, int64_t> tuning_overrides_;
  EntrySource source_ = EntrySource::kCompiled;
  // Where the siblings come from: this variant's cache and target.
  KernelCache* cache_ = nullptr;
  Target target_;
  Sibling split_sibling_, small_pages_sibling_;
  // A user spec's variant: the spec, its own args' places in the params
  // struct (after the inherited ones), and the struct's size.
  struct UserField {
    std::string name;
    ArgType type;
    size_t offset;
    // Hidden: the multiplier for division by this int32 arg (one of the
    // spec's own or an inherited one), computed at each launch from the
    // value at divisor_offset in the params (not passed by the caller).
    std::string divisor_of;
    size_t divisor_offset = 0;
  };
  std::shared_ptr<const Spec> user_spec_;
  std::vector<UserField> user_fields_;
  std::string key_token_tensor_;  // one of its per-key-token tensors (read via cu_seqlens_k)
  size_t params_size_ = 0;
  // The generic tier: set on a kernel get() returned before its variant
  // was compiled. specialized_ is published once the background compile
  // lands (its error kept otherwise); pending_ is that compile, declared
  // last so that it is joined before the rest is destroyed.
  std::shared_ptr<AttentionKernel> generic_;
  std::shared_ptr<UserVm> vm_;  // generic_ is the expression VM's variant
  std::shared_ptr<AttentionKernel> specialized_owner_;
  std::atomic<AttentionKernel*> specialized_{nullptr};
  std::exception_ptr specialized_error_;
  std::mutex tier_mutex_;
  std::future<void> pending_;
};

// The attention spec compiled into the library.
const Spec& attention_spec();

}  // namespace attnjit

#pragma GCC visibility pop

// The typed attention API: flags -> variant (memoized per process), host
// checks of the arguments, and the launch in the spec's argument order.
#include "attnjit/attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <utility>
#include <unordered_map>

#include <fmt/format.h>

#include "attnjit/error.h"

namespace attnjit {
namespace {

// The kernel's parameter list as the launch below fills it; checked
// against the spec's `args` once, so a spec edit cannot silently shift
// arguments.
constexpr const char* kArgOrder[] = {"q",
                                     "k",
                                     "v",
                                     "o",
                                     "lse",
                                     "sinks",
                                     "cu_seqlens_q",
                                     "cu_seqlens_k",
                                     "mm_span_offsets",
                                     "mm_spans",
                                     "q_row_stride",
                                     "q_head_stride",
                                     "k_row_stride",
                                     "k_head_stride",
                                     "v_row_stride",
                                     "v_head_stride",
                                     "o_row_stride",
                                     "o_head_stride",
                                     "num_heads_q",
                                     "num_heads_kv",
                                     "total_q",
                                     "scale",
                                     "softcap",
                                     "window_left",
                                     "window_right",
                                     "k_map",
                                     "v_map"};
constexpr int kArgCount = sizeof(kArgOrder) / sizeof(kArgOrder[0]);

void check_arg_order(const Spec& spec) {
  bool same = int(spec.args.size()) == kArgCount;
  for (int i = 0; same && i < kArgCount; ++i) {
    same = spec.args[i].name == kArgOrder[i];
  }
  if (!same) {
    throw Error(
        ErrorKind::kSpec,
        fmt::format("{}: the attention runtime expects the args {} in "
                    "this order",
                    spec.source_name, fmt::join(std::begin(kArgOrder), std::end(kArgOrder), ", ")));
  }
}

uint64_t pack_flags(const AttentionFlags& f, const Target& t, const KernelCache* cache) {
  uint64_t key = uint64_t(f.head_dim);
  key = key * 2 + (f.dtype == DType::kFP16);
  key = key * 2 + f.causal;
  key = key * 2 + f.window;
  key = key * 4 + int(f.sinks);
  key = key * 2 + f.mm_prefix;
  key = key * 2 + f.mm_clamp;
  key = key * 2 + f.softcap;
  key = key * 2 + f.return_lse;
  key = key * 256 + uint64_t(t.sm);
  key = key * 2 + t.arch_specific;
  // 27 bits of flags and target; the cache instance above them.
  return key | (cache->instance_id() << 32);
}

[[noreturn]] void fail(const std::string& message) { throw Error(ErrorKind::kArgument, message); }

// The TMA maps of k and v for the warpgroup kernels: [rows, heads, D] as a
// 3-D tensor (D innermost), boxes of block_n rows of one head and one
// swizzle chunk of D: 64, 32 or 16 elements, the widest dividing D, as the
// kernel's shared-memory tiles are laid out (templates/attention/
// smem_sm90.cuh, SwizzledRows). Rows past a sequence's keys belong to the
// next sequence (the kernel zeroes those V rows) or lie past total_k
// (zeros). Encoding both maps adds 0.2-0.4 us to a launch (H200 host), so
// each thread keeps the maps of its last launch and re-encodes only when a
// tensor changed.
bool same_tensor(const TiledTensor& x, const TiledTensor& y) {
  return x.base == y.base && x.bf16 == y.bf16 && std::equal(x.dims, x.dims + 3, y.dims) &&
         std::equal(x.strides, x.strides + 2, y.strides) && std::equal(x.box, x.box + 3, y.box) &&
         x.swizzle_bytes == y.swizzle_bytes;
}

void kv_tensor_maps(const AttentionFlags& flags, const AttentionArgs& a, int block_n,
                    const TensorMapBytes* (&out)[2]) {
  struct Cached {
    TiledTensor tensor;  // base null (never a valid k or v) until encoded
    TensorMapBytes map;
  };
  thread_local Cached cached[2];
  const int d = flags.head_dim;
  const uint32_t chunk = d % 64 == 0 ? 64 : d % 32 == 0 ? 32 : 16;
  const void* bases[2] = {a.k, a.v};
  const int64_t row_strides[2] = {a.k_row_stride, a.v_row_stride};
  const int64_t head_strides[2] = {a.k_head_stride, a.v_head_stride};
  for (int i = 0; i < 2; ++i) {
    TiledTensor t;
    t.base = bases[i];
    t.bf16 = flags.dtype == DType::kBF16;
    t.dims[0] = uint64_t(d);
    t.dims[1] = uint64_t(a.num_heads_kv);
    t.dims[2] = uint64_t(a.total_k > 0 ? a.total_k : 1);
    // One head: its coordinate is always 0, so the head stride is never
    // stepped; keep it at least a row of D so the strides nest.
    t.strides[0] = uint64_t(a.num_heads_kv == 1 ? std::max<int64_t>(head_strides[i], d)
                                                : head_strides[i]) * 2;
    t.strides[1] = uint64_t(row_strides[i]) * 2;
    t.box[0] = chunk;
    t.box[1] = 1;
    t.box[2] = uint32_t(block_n);
    t.swizzle_bytes = int(chunk) * 2;
    Cached& c = cached[i];
    if (!same_tensor(c.tensor, t)) {
      // Checked only here: a cached map's strides passed already.
      constexpr int64_t kMaxStride = int64_t(1) << 39;  // elements: the TMA's 2^40 bytes
      if (row_strides[i] >= kMaxStride || head_strides[i] >= kMaxStride) {
        fail(fmt::format("attention: k and v strides must stay below 2^39 elements on sm_90a "
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

// The message is formatted only when the check fails: validation runs on
// every launch, so the passing path must cost a few compares.
#define ATTNJIT_REQUIRE(ok, ...)               \
  do {                                         \
    if (!(ok)) fail(fmt::format(__VA_ARGS__)); \
  } while (0)

// `bytes` is a power of two: a mask, not a division, on every launch.
bool aligned(const void* p, size_t bytes) {
  return (reinterpret_cast<uintptr_t>(p) & (bytes - 1)) == 0;
}

void require_pointer(const void* p, const char* name, size_t alignment, const char* why) {
  ATTNJIT_REQUIRE(p != nullptr, "attention: `{}` is null ({})", name, why);
  ATTNJIT_REQUIRE(aligned(p, alignment), "attention: `{}` must be {}-byte aligned", name,
                  alignment);
}

void require_strides(const char* name, int64_t row, int64_t head) {
  ATTNJIT_REQUIRE(row > 0 && head > 0,
                  "attention: `{}` strides must be positive (row {}, "
                  "head {})",
                  name, row, head);
  ATTNJIT_REQUIRE(row % 8 == 0 && head % 8 == 0,
                  "attention: `{}` row and head strides must be multiples "
                  "of 8 elements for 16-byte loads (row {}, head {})",
                  name, row, head);
}

// The [rows, heads, head_dim] elements of one tensor must not alias: the
// kernel writes o through this layout (aliasing rows or heads race), and
// aliasing rows or heads of q, k or v mean a stride from another tensor.
// The layout must nest: the smaller stride steps over whole head_dim
// vectors, the larger one over the whole extent of the smaller. Dimensions
// of extent 1 are never stepped over and impose nothing. Strides are
// positive here (require_strides ran first).
[[noreturn, gnu::noinline, gnu::cold]] void layout_failed(const char* name, int64_t rows,
                                                          int64_t row_stride, int64_t heads,
                                                          int64_t head_stride, int64_t head_dim) {
  fail(
      fmt::format("attention: `{}` rows or heads overlap in memory: strides "
                  "(row {}, head {}) for {} rows of {} heads of {} elements",
                  name, row_stride, head_stride, rows, heads, head_dim));
}

inline void require_layout(const char* name, int64_t rows, int64_t row_stride, int64_t heads,
                           int64_t head_stride, int64_t head_dim) {
  int64_t inner_n = heads, inner_stride = head_stride;
  int64_t outer_n = rows, outer_stride = row_stride;
  if (row_stride < head_stride) {
    std::swap(inner_n, outer_n);
    std::swap(inner_stride, outer_stride);
  }
  if (inner_n <= 1) {  // only the outer dimension is stepped over
    inner_n = outer_n;
    inner_stride = outer_stride;
    outer_n = 1;
  }
  bool ok = inner_n <= 1 || inner_stride >= head_dim;
  if (ok && outer_n > 1) {
    int64_t inner_span = 0;  // (inner_n - 1) * inner_stride + head_dim
    ok = !__builtin_mul_overflow(inner_n - 1, inner_stride, &inner_span) &&
         !__builtin_add_overflow(inner_span, head_dim, &inner_span) && outer_stride >= inner_span;
  }
  if (!ok) layout_failed(name, rows, row_stride, heads, head_stride, head_dim);
}

}  // namespace

const char* to_string(DType dtype) { return dtype == DType::kBF16 ? "bf16" : "fp16"; }

const char* to_string(SinkMode mode) {
  switch (mode) {
    case SinkMode::kNone:
      return "none";
    case SinkMode::kNullLogit:
      return "null_logit";
    case SinkMode::kBiasKey0:
      return "bias_key0";
  }
  return "?";
}

const Spec& attention_spec() {
  static const Spec spec = [] {
    Spec s = load_embedded_spec("attention");
    check_arg_order(s);
    return s;
  }();
  return spec;
}

std::map<std::string, FlagValue> AttentionFlags::to_flag_map() const {
  return {{"dtype", std::string(to_string(dtype))},
          {"head_dim", int64_t(head_dim)},
          {"causal", causal},
          {"window", window},
          {"sinks", std::string(to_string(sinks))},
          {"mm_prefix", mm_prefix},
          {"mm_clamp", mm_clamp},
          {"softcap", softcap},
          {"return_lse", return_lse}};
}

AttentionFlags AttentionFlags::from_flag_set(const FlagSet& flags) {
  AttentionFlags f;
  f.dtype = flags.get_name("dtype") == "fp16" ? DType::kFP16 : DType::kBF16;
  f.head_dim = int(flags.get_int("head_dim"));
  f.causal = flags.get_bool("causal");
  f.window = flags.get_bool("window");
  const std::string& sinks = flags.get_name("sinks");
  f.sinks = sinks == "null_logit"  ? SinkMode::kNullLogit
            : sinks == "bias_key0" ? SinkMode::kBiasKey0
                                   : SinkMode::kNone;
  f.mm_prefix = flags.get_bool("mm_prefix");
  f.mm_clamp = flags.get_bool("mm_clamp");
  f.softcap = flags.get_bool("softcap");
  f.return_lse = flags.get_bool("return_lse");
  return f;
}

void validate_attention_args(const AttentionFlags& flags, const AttentionArgs& a) {
  require_pointer(a.q, "q", 16, "always needed");
  require_pointer(a.k, "k", 16, "always needed");
  require_pointer(a.v, "v", 16, "always needed");
  require_pointer(a.o, "o", 16, "always needed");
  require_pointer(a.cu_seqlens_q, "cu_seqlens_q", 4, "always needed");
  require_pointer(a.cu_seqlens_k, "cu_seqlens_k", 4, "always needed");
  if (flags.return_lse) require_pointer(a.lse, "lse", 4, "return_lse is on");
  if (flags.sinks != SinkMode::kNone) {
    require_pointer(a.sinks, "sinks", 4, "a sink mode is on");
  }
  if (flags.mm_prefix) {
    require_pointer(a.mm_span_offsets, "mm_span_offsets", 4, "mm_prefix is on");
    require_pointer(a.mm_spans, "mm_spans", 4, "mm_prefix is on");
  }
  require_strides("q", a.q_row_stride, a.q_head_stride);
  require_strides("k", a.k_row_stride, a.k_head_stride);
  require_strides("v", a.v_row_stride, a.v_head_stride);
  require_strides("o", a.o_row_stride, a.o_head_stride);
  ATTNJIT_REQUIRE(a.num_seqs >= 0 && a.num_seqs <= 65535,
                  "attention: num_seqs {} is outside [0, 65535]", a.num_seqs);
  ATTNJIT_REQUIRE(a.num_heads_q > 0 && a.num_heads_kv > 0 && a.num_heads_q % a.num_heads_kv == 0 &&
                      a.num_heads_q <= 65535,
                  "attention: num_heads_q ({}) must be a positive "
                  "multiple of num_heads_kv ({})",
                  a.num_heads_q, a.num_heads_kv);
  ATTNJIT_REQUIRE(a.total_q >= 0 && a.total_k >= 0 && a.max_seqlen_q >= 0 && a.max_seqlen_k >= 0,
                  "attention: totals and max sequence lengths must be >= 0");
  // The kernels index a sequence's (packed) query rows with 32-bit ints:
  // with GQA packing a block row is (position, one of the Hq / Hkv heads).
  ATTNJIT_REQUIRE(int64_t(a.max_seqlen_q) * (a.num_heads_q / a.num_heads_kv) <= INT32_MAX,
                  "attention: max_seqlen_q {} x {} query heads per kv head is over 2^31 - 1 "
                  "rows; split the sequence",
                  a.max_seqlen_q, a.num_heads_q / a.num_heads_kv);
  const int64_t d = flags.head_dim;
  require_layout("q", a.total_q, a.q_row_stride, a.num_heads_q, a.q_head_stride, d);
  require_layout("k", a.total_k, a.k_row_stride, a.num_heads_kv, a.k_head_stride, d);
  require_layout("v", a.total_k, a.v_row_stride, a.num_heads_kv, a.v_head_stride, d);
  require_layout("o", a.total_q, a.o_row_stride, a.num_heads_q, a.o_head_stride, d);
  ATTNJIT_REQUIRE(std::isfinite(a.scale), "attention: scale {} is not finite", a.scale);
  if (flags.softcap) {
    ATTNJIT_REQUIRE(std::isfinite(a.softcap) && a.softcap > 0,
                    "attention: softcap must be > 0, got {}", a.softcap);
  }
  if (flags.window) {
    ATTNJIT_REQUIRE(a.window_left >= -1 && a.window_right >= -1,
                    "attention: window sizes must be >= -1, got ({}, {})", a.window_left,
                    a.window_right);
  }
}

std::shared_ptr<AttentionKernel> AttentionKernel::get(
    const AttentionFlags& flags, KernelCache& cache, const Target* target,
    const std::map<std::string, int64_t>& tuning_overrides) {
  const Target t = target != nullptr ? *target : current_device_target();
  // Never destroyed: at process exit the driver may already be torn down
  // (or a context destroyed), and unloading modules then can crash.
  static std::mutex& mutex = *new std::mutex;
  static auto& memo = *new std::unordered_map<uint64_t, std::shared_ptr<AttentionKernel>>;
  // Variants with tuning overrides (the autotuner's) skip the memo; the
  // cache's own memory level still serves them.
  const bool memoize = tuning_overrides.empty();
  const uint64_t memo_key = pack_flags(flags, t, &cache);
  if (memoize) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = memo.find(memo_key);
    if (it != memo.end()) return it->second;
  }
  const Spec& spec = attention_spec();
  const FlagSet flag_set = resolve_flags(spec, flags.to_flag_map());
  const Signature sig =
      make_signature(spec, flag_set, CompileOptions::from_environment(t), tuning_overrides);
  LookupResult found = cache.get(spec, sig);
  auto kernel = std::shared_ptr<AttentionKernel>(new AttentionKernel());
  kernel->flags_ = flags;
  kernel->kernel_ = std::make_unique<Kernel>(found.entry);
  kernel->block_m_ = int(sig.tuning_value("block_m"));
  kernel->block_n_ = int(sig.tuning_value("block_n"));
  kernel->pack_gqa_ = sig.tuning_value("pack_gqa") != 0;
  kernel->tma_ = sig.tuning_value("wgmma") != 0;
  kernel->source_ = found.source;
  if (!memoize) return kernel;
  std::lock_guard<std::mutex> lock(mutex);
  return memo.emplace(memo_key, std::move(kernel)).first->second;
}

void AttentionKernel::launch(const AttentionArgs& a, CuStream stream) {
  validate_attention_args(flags_, a);
  if (a.num_seqs == 0 || a.max_seqlen_q == 0) return;
  const float scale = a.scale > 0 ? a.scale : 1.f / std::sqrt(float(flags_.head_dim));
  const float softcap = flags_.softcap ? a.softcap : 0.f;
  const int window_left = flags_.window ? a.window_left : -1;
  const int window_right = flags_.window ? a.window_right : -1;
  long long strides[8] = {a.q_row_stride, a.q_head_stride, a.k_row_stride, a.k_head_stride,
                          a.v_row_stride, a.v_head_stride, a.o_row_stride, a.o_head_stride};
  void* args[kArgCount] = {const_cast<void**>(&a.q),
                           const_cast<void**>(&a.k),
                           const_cast<void**>(&a.v),
                           const_cast<void**>(&a.o),
                           const_cast<float**>(&a.lse),
                           const_cast<const float**>(&a.sinks),
                           const_cast<const int32_t**>(&a.cu_seqlens_q),
                           const_cast<const int32_t**>(&a.cu_seqlens_k),
                           const_cast<const int32_t**>(&a.mm_span_offsets),
                           const_cast<const int32_t**>(&a.mm_spans),
                           &strides[0],
                           &strides[1],
                           &strides[2],
                           &strides[3],
                           &strides[4],
                           &strides[5],
                           &strides[6],
                           &strides[7],
                           const_cast<int*>(&a.num_heads_q),
                           const_cast<int*>(&a.num_heads_kv),
                           const_cast<int*>(&a.total_q),
                           const_cast<float*>(&scale),
                           const_cast<float*>(&softcap),
                           const_cast<int*>(&window_left),
                           const_cast<int*>(&window_right),
                           nullptr,
                           nullptr};
  // The warpgroup kernels copy k and v tiles through TMA maps; the others
  // take (and ignore) zeroed ones.
  static const TensorMapBytes kNoMap{};
  if (tma_) {
    const TensorMapBytes* maps[2];
    kv_tensor_maps(flags_, a, block_n_, maps);
    args[kArgCount - 2] = const_cast<TensorMapBytes*>(maps[0]);
    args[kArgCount - 1] = const_cast<TensorMapBytes*>(maps[1]);
  } else {
    args[kArgCount - 2] = args[kArgCount - 1] = const_cast<TensorMapBytes*>(&kNoMap);
  }
  const LaunchGrid grid = attention_grid(a, block_m_, pack_gqa_);
  kernel_->launch(grid.x, grid.y, grid.z, stream, args);
}

LaunchGrid attention_grid(const AttentionArgs& a, int block_m, bool pack_gqa) {
  // With GQA packing a block holds the Hq / Hkv heads of one kv head.
  const int64_t group = pack_gqa ? a.num_heads_q / a.num_heads_kv : 1;
  const int64_t rows = int64_t(a.max_seqlen_q) * group;
  LaunchGrid grid;
  grid.x = unsigned((rows + block_m - 1) / block_m);
  grid.y = unsigned(pack_gqa ? a.num_heads_kv : a.num_heads_q);
  grid.z = unsigned(a.num_seqs);
  return grid;
}

}  // namespace attnjit

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

#include "attention_prefill_params.h"
#include "attnjit/error.h"

namespace attnjit {
namespace {

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

// The kernel ABI: the struct generated from the spec's `args`, filled by
// field in one place. Scalars the flags switch off are passed neutral.
using KernelParams = attention_prefill_params<void>;
static_assert(sizeof(TensorMap) == sizeof(TensorMapBytes), "a TMA map is 128 bytes");

KernelParams kernel_params(const AttentionFlags& flags, const AttentionArgs& a) {
  KernelParams p{};
  p.q = a.q;
  p.k = a.k;
  p.v = a.v;
  p.o = a.o;
  p.lse = a.lse;
  p.sinks = a.sinks;
  p.cu_seqlens_q = a.cu_seqlens_q;
  p.cu_seqlens_k = a.cu_seqlens_k;
  p.mm_span_offsets = a.mm_span_offsets;
  p.mm_spans = a.mm_spans;
  p.q_row_stride = a.q_row_stride;
  p.q_head_stride = a.q_head_stride;
  p.k_row_stride = a.k_row_stride;
  p.k_head_stride = a.k_head_stride;
  p.v_row_stride = a.v_row_stride;
  p.v_head_stride = a.v_head_stride;
  p.o_row_stride = a.o_row_stride;
  p.o_head_stride = a.o_head_stride;
  p.num_heads_q = a.num_heads_q;
  p.num_heads_kv = a.num_heads_kv;
  p.total_q = a.total_q;
  p.scale = a.scale > 0 ? a.scale : 1.f / std::sqrt(float(flags.head_dim));
  p.softcap = flags.softcap ? a.softcap : 0.f;
  p.window_left = flags.window ? a.window_left : -1;
  p.window_right = flags.window ? a.window_right : -1;
  return p;
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
  static const Spec spec = load_embedded_spec("attention");
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

FlagSet AttentionFlags::to_flag_set() const {
  return resolve_flags(attention_spec(), to_flag_map());
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
  return get(flags.to_flag_set(), cache, target, tuning_overrides);
}

std::shared_ptr<AttentionKernel> AttentionKernel::get(
    const FlagSet& flags, KernelCache& cache, const Target* target,
    const std::map<std::string, int64_t>& tuning_overrides) {
  const Target t = target != nullptr ? *target : current_device_target();
  const Spec& spec = attention_spec();
  const CompileOptions options = CompileOptions::from_environment(t);
  // Never destroyed: at process exit the driver may already be torn down
  // (or a context destroyed), and unloading modules then can crash.
  static std::mutex& mutex = *new std::mutex;
  static auto& memo = *new std::unordered_map<std::string, std::shared_ptr<AttentionKernel>>;
  // The one memo, keyed by the canonical flag text and options (the
  // signature's own spelling) per cache. Variants with tuning overrides
  // (the autotuner's) skip it; the cache's memory level still serves them.
  const bool memoize = tuning_overrides.empty();
  const std::string memo_key =
      std::to_string(cache.instance_id()) + "|" + flags.str() + "@" + options.canonical();
  if (memoize) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = memo.find(memo_key);
    if (it != memo.end()) return it->second;
  }
  const Signature sig = make_signature(spec, flags, options, tuning_overrides);
  LookupResult found = cache.get(spec, sig);
  auto kernel = std::shared_ptr<AttentionKernel>(new AttentionKernel());
  kernel->flags_ = AttentionFlags::from_flag_set(flags);
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
  KernelParams params = kernel_params(flags_, a);
  // The warpgroup kernels copy k and v tiles through TMA maps; the others
  // ignore the (zeroed) fields.
  if (tma_) {
    const TensorMapBytes* maps[2];
    kv_tensor_maps(flags_, a, block_n_, maps);
    std::memcpy(&params.k_map, maps[0], sizeof(params.k_map));
    std::memcpy(&params.v_map, maps[1], sizeof(params.v_map));
  }
  void* args[] = {&params};
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

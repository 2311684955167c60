// The C API (attnjit.h) over the typed C++ API: POD structs in and out,
// opaque handles, status codes, and no exception across the boundary.
#include "attnjit/attnjit.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "attnjit/attention.h"
#include "attnjit/validate.h"
#include "attnjit/error.h"
#include "c_api_args.h"

namespace {

using attnjit::AttentionFlags;
using attnjit::AttentionKernel;
using attnjit::Error;
using attnjit::ErrorKind;
using attnjit::KernelCache;
using attnjit::Target;

// Kept in step with project(VERSION) by the consumer test
// (tests/consumer), which compares it with find_package's version.
constexpr const char* kVersion = "0.1.0";

thread_local std::string g_last_error;

attnjit_status status_of(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kSpec:
      return ATTNJIT_ERROR_SPEC;
    case ErrorKind::kFlags:
      return ATTNJIT_ERROR_FLAGS;
    case ErrorKind::kCodegen:
      return ATTNJIT_ERROR_CODEGEN;
    case ErrorKind::kCompile:
      return ATTNJIT_ERROR_COMPILE;
    case ErrorKind::kCache:
      return ATTNJIT_ERROR_CACHE;
    case ErrorKind::kNoJit:
      return ATTNJIT_ERROR_NO_JIT;
    case ErrorKind::kDriver:
      return ATTNJIT_ERROR_DRIVER;
    case ErrorKind::kArgument:
      return ATTNJIT_ERROR_ARGUMENT;
  }
  return ATTNJIT_ERROR_INTERNAL;
}

attnjit_status fail(attnjit_status status, const char* message) {
  try {
    g_last_error = message;
  } catch (...) {
    // Out of memory while recording: the status still says what happened.
  }
  return status;
}

// Runs `body` with the thread's message reset; turns every exception into
// a status and a message.
template <class Body>
attnjit_status guarded(Body&& body) noexcept {
  g_last_error.clear();
  try {
    body();
    return ATTNJIT_OK;
  } catch (const Error& e) {
    return fail(status_of(e.kind()), e.what());
  } catch (const std::bad_alloc&) {
    return fail(ATTNJIT_ERROR_INTERNAL, "out of memory");
  } catch (const std::exception& e) {
    return fail(ATTNJIT_ERROR_INTERNAL, e.what());
  } catch (...) {
    return fail(ATTNJIT_ERROR_INTERNAL, "unknown exception");
  }
}

void require(bool ok, ErrorKind kind, const std::string& message) {
  if (!ok) throw Error(kind, message);
}

// Structs of this first version must carry every field; later versions
// will accept this size and default the fields appended after it.
template <class T>
void require_struct(const T* value, const char* what) {
  // Runs on every attnjit_attention_launch: messages are formatted only when
  // a check fails.
  if (value == nullptr) throw Error(ErrorKind::kArgument, fmt::format("{} is null", what));
  if (value->struct_size < sizeof(T)) {
    throw Error(ErrorKind::kArgument, fmt::format("{}->struct_size is {}, expected at least {} "
                                                  "(set it with the header's *_init function)",
                                                  what, value->struct_size, sizeof(T)));
  }
}

// Structs grow by appending fields (API version 2 added the paged ones);
// a caller built against an older header passes a smaller struct_size and
// the fields past it read as their defaults.
#define ATTNJIT_HAS_FIELD(value, type, field) \
  ((value)->struct_size >= offsetof(type, field) + sizeof(((type*)nullptr)->field))

template <class T>
void require_struct_v1(const T* value, const char* what, size_t v1_size) {
  if (value == nullptr) throw Error(ErrorKind::kArgument, fmt::format("{} is null", what));
  if (value->struct_size < v1_size) {
    throw Error(ErrorKind::kArgument, fmt::format("{}->struct_size is {}, expected at least {} "
                                                  "(set it with the header's *_init function)",
                                                  what, value->struct_size, v1_size));
  }
}

bool read_bool(int32_t value, const char* name) {
  require(value == 0 || value == 1, ErrorKind::kFlags,
          fmt::format("flag '{}' must be 0 or 1, got {}", name, value));
  return value == 1;
}

AttentionFlags to_flags(const attnjit_attention_flags* c) {
  require_struct_v1(c, "flags", offsetof(attnjit_attention_flags, kv_layout));
  AttentionFlags f;
  require(c->dtype == ATTNJIT_DTYPE_BF16 || c->dtype == ATTNJIT_DTYPE_FP16, ErrorKind::kFlags,
          fmt::format("flag 'dtype': {} is not ATTNJIT_DTYPE_BF16 (0) or "
                      "ATTNJIT_DTYPE_FP16 (1)",
                      c->dtype));
  f.dtype = c->dtype == ATTNJIT_DTYPE_FP16 ? attnjit::DType::kFP16 : attnjit::DType::kBF16;
  f.head_dim = c->head_dim;  // its domain is the spec's: checked below
  f.causal = read_bool(c->causal, "causal");
  f.window = read_bool(c->window, "window");
  switch (c->sinks) {
    case ATTNJIT_SINKS_NONE:
      f.sinks = attnjit::SinkMode::kNone;
      break;
    case ATTNJIT_SINKS_NULL_LOGIT:
      f.sinks = attnjit::SinkMode::kNullLogit;
      break;
    case ATTNJIT_SINKS_BIAS_KEY0:
      f.sinks = attnjit::SinkMode::kBiasKey0;
      break;
    default:
      throw Error(ErrorKind::kFlags, fmt::format("flag 'sinks': {} is not an attnjit_sinks value "
                                                 "(0 none, 1 null_logit, 2 bias_key0)",
                                                 c->sinks));
  }
  f.mm_prefix = read_bool(c->mm_prefix, "mm_prefix");
  f.mm_clamp = read_bool(c->mm_clamp, "mm_clamp");
  f.softcap = read_bool(c->softcap, "softcap");
  f.return_lse = read_bool(c->return_lse, "return_lse");
  if (ATTNJIT_HAS_FIELD(c, attnjit_attention_flags, kv_layout)) {
    require(c->kv_layout == ATTNJIT_KV_CONTIGUOUS || c->kv_layout == ATTNJIT_KV_PAGED,
            ErrorKind::kFlags,
            fmt::format("flag 'kv_layout': {} is not ATTNJIT_KV_CONTIGUOUS (0) or "
                        "ATTNJIT_KV_PAGED (1)",
                        c->kv_layout));
    f.kv_layout = c->kv_layout == ATTNJIT_KV_PAGED ? attnjit::KvLayout::kPaged
                                                    : attnjit::KvLayout::kContiguous;
  }
  if (ATTNJIT_HAS_FIELD(c, attnjit_attention_flags, kv_dtype)) {
    require(c->kv_dtype == ATTNJIT_KV_SAME || c->kv_dtype == ATTNJIT_KV_FP8_E4M3,
            ErrorKind::kFlags,
            fmt::format("flag 'kv_dtype': {} is not ATTNJIT_KV_SAME (0) or "
                        "ATTNJIT_KV_FP8_E4M3 (1)",
                        c->kv_dtype));
    f.kv_dtype = c->kv_dtype == ATTNJIT_KV_FP8_E4M3 ? attnjit::KvDType::kFp8E4M3
                                                   : attnjit::KvDType::kSame;
  }
  if (ATTNJIT_HAS_FIELD(c, attnjit_attention_flags, head_dim_v)) {
    f.head_dim_v = c->head_dim_v;  // its domain is the spec's: checked by resolving
  }
  return f;
}

std::string describe(const AttentionFlags& flags) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : flags.to_flag_map())
    parts.push_back(name + "=" + attnjit::to_string(value));
  return fmt::format("{}", fmt::join(parts, ","));
}

// The spec's domains and constraints, with the variant in the message.
void check_against_spec(const AttentionFlags& flags) {
  try {
    attnjit::resolve_flags(attnjit::attention_spec(), flags.to_flag_map());
  } catch (const Error& e) {
    throw Error(e.kind(), fmt::format("{} ({})", e.what(), describe(flags)));
  }
}

Target resolve_target(const char* name) {
  if (name != nullptr) return attnjit::parse_target(name);
  return attnjit::current_device_target();
}

}  // namespace

struct attnjit_kernel {
  std::shared_ptr<AttentionKernel> kernel;
  std::string name, key, signature;
  const char* source = "compiled";
};

namespace {

// What a context owns; shared with its prewarm jobs so that destroying the
// context while they run is safe. The cache is owned outright: the typed
// API's memo keys a cache by its instance_id(), never reused, so a later
// context's cache at the same address cannot be served this one's kernels.
// The kernels handed out fetch their variants through the cache (a launch
// may compile one), so the context outlives them: destroying it waits for
// their background compiles.
struct ContextState {
  explicit ContextState(const attnjit::CacheConfig& config) : cache(config) {}
  // A variant compiling in the background (a tier answering meanwhile)
  // uses the cache: those compiles end before it does.
  ~ContextState() {
    for (auto& entry : kernels) entry.second->kernel->join_background();
    // The process memo lets go of this cache's kernels: the handles below
    // hold the last references, and go before the cache does.
    attnjit::AttentionKernel::forget_cache(cache);
  }
  ContextState(const ContextState&) = delete;
  ContextState& operator=(const ContextState&) = delete;

  KernelCache cache;
  std::mutex mutex;  // guards kernels
  std::map<const AttentionKernel*, std::unique_ptr<attnjit_kernel>> kernels;
};

// The typed API's memo decides which variant the flags name; the context
// only keeps one stable handle per variant it handed out.
attnjit_kernel* get_kernel(ContextState& state, const AttentionFlags& flags, const Target& target) {
  std::shared_ptr<AttentionKernel> kernel = AttentionKernel::get(flags, state.cache, &target);
  // Its own variant, fetched (loaded, compiled, or answered by a tier)
  // before the lock: prewarm jobs fetch several at once.
  const attnjit::CacheEntry& entry = kernel->kernel().entry();
  const char* source = attnjit::to_string(kernel->source());
  std::lock_guard<std::mutex> lock(state.mutex);
  std::unique_ptr<attnjit_kernel>& handle = state.kernels[kernel.get()];
  if (handle == nullptr) {
    handle = std::make_unique<attnjit_kernel>();
    handle->name = entry.display_name;
    handle->key = entry.key.hex;
    handle->signature = entry.canonical_signature;
    handle->source = source;
    handle->kernel = std::move(kernel);
  }
  return handle.get();
}

attnjit::CacheConfig to_config(const attnjit_context_options* options) {
  attnjit::CacheConfig config = attnjit::CacheConfig::from_environment();
  if (options == nullptr) return config;
  require_struct(options, "options");
  if (options->cache_dir != nullptr) config.user_dir = options->cache_dir;
  if (options->aot_dirs != nullptr) {
    config.aot_dirs.clear();
    for (size_t i = 0; i < options->num_aot_dirs; ++i) {
      require(options->aot_dirs[i] != nullptr, ErrorKind::kArgument,
              fmt::format("options->aot_dirs[{}] is null", i));
      config.aot_dirs.emplace_back(options->aot_dirs[i]);
    }
  } else {
    require(options->num_aot_dirs == 0, ErrorKind::kArgument,
            "options->aot_dirs is null but num_aot_dirs is not 0");
  }
  auto tri_state = [](int32_t value, bool from_env, const char* name) {
    if (value == ATTNJIT_FROM_ENV) return from_env;
    require(value == 0 || value == 1, ErrorKind::kArgument,
            fmt::format("options->{} must be 0, 1 or ATTNJIT_FROM_ENV, got {}", name, value));
    return value == 1;
  };
  config.no_jit = tri_state(options->no_jit, config.no_jit, "no_jit");
  config.log = tri_state(options->log, config.log, "log");
  return config;
}

attnjit::AttentionArgs to_args(const attnjit_attention_args* c) {
  require_struct_v1(c, "args", attnjit::detail::kCArgsV1Size);
  return attnjit::detail::args_from_c(*c);
}

}  // namespace

struct attnjit_context {
  std::shared_ptr<ContextState> state;
};

struct attnjit_prewarm_job {
  std::shared_ptr<ContextState> state;
  std::vector<AttentionFlags> flags;
  Target target;
  std::atomic<size_t> next{0};
  std::atomic<size_t> done{0};
  std::mutex mutex;  // guards the failure fields
  size_t failures = 0;
  attnjit_status first_status = ATTNJIT_OK;
  std::string first_message;
  std::vector<std::thread> threads;

  void work() noexcept {
    for (size_t i = next++; i < flags.size(); i = next++) {
      const attnjit_status status = guarded([&] {
        check_against_spec(flags[i]);
        // The variant compiled, not a tier answering for it: a failure is
        // this job's, and the job's threads bound the compiles at once.
        get_kernel(*state, flags[i], target)->kernel->wait_specialized();
      });
      if (status != ATTNJIT_OK) record(status, attnjit_last_error_message());
      ++done;
    }
  }

  void record(attnjit_status status, const char* message) noexcept {
    std::lock_guard<std::mutex> lock(mutex);
    if (failures++ > 0) return;
    first_status = status;
    try {
      first_message = message;
    } catch (...) {
    }
  }
};

extern "C" {

const char* attnjit_version(void) { return kVersion; }

const char* attnjit_status_name(attnjit_status status) {
  switch (status) {
    case ATTNJIT_OK:
      return "ATTNJIT_OK";
    case ATTNJIT_ERROR_SPEC:
      return "ATTNJIT_ERROR_SPEC";
    case ATTNJIT_ERROR_FLAGS:
      return "ATTNJIT_ERROR_FLAGS";
    case ATTNJIT_ERROR_CODEGEN:
      return "ATTNJIT_ERROR_CODEGEN";
    case ATTNJIT_ERROR_COMPILE:
      return "ATTNJIT_ERROR_COMPILE";
    case ATTNJIT_ERROR_CACHE:
      return "ATTNJIT_ERROR_CACHE";
    case ATTNJIT_ERROR_NO_JIT:
      return "ATTNJIT_ERROR_NO_JIT";
    case ATTNJIT_ERROR_DRIVER:
      return "ATTNJIT_ERROR_DRIVER";
    case ATTNJIT_ERROR_ARGUMENT:
      return "ATTNJIT_ERROR_ARGUMENT";
    case ATTNJIT_ERROR_INTERNAL:
      return "ATTNJIT_ERROR_INTERNAL";
  }
  return "ATTNJIT_UNKNOWN_STATUS";
}

const char* attnjit_last_error_message(void) { return g_last_error.c_str(); }

attnjit_status attnjit_context_create(const attnjit_context_options* options,
                                      attnjit_context** out) {
  return guarded([&] {
    require(out != nullptr, ErrorKind::kArgument, "out is null");
    *out = nullptr;
    auto context = std::make_unique<attnjit_context>();
    context->state = std::make_shared<ContextState>(to_config(options));
    *out = context.release();
  });
}

void attnjit_context_destroy(attnjit_context* context) { delete context; }

attnjit_status attnjit_cache_stats_get(const attnjit_context* context, attnjit_cache_stats* out) {
  return guarded([&] {
    require(context != nullptr, ErrorKind::kArgument, "context is null");
    require(out != nullptr, ErrorKind::kArgument, "out is null");
    require(out->struct_size >= offsetof(attnjit_cache_stats, memory_hits), ErrorKind::kArgument,
            fmt::format("out->struct_size is {}, too small for any field", out->struct_size));
    const attnjit::CacheStats s = context->state->cache.stats();
    attnjit_cache_stats full;
    attnjit_cache_stats_init(&full);
    full.memory_hits = s.memory_hits;
    full.disk_hits = s.disk_hits;
    full.aot_hits = s.aot_hits;
    full.compiles = s.compiles;
    full.corrupt_entries = s.corrupt_entries;
    full.write_failures = s.write_failures;
    full.disk_disabled = context->state->cache.disk_disabled() ? 1 : 0;
    // An older caller's struct gets the fields it knows, nothing past them.
    const size_t bytes = std::min(out->struct_size, sizeof(full));
    const size_t skip = sizeof(full.struct_size);
    std::memcpy(reinterpret_cast<char*>(out) + skip, reinterpret_cast<const char*>(&full) + skip,
                bytes - skip);
  });
}

attnjit_status attnjit_get_attention_kernel(attnjit_context* context,
                                            const attnjit_attention_flags* flags,
                                            const char* target, attnjit_kernel** out) {
  return guarded([&] {
    require(out != nullptr, ErrorKind::kArgument, "out is null");
    *out = nullptr;
    require(context != nullptr, ErrorKind::kArgument, "context is null");
    const AttentionFlags typed = to_flags(flags);
    check_against_spec(typed);
    *out = get_kernel(*context->state, typed, resolve_target(target));
  });
}

attnjit_status attnjit_attention_launch(attnjit_kernel* kernel, const attnjit_attention_args* args,
                                        void* stream) {
  return guarded([&] {
    require(kernel != nullptr, ErrorKind::kArgument, "kernel is null");
    kernel->kernel->launch(to_args(args), static_cast<attnjit::CuStream>(stream));
  });
}

attnjit_status attnjit_split_workspace_bytes(attnjit_kernel* kernel,
                                             const attnjit_attention_args* args, size_t* bytes) {
  return guarded([&] {
    require(kernel != nullptr && bytes != nullptr, ErrorKind::kArgument,
            "kernel and bytes must not be null");
    *bytes = 0;
    const attnjit::AttentionArgs a = to_args(args);
    attnjit::validate_attention_args(kernel->kernel->flags(), a);
    if (a.num_seqs == 0 || a.max_seqlen_q == 0) return;
    *bytes = kernel->kernel->workspace_bytes(a);  // (split-KV parts)
  });
}

namespace {

// The checked mode's host arrays, sized from `args`, for either layout
// (cu_seqlens_k for contiguous K/V; seqused_k and block_table for paged).
attnjit_status validate_metadata(const attnjit_attention_flags* flags,
                                 const attnjit_attention_args* args, bool paged,
                                 const int32_t* cu_seqlens_q, const int32_t* cu_seqlens_k,
                                 const int32_t* seqused_k, const int32_t* block_table,
                                 const int32_t* mm_span_offsets, const int32_t* mm_spans,
                                 size_t num_spans, const float* sinks) {
  return guarded([&] {
    const AttentionFlags typed = to_flags(flags);
    require(!paged || typed.kv_layout == attnjit::KvLayout::kPaged, ErrorKind::kArgument,
            "attnjit_validate_paged_attention_metadata takes paged flags (kv_layout "
            "ATTNJIT_KV_PAGED); attnjit_validate_attention_metadata takes contiguous ones");
    const attnjit::AttentionArgs a = to_args(args);
    require(a.num_seqs >= 0 && a.num_heads_q >= 0, ErrorKind::kArgument,
            "num_seqs and num_heads_q must be >= 0");
    require(!paged || a.block_table_stride >= 0, ErrorKind::kArgument,
            "block_table_stride must be >= 0");
    const size_t seqs = size_t(a.num_seqs);
    attnjit::AttentionMetadata host;
    if (cu_seqlens_q) host.cu_seqlens_q = {cu_seqlens_q, seqs + 1};
    if (cu_seqlens_k) host.cu_seqlens_k = {cu_seqlens_k, seqs + 1};
    if (seqused_k) host.seqused_k = {seqused_k, seqs};
    if (block_table) host.block_table = {block_table, seqs * size_t(a.block_table_stride)};
    if (mm_span_offsets) host.mm_span_offsets = {mm_span_offsets, seqs + 1};
    if (mm_spans) host.mm_spans = {mm_spans, 2 * num_spans};
    if (sinks) host.sinks = {sinks, size_t(a.num_heads_q)};
    attnjit::validate_attention_metadata(typed, a, host);
  });
}

}  // namespace

attnjit_status attnjit_validate_attention_metadata(
    const attnjit_attention_flags* flags, const attnjit_attention_args* args,
    const int32_t* cu_seqlens_q, const int32_t* cu_seqlens_k, const int32_t* mm_span_offsets,
    const int32_t* mm_spans, size_t num_spans, const float* sinks) {
  return validate_metadata(flags, args, false, cu_seqlens_q, cu_seqlens_k, nullptr, nullptr,
                           mm_span_offsets, mm_spans, num_spans, sinks);
}

attnjit_status attnjit_validate_paged_attention_metadata(
    const attnjit_attention_flags* flags, const attnjit_attention_args* args,
    const int32_t* cu_seqlens_q, const int32_t* seqused_k, const int32_t* block_table,
    const int32_t* mm_span_offsets, const int32_t* mm_spans, size_t num_spans,
    const float* sinks) {
  return validate_metadata(flags, args, true, cu_seqlens_q, nullptr, seqused_k, block_table,
                           mm_span_offsets, mm_spans, num_spans, sinks);
}

const char* attnjit_kernel_name(const attnjit_kernel* kernel) {
  return kernel ? kernel->name.c_str() : "";
}

const char* attnjit_kernel_key(const attnjit_kernel* kernel) {
  return kernel ? kernel->key.c_str() : "";
}

const char* attnjit_kernel_signature(const attnjit_kernel* kernel) {
  return kernel ? kernel->signature.c_str() : "";
}

const char* attnjit_kernel_source(const attnjit_kernel* kernel) {
  return kernel ? kernel->source : "";
}

attnjit_status attnjit_prewarm(attnjit_context* context, const attnjit_attention_flags* flags,
                               size_t num_flags, const char* target, int threads,
                               attnjit_prewarm_job** out) {
  return guarded([&] {
    require(out != nullptr, ErrorKind::kArgument, "out is null");
    *out = nullptr;
    require(context != nullptr, ErrorKind::kArgument, "context is null");
    require(flags != nullptr || num_flags == 0, ErrorKind::kArgument,
            "flags is null but num_flags is not 0");
    auto job = std::make_unique<attnjit_prewarm_job>();
    job->state = context->state;
    job->target = resolve_target(target);
    // The array's elements are the caller's structs: flags[0].struct_size
    // apart (a caller built against an older header has smaller ones), and
    // a list shares one layout.
    const size_t step = num_flags > 0 ? flags[0].struct_size : 0;
    for (size_t i = 0; i < num_flags; ++i) {
      const auto* f = reinterpret_cast<const attnjit_attention_flags*>(
          reinterpret_cast<const unsigned char*>(flags) + i * step);
      require(f->struct_size == step, ErrorKind::kArgument,
              fmt::format("flags[{}].struct_size differs from flags[0]'s", i));
      job->flags.push_back(to_flags(f));
    }
    size_t workers =
        threads > 0 ? size_t(threads) : std::max(1u, std::thread::hardware_concurrency());
    workers = std::min(workers, job->flags.size());
    attnjit_prewarm_job* raw = job.get();
    try {
      for (size_t i = 0; i < workers; ++i) job->threads.emplace_back([raw] { raw->work(); });
    } catch (...) {
      // A thread that cannot be started: the started ones stop taking work
      // and are joined before the job goes (a joinable thread's destructor
      // terminates the process).
      job->next = job->flags.size();
      for (std::thread& thread : job->threads) thread.join();
      throw;
    }
    *out = job.release();
  });
}

attnjit_status attnjit_prewarm_progress(const attnjit_prewarm_job* prewarm, size_t* done,
                                        size_t* total) {
  return guarded([&] {
    require(prewarm != nullptr, ErrorKind::kArgument, "prewarm is null");
    if (done) *done = prewarm->done.load();
    if (total) *total = prewarm->flags.size();
  });
}

attnjit_status attnjit_prewarm_wait(attnjit_prewarm_job* prewarm) {
  g_last_error.clear();
  if (prewarm == nullptr) return fail(ATTNJIT_ERROR_ARGUMENT, "prewarm is null");
  std::unique_ptr<attnjit_prewarm_job> job(prewarm);
  const attnjit_status joined = guarded([&] {
    for (std::thread& thread : job->threads) thread.join();
  });
  if (joined != ATTNJIT_OK) return joined;
  if (job->failures == 0) return ATTNJIT_OK;
  std::string message;
  try {
    message = fmt::format("prewarm: {} of {} variants failed; the first: {}", job->failures,
                          job->flags.size(), job->first_message);
  } catch (...) {
  }
  return fail(job->first_status, message.c_str());
}

}  // extern "C"

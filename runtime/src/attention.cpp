// The typed attention API: flags -> kernel (memoized per process), and the
// kernel's variants per schedule (one TieredVariant each, fetched on the
// first launch that runs it: tiered_variant.cpp; built-in ones shared
// through a memo), with the tier that may answer for each
// (attention_tier.cpp, user_vm_tier.cpp). Planning and launching with
// them: attention_launch.cpp; a compiled variant's launch: variant.cpp.
#include "attnjit/attention.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "attnjit/env.h"
#include "attnjit/error.h"
#include "attnjit/record.h"
#include "kernel_slots.h"
#include "tiered_variant.h"
#include "tiers.h"
#include "variant.h"

namespace attnjit {

const char* to_string(DType dtype) { return dtype == DType::kBF16 ? "bf16" : "fp16"; }

const char* to_string(KvDType dtype) {
  return dtype == KvDType::kFp8E4M3 ? "fp8_e4m3" : "same";
}

const char* to_string(KvLayout layout) {
  return layout == KvLayout::kPaged ? "paged" : "contiguous";
}

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
          {"head_dim_v", int64_t(head_dim_v)},
          {"causal", causal},
          {"window", window},
          {"sinks", std::string(to_string(sinks))},
          {"mm_prefix", mm_prefix},
          {"mm_clamp", mm_clamp},
          {"softcap", softcap},
          {"return_lse", return_lse},
          {"kv_layout", std::string(to_string(kv_layout))},
          {"kv_dtype", std::string(to_string(kv_dtype))}};
}

std::map<std::string, FlagValue> AttentionFlags::to_flag_map(const Schedule& schedule) const {
  std::map<std::string, FlagValue> values = to_flag_map();
  values["split_kv"] = schedule.split_kv;
  values["small_pages"] = schedule.small_pages;
  return values;
}

FlagSet AttentionFlags::to_flag_set(const Schedule& schedule) const {
  return resolve_flags(attention_spec(), to_flag_map(schedule));
}

FlagSet AttentionFlags::to_flag_set() const { return to_flag_set(Schedule{}); }

Schedule Schedule::of(const FlagSet& flags) {
  Schedule s;
  s.split_kv = flags.get_bool("split_kv");
  s.small_pages = flags.get_bool("small_pages");
  return s;
}

AttentionFlags AttentionFlags::from_flag_set(const FlagSet& flags) {
  AttentionFlags f;
  f.dtype = flags.get_name("dtype") == "fp16" ? DType::kFP16 : DType::kBF16;
  f.head_dim = int(flags.get_int("head_dim"));
  f.head_dim_v = int(flags.get_int("head_dim_v"));
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
  f.kv_layout = flags.get_name("kv_layout") == "paged" ? KvLayout::kPaged : KvLayout::kContiguous;
  f.kv_dtype = flags.get_name("kv_dtype") == "fp8_e4m3" ? KvDType::kFp8E4M3 : KvDType::kSame;
  return f;
}

namespace {

// A process memo: key -> object, under a lock. Never destroyed: at process
// exit the driver may already be torn down (or a context destroyed), and
// unloading modules then can crash.
template <class T>
struct ProcessMemo {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<T>> items;

  static ProcessMemo& get() {
    static ProcessMemo& memo = *new ProcessMemo;
    return memo;
  }
};

// The one memo of typed kernels: (cache, canonical flag text, compile
// options) -> kernel.
using KernelMemo = ProcessMemo<AttentionKernel>;
KernelMemo& kernel_memo() { return KernelMemo::get(); }

std::string memo_key(const KernelCache& cache, const std::string& flag_text,
                     const CompileOptions& options) {
  return std::to_string(cache.instance_id()) + "|" + flag_text + "@" + options.canonical();
}

// An engine asks for the same few variants on every layer of every step:
// each thread keeps its last few memo hits by value (the cache, the packed
// flags, the target and the options read from the environment on this
// call), so a repeat costs no string formatting and no lock. A record does
// not own its kernel (forget_cache drops a destroyed cache's from the
// memo): one that has gone is a miss.
// (get(AttentionFlags) asks for the default schedule: it is not packed.)
// 0: flags with a field outside its width (never a valid set: those go
// the slow way, to the spec's error).
uint64_t pack_flags(const AttentionFlags& f) {
  static_assert(sizeof(AttentionFlags) == 32, "pack_flags must read every AttentionFlags field");
  const auto fits = [](auto value, int width) {
    return static_cast<int64_t>(value) >= 0 && static_cast<int64_t>(value) < (int64_t{1} << width);
  };
  if (!fits(f.head_dim, 31) || !fits(f.head_dim_v, 10) || !fits(f.dtype, 4) || !fits(f.sinks, 4) ||
      !fits(f.kv_layout, 2) || !fits(f.kv_dtype, 2)) {
    return 0;
  }
  uint64_t bits = static_cast<uint32_t>(f.head_dim);
  bits = bits << 10 | static_cast<uint32_t>(f.head_dim_v);
  const auto put = [&](uint64_t value, int width) { bits = bits << width | value; };
  put(static_cast<uint64_t>(f.dtype), 4);
  put(static_cast<uint64_t>(f.sinks), 4);
  put(static_cast<uint64_t>(f.kv_layout), 2);
  put(static_cast<uint64_t>(f.kv_dtype), 2);
  for (bool b : {f.causal, f.window, f.mm_prefix, f.mm_clamp, f.softcap, f.return_lse}) {
    put(b ? 1 : 0, 1);
  }
  return bits;  // 32 + 10 + 18 bits (head dims below 1024)
}

struct RecentHit {
  uint64_t cache_id = 0;
  uint64_t flags = 0;
  Target target;
  bool line_info = false;
  int max_registers = 0;
  std::weak_ptr<AttentionKernel> kernel;  // expired: an empty slot

  bool matches(uint64_t id, uint64_t packed, const Target& t, const CompileOptions& o) const {
    return cache_id == id && flags == packed && target == t && line_info == o.line_info &&
           max_registers == o.max_registers;
  }
};

struct RecentHits {
  static constexpr int kSlots = 8;
  RecentHit slot[kSlots];
  int next = 0;

  std::shared_ptr<AttentionKernel> find(uint64_t id, uint64_t packed, const Target& t,
                                        const CompileOptions& o) const {
    for (const RecentHit& h : slot) {
      if (h.matches(id, packed, t, o)) return h.kernel.lock();
    }
    return nullptr;
  }
  void remember(uint64_t id, uint64_t packed, const Target& t, const CompileOptions& o,
                const std::shared_ptr<AttentionKernel>& kernel) {
    slot[next] = RecentHit{id, packed, t, o.line_info, o.max_registers, kernel};
    next = (next + 1) % kSlots;
  }
};

RecentHits& recent_hits() {
  thread_local RecentHits hits;
  return hits;
}

std::shared_ptr<AttentionKernel> memo_find(const std::string& key) {
  KernelMemo& memo = kernel_memo();
  std::lock_guard<std::mutex> lock(memo.mutex);
  auto it = memo.items.find(key);
  return it != memo.items.end() ? it->second : nullptr;
}

}  // namespace

std::string AttentionFlags::canonical_text(const Schedule& schedule) const {
  return fmt::format(
      "dtype={},head_dim={},head_dim_v={},causal={},window={},sinks={},mm_prefix={},mm_clamp={},"
      "softcap={},return_lse={},kv_layout={},kv_dtype={},split_kv={},small_pages={}",
      to_string(dtype), head_dim, head_dim_v, causal, window, to_string(sinks), mm_prefix, mm_clamp,
      softcap,
      return_lse, to_string(kv_layout), to_string(kv_dtype), schedule.split_kv,
      schedule.small_pages);
}

std::string AttentionFlags::canonical_text() const { return canonical_text(Schedule{}); }

namespace {

// $ATTNJIT_TUNING, read once per process: tuning values for the variants
// of the attention spec the process gets without overrides of its own (a
// developer's knob: times other tile configurations through the
// benchmarks without editing the spec's rules). Part of each signature,
// so of the cache key, and of the memo's key. Entries apart by ';', each
// `values` (every variant) or `flags:values` (the variants with those
// flag values), e.g. "split_kv=true:decode_mma=1,stages=8"; a variant
// takes the first entry that matches it, or none.
struct EnvTuning {
  struct Entry {
    std::map<std::string, FlagValue> when;
    std::map<std::string, int64_t> values;
  };
  std::vector<Entry> entries;
  std::string memo_suffix;  // "" or "|tuning=<text>"

  const std::map<std::string, int64_t>& values_for(const FlagSet& flags) const {
    static const std::map<std::string, int64_t> none;
    for (const Entry& e : entries) {
      const bool match = std::all_of(e.when.begin(), e.when.end(), [&](const auto& cond) {
        return flags.at(cond.first) == cond.second;
      });
      if (match) return e.values;
    }
    return none;
  }
};

EnvTuning parse_env_tuning(const std::string& text) {
  EnvTuning t;
  size_t at = 0;
  while (at <= text.size()) {
    size_t end = text.find(';', at);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(at, end - at);
    at = end + 1;
    // (A blank entry: "a=1;;b=2", a trailing ';'.)
    if (std::all_of(item.begin(), item.end(), [](unsigned char ch) { return std::isspace(ch); })) {
      continue;
    }
    EnvTuning::Entry e;
    const size_t colon = item.find(':');
    if (colon != std::string::npos) {
      try {
        e.when = parse_flag_assignments(attention_spec(), item.substr(0, colon));
      } catch (const Error& err) {
        throw Error(err.kind(),
                    fmt::format("ATTNJIT_TUNING: '{}': {}", item.substr(0, colon), err.what()));
      }
    }
    // The values, without blanks ("stages=3; block_n=64" as written by hand).
    std::string values = colon == std::string::npos ? item : item.substr(colon + 1);
    values.erase(std::remove_if(values.begin(), values.end(),
                                [](unsigned char ch) { return std::isspace(ch) != 0; }),
                 values.end());
    if (values.empty()) {
      throw Error(ErrorKind::kArgument,
                  fmt::format("ATTNJIT_TUNING: '{}' sets no tuning values (an entry is "
                              "'name=int,...' or 'flag=value,...:name=int,...')",
                              item));
    }
    e.values = parse_tuning_overrides(values, "ATTNJIT_TUNING");
    // Names checked now, so that a typo in an entry no variant of this run
    // matches is still an error.
    try {
      check_tuning_overrides(attention_spec(), e.values);
    } catch (const Error& err) {
      throw Error(err.kind(), fmt::format("ATTNJIT_TUNING: {}", err.what()));
    }
    t.entries.push_back(std::move(e));
  }
  t.memo_suffix = std::string("|tuning=") + text;
  return t;
}

const EnvTuning& env_tuning() {
  static const EnvTuning tuning = [] {
    const char* text = std::getenv("ATTNJIT_TUNING");
    return text != nullptr && *text != '\0' ? parse_env_tuning(text) : EnvTuning{};
  }();
  return tuning;
}

}  // namespace

const std::map<std::string, int64_t>& env_tuning_for(const FlagSet& flags) {
  return env_tuning().values_for(flags);
}

namespace {

// A built-in variant's signature as get() makes it: the tuning overrides,
// or without any the environment's tuning (ATTNJIT_TUNING).
Signature attention_signature(const FlagSet& flags, const CompileOptions& options,
                              const std::map<std::string, int64_t>& overrides) {
  return make_signature(attention_spec(), flags, options,
                        overrides.empty() ? env_tuning_for(flags) : overrides);
}

}  // namespace

// ---- a kernel's variants ----------------------------------------------------

namespace {

// The process memo of built-in variants without tuning overrides: (cache,
// signature, options) -> variant, shared by every kernel whose launches
// run it (a kernel got with split_kv and the split sibling of another), so
// that each is fetched, compiled and tiered once.
using VariantMemo = ProcessMemo<TieredVariant>;

// A static spec as the variants hold specs: not owned.
std::shared_ptr<const Spec> unowned(const Spec& spec) {
  return std::shared_ptr<const Spec>(std::shared_ptr<const Spec>(), &spec);
}

}  // namespace

AttentionKernel::~AttentionKernel() = default;

std::shared_ptr<AttentionKernel> AttentionKernel::make(
    const FlagSet& flags, std::shared_ptr<const Spec> user, KernelCache& cache,
    const Target& target, const CompileOptions& options,
    const std::map<std::string, int64_t>& tuning) {
  auto kernel = std::shared_ptr<AttentionKernel>(new AttentionKernel());
  kernel->flags_ = AttentionFlags::from_flag_set(flags);
  kernel->schedule_ = Schedule::of(flags);
  kernel->flag_set_ = flags;
  kernel->cache_ = &cache;
  kernel->target_ = target;
  kernel->options_ = options;
  kernel->tuning_overrides_ = tuning;
  kernel->slots_ = std::make_unique<Slot[]>(4);
  if (user) kernel->set_user_spec(std::move(user));
  kernel->variant(kernel->schedule_);
  return kernel;
}

FlagSet AttentionKernel::flags_of(const Schedule& schedule) const {
  if (schedule == schedule_) return flag_set_;
  std::map<std::string, FlagValue> values(flag_set_.values.begin(), flag_set_.values.end());
  values["split_kv"] = schedule.split_kv;
  values["small_pages"] = schedule.small_pages;
  return resolve_flags(user_spec_ ? *user_spec_ : attention_spec(), values);
}

std::shared_ptr<TieredVariant> AttentionKernel::make_variant(const Schedule& schedule) const {
  const FlagSet flags = flags_of(schedule);
  // The overrides go to the variants of the kernel's own split_kv value
  // (its small_pages sibling runs its tiles); the split sibling of a prefill
  // kernel takes the rules'.
  const std::map<std::string, int64_t> none;
  const std::map<std::string, int64_t>& tuning =
      schedule.split_kv == schedule_.split_kv ? tuning_overrides_ : none;
  // Tiers answer for variants the rules (or ATTNJIT_TUNING) tile, not for
  // an autotuner's overrides.
  const bool may_tier = tuning.empty() && env_bool("ATTNJIT_TIERED", true);
  KernelCache& cache = *cache_;
  if (user_spec_) {
    Signature sig = make_signature(*user_spec_, flags, options_, tuning);
    TierFactory tier;
    if (may_tier) {
      tier = [spec = user_spec_, sig, &cache] { return user_vm_tier(spec, sig, cache); };
    }
    return std::make_shared<TieredVariant>(user_spec_, std::move(sig), cache, user_params_,
                                           std::move(tier));
  }
  Signature sig = attention_signature(flags, options_, tuning);
  TierFactory tier;
  if (may_tier) tier = [sig, &cache] { return generic_tier(sig, cache); };
  if (!tuning.empty()) {
    return std::make_shared<TieredVariant>(unowned(attention_spec()), std::move(sig), cache,
                                           nullptr, std::move(tier));
  }
  const std::string key = memo_key(cache, sig.canonical(), options_);  // (tuning values included)
  VariantMemo& memo = VariantMemo::get();
  std::lock_guard<std::mutex> lock(memo.mutex);
  std::shared_ptr<TieredVariant>& slot = memo.items[key];
  if (!slot) {
    // ATTNJIT_RECORD: every variant launches may run goes in the manifest.
    record_requested_variant(attention_spec().family, flags, target_);
    slot = std::make_shared<TieredVariant>(unowned(attention_spec()), std::move(sig), cache,
                                           nullptr, std::move(tier));
  }
  return slot;
}

TieredVariant& AttentionKernel::variant(const Schedule& schedule) {
  Slot& slot = slots_[slot_of(schedule)];
  if (TieredVariant* ready = slot.ready.load(std::memory_order_acquire)) return *ready;
  std::lock_guard<std::mutex> lock(slot.mutex);
  if (!slot.variant) {
    slot.variant = make_variant(schedule);
    slot.ready.store(slot.variant.get(), std::memory_order_release);
  }
  return *slot.variant;
}

std::shared_ptr<AttentionKernel> AttentionKernel::get(
    const AttentionFlags& flags, KernelCache& cache, const Target* target,
    const std::map<std::string, int64_t>& tuning_overrides) {
  const Target t = target != nullptr ? *target : current_device_target();
  // A hit needs no resolving against the spec: only resolved flag sets are
  // ever stored, under their canonical text, which canonical_text() spells
  // without building the set.
  if (!tuning_overrides.empty()) return get(flags.to_flag_set(), cache, &t, tuning_overrides);
  const CompileOptions options = CompileOptions::from_environment(t);
  const uint64_t packed = pack_flags(flags);
  if (packed == 0) return get(flags.to_flag_set(), cache, &t, tuning_overrides);
  RecentHits& recent = recent_hits();
  if (auto hit = recent.find(cache.instance_id(), packed, t, options)) return hit;
  const std::string text = flags.canonical_text() + env_tuning().memo_suffix;
  std::shared_ptr<AttentionKernel> kernel = memo_find(memo_key(cache, text, options));
  if (!kernel) kernel = get(flags.to_flag_set(), cache, &t, tuning_overrides);
  recent.remember(cache.instance_id(), packed, t, options, kernel);
  return kernel;
}

std::shared_ptr<AttentionKernel> AttentionKernel::get(
    const FlagSet& flags, KernelCache& cache, const Target* target,
    const std::map<std::string, int64_t>& tuning_overrides) {
  const Target t = target != nullptr ? *target : current_device_target();
  const Spec& spec = attention_spec();
  const CompileOptions options = CompileOptions::from_environment(t);
  // Kernels with tuning overrides (the autotuner's) skip the memo; the
  // cache's own memory level still serves their variants.
  if (!tuning_overrides.empty()) return make(flags, nullptr, cache, t, options, tuning_overrides);
  const std::string key = memo_key(cache, flags.str() + env_tuning().memo_suffix, options);
  if (auto hit = memo_find(key)) return hit;
  // A memo miss: the first request of this flag set in this process (and
  // cache), where record mode (ATTNJIT_RECORD) appends it to its manifest.
  record_requested_variant(spec.family, flags, t);
  std::shared_ptr<AttentionKernel> kernel = make(flags, nullptr, cache, t, options, {});
  KernelMemo& memo = kernel_memo();
  std::lock_guard<std::mutex> lock(memo.mutex);
  return memo.items.emplace(key, std::move(kernel)).first->second;  // a racing caller's wins
}

void AttentionKernel::forget_cache(const KernelCache& cache) {
  const std::string prefix = std::to_string(cache.instance_id()) + "|";
  // Erased under the memo's lock, destroyed after it (the returned
  // references go at the end of each statement): kernels first, then the
  // variants they held.
  const auto drop = [&prefix](auto& memo) {
    std::vector<std::shared_ptr<void>> gone;
    std::lock_guard<std::mutex> lock(memo.mutex);
    for (auto it = memo.items.begin(); it != memo.items.end();) {
      if (it->first.compare(0, prefix.size(), prefix) == 0) {
        gone.push_back(std::move(it->second));
        it = memo.items.erase(it);
      } else {
        ++it;
      }
    }
    return gone;
  };
  drop(kernel_memo());
  drop(VariantMemo::get());
}

}  // namespace attnjit

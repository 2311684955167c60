// The typed attention API over the `attention` spec (specs/attention.yaml).
// Semantics: docs/semantics.md of the repository.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "attnjit/attention_args.h"
#include "attnjit/cache.h"
#include "attnjit/driver.h"
#include "attnjit/error.h"
#include "attnjit/kernel.h"
#include "attnjit/spec.h"

// The public C++ API: exported from libattnjit.so (the build hides the rest).
#pragma GCC visibility push(default)

namespace attnjit {

class TieredVariant;  // one schedule's variant, fetched on first use (runtime/src/tiered_variant.h)
class UserParams;     // a user spec's own args' places (runtime/src/variant.h)

// A variant of the attention spec (or of a user spec that extends it) as
// an engine launches it: its flags and the schedules its launches run
// (the variant itself, its split-KV sibling for decode-shaped batches, their
// small_pages siblings for pages of 16 keys), each compiled variant fetched
// on the first launch that runs it (docs/design.md, "Decisions").
class AttentionKernel {
 public:
  ~AttentionKernel();

  // The kernel of `flags`, memoized per process by (cache, canonical flags,
  // compile options). Compiles nothing: each variant comes through `cache`
  // on the first launch that runs it (or the first call below that
  // describes it). `flags` must come from the attention spec
  // (resolve_flags / resolve_preset / to_flag_set); a FlagSet that names a
  // schedule (split_kv, small_pages) makes that schedule the kernel's own.
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

  // A variant of a user spec that extends the attention spec (its own
  // mask, score and args). Not memoized: callers keep the kernel. A
  // variant no cache holds may be answered by the expression VM while it
  // compiles, where the VM's variant is cached (ATTNJIT_USER_VM=0 turns
  // that off; docs/tiers.md "User specs").
  static std::shared_ptr<AttentionKernel> get_user(
      std::shared_ptr<const Spec> spec, const FlagSet& flags,
      KernelCache& cache = KernelCache::global(), const Target* target = nullptr,
      const std::map<std::string, int64_t>& tuning_overrides = {});

  // The requested flags, and the kernel's own schedule (the default one
  // unless its FlagSet named another).
  const AttentionFlags& flags() const { return flags_; }
  const Schedule& schedule() const { return schedule_; }
  // The user spec of a get_user() kernel (null for the built-in spec's).
  const Spec* user_spec() const { return user_spec_.get(); }

  // validate_attention_args, then one launch on `stream` of the variant
  // schedule_for(args) names: a tier's while that variant compiles.
  void launch(const AttentionArgs& args, CuStream stream);
  // The same for a user spec's variant: every arg of the spec's own, by
  // name, with the declared type (Error(kArgument) otherwise).
  void launch(const AttentionArgs& args, CuStream stream, const std::vector<UserArg>& user_args);
  // The three-argument launch where the variant these args run is fetched
  // and compiled (the same checks first), and false (nothing launched)
  // where the launch would fetch, compile or wait:
  // a caller holding a lock (Python's GIL) launches without releasing it in
  // the steady state.
  bool launch_if_ready(const AttentionArgs& args, CuStream stream,
                       const std::vector<UserArg>& user_args);

  // The schedule a launch with `args` runs: the split sibling for a
  // decode-shaped batch (AttentionArgs::num_splits), and of either the
  // small_pages sibling for pages whose boxes are its V blocks. Decided from
  // the variants' tile configurations; compiles nothing.
  Schedule schedule_for(const AttentionArgs& args);
  // The plan of a launch with `args` of the variant schedule_for(args)
  // names, on a GPU of `sm_count` SMs (0: the current device's): its
  // schedule, split-KV parts and workspace, and grid, from that variant's
  // tile configuration (its signature's while it is not fetched). Compiles
  // nothing. (While a small_pages sibling compiles, launches run the
  // variant without it.)
  LaunchPlan plan(const AttentionArgs& args, int sm_count = 0);
  // The workspace bytes (split-KV parts) a launch with `args` needs,
  // whichever of the variant and a tier answering for it runs. Fetches
  // the variant (a tier answers at once where one is cached).
  size_t workspace_bytes(const AttentionArgs& args, int sm_count = 0);
  // The compiled kernel a launch with `args` runs now: the variant's, or
  // its tier's while it compiles. Fetches it.
  Kernel& kernel_for(const AttentionArgs& args);
  EntrySource source_for(const AttentionArgs& args);

  // The kernel's own schedule's variant (fetched on first use): its kernel,
  // tile rows, GQA packing (0 none, 1 packed) and where it came from; a
  // tier's while it compiles (tier() == kGeneric).
  Kernel& kernel();
  int block_m();
  int pack_gqa();
  EntrySource source();

  // Tiers (docs/tiers.md). Unless ATTNJIT_TIERED=0, a variant that no cache
  // holds is answered at once by its generic variant (generic_flags), or a
  // user spec's by the expression VM, where a cache holds that one, while
  // it compiles on a background thread; launches run the variant from the
  // launch after it lands. A launch on a stream being captured into a CUDA
  // graph waits for it (a graph never records a tier).
  enum class Tier { kSpecialized, kGeneric };
  // The own schedule's variant's tier (fetched first).
  Tier tier();
  // Blocks until every variant launches have fetched (the own schedule's
  // where none was) runs compiled; rethrows a background compile's error.
  void wait_specialized();
  // Waits for every background compile of the variants this kernel fetched,
  // fetching nothing and reporting nothing (before their cache goes).
  void join_background() noexcept;
  // Process-wide: launches a tier answered.
  static uint64_t generic_launches();
  // Drops the process memo's kernels and variants of `cache`, which is
  // about to be destroyed (the C API's contexts call it): they go when the
  // last caller's handle does. Join their background compiles first.
  static void forget_cache(const KernelCache& cache);

 private:
  AttentionKernel() = default;
  // The variant of `schedule` (its slot filled on first use: a signature
  // and a memo lookup, nothing compiled).
  TieredVariant& variant(const Schedule& schedule);
  // A kernel of `flags` (of the attention spec, or of `user` where that is
  // not null), its own variant's slot filled (a signature: an unsupported
  // flag set throws here, compiling nothing).
  static std::shared_ptr<AttentionKernel> make(const FlagSet& flags,
                                               std::shared_ptr<const Spec> user,
                                               KernelCache& cache, const Target& target,
                                               const CompileOptions& options,
                                               const std::map<std::string, int64_t>& tuning);
  // A user spec's kernel: the spec and its own args' places (user_kernel.cpp).
  void set_user_spec(std::shared_ptr<const Spec> spec);
  // The flag set of `schedule`'s variant, and the variant (its signature,
  // and the tier that may answer for it: attention_tier.cpp,
  // user_vm_tier.cpp), shared through the memo where it is a built-in one.
  FlagSet flags_of(const Schedule& schedule) const;
  std::shared_ptr<TieredVariant> make_variant(const Schedule& schedule) const;
  // The variant a launch with `args` runs, fetched (the small_pages sibling's
  // failure leaves the variant without it serving).
  // `stream`: the launch's, which waits for a compiling small_pages sibling
  // while it is being captured into a CUDA graph.
  TieredVariant& fetched_for(const AttentionArgs& args, const CuStream* stream = nullptr);
  // The small_pages sibling of schedule `want` (fetched, where `fetch`), or
  // null where the variant without it serves: the sibling cannot be had,
  // or compiles in the background (unless `stream` is being captured: then
  // it is waited for). small_pages_failed notes why; a failure that will
  // recur, or any failure of its background compile (never retried), marks
  // it missing.
  TieredVariant* small_pages_sibling(const Schedule& want, bool fetch,
                                     const CuStream* stream = nullptr);
  void small_pages_failed(const Schedule& want, const std::exception& e, bool lasting);

  AttentionFlags flags_;
  Schedule schedule_;
  FlagSet flag_set_;  // as requested, its schedule included
  KernelCache* cache_ = nullptr;
  Target target_;
  CompileOptions options_;
  // The tuning overrides the kernel was got with (the autotuner's, the
  // tile-config tests'): the variants of its own split_kv value take them
  // (its small_pages sibling runs its tiles); the others take the rules'.
  std::map<std::string, int64_t> tuning_overrides_;
  // A user spec's kernel: the spec and its own args' places.
  std::shared_ptr<const Spec> user_spec_;
  std::shared_ptr<const UserParams> user_params_;
  // Per schedule (split_kv * 2 + small_pages): the variant, set once. A
  // built-in variant without overrides is shared by every kernel that
  // runs it (a process memo); the others are owned here.
  struct Slot;
  std::unique_ptr<Slot[]> slots_;
  // That small_pages sibling could not be had (no cache holds it and the JIT
  // is off, or it failed to build): the variant without it serves; [1]: the
  // split sibling's.
  std::atomic<bool> small_pages_missing_[2] = {false, false};
};

// The attention spec compiled into the library.
const Spec& attention_spec();

// The tile values $ATTNJIT_TUNING gives the attention spec's variant of
// `flags` (none when it is unset or no entry matches): what get() puts in
// the signature of a built-in variant it makes without tuning overrides, so
// that an offline build (`attnjit build-cache`, `compile`) makes the same
// keys. Read once per process; throws on a malformed value.
const std::map<std::string, int64_t>& env_tuning_for(const FlagSet& flags);

}  // namespace attnjit

#pragma GCC visibility pop

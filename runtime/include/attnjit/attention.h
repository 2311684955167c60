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

#include "attnjit/attention_args.h"
#include "attnjit/cache.h"
#include "attnjit/driver.h"
#include "attnjit/kernel.h"
#include "attnjit/spec.h"

// The public C++ API: exported from libattnjit.so (the build hides the rest).
#pragma GCC visibility push(default)

namespace attnjit {

struct VariantShape;  // the planner's view of a variant (runtime/src/planner.h)
class Variant;       // a compiled kernel and its launch (runtime/src/variant.h)
class UserParams;    // a user spec's own args' places (runtime/src/variant.h)

class AttentionKernel {
 public:
  ~AttentionKernel();

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

  // The requested flags, and the schedule this variant was compiled with
  // (the default one unless it came from a FlagSet that names another, or
  // is a sibling a launch ran). kernel(), block_m(), pack_gqa() and source()
  // describe the kernel that launches run now: the generic variant's while
  // the specialized one compiles (tier() == kGeneric), else this variant's.
  const AttentionFlags& flags() const { return flags_; }
  const Schedule& schedule() const { return schedule_; }
  Kernel& kernel();
  int block_m() const;
  // GQA packing: 0 none, 1 packed.
  int pack_gqa() const;
  EntrySource source() const;

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
  // What the launch planner reads of this variant (runtime/src/planner.h).
  VariantShape shape() const;
  // The kernel a launch with `args` runs: this one, its split sibling for
  // a decode-shaped batch, and (of either) the small_pages sibling for
  // pages of 16 keys where that changes the kernel (fetched, and compiled
  // if needed, on first use).
  AttentionKernel& for_args(const AttentionArgs& args);

 private:
  // A sibling variant (the same flags, another schedule), fetched once.
  struct Sibling {
    std::mutex mutex;
    std::shared_ptr<AttentionKernel> kernel;
    std::atomic<AttentionKernel*> ready{nullptr};
    // Before it is fetched, what the planner reads of it, from its
    // signature's tile configuration (nothing compiled): written once under
    // mutex, then `planned` is set.
    std::atomic<bool> planned{false};
    int planned_block_n = 0, planned_small_pages_rows = 0;
  };
  // `sibling`'s kernel, fetched through this variant's cache and target
  // (and its user spec) with this variant's flags, `schedule` and `tuning`
  // on its first use.
  AttentionKernel& sibling(Sibling& sibling, const Schedule& schedule,
                           const std::map<std::string, int64_t>& tuning = {});
  // What the planner reads of the sibling of `schedule` in `sibling` to
  // pick its small_pages sibling: the sibling's own shape once fetched,
  // else its key tile and V-block rows from its signature (the other
  // fields left 0), so that a launch fetches only the sibling it runs (a
  // decode at pages of 16 keys goes straight to the split sibling's
  // small_pages one, and compiles nothing else).
  VariantShape planned_shape(Sibling& sibling, const Schedule& schedule);
  // The compiled variant a launch of this kernel runs (a tier's while it
  // answers; this one's own, or its sibling's, from for_args()).
  const Variant& variant() const;
  // This kernel's own variant: the entry `found` of `sig`.
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
  // The spec and its own args' places (user_kernel.cpp), on this kernel
  // and on its own variant where it has one.
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
  Schedule schedule_;
  // Null on a tier's kernel (generic_ answers until specialized_ lands).
  std::unique_ptr<Variant> variant_;
  // That sibling could not be had (no cache holds it and the JIT is off,
  // or it failed to build): this one serves; [1]: the split sibling's.
  std::atomic<bool> small_pages_missing_[2] = {false, false};
  // The tuning overrides this variant was got with (the autotuner's, the
  // tile-config tests'): its small_pages sibling takes them too, so that
  // it runs the same tiles.
  std::map<std::string, int64_t> tuning_overrides_;
  // Where the siblings come from: this variant's cache and target.
  KernelCache* cache_ = nullptr;
  Target target_;
  Sibling split_sibling_, small_pages_sibling_, split_small_pages_sibling_;
  // A user spec's kernel: the spec and its own args' places.
  std::shared_ptr<const Spec> user_spec_;
  std::shared_ptr<const UserParams> user_params_;
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

// One variant of a kernel as launches see it: fetched on the first launch
// that runs it (not before), from a cache, or answered by a tier while it
// compiles on a background thread, or compiled then (docs/tiers.md). A
// kernel (AttentionKernel) holds one per schedule its launches run; the
// planner says which schedule a launch runs.
#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <vector>

#include "attnjit/attention_args.h"
#include "attnjit/cache.h"
#include "attnjit/driver.h"
#include "attnjit/signature.h"
#include "attnjit/spec.h"
#include "planner.h"
#include "variant.h"

namespace attnjit {

// A compiled variant answering for another while that one compiles: the
// generic variant of its flags (attention_tier.cpp) or the expression VM's
// variant of its spec's (user_vm_tier.cpp). It takes the requested
// variant's arguments and turns them into its own.
class Tier {
 public:
  virtual ~Tier() = default;
  virtual const Variant& variant() const = 0;
  virtual void launch(const AttentionArgs& a, CuStream stream,
                      const std::vector<UserArg>& user_args) const = 0;
  // The arguments its variant would launch with, for planning (sizes and
  // modes; scratch pointers left out).
  virtual AttentionArgs plan_args(const AttentionArgs& a) const { return a; }
};

// Makes the tier of a variant no cache holds, or null where none is cached
// (the variant then compiles in the call that needs it).
using TierFactory = std::function<std::unique_ptr<Tier>()>;

// Launches a tier answered in this process (AttentionKernel::generic_launches).
uint64_t tier_launches();

class TieredVariant {
 public:
  // The variant `sig` of `spec` (for sig's target), through `cache`, which
  // must outlive it and its background compile; `user` the spec's own
  // args' places (null: the attention spec's); `make_tier` null where no
  // tier may answer.
  TieredVariant(std::shared_ptr<const Spec> spec, Signature sig, KernelCache& cache,
                std::shared_ptr<const UserParams> user, TierFactory make_tier);
  // Joins a background compile.
  ~TieredVariant();
  TieredVariant(const TieredVariant&) = delete;
  TieredVariant& operator=(const TieredVariant&) = delete;

  const Signature& signature() const { return sig_; }
  // What the planner reads: the compiled variant's shape once it is here,
  // else its signature's (nothing compiled).
  VariantShape shape() const;

  // Gets the variant on the first call: loaded from a cache, or answered by
  // its tier while a background thread compiles it, or compiled now. A
  // failure throws and keeps nothing (the next call tries again).
  void fetch();
  // The variant launches run now: the compiled one, or the tier's. Fetches.
  const Variant& current();
  // Whether fetch() got it (or a tier), whether a tier answers now, and the
  // background compile's error (null while it runs, or once it landed).
  bool fetched() const { return fetched_.load(std::memory_order_acquire); }
  // Whether the compiled variant is here (a launch then neither fetches
  // nor waits).
  bool ready() const { return ready_.load(std::memory_order_acquire) != nullptr; }
  bool tiered() const;
  std::exception_ptr error();
  // Blocks until the compiled variant is here (fetching it first);
  // rethrows its background compile's error.
  void wait();
  // One launch with checked args: the compiled variant's, or the tier's;
  // on a stream being captured into a CUDA graph the compiled one's (a
  // graph never records a tier).
  void launch(const AttentionArgs& a, CuStream stream, const std::vector<UserArg>& user_args);
  // The workspace bytes that a launch with `a` needs, whichever answers.
  size_t workspace_bytes(const AttentionArgs& a, int sm_count = 0);

 private:
  void compile_in_background();

  std::shared_ptr<const Spec> spec_;
  const Signature sig_;
  KernelCache& cache_;
  std::shared_ptr<const UserParams> user_;
  TierFactory make_tier_;
  VariantShape planned_;  // the signature's shape

  std::mutex mutex_;  // fetching, and the compile's outcome
  std::atomic<bool> fetched_{false};
  std::unique_ptr<Tier> tier_;  // set before fetched_: read lock-free after
  std::unique_ptr<Variant> own_;
  std::atomic<const Variant*> ready_{nullptr};  // own_ once it is here
  std::exception_ptr error_;                    // the background compile's
  std::future<void> pending_;                   // declared last: joined first
};

}  // namespace attnjit

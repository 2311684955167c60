// The expression VM as the tier of user-spec variants (tiers.h,
// docs/tiers.md "User specs"): the plan of a spec's programs, the VM
// variant's args for a launch, the programs in device memory per context,
// and the tier itself.
#include "tiers.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

#include <fmt/format.h>

#include "attention/user_vm.cuh"
#include "attnjit/env.h"
#include "attnjit/error.h"
#include "tiered_variant.h"
#include "variant.h"

namespace attnjit {

std::optional<UserVmPlan> plan_user_vm(const Spec& spec, std::string* why) {
  const auto refuse = [&](std::string reason) -> std::optional<UserVmPlan> {
    if (why != nullptr) *why = std::move(reason);
    return std::nullopt;
  };
  if (!spec.mask && !spec.score) return refuse("the spec has no expression");
  UserVmPlan plan;
  std::string reason;
  if (spec.mask && !compile_vm(*spec.mask, plan.slots, plan.mask, &reason)) {
    return refuse("mask: " + reason);
  }
  if (spec.score && !compile_vm(*spec.score, plan.slots, plan.score, &reason)) {
    return refuse("score: " + reason);
  }
  const size_t inherited = attention_spec().args.size();
  const auto own = [&](const std::string& name) {
    for (size_t i = inherited; i < spec.args.size(); ++i) {
      if (spec.args[i].name == name && spec.args[i].divisor_of.empty()) return true;
    }
    return false;
  };
  for (const std::vector<std::string>* names :
       {&plan.slots.ints, &plan.slots.floats, &plan.slots.tensors}) {
    for (const std::string& name : *names) {
      if (!own(name)) return refuse("it reads `" + name + "`, an arg of the attention spec");
    }
  }
  return plan;
}

std::vector<UserArg> user_vm_args(const UserVmPlan& plan, const std::vector<UserArg>& user_args,
                                  const void* mask_code, const void* score_code) {
  const auto value = [&](const std::string& name) -> const decltype(UserArg::value)& {
    for (const UserArg& arg : user_args) {
      if (arg.name == name) return arg.value;
    }
    throw Error(ErrorKind::kArgument, fmt::format("attention: the arg `{}` is missing", name));
  };
  // The VM spec's arg names in its order (expression_vm_spec), formatted
  // once: this runs on every launch the VM answers.
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const char* program : {"mask", "score"}) {
      for (const char* field : {"code", "count", "result"}) {
        n.push_back(fmt::format("vm_{}_{}", program, field));
      }
    }
    for (const char* kind : {"i", "f", "t"}) {
      for (int i = 0; i < vm::kIntSlots; ++i) n.push_back(fmt::format("vm_{}{}", kind, i));
    }
    return n;
  }();
  static_assert(vm::kIntSlots == vm::kFloatSlots && vm::kIntSlots == vm::kTensorSlots,
                "the names above give every kind of slot kIntSlots names");
  std::vector<UserArg> out;
  out.reserve(names.size());
  size_t n = 0;
  const auto add = [&](decltype(UserArg::value) v) { out.push_back(UserArg{names[n++], v}); };
  for (const auto& [program, code] : {std::pair{&plan.mask, mask_code}, {&plan.score, score_code}}) {
    add(code);
    add(int32_t(program->count));
    add(int32_t(program->result));
  }
  const VmSlots& s = plan.slots;
  for (size_t i = 0; i < size_t(vm::kIntSlots); ++i) {
    add(i < s.ints.size() ? std::get<int32_t>(value(s.ints[i])) : int32_t(0));
  }
  for (size_t i = 0; i < size_t(vm::kFloatSlots); ++i) {
    add(i < s.floats.size() ? std::get<float>(value(s.floats[i])) : 0.f);
  }
  for (size_t i = 0; i < size_t(vm::kTensorSlots); ++i) {
    add(i < s.tensors.size() ? std::get<const void*>(value(s.tensors[i])) : mask_code);
  }
  return out;
}

namespace {

// The device copy of a program's words in the current context, uploaded
// once per context and distinct words (get_user is not memoized: kernels
// with the same programs share it) and never freed: a launch in flight
// may read it.
CuDevicePtr upload_words(Driver& driver, unsigned long long ctx,
                         const std::vector<uint32_t>& words) {
  static std::mutex mutex;
  static std::map<std::pair<unsigned long long, std::vector<uint32_t>>, CuDevicePtr> uploaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_pair(ctx, words);
  auto it = uploaded.find(key);
  if (it == uploaded.end()) {
    const CuDevicePtr p = driver.mem_alloc(words.size() * sizeof(uint32_t));
    driver.copy_to_device(p, words.data(), words.size() * sizeof(uint32_t));
    it = uploaded.emplace(std::move(key), p).first;
  }
  return it->second;
}

// The programs of the spec a VM tier answers for: their words (the mask's,
// then the score's) and, per context, where their device copy is (a
// launch looks it up here without copying or comparing the words).
struct UserVm {
  explicit UserVm(UserVmPlan p) : plan(std::move(p)), words(plan.mask.code) {
    words.insert(words.end(), plan.score.code.begin(), plan.score.code.end());
    if (words.empty()) words.push_back(0);
  }

  std::pair<const void*, const void*> device_code() {
    Driver& driver = Driver::get();
    const unsigned long long ctx = driver.context_id(driver.current_or_primary_context());
    CuDevicePtr base = 0;
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = by_context.find(ctx);
      if (it == by_context.end()) it = by_context.emplace(ctx, upload_words(driver, ctx, words)).first;
      base = it->second;
    }
    const auto* p = reinterpret_cast<const unsigned char*>(uintptr_t(base));
    return {p, p + plan.mask.code.size() * sizeof(uint32_t)};
  }

  const UserVmPlan plan;
  std::vector<uint32_t> words;
  std::mutex mutex;
  std::map<unsigned long long, CuDevicePtr> by_context;
};

// The VM's variant answering for a user spec's: the spec's args become the
// VM's programs and slots.
class VmTier final : public Tier {
 public:
  VmTier(std::unique_ptr<Variant> vm, UserVmPlan plan)
      : vm_(std::move(vm)), programs_(std::move(plan)) {}
  const Variant& variant() const override { return *vm_; }
  void launch(const AttentionArgs& a, CuStream stream,
              const std::vector<UserArg>& user_args) const override {
    const auto [mask_code, score_code] = programs_.device_code();
    vm_->launch(a, stream, user_vm_args(programs_.plan, user_args, mask_code, score_code));
  }

 private:
  std::unique_ptr<Variant> vm_;
  mutable UserVm programs_;  // (their device copies, uploaded on first use per context)
};

}  // namespace

std::unique_ptr<Tier> user_vm_tier(const std::shared_ptr<const Spec>& spec, const Signature& sig,
                                   KernelCache& cache) {
  if (spec->expression_vm || !env_bool("ATTNJIT_USER_VM", true)) return nullptr;
  std::optional<UserVmPlan> plan = plan_user_vm(*spec);
  if (!plan) return nullptr;
  const Spec& vm_spec = expression_vm_spec();
  std::map<std::string, FlagValue> values(sig.flags.values.begin(), sig.flags.values.end());
  // The VM variant of the same schedule, else (a small_pages sibling's) of the
  // variant without small_pages, which is correct at every page size.
  for (int tries = sig.flags.get_bool("small_pages") ? 2 : 1; tries > 0; --tries) {
    std::optional<Signature> vm_sig;
    try {
      vm_sig = make_signature(vm_spec, resolve_flags(vm_spec, values), sig.options);
    } catch (const Error&) {
      return nullptr;  // no VM variant of these flags: compile as always
    }
    if (std::optional<LookupResult> found = cache.find(vm_spec, *vm_sig)) {
      // The spec object is static: a non-owning pointer.
      const std::shared_ptr<const Spec> vm_ptr(std::shared_ptr<const Spec>(), &vm_spec);
      auto params = std::make_shared<const UserParams>(vm_ptr, attention_spec());
      return std::make_unique<VmTier>(std::make_unique<Variant>(*vm_sig, *found, params),
                                       std::move(*plan));
    }
    values["small_pages"] = false;
  }
  return nullptr;
}

}  // namespace attnjit

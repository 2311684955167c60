// The expression VM as the tier of user-spec variants (runtime/src/
// user_vm_tier.cpp, tiers.h), no GPU: which kernel get_user answers with, when the
// specialized one takes over, when the tier stays out of the way, and the
// VM variant's args a launch passes. Kernels compile through NVRTC for
// sm_90a into memory-only caches; nothing is launched (launches through
// the VM run in the GPU suite).
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "attnjit/attention.h"
#include "attnjit/cache.h"
#include "attnjit/error.h"
#include "attnjit/spec.h"
#include "attnjit/target.h"
#include "runtime/fake_args.h"
#include "tiers.h"

namespace attnjit {
namespace {

using Tier = AttentionKernel::Tier;

std::shared_ptr<const Spec> example(const std::string& name) {
  return std::make_shared<const Spec>(
      load_spec_file(std::string(ATTNJIT_SOURCE_DIR) + "/specs/examples/" + name + ".yaml"));
}

FlagSet flags_for(const Spec& spec) {
  return resolve_flags(spec, {{"head_dim", FlagValue(int64_t{64})}, {"causal", FlagValue(true)}});
}

class UserVmTier : public ::testing::Test {
 protected:
  UserVmTier() : cache_(CacheConfig{}), target_(parse_target("sm_90a")) {
    setenv("ATTNJIT_USER_VM", "1", 1);
  }
  ~UserVmTier() override { unsetenv("ATTNJIT_USER_VM"); }
  // The VM variant of `spec`'s flags in the cache, as build-cache leaves it.
  std::shared_ptr<AttentionKernel> cache_vm_variant(const Spec& spec) {
    const Spec& vm = expression_vm_spec();
    const std::shared_ptr<const Spec> vm_ptr(std::shared_ptr<const Spec>(), &vm);
    const FlagSet f = flags_for(spec);
    const std::map<std::string, FlagValue> values(f.values.begin(), f.values.end());
    auto k = AttentionKernel::get_user(vm_ptr, resolve_flags(vm, values), cache_, &target_);
    k->wait_specialized();
    return k;
  }
  KernelCache cache_;
  Target target_;
};

TEST_F(UserVmTier, AnUncachedVariantIsAnsweredByTheVmUntilItLands) {
  const auto spec = example("chunked_local");
  auto vm = cache_vm_variant(*spec);
  EXPECT_EQ(vm->tier(), Tier::kSpecialized);
  const uint64_t compiles = cache_.stats().compiles;
  auto k = AttentionKernel::get_user(spec, flags_for(*spec), cache_, &target_);
  EXPECT_EQ(k->user_spec(), spec.get());
  EXPECT_EQ(k->tier(), Tier::kGeneric);
  EXPECT_EQ(k->kernel().name(), vm->kernel().name());
  k->wait_specialized();
  EXPECT_EQ(k->tier(), Tier::kSpecialized);
  EXPECT_NE(k->kernel().name(), vm->kernel().name());
  EXPECT_EQ(cache_.stats().compiles, compiles + 1);
}

// A kernel the VM answers for checks the spec's own args as the
// specialized one does, before anything reaches the driver.
TEST_F(UserVmTier, ItsArgsAreTheSpecsOwn) {
  const auto spec = example("chunked_local");
  cache_vm_variant(*spec);
  auto k = AttentionKernel::get_user(spec, flags_for(*spec), cache_, &target_);
  ASSERT_EQ(k->tier(), Tier::kGeneric);
  const AttentionArgs a = testing::fake_args(64);
  const auto message = [&](const std::vector<UserArg>& user) -> std::string {
    try {
      k->launch(a, nullptr, user);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message({{"chunk", 1.5f}}).find("`chunk` takes an int32"), std::string::npos);
  EXPECT_NE(message({}).find("needs its arg `chunk`"), std::string::npos);
  EXPECT_NE(message({{"chunk", int32_t{4}}, {"vm_i0", int32_t{4}}}).find("has no arg `vm_i0`"),
            std::string::npos);
  k->wait_specialized();
}

// Each sibling of a user spec's variant is tiered on its own: with the VM's
// split variant cached (and not its unsplit one), a decode is answered by
// the VM's split variant while the spec's split sibling compiles, and the
// kernel's own variant compiles where nothing answers for it.
TEST_F(UserVmTier, TheSplitSiblingIsTieredOnItsOwn) {
  const auto spec = example("chunked_local");
  const Spec& vm = expression_vm_spec();
  const std::shared_ptr<const Spec> vm_ptr(std::shared_ptr<const Spec>(), &vm);
  FlagSet split = flags_for(*spec);
  std::map<std::string, FlagValue> values(split.values.begin(), split.values.end());
  values["split_kv"] = true;
  auto vm_split = AttentionKernel::get_user(vm_ptr, resolve_flags(vm, values), cache_, &target_);
  const std::string vm_split_sig = vm_split->kernel().entry().canonical_signature;
  auto k = AttentionKernel::get_user(spec, flags_for(*spec), cache_, &target_);
  const AttentionArgs decode = testing::decode_shape();
  EXPECT_TRUE(k->schedule_for(decode).split_kv);
  EXPECT_EQ(k->kernel_for(decode).entry().canonical_signature, vm_split_sig);
  k->wait_specialized();
  const std::string landed = k->kernel_for(decode).entry().canonical_signature;
  EXPECT_EQ(landed.rfind(spec->family + "[", 0), 0u) << landed;
  EXPECT_NE(landed.find("split_kv=true"), std::string::npos) << landed;
  EXPECT_EQ(k->tier(), Tier::kSpecialized) << "no VM variant of the unsplit flags";
}

TEST_F(UserVmTier, OnByDefaultWhereTheVmVariantIsCachedAndOffWhenAskedSo) {
  const auto spec = example("chunked_local");
  auto k = AttentionKernel::get_user(spec, flags_for(*spec), cache_, &target_);
  EXPECT_EQ(k->tier(), Tier::kSpecialized) << "no VM variant cached: compiled as always";
  cache_vm_variant(*spec);
  const auto document = example("document");
  setenv("ATTNJIT_USER_VM", "0", 1);
  auto off = AttentionKernel::get_user(document, flags_for(*document), cache_, &target_);
  EXPECT_EQ(off->tier(), Tier::kSpecialized) << "ATTNJIT_USER_VM=0: off";
  unsetenv("ATTNJIT_USER_VM");
  const auto prefix = example("prefix_lm");
  auto on = AttentionKernel::get_user(prefix, flags_for(*prefix), cache_, &target_);
  EXPECT_EQ(on->tier(), Tier::kGeneric) << "ATTNJIT_USER_VM unset: on (the VM answers)";
  on->wait_specialized();
  setenv("ATTNJIT_USER_VM", "1", 1);
  setenv("ATTNJIT_TIERED", "0", 1);
  const auto alibi = example("alibi");
  auto untiered = AttentionKernel::get_user(alibi, flags_for(*alibi), cache_, &target_);
  unsetenv("ATTNJIT_TIERED");
  EXPECT_EQ(untiered->tier(), Tier::kSpecialized) << "ATTNJIT_TIERED=0 turns every tier off";
}

TEST(UserVmPlan, ArgsGoToTheirSlots) {
  const auto alibi = example("alibi");
  std::string why;
  const std::optional<UserVmPlan> plan = plan_user_vm(*alibi, &why);
  ASSERT_TRUE(plan) << why;
  EXPECT_EQ(plan->mask.count, 0);
  EXPECT_GT(plan->score.count, 0);
  EXPECT_EQ(plan->slots.tensors, (std::vector<std::string>{"slopes"}));
  const void* slopes = reinterpret_cast<const void*>(uintptr_t{0x1000});
  const void* mask_code = reinterpret_cast<const void*>(uintptr_t{0x2000});
  const void* score_code = reinterpret_cast<const void*>(uintptr_t{0x2040});
  const std::vector<UserArg> args = user_vm_args(*plan, {{"slopes", slopes}}, mask_code,
                                                 score_code);
  const auto find = [&](const std::string& name) {
    for (const UserArg& a : args) {
      if (a.name == name) return a.value;
    }
    ADD_FAILURE() << name << " missing";
    return decltype(UserArg::value){};
  };
  EXPECT_EQ(std::get<const void*>(find("vm_t0")), slopes);
  EXPECT_EQ(std::get<const void*>(find("vm_t7")), mask_code);  // unused: a valid pointer
  EXPECT_EQ(std::get<const void*>(find("vm_mask_code")), mask_code);
  EXPECT_EQ(std::get<const void*>(find("vm_score_code")), score_code);
  EXPECT_EQ(std::get<int32_t>(find("vm_mask_count")), 0);
  EXPECT_EQ(std::get<int32_t>(find("vm_score_count")), plan->score.count);
  EXPECT_EQ(std::get<int32_t>(find("vm_score_result")), plan->score.result);
  EXPECT_EQ(args.size(), 6u + 8u + 8u + 8u);

  const auto chunked = example("chunked_local");
  const std::optional<UserVmPlan> chunk_plan = plan_user_vm(*chunked, &why);
  ASSERT_TRUE(chunk_plan) << why;
  const std::vector<UserArg> chunk_args =
      user_vm_args(*chunk_plan, {{"chunk", int32_t{512}}}, mask_code, score_code);
  for (const UserArg& a : chunk_args) {
    if (a.name == "vm_i0") EXPECT_EQ(std::get<int32_t>(a.value), 512);
  }
  EXPECT_THROW(user_vm_args(*chunk_plan, {}, mask_code, score_code), Error);
}

TEST(UserVmPlan, RefusesExpressionsReadingInheritedArgs) {
  const Spec spec = parse_spec(
      "family: heads\nextends: attention\nmask: \"j <= p + num_heads_kv\"\n", "heads.yaml");
  std::string why;
  EXPECT_FALSE(plan_user_vm(spec, &why));
  EXPECT_NE(why.find("num_heads_kv"), std::string::npos) << why;
  const Spec plain = parse_spec("family: plain\nextends: attention\n", "plain.yaml");
  EXPECT_FALSE(plan_user_vm(plain, &why));
}

}  // namespace
}  // namespace attnjit

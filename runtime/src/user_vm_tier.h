// The expression VM as a tier of user-spec variants (docs/tiers.md "User
// specs"): a variant of a spec with `mask` / `score` expressions that no
// cache holds is answered by the VM variant of its flags (compiled once
// for every spec: expression_vm_spec) running its expressions as programs,
// while its own kernel compiles. user_vm_tier.cpp; the attention unit.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "attnjit/attention.h"
#include "attnjit/expr.h"

namespace attnjit {

// A spec's expressions as VM programs, and where its args go.
struct UserVmPlan {
  VmProgram mask, score;  // count 0: the spec has none
  VmSlots slots;          // arg names by slot (the spec's own args only)
};

// The plan for `spec`, or nullopt (and why) when it has no expression,
// when they do not fit the VM, or when they read an arg that is not the
// spec's own (an inherited one such as num_heads_q: the VM's slots hold
// only what the caller passes).
std::optional<UserVmPlan> plan_user_vm(const Spec& spec, std::string* why = nullptr);

// The VM variant's own args for a launch of the spec's variant with
// `user_args` (checked against the spec already): the programs at
// mask_code / score_code (device words), their counts and results, and
// the slots; unused tensor slots point at mask_code (never read).
std::vector<UserArg> user_vm_args(const UserVmPlan& plan, const std::vector<UserArg>& user_args,
                                  const void* mask_code, const void* score_code);

// Counts a launch the generic tier answered (attention_tier.cpp).
void count_generic_launch();

}  // namespace attnjit

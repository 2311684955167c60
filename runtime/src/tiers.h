// The tiers that answer for a variant no cache holds while it compiles
// (docs/tiers.md): the generic variant of a built-in variant's flags
// (attention_tier.cpp), and for a variant of a spec with `mask` / `score`
// expressions the expression VM's variant of its flags (compiled once for
// every spec: expression_vm_spec) running its expressions as programs
// (user_vm_tier.cpp). The attention unit.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attnjit/attention.h"
#include "attnjit/expr.h"

namespace attnjit {

class Tier;  // tiered_variant.h

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

// The generic tier of the built-in variant `sig`: its generic variant of
// the same schedule (or, for a small_pages sibling, of the variant without it)
// where a cache holds it; null where none is cached or the variant is
// generic itself.
std::unique_ptr<Tier> generic_tier(const Signature& sig, KernelCache& cache);

// The VM tier of the variant `sig` of `spec`: the VM variant of its flags
// where a cache holds it (or, for a small_pages sibling, of the variant without
// it), with the spec's programs; null where ATTNJIT_USER_VM=0, the
// expressions do not fit the VM or no VM variant is cached.
std::unique_ptr<Tier> user_vm_tier(const std::shared_ptr<const Spec>& spec, const Signature& sig,
                                   KernelCache& cache);

}  // namespace attnjit

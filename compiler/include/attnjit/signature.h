// The constexpr signature of one kernel variant: its flags, the tile
// configuration the spec's tuning rules pick for them, and its compile
// options (one struct decides both the generated code and the key).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "attnjit/options.h"
#include "attnjit/spec.h"

// The public C++ API: exported from libattnjit.so (the build hides the rest).
#pragma GCC visibility push(default)

namespace attnjit {

// Everything that identifies one variant: the spec's family and flag
// values, the tile config picked by the tuning rules, and the options.
struct Signature {
  std::string family;
  std::string entry;
  FlagSet flags;
  std::vector<std::pair<std::string, int64_t>> tuning;  // spec param order
  CompileOptions options;
  // Where the tuning values came from, for messages only (not part of the
  // canonical signature or any key): "the tuning rule at FILE:LINE:COL";
  // with overrides "the overrides block_m=64,wgmma=1" and, when the rule
  // set the other params, ", the other params from the tuning rule at
  // FILE:LINE:COL"; empty when the params' defaults set everything.
  std::string tuning_from;

  // "attention_prefill[dtype=bf16,head_dim=128,...|block_m=128,...]@sm_90a"
  std::string canonical() const;
  // A short, file-name-safe name: family plus an 8-hex digest.
  std::string display_name() const;
  int64_t tuning_value(const std::string& param) const;  // asserts presence
};

// The error make_signature would throw because the first tuning rule that
// matches `flags` on `target` says `unsupported` (no kernel there), or ""
// (build-cache skips such variants of a matrix).
std::string unsupported_reason(const Spec& spec, const FlagSet& flags, const Target& target);

// Applies the spec's tuning rules. Throws Error(kFlags) when no rule
// matches, the rule says the flags are unsupported on the target, or a
// rule leaves a param unset. `overrides` (param -> value)
// win over the rules, for the autotuner.
Signature make_signature(const Spec& spec, const FlagSet& flags, const CompileOptions& options,
                         const std::map<std::string, int64_t>& overrides = {});

// Throws Error(kFlags) for an override that names no tuning param of
// `spec` (with a suggestion) or a value out of a 32-bit int's range.
void check_tuning_overrides(const Spec& spec, const std::map<std::string, int64_t>& overrides);

// Tuning values written "name=int,name=int" (the CLI's --tuning,
// $ATTNJIT_TUNING), as make_signature's overrides. Throws Error(kArgument)
// naming `what` for an item that is not name=integer or out of range;
// the names are checked by make_signature (check_tuning_overrides).
std::map<std::string, int64_t> parse_tuning_overrides(const std::string& text,
                                                      const std::string& what);

}  // namespace attnjit

#pragma GCC visibility pop

// The `attnjit` command's subcommands. Each registers its options on the
// CLI11 app and returns the function that runs it (exit code).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "attnjit/cache.h"
#include "attnjit/signature.h"
#include "attnjit/spec.h"
#include "attnjit/target.h"

namespace attnjit::cli {

using Runner = std::function<int()>;

Runner add_compile(CLI::App& app);
Runner add_build_cache(CLI::App& app);
Runner add_inspect(CLI::App& app);
Runner add_specs(CLI::App& app);
Runner add_check(CLI::App& app);

// Runs each (label, flags) on the standard shapes on the local GPU against
// the CPU reference, printing a table (an empty label shows the kernel's
// name); returns the number of failed checks.
int check_on_gpu(const std::vector<std::pair<std::string, FlagSet>>& variants, KernelCache& cache);

// A spec by embedded name ("attention") or by path ("my/spec.yaml").
Spec load_spec_argument(const std::string& name_or_path);
// The signature of `flags` with the tile values of `overrides` (--tuning)
// or, without any, as the runtime makes it: the attention spec's variants
// take $ATTNJIT_TUNING's values (so an offline build makes the keys the
// deployment asks for), other specs none. A failed compile names where the
// values came from. Throws on a malformed ATTNJIT_TUNING.
Signature deployment_signature(const Spec& spec, const FlagSet& flags, const Target& target,
                               const std::map<std::string, int64_t>& overrides = {});
// Targets given on the command line, or the local GPU's, or sm_80 + sm_90a.
std::vector<Target> targets_or_default(const std::vector<std::string>& names,
                                       bool* from_gpu = nullptr);

// The targets a --target option takes, for its help.
inline constexpr const char* kTargetNames =
    "sm_80, sm_86, sm_89, sm_90a, or sm_90 (portable Hopper code: no wgmma or setmaxnreg)";

// A CLI11 check that the value is one of `names` ("'asm' is not one of
// none, source, ..."), with the closest one suggested.
CLI::Validator one_of(std::vector<std::string> names);
// A CLI11 check that a value given is not empty: `-o "$DIR"` with DIR unset
// must not fall back to the default directory.
CLI::Validator non_empty();

// A CLI11 check for -j/--jobs: a whole number, at least 0 (0: one job per
// core).
CLI::Validator job_count();

}  // namespace attnjit::cli

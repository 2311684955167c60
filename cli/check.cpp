// `attnjit check`: run variants on the local GPU against the CPU reference.
#include <chrono>
#include <cstdio>
#include <memory>

#include "attnjit/attention.h"
#include "attnjit/driver.h"
#include "attnjit/error.h"
#include "attnjit/selfcheck.h"
#include "commands.h"

namespace attnjit::cli {
namespace {

struct CheckArgs {
  std::vector<std::string> presets;
  std::string flags;
  bool matrix = false;
  std::string spec;  // a user spec file (extends: attention), or empty
};

// A user spec's variants on the standard shapes with values for its own
// args chosen to make its expressions matter (default_user_values).
int check_user_on_gpu(std::shared_ptr<const Spec> spec,
                      const std::vector<std::pair<std::string, FlagSet>>& variants) {
  uint64_t seed = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  int failures = 0;
  std::printf("%-34s %-22s %10s %10s %s\n", "variant", "shape", "o rel err", "bound", "result");
  for (const auto& [name, set] : variants) {
    const AttentionFlags flags = AttentionFlags::from_flag_set(set);
    if (flags.kv_layout != KvLayout::kContiguous) continue;  // user specs: contiguous K/V
    for (const CheckShape& shape : standard_check_shapes(flags)) {
      const auto values = default_user_values(*spec, shape, ++seed);
      const CheckResult r = check_user_attention(spec, flags, shape, ++seed, values,
                                                 KernelCache::global(), CheckTier::kSpecialized,
                                                 Schedule::of(set));
      const bool ok = r.passed(error_bound(flags.dtype));
      failures += !ok;
      std::printf("%-34s %-22s %10.2e %10.0e %s\n", (name.empty() ? r.variant : name).c_str(),
                  shape.name.c_str(), r.o_error, error_bound(flags.dtype), ok ? "ok" : "FAILED");
    }
  }
  return failures;
}

int run_check(const CheckArgs& a) {
  // The arguments first, so a typo is reported as such on any machine.
  std::shared_ptr<const Spec> user;
  if (!a.spec.empty()) {
    user = std::make_shared<const Spec>(load_spec_argument(a.spec));
    if (user->extends.empty()) {
      throw Error(ErrorKind::kArgument,
                  "check --spec takes a spec that extends the attention spec; " + a.spec +
                      " does not");
    }
  }
  const Spec& spec = user ? *user : attention_spec();
  std::vector<std::pair<std::string, FlagSet>> todo;
  for (const auto& p : a.presets) todo.emplace_back(p, resolve_preset(spec, p));
  if (!a.flags.empty()) {
    todo.emplace_back(a.flags, resolve_flags(spec, parse_flag_assignments(spec, a.flags)));
  }
  if (a.matrix) {
    // Unnamed: the table shows each variant's kernel name.
    for (const FlagSet& f : expand_matrix(spec).variants) todo.emplace_back("", f);
  }
  if (todo.empty()) {
    for (const Preset& p : spec.presets) todo.emplace_back(p.name, resolve_preset(spec, p.name));
  }
  // Then whether it can run at all: nothing checked is not a pass.
  std::string why;
  if (!Driver::available(&why)) {
    throw Error(ErrorKind::kDriver, "check runs the kernels on a GPU and cannot run here: " + why);
  }
  const int failures = user ? check_user_on_gpu(user, todo) : check_on_gpu(todo, KernelCache::global());
  std::printf("%d failed\n", failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace

int check_on_gpu(const std::vector<std::pair<std::string, FlagSet>>& variants, KernelCache& cache) {
  uint64_t seed = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  int failures = 0;
  std::printf("%-34s %-22s %10s %10s %10s %s\n", "variant", "shape", "o rel err", "lse err",
              "bound", "result");
  for (const auto& [name, set] : variants) {
    const AttentionFlags flags = AttentionFlags::from_flag_set(set);
    for (const CheckShape& shape : standard_check_shapes(flags)) {
      const CheckResult r = check_attention(flags, shape, ++seed, cache, std::nullopt, {},
                                            CheckTier::kSpecialized, Schedule::of(set));
      const bool ok = r.passed(error_bound(flags.dtype));
      failures += !ok;
      std::printf("%-34s %-22s %10.2e %10.2e %10.0e %s\n",
                  (name.empty() ? r.variant : name).c_str(), shape.name.c_str(), r.o_error,
                  r.lse_error, error_bound(flags.dtype), ok ? "ok" : "FAILED");
    }
  }
  return failures;
}

Runner add_check(CLI::App& app) {
  auto a = std::make_shared<CheckArgs>();
  app.add_option("--preset", a->presets, "Presets to check (default: all)");
  app.add_option("--flags", a->flags, "One variant by flag assignments");
  app.add_flag("--matrix", a->matrix, "Every variant of the spec's matrix");
  app.add_option("--spec", a->spec,
                 "A user spec file (extends: attention) to check instead of the attention "
                 "spec; its own args get values that make its expressions matter");
  return [a] { return run_check(*a); };
}

}  // namespace attnjit::cli

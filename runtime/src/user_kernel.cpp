// Variants of a user spec (one that extends the attention spec with args of
// its own and `mask` / `score` expressions, docs/expressions.md): getting
// one. Its own args are checked by name and type before a launch does
// anything, then written into the params struct after the inherited
// fields (UserParams, variant.cpp).
#include <fmt/format.h>

#include "attnjit/attention.h"
#include "attnjit/error.h"
#include "attnjit/kernel_params.h"
#include "variant.h"

namespace attnjit {
namespace {

// A spec's family (an identifier) as messages quote names.
std::string quote_name(const std::string& name) { return "'" + name + "'"; }

}  // namespace

std::shared_ptr<AttentionKernel> AttentionKernel::get_user(
    std::shared_ptr<const Spec> spec, const FlagSet& flags, KernelCache& cache,
    const Target* target, const std::map<std::string, int64_t>& tuning_overrides) {
  if (!spec) throw Error(ErrorKind::kArgument, "attention: get_user needs a spec");
  const Spec& base = attention_spec();
  if (spec->params_family != base.family) {
    throw Error(ErrorKind::kSpec,
                fmt::format("spec {} does not extend the attention spec (`extends: attention`)",
                            quote_name(spec->family)));
  }
  // The inherited args keep their places; the spec's own follow.
  const ParamsLayout own = params_layout(*spec), inherited = params_layout(base);
  for (size_t i = 0; i < inherited.fields.size(); ++i) {
    if (own.fields.at(i).name != inherited.fields[i].name ||
        own.fields[i].offset != inherited.fields[i].offset) {
      throw Error(ErrorKind::kSpec, fmt::format("spec {}: arg {} is not where the attention "
                                                "spec has it",
                                                quote_name(spec->family), i));
    }
  }
  if (own.size > UserParams::kMaxBytes) {
    throw Error(ErrorKind::kSpec, fmt::format("spec {}: its params exceed {} bytes",
                                              quote_name(spec->family), UserParams::kMaxBytes));
  }
  const Target t = target != nullptr ? *target : current_device_target();
  return make(flags, std::move(spec), cache, t, CompileOptions::from_environment(t),
              tuning_overrides);
}

void AttentionKernel::set_user_spec(std::shared_ptr<const Spec> spec) {
  user_params_ = std::make_shared<const UserParams>(spec, attention_spec());
  user_spec_ = std::move(spec);
}

}  // namespace attnjit

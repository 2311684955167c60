// Variants of a user spec (one that extends the attention spec with args of
// its own and `mask` / `score` expressions, docs/expressions.md): getting
// one, and its own args - checked by name and type before a launch does
// anything, then written into the params struct after the inherited
// fields.
#include <algorithm>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "attnjit/attention.h"
#include "attnjit/error.h"
#include "attnjit/expr.h"
#include "attnjit/kernel_params.h"

namespace attnjit {
namespace {

[[noreturn]] void fail(const std::string& message) { throw Error(ErrorKind::kArgument, message); }

// A spec's family (an identifier) as messages quote names.
std::string quote_name(const std::string& name) { return "'" + name + "'"; }

// The given value of a field, or null.
const UserArg* find_arg(const std::vector<UserArg>& args, const std::string& name) {
  const UserArg* found = nullptr;
  for (const UserArg& arg : args) {
    if (arg.name == name) found = &arg;
  }
  return found;
}

// Whether a value has the field's type (pointers: not null, 4-aligned);
// else what the field takes.
const char* type_problem(ArgType type, const UserArg& arg) {
  switch (type) {
    case ArgType::kI32:
      return std::holds_alternative<int32_t>(arg.value) ? nullptr : "an int32";
    case ArgType::kF32:
      return std::holds_alternative<float>(arg.value) ? nullptr : "a float";
    case ArgType::kConstI32Ptr:
    case ArgType::kConstF32Ptr: {
      const void* const* v = std::get_if<const void*>(&arg.value);
      if (v == nullptr || *v == nullptr) return "a device pointer (not null)";
      return (reinterpret_cast<uintptr_t>(*v) & 3) == 0 ? nullptr
                                                         : "a 4-byte aligned device pointer";
    }
    default:
      return "nothing (user args cannot have this type)";
  }
}

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
  if (own.size > kMaxUserParamsBytes) {
    throw Error(ErrorKind::kSpec, fmt::format("spec {}: its params exceed {} bytes",
                                              quote_name(spec->family), kMaxUserParamsBytes));
  }
  const Target t = target != nullptr ? *target : current_device_target();
  const CompileOptions options = CompileOptions::from_environment(t);
  const Signature sig = make_signature(*spec, flags, options, tuning_overrides);
  if (tuning_overrides.empty()) {
    if (auto tiered = user_tiered(spec, sig, cache, t)) return tiered;
  }
  const LookupResult found = cache.get(*spec, sig);
  auto kernel = make_user_kernel(std::move(spec), sig, found, cache, t);
  kernel->tuning_overrides_ = tuning_overrides;
  return kernel;
}

std::shared_ptr<AttentionKernel> AttentionKernel::make_user_kernel(
    std::shared_ptr<const Spec> spec, const Signature& sig, const LookupResult& found,
    KernelCache& cache, const Target& target) {
  auto kernel = std::shared_ptr<AttentionKernel>(new AttentionKernel());
  kernel->init_from(sig, found, cache, target);
  kernel->set_user_spec(std::move(spec));
  return kernel;
}

void AttentionKernel::set_user_spec(std::shared_ptr<const Spec> spec) {
  user_spec_ = std::move(spec);
  const ParamsLayout own = params_layout(*user_spec_);
  const size_t inherited = params_layout(attention_spec()).fields.size();
  user_fields_.clear();
  for (size_t i = inherited; i < own.fields.size(); ++i) {
    UserField field{own.fields[i].name, own.fields[i].type, own.fields[i].offset,
                    user_spec_->args.at(i).divisor_of};
    if (!field.divisor_of.empty()) {
      const auto divisor = std::find_if(own.fields.begin(), own.fields.end(),
                                        [&](const ParamField& f) { return f.name == field.divisor_of; });
      if (divisor == own.fields.end() || divisor->type != ArgType::kI32) {
        throw Error(ErrorKind::kSpec, fmt::format("spec {}: the divisor {} is no int32 arg",
                                                  quote_name(user_spec_->family),
                                                  field.divisor_of));
      }
      field.divisor_offset = divisor->offset;
    }
    user_fields_.push_back(std::move(field));
  }
  params_size_ = own.size;
  for (const std::optional<Expr>* e : {&user_spec_->mask, &user_spec_->score}) {
    if (!e->has_value()) continue;
    for (const ExprTensor& tensor : (*e)->context.tensors) {
      if (tensor.per == TensorDomain::kKeyToken) key_token_tensor_ = tensor.name;
    }
  }
}

void AttentionKernel::require_no_user_args() const {
  for (const UserField& field : user_fields_) {
    if (!field.divisor_of.empty()) continue;  // the runtime's own
    fail(fmt::format("attention: spec {} has args of its own ({} and more); pass them to launch()",
                     quote_name(user_spec_->family), field.name));
  }
}

void AttentionKernel::check_user_args(const AttentionArgs& a,
                                      const std::vector<UserArg>& user_args) const {
  const std::string family = quote_name(user_spec_->family);
  for (const UserField& field : user_fields_) {
    if (!field.divisor_of.empty()) continue;  // the runtime's own
    const UserArg* arg = find_arg(user_args, field.name);
    if (arg == nullptr) fail(fmt::format("attention: spec {} needs its arg `{}`", family, field.name));
    if (const char* want = type_problem(field.type, *arg)) {
      fail(fmt::format("attention: arg `{}` takes {}", field.name, want));
    }
  }
  for (const UserArg& arg : user_args) {
    const bool known = std::any_of(user_fields_.begin(), user_fields_.end(), [&](const UserField& f) {
      return f.name == arg.name && f.divisor_of.empty();
    });
    if (!known) fail(fmt::format("attention: spec {} has no arg `{}`", family, arg.name));
  }
  // A per-key-token tensor is indexed through cu_seqlens_k, also with a
  // paged cache (where the kernels need it for nothing else).
  if (!key_token_tensor_.empty() && a.cu_seqlens_k == nullptr) {
    fail(fmt::format("attention: spec {} reads the per-key-token tensor `{}`, indexed through "
                     "cu_seqlens_k: pass cu_seqlens_k (with a paged cache too: where each "
                     "sequence's keys start in that tensor)",
                     family, key_token_tensor_));
  }
}

void AttentionKernel::write_user_args(unsigned char* params,
                                      const std::vector<UserArg>& user_args) const {
  for (const UserField& field : user_fields_) {
    if (!field.divisor_of.empty()) continue;  // below, once every arg is written
    const UserArg& arg = *find_arg(user_args, field.name);  // check_user_args ran
    std::visit([&](const auto& value) { std::memcpy(params + field.offset, &value, sizeof(value)); },
               arg.value);
  }
  // The multipliers for division by an int32 arg, from the value the
  // kernel gets (the spec's own arg or an inherited one like num_heads_kv).
  for (const UserField& field : user_fields_) {
    if (field.divisor_of.empty()) continue;
    int32_t divisor = 0;
    std::memcpy(&divisor, params + field.divisor_offset, sizeof(divisor));
    const int64_t magic = divisor_multiplier(divisor);
    std::memcpy(params + field.offset, &magic, sizeof(magic));
  }
}

}  // namespace attnjit

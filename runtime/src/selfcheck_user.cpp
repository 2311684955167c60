// A user spec's part of the self-check (selfcheck.cpp runs the kernel):
// values for its own args, and the reference's mask and score from its
// expression trees.
#include "selfcheck_user.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

#include "attnjit/error.h"

namespace attnjit {
namespace {

const UserCheckArg& user_value(const UserCheck& user, const std::string& name) {
  for (const UserCheckArg& arg : *user.args) {
    if (arg.name == name) return arg;
  }
  throw Error(ErrorKind::kArgument, "check: no value for the spec's arg `" + name + "`");
}

// An inherited scalar arg as the launch passes it (an expression may read
// those too): the batch's sizes, the scale, the cap and the window.
double inherited_scalar(const std::string& name, const ReferenceProblem& pr) {
  if (name == "num_heads_q") return pr.num_heads_q;
  if (name == "num_heads_kv") return pr.num_heads_kv;
  if (name == "total_q") return pr.cu_seqlens_q.back();
  if (name == "window_left") return pr.window_left;
  if (name == "window_right") return pr.window_right;
  if (name == "scale") {
    return double(float(pr.scale > 0 ? pr.scale : 1.0 / std::sqrt(double(pr.head_dim))));
  }
  if (name == "softcap") return double(float(pr.softcap));
  return 0;  // the paged and split-KV scalars: 0 or unused on this path
}

bool own_arg(const UserCheck& user, const std::string& name) {
  return std::any_of(user.args->begin(), user.args->end(),
                     [&](const UserCheckArg& a) { return a.name == name; });
}

// The expression environment of the reference: scalars and tensors by the
// expressions' context, the batch's metadata.
ExprEnv user_env(const UserCheck& user, const ExprContext& context, const ReferenceProblem& pr) {
  ExprEnv env;
  for (const ExprScalar& scalar : context.scalars) {
    if (!own_arg(user, scalar.name)) {
      env.scalars.push_back(inherited_scalar(scalar.name, pr));
      continue;
    }
    const UserCheckArg& arg = user_value(user, scalar.name);
    env.scalars.push_back(scalar.type == ExprType::kInt ? double(arg.int_value)
                                                         : double(arg.float_value));
  }
  for (const ExprTensor& tensor : context.tensors) {
    const UserCheckArg& arg = user_value(user, tensor.name);
    ExprTensorData data;
    data.ints = arg.ints;
    for (float f : arg.floats) data.floats.push_back(f);
    env.tensors.push_back(std::move(data));
  }
  env.cu_seqlens_q = pr.cu_seqlens_q;
  env.cu_seqlens_k = pr.cu_seqlens_k;
  env.num_heads_q = pr.num_heads_q;
  env.num_heads_kv = pr.num_heads_kv;
  return env;
}

}  // namespace

void add_user_expressions(const UserCheck& user, ReferenceProblem& pr) {
  const Spec& spec = *user.spec;
  if (spec.mask) {
    auto env = std::make_shared<ExprEnv>(user_env(user, spec.mask->context, pr));
    const Expr expr = *spec.mask;
    pr.user_mask = [env, expr](int b, int h, int hk, int p, int j, int n_q, int n_k) {
      ExprEnv& e = *env;
      e.b = b, e.h = h, e.hk = hk, e.p = p, e.j = j, e.n_q = n_q, e.n_k = n_k;
      return evaluate_mask(expr, e);
    };
  }
  if (spec.score) {
    auto env = std::make_shared<ExprEnv>(user_env(user, spec.score->context, pr));
    const Expr expr = *spec.score;
    pr.user_score = [env, expr](double s, int b, int h, int hk, int p, int j, int n_q, int n_k) {
      ExprEnv& e = *env;
      e.s = s, e.b = b, e.h = h, e.hk = hk, e.p = p, e.j = j, e.n_q = n_q, e.n_k = n_k;
      return evaluate_score(expr, e);
    };
  }
}

bool user_arg_is_float(const UserCheck& user, const std::string& name) {
  return std::any_of(user.spec->args.begin(), user.spec->args.end(), [&](const ArgDecl& d) {
    return d.name == name && d.type == ArgType::kF32;
  });
}

std::vector<UserCheckArg> default_user_values(const Spec& spec, const CheckShape& shape,
                                              uint64_t seed) {
  std::mt19937_64 rng(seed);
  int longest = 1;
  for (int n : shape.seqlens_k) longest = std::max(longest, n);
  ExprContext context;
  if (spec.mask) context = spec.mask->context;
  if (spec.score) {
    for (const auto& t : spec.score->context.tensors) context.tensors.push_back(t);
    for (const auto& v : spec.score->context.scalars) context.scalars.push_back(v);
  }
  std::vector<UserCheckArg> out;
  // Only the spec's own args (after the inherited ones) get values.
  const size_t inherited = spec.extends.empty() ? 0 : load_embedded_spec(spec.extends).args.size();
  const auto seen = [&](const std::string& name) {
    const bool own = std::any_of(spec.args.begin() + std::min(inherited, spec.args.size()),
                                 spec.args.end(), [&](const ArgDecl& d) { return d.name == name; });
    return !own || std::any_of(out.begin(), out.end(),
                               [&](const UserCheckArg& a) { return a.name == name; });
  };
  std::uniform_real_distribution<float> unit(-1.f, 1.f);
  for (const ExprScalar& scalar : context.scalars) {
    if (seen(scalar.name)) continue;
    UserCheckArg arg;
    arg.name = scalar.name;
    arg.int_value = 1 + int(rng() % uint64_t(longest));
    arg.float_value = 0.25f + 0.75f * float(rng() % 1000) / 1000.f;
    out.push_back(arg);
  }
  for (const ExprTensor& tensor : context.tensors) {
    if (seen(tensor.name)) continue;
    UserCheckArg arg;
    arg.name = tensor.name;
    std::vector<double> values;
    switch (tensor.per) {
      case TensorDomain::kSequence:
        for (int n : shape.seqlens_k) values.push_back(double(rng() % uint64_t(n + 1)));
        break;
      case TensorDomain::kKeyToken:
      case TensorDomain::kQueryToken: {
        const auto& lengths = tensor.per == TensorDomain::kKeyToken ? shape.seqlens_k
                                                                    : shape.seqlens_q;
        for (int n : lengths) {
          int id = 0;
          for (int t = 0; t < n; ++t) {
            if (rng() % 23 == 0) ++id;
            values.push_back(id);
          }
        }
        break;
      }
      case TensorDomain::kHead:
      case TensorDomain::kKvHead:
      case TensorDomain::kTable: {
        const int64_t count = tensor.per == TensorDomain::kHead     ? shape.num_heads_q
                              : tensor.per == TensorDomain::kKvHead ? shape.num_heads_kv
                              : tensor.size > 0 ? tensor.size
                                                : int64_t(longest) + 1;  // >= any size scalar
        for (int64_t i = 0; i < count; ++i) {
          values.push_back(tensor.elem == ExprType::kFloat ? double(unit(rng))
                                                           : double(rng() % 8));
        }
        break;
      }
    }
    // Token ids above already rise along each sequence; a sorted head or
    // table tensor gets its values in order.
    const bool per_token =
        tensor.per == TensorDomain::kKeyToken || tensor.per == TensorDomain::kQueryToken;
    if (tensor.sorted && !per_token) std::sort(values.begin(), values.end());
    if (values.empty()) values.push_back(0);
    for (double v : values) {
      if (tensor.elem == ExprType::kFloat) {
        arg.floats.push_back(float(v));
      } else {
        arg.ints.push_back(int32_t(v));
      }
    }
    out.push_back(arg);
  }
  return out;
}

}  // namespace attnjit

// The host side of the expression language: evaluation (the CPU
// reference's semantics: int32 as the device computes it, floats in fp64)
// and tile classification. Both call the int and interval functions of
// templates/attention/user_expr.cuh, the very ones the generated device
// code calls.
#include <fmt/format.h>

#include "attnjit/error.h"
#include "attnjit/expr.h"
#include "check.h"

// clang-format off
#include "attention/user_expr.cuh"
// clang-format on

namespace attnjit {
namespace {

namespace ex = ::attnjit::expr;

const ExprNode& node_at(const Expr& expr, int index) {
  ATTNJIT_CHECK(index >= 0 && static_cast<std::size_t>(index) < expr.nodes.size(),
                "expression node index out of range");
  return expr.nodes[static_cast<std::size_t>(index)];
}

double scalar_value(const Expr& expr, const ExprEnv& env, int index) {
  if (index < 0 || static_cast<std::size_t>(index) >= env.scalars.size()) {
    throw Error(ErrorKind::kArgument,
                fmt::format("expression environment: no value for scalar '{}'",
                            expr.context.scalars.at(static_cast<std::size_t>(index)).name));
  }
  return env.scalars[static_cast<std::size_t>(index)];
}

// The elements of a per: table tensor (0 where its size arg is negative).
int64_t table_size(const Expr& expr, const ExprEnv& env, const ExprTensor& decl) {
  if (decl.size_arg.empty()) return decl.size;
  int64_t size = -1;
  for (std::size_t i = 0; i < expr.context.scalars.size(); ++i) {
    if (expr.context.scalars[i].name == decl.size_arg) {
      size = static_cast<int64_t>(scalar_value(expr, env, static_cast<int>(i)));
    }
  }
  return size < 0 ? 0 : size;
}

// The element of tensor `tensor` at index x, by its domain; 0 outside it.
ExprValue tensor_value(const Expr& expr, const ExprEnv& env, int tensor, int32_t x) {
  const ExprTensor& decl = expr.context.tensors.at(static_cast<std::size_t>(tensor));
  ExprValue v;
  v.type = decl.elem;
  const auto fail = [&](const std::string& what) -> void {
    throw Error(ErrorKind::kArgument,
                fmt::format("expression tensor '{}' ({}): {}", decl.name, to_string(decl.per), what));
  };
  const auto seqlen_at = [&](const std::vector<int32_t>& cu, const char* name) -> int64_t {
    if (env.b < 0 || static_cast<std::size_t>(env.b) >= cu.size()) {
      fail(fmt::format("{} has no entry for sequence {}", name, env.b));
    }
    return cu[static_cast<std::size_t>(env.b)];
  };
  int64_t row = -1;
  switch (decl.per) {
    case TensorDomain::kKeyToken:
      if (x >= 0 && x < env.n_k) row = seqlen_at(env.cu_seqlens_k, "cu_seqlens_k") + x;
      break;
    case TensorDomain::kQueryToken: {
      const int64_t i = int64_t(x) - (int64_t(env.n_k) - env.n_q);
      if (i >= 0 && i < env.n_q) row = seqlen_at(env.cu_seqlens_q, "cu_seqlens_q") + i;
      break;
    }
    case TensorDomain::kSequence:
      row = env.b;
      break;
    case TensorDomain::kHead:
      if (x >= 0 && x < env.num_heads_q) row = x;
      break;
    case TensorDomain::kKvHead:
      if (x >= 0 && x < env.num_heads_kv) row = x;
      break;
    case TensorDomain::kTable:
      if (x >= 0 && x < table_size(expr, env, decl)) row = x;
      break;
  }
  if (row < 0) return v;  // outside the domain: 0
  if (static_cast<std::size_t>(tensor) >= env.tensors.size()) fail("no data given");
  const ExprTensorData& data = env.tensors[static_cast<std::size_t>(tensor)];
  const std::size_t n = decl.elem == ExprType::kInt ? data.ints.size() : data.floats.size();
  if (static_cast<std::size_t>(row) >= n) {
    fail(fmt::format("element {} is needed and the data has {}", row, n));
  }
  if (decl.elem == ExprType::kInt) {
    v.i = data.ints[static_cast<std::size_t>(row)];
  } else {
    v.f = data.floats[static_cast<std::size_t>(row)];
  }
  return v;
}

int var_value(ExprVar var, const ExprEnv& env) {
  switch (var) {
    case ExprVar::kP:
      return env.p;
    case ExprVar::kJ:
      return env.j;
    case ExprVar::kB:
      return env.b;
    case ExprVar::kH:
      return env.h;
    case ExprVar::kHk:
      return env.hk;
    case ExprVar::kNq:
      return env.n_q;
    case ExprVar::kNk:
      return env.n_k;
    case ExprVar::kS:
      break;
  }
  return 0;
}

ExprValue make_int(int32_t i) {
  ExprValue v;
  v.type = ExprType::kInt;
  v.i = i;
  return v;
}
ExprValue make_float(double f) {
  ExprValue v;
  v.type = ExprType::kFloat;
  v.f = f;
  return v;
}
ExprValue make_bool(bool b) {
  ExprValue v;
  v.type = ExprType::kBool;
  v.b = b;
  return v;
}

ExprValue eval(const Expr& expr, const ExprEnv& env, int index) {
  const ExprNode& n = node_at(expr, index);
  const auto kid = [&](int k) { return eval(expr, env, n.kids[k]); };
  switch (n.op) {
    case ExprOp::kIntLit:
      return make_int(n.int_value);
    case ExprOp::kFloatLit:
      return make_float(n.float_value);
    case ExprOp::kBoolLit:
      return make_bool(n.bool_value);
    case ExprOp::kVar:
      return n.var == ExprVar::kS ? make_float(env.s) : make_int(var_value(n.var, env));
    case ExprOp::kScalar: {
      const double value = scalar_value(expr, env, n.index);
      return n.type == ExprType::kInt ? make_int(static_cast<int32_t>(value)) : make_float(value);
    }
    case ExprOp::kTensor:
      return tensor_value(expr, env, n.index, kid(0).i);
    case ExprOp::kToFloat:
      return make_float(static_cast<double>(kid(0).i));
    case ExprOp::kNeg: {
      const ExprValue a = kid(0);
      return a.type == ExprType::kInt ? make_int(ex::neg(a.i)) : make_float(-a.f);
    }
    case ExprOp::kNot:
      return make_bool(!kid(0).b);
    case ExprOp::kAbs: {
      const ExprValue a = kid(0);
      return a.type == ExprType::kInt ? make_int(ex::iabs(a.i)) : make_float(ex::fabs_(a.f));
    }
    case ExprOp::kAnd:
      return make_bool(kid(0).b && kid(1).b);
    case ExprOp::kOr:
      return make_bool(kid(0).b || kid(1).b);
    case ExprOp::kSelect:
      return kid(0).b ? kid(1) : kid(2);
    case ExprOp::kExp:
      return make_float(ex::fexp(kid(0).f));
    case ExprOp::kLog:
      return make_float(ex::flog(kid(0).f));
    case ExprOp::kTanh:
      return make_float(ex::ftanh(kid(0).f));
    case ExprOp::kSqrt:
      return make_float(ex::fsqrt(kid(0).f));
    default:
      break;
  }
  const ExprValue a = kid(0);
  const ExprValue b = kid(1);
  if (a.type == ExprType::kBool) {  // == and != on bools
    return make_bool(n.op == ExprOp::kEq ? a.b == b.b : a.b != b.b);
  }
  if (a.type == ExprType::kInt) {
    switch (n.op) {
      case ExprOp::kAdd:
        return make_int(ex::add(a.i, b.i));
      case ExprOp::kSub:
        return make_int(ex::sub(a.i, b.i));
      case ExprOp::kMul:
        return make_int(ex::mul(a.i, b.i));
      case ExprOp::kDiv:
        return make_int(ex::div(a.i, b.i));
      case ExprOp::kMod:
        return make_int(ex::mod(a.i, b.i));
      case ExprOp::kMin:
        return make_int(ex::imin(a.i, b.i));
      case ExprOp::kMax:
        return make_int(ex::imax(a.i, b.i));
      case ExprOp::kEq:
        return make_bool(a.i == b.i);
      case ExprOp::kNe:
        return make_bool(a.i != b.i);
      case ExprOp::kLt:
        return make_bool(a.i < b.i);
      case ExprOp::kLe:
        return make_bool(a.i <= b.i);
      case ExprOp::kGt:
        return make_bool(a.i > b.i);
      case ExprOp::kGe:
        return make_bool(a.i >= b.i);
      default:
        break;
    }
  } else {
    switch (n.op) {
      case ExprOp::kAdd:
        return make_float(a.f + b.f);
      case ExprOp::kSub:
        return make_float(a.f - b.f);
      case ExprOp::kMul:
        return make_float(a.f * b.f);
      case ExprOp::kDiv:
        return make_float(a.f / b.f);
      case ExprOp::kMin:
        return make_float(ex::fmin_(a.f, b.f));
      case ExprOp::kMax:
        return make_float(ex::fmax_(a.f, b.f));
      case ExprOp::kEq:
        return make_bool(a.f == b.f);
      case ExprOp::kNe:
        return make_bool(a.f != b.f);
      case ExprOp::kLt:
        return make_bool(a.f < b.f);
      case ExprOp::kLe:
        return make_bool(a.f <= b.f);
      case ExprOp::kGt:
        return make_bool(a.f > b.f);
      case ExprOp::kGe:
        return make_bool(a.f >= b.f);
      default:
        break;
    }
  }
  ATTNJIT_CHECK(false, "evaluate: an operation the checker does not produce");
  return ExprValue{};
}

// --- Classification ---------------------------------------------------------

// The indexes [lo, hi] a sorted tensor's domain covers in sequence env.b
// (lo > hi: none), as the emitted classify() computes them.
std::pair<int, int> sorted_domain(const Expr& expr, const ExprEnv& env, const ExprTensor& decl) {
  switch (decl.per) {
    case TensorDomain::kKeyToken:
      return {0, ex::last_index(env.n_k)};
    case TensorDomain::kQueryToken:
      return {env.n_k - env.n_q, env.n_k - 1};
    case TensorDomain::kHead:
      return {0, ex::last_index(env.num_heads_q)};
    case TensorDomain::kKvHead:
      return {0, ex::last_index(env.num_heads_kv)};
    case TensorDomain::kTable:
      return {0, ex::last_index(static_cast<int>(table_size(expr, env, decl)))};
    case TensorDomain::kSequence:
      break;
  }
  ATTNJIT_CHECK(false, "classify: a sorted tensor per sequence");
  return {0, -1};
}

// The abstract value of a node over a tile: an interval (int), a set of
// truth values (bool), or nothing known (float).
struct Abstract {
  ex::ival i{0, 0};
  ex::bval b{true, true};
};

Abstract from_int(ex::ival i) {
  Abstract a;
  a.i = i;
  return a;
}
Abstract from_bool(ex::bval b) {
  Abstract a;
  a.b = b;
  return a;
}

bool float_operands(const Expr& expr, const ExprNode& n) {
  return node_at(expr, n.kids[0]).type == ExprType::kFloat;
}

Abstract abstract(const Expr& expr, const ExprTile& tile, const ExprEnv& env, int index) {
  const ExprNode& n = node_at(expr, index);
  if (n.type == ExprType::kFloat) return Abstract{};  // unknown; never read
  const auto kid = [&](int k) { return abstract(expr, tile, env, n.kids[k]); };
  switch (n.op) {
    case ExprOp::kIntLit:
      return from_int(ex::ipoint(n.int_value));
    case ExprOp::kBoolLit:
      return from_bool(ex::bconst(n.bool_value));
    case ExprOp::kVar:
      switch (n.var) {
        case ExprVar::kP:
          return from_int(ex::irange(tile.p_lo, tile.p_hi));
        case ExprVar::kJ:
          return from_int(ex::irange(tile.j_lo, tile.j_hi));
        case ExprVar::kH:
          return from_int(ex::irange(tile.h_lo, tile.h_hi));
        case ExprVar::kHk:
          if (expr.context.has_head_counts) {
            const int g = ex::group_size(env.num_heads_q, env.num_heads_kv);
            return from_int(ex::irange(ex::div(tile.h_lo, g), ex::div(tile.h_hi, g)));
          }
          return from_int(ex::irange(0, tile.h_hi));
        default:
          return from_int(ex::ipoint(var_value(n.var, env)));
      }
    case ExprOp::kScalar:
      return from_int(ex::ipoint(static_cast<int32_t>(scalar_value(expr, env, n.index))));
    case ExprOp::kTensor: {
      const ex::ival x = kid(0).i;
      const ExprTensor& decl = expr.context.tensors.at(static_cast<std::size_t>(n.index));
      if (decl.sorted) {
        const auto [d_lo, d_hi] = sorted_domain(expr, env, decl);
        const auto at = [&](int32_t i) { return tensor_value(expr, env, n.index, i).i; };
        return from_int(ex::sorted_read(x, d_lo, d_hi, at(ex::clip_lo(x, d_lo)),
                                        at(ex::clip_hi(x, d_hi))));
      }
      if (x.lo != x.hi) return from_int(ex::itop());
      return from_int(ex::ipoint(tensor_value(expr, env, n.index, x.lo).i));
    }
    case ExprOp::kNeg:
      return from_int(ex::ineg(kid(0).i));
    case ExprOp::kAbs:
      return from_int(ex::iabs_(kid(0).i));
    case ExprOp::kNot:
      return from_bool(ex::bnot(kid(0).b));
    case ExprOp::kAnd:
      return from_bool(ex::band(kid(0).b, kid(1).b));
    case ExprOp::kOr:
      return from_bool(ex::bor(kid(0).b, kid(1).b));
    case ExprOp::kSelect:
      if (n.type == ExprType::kBool) return from_bool(ex::bselect(kid(0).b, kid(1).b, kid(2).b));
      return from_int(ex::iselect(kid(0).b, kid(1).i, kid(2).i));
    default:
      break;
  }
  const ExprType operands = node_at(expr, n.kids[0]).type;
  if (n.type == ExprType::kBool && operands == ExprType::kFloat) {
    return from_bool(ex::bunknown());
  }
  if (const std::string* divisor = runtime_divisor(expr, n)) {
    // As the emitted classify(): through the runtime's multiplier.
    const int32_t d = static_cast<int32_t>(
        scalar_value(expr, env, node_at(expr, n.kids[1]).index));
    const long long magic = ex::divisor_magic(d);
    return from_int(n.op == ExprOp::kDiv ? ex::idiv_by(kid(0).i, d, magic)
                                         : ex::imod_by(kid(0).i, d, magic));
  }
  const Abstract a = kid(0);
  const Abstract b = kid(1);
  if (operands == ExprType::kBool) {
    return from_bool(n.op == ExprOp::kEq ? ex::beq(a.b, b.b) : ex::bne(a.b, b.b));
  }
  switch (n.op) {
    case ExprOp::kAdd:
      return from_int(ex::iadd(a.i, b.i));
    case ExprOp::kSub:
      return from_int(ex::isub(a.i, b.i));
    case ExprOp::kMul:
      return from_int(ex::imul(a.i, b.i));
    case ExprOp::kDiv:
      return from_int(ex::idiv(a.i, b.i));
    case ExprOp::kMod:
      return from_int(ex::imod(a.i, b.i));
    case ExprOp::kMin:
      return from_int(ex::imin_(a.i, b.i));
    case ExprOp::kMax:
      return from_int(ex::imax_(a.i, b.i));
    case ExprOp::kEq:
      return from_bool(ex::ieq(a.i, b.i));
    case ExprOp::kNe:
      return from_bool(ex::ine(a.i, b.i));
    case ExprOp::kLt:
      return from_bool(ex::ilt(a.i, b.i));
    case ExprOp::kLe:
      return from_bool(ex::ile(a.i, b.i));
    case ExprOp::kGt:
      return from_bool(ex::igt(a.i, b.i));
    case ExprOp::kGe:
      return from_bool(ex::ige(a.i, b.i));
    default:
      break;
  }
  ATTNJIT_CHECK(false, "classify: an operation the checker does not produce");
  return Abstract{};
}

}  // namespace

ExprValue evaluate(const Expr& expr, const ExprEnv& env) { return eval(expr, env, expr.root); }

bool evaluate_mask(const Expr& expr, const ExprEnv& env) {
  ATTNJIT_CHECK(expr.type() == ExprType::kBool, "evaluate_mask: not a bool expression");
  return eval(expr, env, expr.root).b;
}

double evaluate_score(const Expr& expr, const ExprEnv& env) {
  ATTNJIT_CHECK(expr.type() == ExprType::kFloat, "evaluate_score: not a float expression");
  return eval(expr, env, expr.root).f;
}

const char* to_string(TileClass tile_class) {
  switch (tile_class) {
    case TileClass::kEmpty:
      return "empty";
    case TileClass::kPartial:
      return "partial";
    case TileClass::kFull:
      return "full";
  }
  return "?";
}

TileClass classify_mask(const Expr& mask, const ExprTile& tile, const ExprEnv& env) {
  ATTNJIT_CHECK(mask.type() == ExprType::kBool, "classify_mask: not a bool expression");
  return static_cast<TileClass>(ex::tile_class(abstract(mask, tile, env, mask.root).b));
}

KeySpan key_bounds(const Expr& mask, const ExprTile& tile, const ExprEnv& env) {
  long long first = 0, last = static_cast<long long>(env.n_k) - 1;
  for (const ExprKeyBound& b : key_bounds_of(mask).bounds) {
    ex::ival t = b.t < 0 ? ex::ipoint(0) : abstract(mask, tile, env, b.t).i;
    if (b.t_negated) t = ex::ineg(t);
    const ex::ival y = abstract(mask, tile, env, b.y).i;
    const ex::ival c = b.divisor < 0 ? ex::ipoint(1) : abstract(mask, tile, env, b.divisor).i;
    ex::key_bound(b.cmp, b.sj, t, y, b.abs_form, c, 0, env.n_k - 1, first, last);
  }
  return KeySpan{first, last};
}

bool score_is_identity(const Expr& score, const ExprTile& tile, const ExprEnv& env) {
  const ExprScoreIdentity identity = score_identity_of(score);
  if (!identity.possible()) return false;
  std::vector<bool> zero(identity.tests.size(), false);
  for (std::size_t k = 0; k < identity.tests.size(); ++k) {
    const ExprZeroTest& t = identity.tests[k];
    switch (t.kind) {
      case ExprZeroTest::kNever:
        zero[k] = false;
        break;
      case ExprZeroTest::kAlways:
        zero[k] = true;
        break;
      case ExprZeroTest::kIntZero: {
        const ex::ival v = abstract(score, tile, env, t.node).i;
        zero[k] = v.lo == 0 && v.hi == 0;
        break;
      }
      case ExprZeroTest::kBoth:
        zero[k] = zero[static_cast<std::size_t>(t.a)] && zero[static_cast<std::size_t>(t.b)];
        break;
      case ExprZeroTest::kSelect: {
        const ex::bval c = abstract(score, tile, env, t.node).b;
        zero[k] = (!c.t || zero[static_cast<std::size_t>(t.a)]) &&
                  (!c.f || zero[static_cast<std::size_t>(t.b)]);
        break;
      }
    }
  }
  return zero.back();
}

int64_t divisor_multiplier(int32_t d) { return expr::divisor_magic(d); }

}  // namespace attnjit

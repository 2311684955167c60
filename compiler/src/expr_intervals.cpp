// The interval code of the generated struct (expr_emit.cpp's
// emit_user_struct): classify(), key_bounds(), a row's bounds and
// score_identity(), each a list of statements that evaluate the expression
// over intervals of its variables (user_expr.cuh's ival and bval), the
// device's copy of the host classifier (expr_eval.cpp, expr_bounds.cpp).
#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "attnjit/expr.h"
#include "expr_tree.h"

namespace attnjit::detail {
namespace {

constexpr const char* kNs = kExprNs;

[[noreturn]] void malformed(const std::string& what) { malformed_tree(what); }

// The index range of a sorted tensor's domain, as code (expr_eval.cpp's
// sorted_domain on the host).
std::pair<std::string, std::string> sorted_domain(const ExprTensor& t) {
  switch (t.per) {
    case TensorDomain::kKeyToken:
      return {"0", fmt::format("{}last_index(n_k)", kNs)};
    case TensorDomain::kQueryToken:
      return {"n_k - n_q", "n_k - 1"};
    case TensorDomain::kHead:
      return {"0", fmt::format("{}last_index(prm.num_heads_q)", kNs)};
    case TensorDomain::kKvHead:
      return {"0", fmt::format("{}last_index(prm.num_heads_kv)", kNs)};
    case TensorDomain::kTable:
      return {"0", fmt::format("{}last_index({})", kNs,
                               t.size_arg.empty() ? std::to_string(t.size)
                                                  : "(prm." + t.size_arg + " < 0 ? 0 : prm." +
                                                        t.size_arg + ")")};
    case TensorDomain::kSequence:
      break;
  }
  return {"0", "-1"};
}

// One statement per int or bool node, `v<index>`, over the functions of
// user_expr.cuh; float nodes are unknown and not emitted.
class IntervalEmitter {
 public:
  explicit IntervalEmitter(const Expr& expr) : expr_(expr), done_(expr.nodes.size(), false) {}

  std::string body() {
    const std::string root = emit(expr_.root);
    return lines_ + fmt::format("    return {}tile_class({});\n", kNs, root);
  }

  // key_bounds(): the intervals of each bound's t and y (free of j), then
  // one key_bound() call per bound.
  std::string key_bounds_body(const ExprKeyBounds& bounds) {
    std::string calls;
    for (const ExprKeyBound& b : bounds.bounds) {
      std::string t = b.t < 0 ? fmt::format("{}ipoint(0)", kNs) : emit(b.t);
      if (b.t_negated) t = fmt::format("{}ineg({})", kNs, t);
      const std::string y = emit(b.y);
      const std::string c = b.divisor < 0 ? fmt::format("{}ipoint(1)", kNs) : emit(b.divisor);
      calls += fmt::format("    {}key_bound({}, {}, {}, {}, {}, {}, 0, n_k - 1, first, last);\n",
                           kNs, b.cmp, b.sj, t, y, b.abs_form ? "true" : "false", c);
    }
    return lines_ + calls;
  }

  // One bounding comparison at one row (row()'s block for it): the
  // intervals of its t and y at the row's point, then row_bound().
  // Into locals lo and hi.
  std::string row_bound_body(const ExprKeyBound& b) {
    std::string t = b.t < 0 ? fmt::format("{}ipoint(0)", kNs) : emit(b.t);
    if (b.t_negated) t = fmt::format("{}ineg({})", kNs, t);
    const std::string y = emit(b.y);
    return lines_ + fmt::format("      int lo, hi;\n      {}row_bound({}, {}, {}, {}, {}, n_k, lo, hi);\n",
                                kNs, b.cmp, b.sj, t, y, b.abs_form ? "true" : "false");
  }

  // score_identity(): the zero tests (expr.h ExprZeroTest) as bools `z<k>`
  // over the intervals of the nodes they read.
  std::string score_identity_body(const ExprScoreIdentity& identity) {
    std::string tests;
    for (std::size_t k = 0; k < identity.tests.size(); ++k) {
      const ExprZeroTest& t = identity.tests[k];
      std::string value;
      switch (t.kind) {
        case ExprZeroTest::kNever:
          value = "false";
          break;
        case ExprZeroTest::kAlways:
          value = "true";
          break;
        case ExprZeroTest::kIntZero: {
          const std::string v = emit(t.node);
          value = fmt::format("{0}.lo == 0 && {0}.hi == 0", v);
          break;
        }
        case ExprZeroTest::kBoth:
          value = fmt::format("z{} && z{}", t.a, t.b);
          break;
        case ExprZeroTest::kSelect: {
          const std::string c = emit(t.node);
          value = fmt::format("(!{0}.t || z{1}) && (!{0}.f || z{2})", c, t.a, t.b);
          break;
        }
      }
      tests += fmt::format("    const bool z{} = {};\n", k, value);
    }
    return lines_ + tests + fmt::format("    return z{};\n", identity.tests.size() - 1);
  }

 private:
  std::string emit(int index) {
    const std::string name = "v" + std::to_string(index);
    if (done_[static_cast<std::size_t>(index)]) return name;
    const ExprNode& n = expr_.nodes[static_cast<std::size_t>(index)];
    const std::string value = code(n);
    const char* type = n.type == ExprType::kBool ? "bval" : "ival";
    lines_ += fmt::format("    const {}{} {} = {};\n", kNs, type, name, value);
    done_[static_cast<std::size_t>(index)] = true;
    return name;
  }

  std::string code(const ExprNode& n) {
    const auto kid = [&](int k) { return emit(n.kids[k]); };
    const auto call = [&](const char* f, int arity) {
      std::string out = std::string(kNs) + f + "(";
      for (int k = 0; k < arity; ++k) out += (k ? ", " : "") + kid(k);
      return out + ")";
    };
    if (const std::string* divisor = runtime_divisor(expr_, n)) {
      return fmt::format("{}{}({}, prm.{}, prm.{})", kNs,
                         n.op == ExprOp::kDiv ? "idiv_by" : "imod_by", kid(0), *divisor,
                         divisor_field(*divisor));
    }
    switch (n.op) {
      case ExprOp::kIntLit:
        return fmt::format("{}ipoint({})", kNs, n.int_value);
      case ExprOp::kBoolLit:
        return fmt::format("{}bconst({})", kNs, n.bool_value ? "true" : "false");
      case ExprOp::kVar:
        switch (n.var) {
          case ExprVar::kP:
            return fmt::format("{}irange(p_lo, p_hi)", kNs);
          case ExprVar::kJ:
            return fmt::format("{}irange(j_lo, j_hi)", kNs);
          case ExprVar::kH:
            return fmt::format("{}irange(h_lo, h_hi)", kNs);
          case ExprVar::kHk:
            if (expr_.context.has_head_counts) {
              return fmt::format(
                  "{0}irange({0}div(h_lo, {0}group_size(prm.num_heads_q, prm.num_heads_kv)), "
                  "{0}div(h_hi, {0}group_size(prm.num_heads_q, prm.num_heads_kv)))",
                  kNs);
            }
            return fmt::format("{}irange(0, h_hi)", kNs);
          default:
            return fmt::format("{}ipoint({})", kNs, to_string(n.var));
        }
      case ExprOp::kScalar:
        return fmt::format("{}ipoint(prm.{})", kNs,
                           expr_.context.scalars[static_cast<std::size_t>(n.index)].name);
      case ExprOp::kTensor: {
        const std::string x = kid(0);
        const ExprTensor& t = expr_.context.tensors[static_cast<std::size_t>(n.index)];
        if (t.sorted) {
          const auto [d_lo, d_hi] = sorted_domain(t);
          return fmt::format("{0}sorted_read({1}, {2}, {3}, {4}, {5})", kNs, x, d_lo, d_hi,
                             detail::tensor_read(t, fmt::format("{}clip_lo({}, {})", kNs, x, d_lo)),
                             detail::tensor_read(t, fmt::format("{}clip_hi({}, {})", kNs, x, d_hi)));
        }
        return fmt::format("{0}.lo == {0}.hi ? {1}ipoint({2}) : {1}itop()", x, kNs,
                           detail::tensor_read(t, x + ".lo"));
      }
      case ExprOp::kNeg:
        return call("ineg", 1);
      case ExprOp::kAbs:
        return call("iabs_", 1);
      case ExprOp::kNot:
        return call("bnot", 1);
      case ExprOp::kAnd:
        return call("band", 2);
      case ExprOp::kOr:
        return call("bor", 2);
      case ExprOp::kSelect:
        return call(n.type == ExprType::kBool ? "bselect" : "iselect", 3);
      default:
        break;
    }
    const ExprType operands = expr_.nodes[static_cast<std::size_t>(n.kids[0])].type;
    if (n.type == ExprType::kBool && operands == ExprType::kFloat) {
      return std::string(kNs) + "bunknown()";
    }
    if (operands == ExprType::kBool) return call(n.op == ExprOp::kEq ? "beq" : "bne", 2);
    switch (n.op) {
      case ExprOp::kAdd:
        return call("iadd", 2);
      case ExprOp::kSub:
        return call("isub", 2);
      case ExprOp::kMul:
        return call("imul", 2);
      case ExprOp::kDiv:
        return call("idiv", 2);
      case ExprOp::kMod:
        return call("imod", 2);
      case ExprOp::kMin:
        return call("imin_", 2);
      case ExprOp::kMax:
        return call("imax_", 2);
      case ExprOp::kEq:
        return call("ieq", 2);
      case ExprOp::kNe:
        return call("ine", 2);
      case ExprOp::kLt:
        return call("ilt", 2);
      case ExprOp::kLe:
        return call("ile", 2);
      case ExprOp::kGt:
        return call("igt", 2);
      case ExprOp::kGe:
        return call("ige", 2);
      default:
        break;
    }
    malformed("classify: an operation without an abstract form");
  }

  const Expr& expr_;
  std::vector<bool> done_;
  std::string lines_;
};

}  // namespace

std::string classify_body(const Expr& expr) { return IntervalEmitter(expr).body(); }

std::string key_bounds_body(const Expr& expr, const ExprKeyBounds& bounds) {
  return IntervalEmitter(expr).key_bounds_body(bounds);
}

std::string row_bound_body(const Expr& expr, const ExprKeyBound& bound) {
  return IntervalEmitter(expr).row_bound_body(bound);
}

std::string score_identity_body(const Expr& expr, const ExprScoreIdentity& identity) {
  return IntervalEmitter(expr).score_identity_body(identity);
}

}  // namespace attnjit::detail

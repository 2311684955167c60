// check_expr_tree(): the checks parse_expr() guarantees, repeated on a
// tree that code is produced from (emit_user_struct, compile_vm), so that
// an Expr built by hand never reaches generated code unchecked.
#include "expr_tree.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attnjit/error.h"
#include "names.h"

namespace attnjit::detail {

void malformed_tree(const std::string& what) {
  throw Error(ErrorKind::kCodegen, "expression tree: " + what);
}

void check_expr_tree(const Expr& expr) {
  const ExprContext& ctx = expr.context;
  for (const ExprScalar& s : ctx.scalars) {
    if (auto problem = identifier_problem(s.name)) {
      malformed_tree("scalar " + quoted(s.name) + " " + *problem);
    }
    if (s.type == ExprType::kBool) malformed_tree("scalar " + quoted(s.name) + " is bool");
  }
  for (const ExprTensor& t : ctx.tensors) {
    if (auto problem = identifier_problem(t.name)) {
      malformed_tree("tensor " + quoted(t.name) + " " + *problem);
    }
    if (t.elem == ExprType::kBool) malformed_tree("tensor " + quoted(t.name) + " is bool");
    if (t.sorted && (t.elem != ExprType::kInt || t.per == TensorDomain::kSequence)) {
      malformed_tree("tensor " + quoted(t.name) +
                     " is sorted but not an int tensor with an ordered domain");
    }
    if (t.per == TensorDomain::kTable) {
      if (t.size_arg.empty() ? (t.size < 0 || t.size > 2147483647)
                             : bool(identifier_problem(t.size_arg))) {
        malformed_tree("tensor " + quoted(t.name) + " has a bad size");
      }
    }
  }
  if (expr.root < 0 || static_cast<std::size_t>(expr.root) >= expr.nodes.size()) {
    malformed_tree("no root");
  }
  std::vector<int> depth(expr.nodes.size(), 1);
  for (std::size_t i = 0; i < expr.nodes.size(); ++i) {
    const ExprNode& n = expr.nodes[i];
    const auto kid_type = [&](int k) -> ExprType {
      if (n.kids[k] < 0 || static_cast<std::size_t>(n.kids[k]) >= i) {
        malformed_tree("node " + std::to_string(i) + " has a bad child");
      }
      depth[i] = std::max(depth[i], depth[static_cast<std::size_t>(n.kids[k])] + 1);
      return expr.nodes[static_cast<std::size_t>(n.kids[k])].type;
    };
    const auto want = [&](bool ok) {
      if (!ok) malformed_tree("node " + std::to_string(i) + " is not well typed");
    };
    switch (n.op) {
      case ExprOp::kIntLit:
        want(n.type == ExprType::kInt);
        break;
      case ExprOp::kFloatLit:
        want(n.type == ExprType::kFloat && std::isfinite(n.float_value) &&
             static_cast<double>(static_cast<float>(n.float_value)) == n.float_value);
        break;
      case ExprOp::kBoolLit:
        want(n.type == ExprType::kBool);
        break;
      case ExprOp::kVar:
        want(n.type == (n.var == ExprVar::kS ? ExprType::kFloat : ExprType::kInt) &&
             static_cast<int>(n.var) >= 0 && static_cast<int>(n.var) <= static_cast<int>(ExprVar::kS) &&
             (n.var != ExprVar::kS || expr.kind == ExprKind::kScore));
        break;
      case ExprOp::kScalar:
        want(n.index >= 0 && static_cast<std::size_t>(n.index) < ctx.scalars.size() &&
             ctx.scalars[static_cast<std::size_t>(n.index)].type == n.type);
        break;
      case ExprOp::kTensor: {
        want(n.index >= 0 && static_cast<std::size_t>(n.index) < ctx.tensors.size());
        const ExprTensor& t = ctx.tensors[static_cast<std::size_t>(n.index)];
        want(t.elem == n.type && kid_type(0) == ExprType::kInt);
        if (t.per == TensorDomain::kSequence) {
          const ExprNode& x = expr.nodes[static_cast<std::size_t>(n.kids[0])];
          want(x.op == ExprOp::kVar && x.var == ExprVar::kB);
        }
        break;
      }
      case ExprOp::kToFloat:
        want(n.type == ExprType::kFloat && kid_type(0) == ExprType::kInt);
        break;
      case ExprOp::kNeg:
      case ExprOp::kAbs:
        want(n.type != ExprType::kBool && kid_type(0) == n.type);
        break;
      case ExprOp::kNot:
        want(n.type == ExprType::kBool && kid_type(0) == ExprType::kBool);
        break;
      case ExprOp::kAdd:
      case ExprOp::kSub:
      case ExprOp::kMul:
      case ExprOp::kDiv:
      case ExprOp::kMin:
      case ExprOp::kMax:
        want(n.type != ExprType::kBool && kid_type(0) == n.type && kid_type(1) == n.type);
        break;
      case ExprOp::kMod:
        want(n.type == ExprType::kInt && kid_type(0) == n.type && kid_type(1) == n.type);
        break;
      case ExprOp::kEq:
      case ExprOp::kNe:
        want(n.type == ExprType::kBool && kid_type(0) == kid_type(1));
        break;
      case ExprOp::kLt:
      case ExprOp::kLe:
      case ExprOp::kGt:
      case ExprOp::kGe:
        want(n.type == ExprType::kBool && kid_type(0) == kid_type(1) &&
             kid_type(0) != ExprType::kBool);
        break;
      case ExprOp::kAnd:
      case ExprOp::kOr:
        want(n.type == ExprType::kBool && kid_type(0) == ExprType::kBool &&
             kid_type(1) == ExprType::kBool);
        break;
      case ExprOp::kSelect:
        want(kid_type(0) == ExprType::kBool && kid_type(1) == n.type && kid_type(2) == n.type);
        break;
      case ExprOp::kExp:
      case ExprOp::kLog:
      case ExprOp::kTanh:
      case ExprOp::kSqrt:
        want(n.type == ExprType::kFloat && kid_type(0) == ExprType::kFloat);
        break;
      default:
        malformed_tree("node " + std::to_string(i) + " has an unknown operation");
    }
    if (depth[i] > kMaxExprDepth) malformed_tree("deeper than the nesting limit");
  }
  const ExprType root = expr.nodes[static_cast<std::size_t>(expr.root)].type;
  if (root != (expr.kind == ExprKind::kMask ? ExprType::kBool : ExprType::kFloat)) {
    malformed_tree("the root has the wrong type");
  }
}

}  // namespace attnjit::detail

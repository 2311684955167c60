// The expression language's names (types, domains, variables, operators)
// and the canonical printer of a checked tree: fully parenthesized, every
// literal re-printed from its value, so parsing it gives the same tree.
#include <fmt/format.h>

#include <string>

#include "attnjit/expr.h"

namespace attnjit {

const char* to_string(ExprType type) {
  switch (type) {
    case ExprType::kInt:
      return "int";
    case ExprType::kFloat:
      return "float";
    case ExprType::kBool:
      return "bool";
  }
  return "?";
}

const char* to_string(TensorDomain domain) {
  switch (domain) {
    case TensorDomain::kKeyToken:
      return "key_token";
    case TensorDomain::kQueryToken:
      return "query_token";
    case TensorDomain::kSequence:
      return "sequence";
    case TensorDomain::kHead:
      return "head";
    case TensorDomain::kKvHead:
      return "kv_head";
    case TensorDomain::kTable:
      return "table";
  }
  return "?";
}

bool parse_tensor_domain(std::string_view text, TensorDomain& domain) {
  for (TensorDomain d : {TensorDomain::kKeyToken, TensorDomain::kQueryToken,
                         TensorDomain::kSequence, TensorDomain::kHead, TensorDomain::kKvHead,
                         TensorDomain::kTable}) {
    if (text == to_string(d)) {
      domain = d;
      return true;
    }
  }
  return false;
}

const char* to_string(ExprVar var) {
  switch (var) {
    case ExprVar::kP:
      return "p";
    case ExprVar::kJ:
      return "j";
    case ExprVar::kB:
      return "b";
    case ExprVar::kH:
      return "h";
    case ExprVar::kHk:
      return "hk";
    case ExprVar::kNq:
      return "n_q";
    case ExprVar::kNk:
      return "n_k";
    case ExprVar::kS:
      return "s";
  }
  return "?";
}

const char* binary_spelling(ExprOp op) {
  switch (op) {
    case ExprOp::kAdd:
      return "+";
    case ExprOp::kSub:
      return "-";
    case ExprOp::kMul:
      return "*";
    case ExprOp::kDiv:
      return "/";
    case ExprOp::kMod:
      return "%";
    case ExprOp::kEq:
      return "==";
    case ExprOp::kNe:
      return "!=";
    case ExprOp::kLt:
      return "<";
    case ExprOp::kLe:
      return "<=";
    case ExprOp::kGt:
      return ">";
    case ExprOp::kGe:
      return ">=";
    case ExprOp::kAnd:
      return "and";
    case ExprOp::kOr:
      return "or";
    default:
      return "?";
  }
}

std::string float_text(double value) {
  std::string text = fmt::format("{}", static_cast<float>(value));
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

namespace {

void print(const Expr& expr, int node, std::string& out) {
  const ExprNode& n = expr.nodes.at(static_cast<std::size_t>(node));
  switch (n.op) {
    case ExprOp::kIntLit:
      out += std::to_string(n.int_value);
      return;
    case ExprOp::kFloatLit:
      out += float_text(n.float_value);
      return;
    case ExprOp::kBoolLit:
      out += n.bool_value ? "true" : "false";
      return;
    case ExprOp::kVar:
      out += to_string(n.var);
      return;
    case ExprOp::kScalar:
      out += expr.context.scalars.at(static_cast<std::size_t>(n.index)).name;
      return;
    case ExprOp::kTensor:
      out += expr.context.tensors.at(static_cast<std::size_t>(n.index)).name;
      out += "[";
      print(expr, n.kids[0], out);
      out += "]";
      return;
    case ExprOp::kToFloat:
      print(expr, n.kids[0], out);
      return;
    case ExprOp::kNeg:
      out += "(-";
      print(expr, n.kids[0], out);
      out += ")";
      return;
    case ExprOp::kNot:
      out += "(not ";
      print(expr, n.kids[0], out);
      out += ")";
      return;
    case ExprOp::kAbs:
    case ExprOp::kMin:
    case ExprOp::kMax:
    case ExprOp::kSelect:
    case ExprOp::kExp:
    case ExprOp::kLog:
    case ExprOp::kTanh:
    case ExprOp::kSqrt: {
      out += function_spelling(n.op);
      out += "(";
      for (int i = 0; i < 3 && n.kids[i] >= 0; ++i) {
        if (i > 0) out += ", ";
        print(expr, n.kids[i], out);
      }
      out += ")";
      return;
    }
    default:
      out += "(";
      print(expr, n.kids[0], out);
      out += " ";
      out += binary_spelling(n.op);
      out += " ";
      print(expr, n.kids[1], out);
      out += ")";
      return;
  }
}

}  // namespace

std::string Expr::canonical() const {
  std::string out;
  if (root >= 0) print(*this, root, out);
  // The outermost parentheses say nothing.
  if (out.size() >= 2 && out.front() == '(' && out.back() == ')') {
    int depth = 0;
    bool wraps = true;
    for (std::size_t i = 0; i < out.size(); ++i) {
      depth += out[i] == '(' ? 1 : out[i] == ')' ? -1 : 0;
      if (depth == 0 && i + 1 < out.size()) wraps = false;
    }
    if (wraps) out = out.substr(1, out.size() - 2);
  }
  return out;
}

}  // namespace attnjit

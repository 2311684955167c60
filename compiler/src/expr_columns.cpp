// Column values of the element code: `j % d` (d a runtime arg or a
// positive literal), which the kernels compute once per key column of a
// thread's fragment in a key tile (templates/attention/user_mask.cuh
// user_columns), each from the previous column's: (m + step) mod d, an add
// and an unsigned min, where the multiply-shift division takes about
// seven instructions. A runtime divisor steps in the copy of the element
// code that knows it positive (kPositiveDivisors); the other copy divides
// per element as before. Other terms of j alone (a key's tensor read,
// `j / d`) are not hoisted: the compiler already computes them once per
// column for both rows, and held for the whole tile they only lengthen
// live ranges.
#include <fmt/format.h>

#include "expr_tree.h"

namespace attnjit::detail {
namespace {

constexpr const char* kNs = "::attnjit::expr::";

}  // namespace

std::string column_step_divisor(const Expr& expr, int index) {
  const ExprNode& n = expr.nodes[static_cast<std::size_t>(index)];
  if (n.op != ExprOp::kMod || n.type != ExprType::kInt) return "";
  const ExprNode& a = expr.nodes[static_cast<std::size_t>(n.kids[0])];
  if (a.op != ExprOp::kVar || a.var != ExprVar::kJ) return "";
  if (const std::string* d = runtime_divisor(expr, n)) return "prm." + *d;
  const ExprNode& d = expr.nodes[static_cast<std::size_t>(n.kids[1])];
  if (d.op == ExprOp::kIntLit && d.int_value > 0) return std::to_string(d.int_value);
  return "";
}

ColumnValues column_values(const Expr& expr, const std::string& prefix) {
  ColumnValues cv;
  cv.names.resize(expr.nodes.size());
  cv.reads.resize(expr.nodes.size());
  const std::vector<std::string> none(expr.nodes.size());
  for (std::size_t i = 0; i < expr.nodes.size(); ++i) {
    const std::string d = column_step_divisor(expr, static_cast<int>(i));
    if (d.empty()) continue;
    const std::string name = prefix + std::to_string(cv.order.size());
    cv.names[i] = name;
    cv.order.push_back(static_cast<int>(i));
    cv.reads[i] = "c." + name;
    if (d.rfind("prm.", 0) == 0) {
      // The copy for divisors of any sign divides per element.
      cv.reads[i] = "(kPositiveDivisors ? c." + name + " : " +
                    value_code(expr, static_cast<int>(i), &none) + ")";
    }
  }
  return cv;
}

std::string column_functions(
    const std::vector<std::pair<const Expr*, const ColumnValues*>>& exprs, bool* divides) {
  std::string fields, direct, steps, next;
  for (const auto& [expr, cols] : exprs) {
    if (expr == nullptr) continue;
    for (int index : cols->order) {
      const std::string& name = cols->names[static_cast<std::size_t>(index)];
      const std::string d = column_step_divisor(*expr, index);
      fields += fmt::format("    int {};\n", name);
      if (d.rfind("prm.", 0) == 0) {
        const std::string magic = "prm." + divisor_field(d.substr(4));
        direct += fmt::format("    if (kPositiveDivisors) c.{} = {}mod_by<true>(j, {}, {});\n",
                              name, kNs, d, magic);
        steps += fmt::format("    if (kPositiveDivisors) c.{} = {}mod_by<true>(delta, {}, {});\n",
                             name, kNs, d, magic);
        if (divides != nullptr) *divides = true;
      } else {
        direct += fmt::format("    c.{} = {}mod(j, {});\n", name, kNs, d);
        steps += fmt::format("    c.{} = {}mod(delta, {});\n", name, kNs, d);
      }
      next += fmt::format("    c.{0} = {1}mod_add(prev.{0}, step.{0}, {2});\n", name, kNs, d);
    }
  }
  if (fields.empty()) return "";
  return fmt::format(
      "  static constexpr bool has_col_values = true;\n"
      "  struct col_values {{\n"
      "{0}"
      "  }};\n"
      "  template <bool kPositiveDivisors, class P>\n"
      "  __device__ static col_values col(const P& prm, int j) {{\n"
      "    col_values c{{}};\n"
      "{1}"
      "    return c;\n"
      "  }}\n"
      "  template <bool kPositiveDivisors, class P>\n"
      "  __device__ static col_values col_step(const P& prm, int delta) {{\n"
      "    col_values c{{}};\n"
      "{2}"
      "    return c;\n"
      "  }}\n"
      "  template <class P>\n"
      "  __device__ static col_values col_next(const P& prm, const col_values& prev, "
      "const col_values& step) {{\n"
      "    col_values c{{}};\n"
      "{3}"
      "    return c;\n"
      "  }}\n",
      fields, direct, steps, next);
}

}  // namespace attnjit::detail

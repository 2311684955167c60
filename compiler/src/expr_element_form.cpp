// The element code's form of a checked expression tree (detail::element_form,
// used by emit_user_struct): a rewrite of the per-score code only, apart
// from its emission.
#include <vector>

#include "expr_tree.h"

namespace attnjit::detail {
namespace {

// The element code's form of an expression: the same tree, but for a test
// that p - j is a multiple of d, `(p - j) % d == 0` (or `!=`; j - p; the 0
// on either side), which becomes `p % d == j % d`: d divides p - j exactly
// when p and j leave one floored remainder, for every d (x % 0 = x compares
// p with j; x % -1 = 0 both ways), as long as p - j does not wrap, and both
// are positions, in [0, 2^31). The element code then divides per row (p %
// d, a row value) and per key (j % d, the same for a thread's rows, which
// the compiler computes once), not per score. classify() and key_bounds()
// read the expression as written.
class ElementForm {
 public:
  explicit ElementForm(const Expr& in) : in_(in) {}

  Expr build() {
    Expr out = in_;
    out.nodes.clear();
    out.root = copy(in_.root, out.nodes);
    return out;
  }

 private:
  const Expr& in_;

  const ExprNode& node(int index) const { return in_.nodes[static_cast<std::size_t>(index)]; }
  bool is_var(int index, ExprVar var) const {
    return node(index).op == ExprOp::kVar && node(index).var == var;
  }
  bool is_zero(int index) const {
    return node(index).op == ExprOp::kIntLit && node(index).int_value == 0;
  }
  // The remainder node of `(p - j) % d == 0` at an == / != node, or -1.
  int multiple_test(const ExprNode& n) const {
    if ((n.op != ExprOp::kEq && n.op != ExprOp::kNe) || node(n.kids[0]).type != ExprType::kInt) {
      return -1;
    }
    const int rem = is_zero(n.kids[1]) ? n.kids[0] : is_zero(n.kids[0]) ? n.kids[1] : -1;
    if (rem < 0 || node(rem).op != ExprOp::kMod) return -1;
    const ExprNode& diff = node(node(rem).kids[0]);
    if (diff.op != ExprOp::kSub) return -1;
    const bool pj = is_var(diff.kids[0], ExprVar::kP) && is_var(diff.kids[1], ExprVar::kJ);
    const bool jp = is_var(diff.kids[0], ExprVar::kJ) && is_var(diff.kids[1], ExprVar::kP);
    return pj || jp ? rem : -1;
  }

  static int push(std::vector<ExprNode>& out, ExprNode n) {
    out.push_back(n);
    return static_cast<int>(out.size()) - 1;
  }

  int copy(int index, std::vector<ExprNode>& out) const {
    const ExprNode& n = node(index);
    if (const int rem = multiple_test(n); rem >= 0) {
      const auto remainder_of = [&](ExprVar var) {
        ExprNode v = node(node(node(rem).kids[0]).kids[0]);  // a position variable
        v.var = var;
        ExprNode mod = node(rem);
        mod.kids[0] = push(out, v);
        mod.kids[1] = copy(node(rem).kids[1], out);
        return push(out, mod);
      };
      ExprNode test = n;
      test.kids[0] = remainder_of(ExprVar::kP);
      test.kids[1] = remainder_of(ExprVar::kJ);
      return push(out, test);
    }
    ExprNode c = n;
    for (int& kid : c.kids) {
      if (kid >= 0) kid = copy(kid, out);
    }
    return push(out, c);
  }
};

}  // namespace

Expr element_form(const Expr& expr) { return ElementForm(expr).build(); }

}  // namespace attnjit::detail

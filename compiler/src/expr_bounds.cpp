// Key bounds of a mask expression (expr.h key_bounds_of): which conjuncts
// of the root's `and` tree bound the key position j, in the forms that
// user_expr.cuh key_bound() turns into a key range. The pattern is
// syntactic on the checked tree: j itself, j + t, t + j, j - t, t - j and
// j / c,
// compared (<, <=, >, >=, ==) with an int expression free of j on either
// side, or abs() of such a form compared with < or <= (on the left) or >
// or >= (on the right). Anything else bounds nothing and stays with the
// per-tile classification.
#include <tuple>
#include <vector>

#include "attention/user_expr.cuh"
#include "attnjit/error.h"
#include "attnjit/expr.h"
#include "check.h"
#include "expr_tree.h"

namespace attnjit {
namespace {

namespace ex = ::attnjit::expr;

class BoundFinder {
 public:
  explicit BoundFinder(const Expr& mask) : mask_(mask), free_(mask.nodes.size(), true) {
    for (std::size_t i = 0; i < mask.nodes.size(); ++i) {
      const ExprNode& n = mask.nodes[i];
      bool free = !(n.op == ExprOp::kVar && n.var == ExprVar::kJ);
      for (int kid : n.kids) {
        if (kid >= 0) free = free && free_.at(static_cast<std::size_t>(kid));
      }
      free_[i] = free;  // children come before parents
    }
  }

  std::vector<detail::RowBoundCompare> row_compares() const {
    std::vector<detail::RowBoundCompare> out;
    for (std::size_t i = 0; i < mask_.nodes.size(); ++i) {
      detail::RowBoundCompare c;
      if (!row_exact(static_cast<int>(i), c)) continue;
      if (c.bound.t < 0) continue;  // j against y: one compare already
      // Both sides (abs, ==) took two row values for one instruction less
      // per score and spilled in the register-capped decode block.
      if (c.lower && c.upper) continue;
      out.push_back(c);
    }
    return out;
  }

  std::vector<detail::RowBoundCompare> row_conjuncts() const {
    std::vector<detail::RowBoundCompare> out;
    std::vector<int> stack{mask_.root};
    while (!stack.empty()) {
      const int index = stack.back();
      stack.pop_back();
      const ExprNode& n = node(index);
      if (n.op == ExprOp::kAnd) {
        stack.push_back(n.kids[1]);
        stack.push_back(n.kids[0]);
        continue;
      }
      detail::RowBoundCompare c;
      if (row_exact(index, c)) out.push_back(c);
    }
    return out;
  }

  // Whether node `index` is a comparison that bounds j exactly for one row,
  // and if so, that bound and its sides.
  bool row_exact(int index, detail::RowBoundCompare& c) const {
    if (!comparison(node(index), c.bound) || !exact_for_a_row(c.bound)) return false;
    c.node = index;
    std::tie(c.lower, c.upper) = sides(c.bound);
    return true;
  }

  // Whether a bound limits j from below and from above.
  static std::pair<bool, bool> sides(const ExprKeyBound& b) {
    // X = sj j + t: X <= y bounds j from above when sj is 1, else below.
    const bool x_upper =
        b.abs_form || b.cmp == ex::kCmpLt || b.cmp == ex::kCmpLe || b.cmp == ex::kCmpEq;
    const bool x_lower =
        b.abs_form || b.cmp == ex::kCmpGt || b.cmp == ex::kCmpGe || b.cmp == ex::kCmpEq;
    return {b.sj > 0 ? x_lower : x_upper, b.sj > 0 ? x_upper : x_lower};
  }

  ExprKeyBounds find() {
    ExprKeyBounds out;
    out.whole_mask = conjuncts(mask_.root, out.bounds);
    out.exact_rows = out.whole_mask;
    for (const ExprKeyBound& b : out.bounds) {
      out.exact_rows = out.exact_rows && exact_for_a_row(b);
      const auto [lower, upper] = sides(b);
      out.above = out.above || upper;
      out.below = out.below || lower;
    }
    return out;
  }

 private:
  const ExprNode& node(int index) const { return mask_.nodes.at(static_cast<std::size_t>(index)); }
  bool j_free_int(int index) const {
    return free_.at(static_cast<std::size_t>(index)) && node(index).type == ExprType::kInt;
  }
  bool is_p(int index) const {
    const ExprNode& n = node(index);
    return n.op == ExprOp::kVar && n.var == ExprVar::kP;
  }
  // For one row, key_bound() (user_expr.cuh) gives exactly the keys the
  // bound leaves, whatever the args: y is a literal (or minus one), a variable or an int32
  // scalar arg, so one value once the row fixes p, b and the head (an
  // expression of them could wrap, and a tensor's interval need not be a
  // point); X is j, j - p or p - j, which stay inside int32 for every row
  // (p in [n_k - n_q, n_k - 1], j in [0, n_k - 1]: p - j in
  // [1 - n_q, n_k - 1]), so key_bound never gives up on a wrap (nor on
  // abs(INT_MIN)); and no divisor.
  bool exact_for_a_row(const ExprKeyBound& b) const {
    const ExprNode& y = node(b.y);
    const bool literal = y.op == ExprOp::kIntLit ||
                         (y.op == ExprOp::kNeg && node(y.kids[0]).op == ExprOp::kIntLit);
    if (!literal && y.op != ExprOp::kVar && y.op != ExprOp::kScalar) return false;
    // hk is one value for one row only where the head counts are known
    // (without them it is bounded by h).
    if (y.op == ExprOp::kVar && y.var == ExprVar::kHk && !mask_.context.has_head_counts) {
      return false;
    }
    if (b.divisor >= 0) return false;
    if (b.t < 0) return b.sj == 1;              // j
    if (!is_p(b.t)) return false;
    return (b.sj == 1 && b.t_negated) ||        // j - p
           (b.sj == -1 && !b.t_negated);        // p - j
  }
  bool is_j(int index) const {
    const ExprNode& n = node(index);
    return n.op == ExprOp::kVar && n.var == ExprVar::kJ;
  }

  // Appends the bounds of the conjuncts under `index`; true when every
  // conjunct gave one.
  bool conjuncts(int index, std::vector<ExprKeyBound>& out) const {
    const ExprNode& n = node(index);
    if (n.op == ExprOp::kAnd) {
      const bool left = conjuncts(n.kids[0], out);
      const bool right = conjuncts(n.kids[1], out);
      return left && right;
    }
    ExprKeyBound bound;
    if (!comparison(n, bound)) return false;
    out.push_back(bound);
    return true;
  }

  // X = sj * j + t at `index`.
  bool linear(int index, ExprKeyBound& b) const {
    const ExprNode& n = node(index);
    if (is_j(index)) {
      b.sj = 1;
      b.t = -1;
      return true;
    }
    if (n.type == ExprType::kInt && n.op == ExprOp::kDiv && is_j(n.kids[0]) &&
        j_free_int(n.kids[1])) {  // j / c (chunked attention)
      b.sj = 1;
      b.t = -1;
      b.divisor = n.kids[1];
      return true;
    }
    if (n.type != ExprType::kInt || (n.op != ExprOp::kAdd && n.op != ExprOp::kSub)) return false;
    const int a = n.kids[0], c = n.kids[1];
    if (is_j(a) && j_free_int(c)) {  // j + c, j - c
      b.sj = 1;
      b.t = c;
      b.t_negated = n.op == ExprOp::kSub;
      return true;
    }
    if (j_free_int(a) && is_j(c)) {  // a + j, a - j
      b.sj = n.op == ExprOp::kAdd ? 1 : -1;
      b.t = a;
      return true;
    }
    return false;
  }

  bool comparison(const ExprNode& n, ExprKeyBound& b) const {
    int cmp = -1, mirrored = -1;
    switch (n.op) {
      case ExprOp::kLt:
        cmp = ex::kCmpLt;
        mirrored = ex::kCmpGt;
        break;
      case ExprOp::kLe:
        cmp = ex::kCmpLe;
        mirrored = ex::kCmpGe;
        break;
      case ExprOp::kGt:
        cmp = ex::kCmpGt;
        mirrored = ex::kCmpLt;
        break;
      case ExprOp::kGe:
        cmp = ex::kCmpGe;
        mirrored = ex::kCmpLe;
        break;
      case ExprOp::kEq:
        cmp = ex::kCmpEq;
        mirrored = ex::kCmpEq;
        break;
      default:
        return false;
    }
    const int left = n.kids[0], right = n.kids[1];
    if (node(left).type != ExprType::kInt) return false;
    // X cmp y, or y cmp X as X mirrored y.
    for (const auto& [x, y, c] :
         {std::tuple{left, right, cmp}, std::tuple{right, left, mirrored}}) {
      if (!j_free_int(y)) continue;
      ExprKeyBound found;
      found.cmp = c;
      found.y = y;
      if (linear(x, found)) {
        b = found;
        return true;
      }
      const ExprNode& xn = node(x);
      if (xn.op == ExprOp::kAbs && xn.type == ExprType::kInt &&
          (c == ex::kCmpLt || c == ex::kCmpLe) && linear(xn.kids[0], found)) {
        found.abs_form = true;
        b = found;
        return true;
      }
    }
    return false;
  }

  const Expr& mask_;
  std::vector<bool> free_;
};

}  // namespace

ExprKeyBounds key_bounds_of(const Expr& mask) {
  ATTNJIT_CHECK(mask.type() == ExprType::kBool, "key_bounds_of: not a bool expression");
  return BoundFinder(mask).find();
}

std::vector<detail::RowBoundCompare> detail::row_exact_conjuncts(const Expr& mask) {
  ATTNJIT_CHECK(mask.type() == ExprType::kBool, "row_exact_conjuncts: not a bool expression");
  return BoundFinder(mask).row_conjuncts();
}

std::vector<detail::RowBoundCompare> detail::row_bound_compares(const Expr& mask) {
  ATTNJIT_CHECK(mask.type() == ExprType::kBool, "row_bound_compares: not a bool expression");
  return BoundFinder(mask).row_compares();
}

namespace {

// Appends the test that tests a and b both hold (never when either never
// does); returns its index.
int both_zero(int a, int b, std::vector<ExprZeroTest>& out) {
  ExprZeroTest t;
  t.a = a;
  t.b = b;
  const bool never = out[static_cast<std::size_t>(a)].kind == ExprZeroTest::kNever ||
                     out[static_cast<std::size_t>(b)].kind == ExprZeroTest::kNever;
  t.kind = never ? ExprZeroTest::kNever : ExprZeroTest::kBoth;
  out.push_back(t);
  return static_cast<int>(out.size()) - 1;
}

// The zero tests of a float node (expr.h ExprZeroTest), appended to `out`;
// returns the index of the node's own test.
int zero_test(const Expr& e, int index, std::vector<ExprZeroTest>& out) {
  const ExprNode& n = e.nodes.at(static_cast<std::size_t>(index));
  ExprZeroTest t;
  switch (n.op) {
    case ExprOp::kFloatLit:
      t.kind = n.float_value == 0 ? ExprZeroTest::kAlways : ExprZeroTest::kNever;
      break;
    case ExprOp::kToFloat:
      t.kind = ExprZeroTest::kIntZero;
      t.node = n.kids[0];
      break;
    case ExprOp::kNeg:
      return zero_test(e, n.kids[0], out);
    case ExprOp::kAdd:
    case ExprOp::kSub: {
      const int a = zero_test(e, n.kids[0], out);
      return both_zero(a, zero_test(e, n.kids[1], out), out);
    }
    case ExprOp::kSelect: {
      t.node = n.kids[0];
      t.a = zero_test(e, n.kids[1], out);
      t.b = zero_test(e, n.kids[2], out);
      const bool never = out[static_cast<std::size_t>(t.a)].kind == ExprZeroTest::kNever &&
                         out[static_cast<std::size_t>(t.b)].kind == ExprZeroTest::kNever;
      t.kind = never ? ExprZeroTest::kNever : ExprZeroTest::kSelect;
      break;
    }
    default:
      t.kind = ExprZeroTest::kNever;  // a product, a function, a tensor, s
      break;
  }
  out.push_back(t);
  return static_cast<int>(out.size()) - 1;
}

// The terms of the sum at `index` (through + and -, a subtrahend's sign
// flipped), into `terms`; s itself is counted instead, with its sign.
void additive_terms(const Expr& e, int index, bool negated, int& s_count, bool& s_negated,
                    std::vector<int>& terms) {
  const ExprNode& n = e.nodes.at(static_cast<std::size_t>(index));
  if (n.op == ExprOp::kVar && n.var == ExprVar::kS) {
    ++s_count;
    s_negated = negated;
  } else if (n.op == ExprOp::kAdd && n.type == ExprType::kFloat) {
    additive_terms(e, n.kids[0], negated, s_count, s_negated, terms);
    additive_terms(e, n.kids[1], negated, s_count, s_negated, terms);
  } else if (n.op == ExprOp::kSub && n.type == ExprType::kFloat) {
    additive_terms(e, n.kids[0], negated, s_count, s_negated, terms);
    additive_terms(e, n.kids[1], !negated, s_count, s_negated, terms);
  } else {
    terms.push_back(index);
  }
}

}  // namespace

ExprScoreIdentity score_identity_of(const Expr& score) {
  ATTNJIT_CHECK(score.type() == ExprType::kFloat, "score_identity_of: not a float expression");
  // The root is a sum (+ and -, in any grouping) of s once, with a plus
  // sign, and terms t_i: it is s where every t_i is exactly zero (adding
  // zeros is exact in any order).
  int s_count = 0;
  bool s_negated = false;
  std::vector<int> terms;
  additive_terms(score, score.root, false, s_count, s_negated, terms);
  ExprScoreIdentity out;
  if (s_count != 1 || s_negated) return out;
  int all = -1;
  for (const int t : terms) {
    const int z = zero_test(score, t, out.tests);
    all = all < 0 ? z : both_zero(all, z, out.tests);
  }
  if (all < 0) {  // the score is s
    ExprZeroTest always;
    always.kind = ExprZeroTest::kAlways;
    out.tests.push_back(always);
  }
  return out;
}

}  // namespace attnjit

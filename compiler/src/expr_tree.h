// The well-formedness checks of an expression tree that code is produced
// from (emit_user_struct, compile_vm): what parse_expr() guarantees,
// repeated for an Expr built by hand.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "attnjit/expr.h"

namespace attnjit::detail {

// The namespace of templates/attention/user_expr.cuh as generated code
// spells it.
constexpr const char* kExprNs = "::attnjit::expr::";

// Throws Error(kCodegen) "expression tree: <what>".
[[noreturn]] void malformed_tree(const std::string& what);

// Throws Error(kCodegen) "expression tree: ..." for a tree that is not well
// formed: children before parents, types as the checker gives them, names
// that are identifiers, finite fp32 literals.
void check_expr_tree(const Expr& expr);

// The tree the per-score code is emitted from (expr_element_form.cpp):
// `(p - j) % d == 0` and its variants as `p % d == j % d`, the rest as is.
Expr element_form(const Expr& expr);

// The comparisons of a mask's element tree, wherever they stand (under
// `or` and `not` too), that bound j exactly for one query row in the form
// ExprKeyBounds::exact_rows names, on one side only, and whose X reads p
// (j - p, p - j): the element code compares j with the row's bound,
// computed once per row by key_bound() at the row's point, instead of
// forming X per key. Exact for every key of the sequence, [0, n_k - 1] (the
// kernels AND the mask with key validity); `lower` / `upper`: the side that
// bounds j.
struct RowBoundCompare {
  int node = -1;
  ExprKeyBound bound;
  bool lower = false, upper = false;
};
std::vector<RowBoundCompare> row_bound_compares(const Expr& mask);

// The conjuncts of the root's `and` tree that bound j exactly for one row
// (any X of ExprKeyBounds::exact_rows, j alone too): where the kernels may
// (no multimodal spans OR keys back in), they fold them into each row's
// key range (the generated row_key_bounds()) and test the rest per key
// (mask_rest()), so `j <= p and ...` costs no compare of its own.
std::vector<RowBoundCompare> row_exact_conjuncts(const Expr& mask);

// The generated user struct's key-bound traits (has_key_bounds,
// key_bounds_whole_mask, _exact_rows, _below, _above) for `bounds`, and
// has_row_key_bounds (row_exact_conjuncts folded); all false for no bounds
// (ExprKeyBounds{}: no mask, or the VM's struct).
std::string key_bounds_traits(const ExprKeyBounds& bounds, bool row_key_bounds = false);

// The device read of tensor `t` at the index text `x` (expr_emit.cpp); in
// the element code (`element`), where the sequence has keys and queries, a
// token read takes the unguarded form (load_*_token_at, user_expr.cuh).
std::string tensor_read(const ExprTensor& t, const std::string& x, bool element = false);

// The interval code of the generated struct (expr_intervals.cpp): the
// bodies of classify(), key_bounds() over `bounds`, one bounding
// comparison's block in row() (into locals lo and hi; the caller declares
// p_lo, p_hi, h_lo, h_hi as the row's point), and score_identity().
std::string classify_body(const Expr& expr);
std::string key_bounds_body(const Expr& expr, const ExprKeyBounds& bounds);
std::string row_bound_body(const Expr& expr, const ExprKeyBound& bound);
std::string score_identity_body(const Expr& expr, const ExprScoreIdentity& identity);

// The value of node `index` in the element code, as one C++ expression
// (expr_emit.cpp): a node with a text in `reads` reads as that text
// (`r.<name>`, `c.<name>`); reads null: the row code (row()), no hoisted
// value and divisions for any sign. *divides: a runtime division emitted.
std::string value_code(const Expr& expr, int index, const std::vector<std::string>* reads = nullptr,
                       bool* divides = nullptr);

// Column values (expr_columns.cpp): the element tree's `j % d` nodes (d a
// runtime arg or a positive literal), computed once per key column of a
// tile, each from its neighbour's. names: per node, its field or empty;
// order: the values in node order; reads: per node, what the element code
// reads for it (`c.<name>`, or for a runtime divisor the field in the
// positive copy and the division in the other).
struct ColumnValues {
  std::vector<std::string> names;
  std::vector<std::string> reads;
  std::vector<int> order;
};
ColumnValues column_values(const Expr& expr, const std::string& prefix);

// `j % d` with d a runtime arg (`prm.d`) or a positive literal: the
// divisor's code, which col_next() steps the value by; else empty.
std::string column_step_divisor(const Expr& expr, int index);

// has_col_values, struct col_values, col(), col_step() and col_next() of
// the generated struct, for the expressions given (null: none); empty
// when they have no column value.
std::string column_functions(
    const std::vector<std::pair<const Expr*, const ColumnValues*>>& exprs, bool* divides);

}  // namespace attnjit::detail

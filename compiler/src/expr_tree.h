// The well-formedness checks of an expression tree that code is produced
// from (emit_user_struct, compile_vm): what parse_expr() guarantees,
// repeated for an Expr built by hand.
#pragma once

#include <string>

#include "attnjit/expr.h"

namespace attnjit::detail {

// Throws Error(kCodegen) "expression tree: <what>".
[[noreturn]] void malformed_tree(const std::string& what);

// Throws Error(kCodegen) "expression tree: ..." for a tree that is not well
// formed: children before parents, types as the checker gives them, names
// that are identifiers, finite fp32 literals.
void check_expr_tree(const Expr& expr);

// The tree the per-score code is emitted from (expr_element_form.cpp):
// `(p - j) % d == 0` and its variants as `p % d == j % d`, the rest as is.
Expr element_form(const Expr& expr);

// The generated user struct's key-bound traits (has_key_bounds,
// key_bounds_whole_mask, _exact_rows, _below, _above) for `bounds`; all
// false for no bounds (ExprKeyBounds{}: no mask, or the VM's struct).
std::string key_bounds_traits(const ExprKeyBounds& bounds);

}  // namespace attnjit::detail

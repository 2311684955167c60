// emit_user_struct(): the generated unit's `struct attnjit_user`, printed
// from the checked tree: row values, the element code (mask(), score(),
// mask_rest()) and the traits; the interval code it holds (classify(),
// key_bounds(), row bounds, score_identity()) is expr_intervals.cpp's.
// Every identifier it writes is a variable from a fixed table, a function
// of templates/attention/user_expr.cuh, or an arg name checked here once
// more; every literal is a typed value printed here.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attnjit/error.h"
#include "attnjit/expr.h"
#include "expr_tree.h"
#include "names.h"

namespace attnjit {
namespace {

constexpr const char* kNs = detail::kExprNs;

[[noreturn]] void malformed(const std::string& what) { detail::malformed_tree(what); }

std::string float_literal(double value) { return float_text(value) + "f"; }

const char* int_function(ExprOp op) {
  switch (op) {
    case ExprOp::kAdd:
      return "add";
    case ExprOp::kSub:
      return "sub";
    case ExprOp::kMul:
      return "mul";
    case ExprOp::kDiv:
      return "div";
    case ExprOp::kMod:
      return "mod";
    case ExprOp::kMin:
      return "imin";
    case ExprOp::kMax:
      return "imax";
    case ExprOp::kNeg:
      return "neg";
    case ExprOp::kAbs:
      return "iabs";
    default:
      return nullptr;
  }
}

// Row values: the maximal subtrees of an expression that read neither the
// key position j nor the score s and hold a tensor read, a division or a
// float function (`slopes[h]`, `doc[p]`, `p / chunk`). row() computes them
// once per query row (the kernels call it when they set a row up, once per
// work tile), and the per-element code reads `r.<name>`: a guarded load
// per element is not merged by the compiler, one per row is cheap.
struct RowValues {
  std::vector<std::string> names;  // per node: its row value's name, or empty
  std::vector<int> order;          // the hoisted nodes, in node order
};

bool worth_a_row_value(ExprOp op) {
  switch (op) {
    case ExprOp::kTensor:
    case ExprOp::kDiv:
    case ExprOp::kMod:
    case ExprOp::kExp:
    case ExprOp::kLog:
    case ExprOp::kTanh:
    case ExprOp::kSqrt:
      return true;
    default:
      return false;
  }
}

RowValues row_values(const Expr& expr, const std::string& prefix) {
  const std::size_t n = expr.nodes.size();
  std::vector<bool> per_element(n, false), costly(n, false), under_element(n, false);
  for (std::size_t i = 0; i < n; ++i) {  // children come before parents
    const ExprNode& node = expr.nodes[i];
    per_element[i] = node.op == ExprOp::kVar && (node.var == ExprVar::kJ || node.var == ExprVar::kS);
    costly[i] = worth_a_row_value(node.op);
    for (int k : node.kids) {
      if (k < 0) continue;
      per_element[i] = per_element[i] || per_element[static_cast<std::size_t>(k)];
      costly[i] = costly[i] || costly[static_cast<std::size_t>(k)];
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    for (int k : expr.nodes[i].kids) {
      if (k >= 0 && per_element[i]) under_element[static_cast<std::size_t>(k)] = true;
    }
  }
  RowValues rv;
  rv.names.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const bool maximal = static_cast<int>(i) == expr.root || under_element[i];
    if (!per_element[i] && costly[i] && maximal) {
      rv.names[i] = prefix + std::to_string(rv.order.size());
      rv.order.push_back(static_cast<int>(i));
    }
  }
  return rv;
}

}  // namespace

namespace detail {

// (expr_tree.h)
std::string tensor_read(const ExprTensor& t, const std::string& x, bool element) {
  const char* at = element ? "_at" : "";
  switch (t.per) {
    case TensorDomain::kKeyToken:
      return fmt::format("{}load_key_token{}(prm.{}, prm.cu_seqlens_k, b, n_k, {})", kNs, at,
                         t.name, x);
    case TensorDomain::kQueryToken:
      return fmt::format("{}load_query_token{}(prm.{}, prm.cu_seqlens_q, b, n_q, n_k, {})", kNs,
                         at, t.name, x);
    case TensorDomain::kSequence:
      return fmt::format("{}load_sequence(prm.{}, b)", kNs, t.name);
    case TensorDomain::kHead:
      return fmt::format("{}load_bounded(prm.{}, prm.num_heads_q, {})", kNs, t.name, x);
    case TensorDomain::kKvHead:
      return fmt::format("{}load_bounded(prm.{}, prm.num_heads_kv, {})", kNs, t.name, x);
    case TensorDomain::kTable:
      return fmt::format("{}load_bounded(prm.{}, {}, {})", kNs, t.name,
                         t.size_arg.empty() ? std::to_string(t.size) : "prm." + t.size_arg, x);
  }
  return "";
}

// The value of a node per element, as one C++ expression; a hoisted value
// reads as its text in `reads` (a row value `r.<name>`, a column value;
// `reads` null: none, as in row() itself). In per-element code (reads
// given) a division by a runtime arg takes the element code's
// kPositiveDivisors, and *divides says one was emitted.
std::string value_code(const Expr& expr, int index, const std::vector<std::string>* rows,
                       bool* divides) {
  if (rows != nullptr && !(*rows)[static_cast<std::size_t>(index)].empty()) {
    return (*rows)[static_cast<std::size_t>(index)];
  }
  const ExprNode& n = expr.nodes[static_cast<std::size_t>(index)];
  const auto kid = [&](int k) { return value_code(expr, n.kids[k], rows, divides); };
  switch (n.op) {
    case ExprOp::kIntLit:
      return std::to_string(n.int_value);
    case ExprOp::kFloatLit:
      return float_literal(n.float_value);
    case ExprOp::kBoolLit:
      return n.bool_value ? "true" : "false";
    case ExprOp::kVar:
      return to_string(n.var);
    case ExprOp::kScalar:
      return "prm." + expr.context.scalars[static_cast<std::size_t>(n.index)].name;
    case ExprOp::kTensor:
      return detail::tensor_read(expr.context.tensors[static_cast<std::size_t>(n.index)], kid(0),
                         rows != nullptr);
    case ExprOp::kToFloat:
      return "static_cast<float>(" + kid(0) + ")";
    case ExprOp::kNot:
      return "(!" + kid(0) + ")";
    case ExprOp::kSelect:
      return "(" + kid(0) + " ? " + kid(1) + " : " + kid(2) + ")";
    case ExprOp::kExp:
      return std::string(kNs) + "fexp(" + kid(0) + ")";
    case ExprOp::kLog:
      return std::string(kNs) + "flog(" + kid(0) + ")";
    case ExprOp::kTanh:
      return std::string(kNs) + "ftanh(" + kid(0) + ")";
    case ExprOp::kSqrt:
      return std::string(kNs) + "fsqrt(" + kid(0) + ")";
    default:
      break;
  }
  if (const std::string* divisor = runtime_divisor(expr, n)) {
    const char* sign = "";
    if (rows != nullptr) {
      sign = "<kPositiveDivisors>";
      if (divides != nullptr) *divides = true;
    }
    return std::string(kNs) + (n.op == ExprOp::kDiv ? "div_by" : "mod_by") + sign + "(" +
           kid(0) + ", " + kid(1) + ", prm." + divisor_field(*divisor) + ")";
  }
  if (n.type == ExprType::kInt) {
    const char* f = int_function(n.op);
    if (n.op == ExprOp::kNeg || n.op == ExprOp::kAbs) return std::string(kNs) + f + "(" + kid(0) + ")";
    return std::string(kNs) + f + "(" + kid(0) + ", " + kid(1) + ")";
  }
  if (n.type == ExprType::kFloat) {
    switch (n.op) {
      case ExprOp::kNeg:
        return "(-" + kid(0) + ")";
      case ExprOp::kAbs:
        return std::string(kNs) + "fabs_(" + kid(0) + ")";
      case ExprOp::kMin:
        return std::string(kNs) + "fmin_(" + kid(0) + ", " + kid(1) + ")";
      case ExprOp::kMax:
        return std::string(kNs) + "fmax_(" + kid(0) + ", " + kid(1) + ")";
      default:
        break;
    }
  }
  if (n.op == ExprOp::kAnd || n.op == ExprOp::kOr) {
    // Both operands evaluated (user_expr.cuh land/lor): no branch per element.
    return std::string(kNs) + (n.op == ExprOp::kAnd ? "land(" : "lor(") + kid(0) + ", " + kid(1) +
           ")";
  }
  return "(" + kid(0) + " " + binary_spelling(n.op) + " " + kid(1) + ")";
}

}  // namespace detail

namespace {

using detail::value_code;

constexpr const char* kPositionParams = "int b, int h, int hk, int p, int j, int n_q, int n_k";

}  // namespace

std::string divisor_field(const std::string& arg) { return "attnjit_div_" + arg; }

const std::string* runtime_divisor(const Expr& expr, const ExprNode& n) {
  if (n.type != ExprType::kInt || (n.op != ExprOp::kDiv && n.op != ExprOp::kMod)) return nullptr;
  const ExprNode& d = expr.nodes[static_cast<std::size_t>(n.kids[1])];
  if (d.op != ExprOp::kScalar) return nullptr;
  return &expr.context.scalars[static_cast<std::size_t>(d.index)].name;
}

std::vector<std::string> runtime_divisors(const Expr& expr) {
  std::vector<std::string> names;
  for (const ExprNode& n : expr.nodes) {
    const std::string* divisor = runtime_divisor(expr, n);
    if (divisor != nullptr && std::find(names.begin(), names.end(), *divisor) == names.end()) {
      names.push_back(*divisor);
    }
  }
  return names;
}

namespace detail {

std::string key_bounds_traits(const ExprKeyBounds& bounds, bool row_key_bounds) {
  const bool any = !bounds.bounds.empty();
  return fmt::format(
      "  static constexpr bool has_key_bounds = {};\n"
      "  static constexpr bool key_bounds_whole_mask = {};\n"
      "  static constexpr bool key_bounds_exact_rows = {};\n"
      "  static constexpr bool key_bounds_below = {};\n"
      "  static constexpr bool key_bounds_above = {};\n"
      "  static constexpr bool has_row_key_bounds = {};\n",
      any, any && bounds.whole_mask, any && bounds.exact_rows, bounds.below, bounds.above,
      row_key_bounds);
}

}  // namespace detail

std::string emit_user_struct(const Expr* mask, const Expr* score, bool row_bound_compares) {
  if (mask != nullptr) {
    detail::check_expr_tree(*mask);
    if (mask->kind != ExprKind::kMask) malformed("the mask is not a mask expression");
  }
  if (score != nullptr) {
    detail::check_expr_tree(*score);
    if (score->kind != ExprKind::kScore) malformed("the score is not a score expression");
  }
  std::string out =
      "// The spec's expressions (docs/expressions.md), in canonical form:\n";
  if (mask != nullptr) out += "// mask: " + mask->canonical() + "\n";
  if (score != nullptr) out += "// score: " + score->canonical() + "\n";
  out += fmt::format(
      "struct attnjit_user {{\n"
      "  static constexpr bool has_mask = {};\n"
      "  static constexpr bool has_score = {};\n",
      mask != nullptr, score != nullptr);
  // The element code's trees (detail::element_form) and their row values: one
  // struct, one row().
  const Expr mask_elements = mask != nullptr ? detail::element_form(*mask) : Expr{};
  const Expr score_elements = score != nullptr ? detail::element_form(*score) : Expr{};
  if (mask != nullptr) detail::check_expr_tree(mask_elements);
  if (score != nullptr) detail::check_expr_tree(score_elements);
  const RowValues mask_rows = mask != nullptr ? row_values(mask_elements, "mask_") : RowValues{};
  const RowValues score_rows =
      score != nullptr ? row_values(score_elements, "score_") : RowValues{};
  // Column values (expr_columns.cpp), and what the element code reads for
  // each hoisted node.
  const detail::ColumnValues mask_cols = mask != nullptr
                                             ? detail::column_values(mask_elements, "mask_c")
                                             : detail::ColumnValues{};
  const detail::ColumnValues score_cols = score != nullptr
                                              ? detail::column_values(score_elements, "score_c")
                                              : detail::ColumnValues{};
  const auto reads_of = [](const RowValues& rows, const detail::ColumnValues& cols) {
    std::vector<std::string> reads(rows.names.size());
    for (std::size_t i = 0; i < reads.size(); ++i) {
      if (!rows.names[i].empty()) reads[i] = "r." + rows.names[i];
      if (!cols.reads[i].empty()) reads[i] = cols.reads[i];
    }
    return reads;
  };
  std::vector<std::string> mask_reads = reads_of(mask_rows, mask_cols);
  const std::vector<std::string> score_reads = reads_of(score_rows, score_cols);
  std::string fields, assignments;
  // The mask's one-sided bounding comparisons (detail::row_bound_compares)
  // as compares of j with a bound row() computes: `p - j <= w` as
  // `j >= r.lo`.
  const std::vector<detail::RowBoundCompare> row_compares =
      mask != nullptr && row_bound_compares ? detail::row_bound_compares(mask_elements)
                                            : std::vector<detail::RowBoundCompare>{};
  std::string bound_assignments;
  for (std::size_t k = 0; k < row_compares.size(); ++k) {
    const detail::RowBoundCompare& c = row_compares[k];
    const std::string name = fmt::format("mask_b{}", k);
    // One side: the bound itself (row_bound_compares keeps no two-sided one).
    std::string store, read;
    if (c.lower) {
      fields += fmt::format("    int {}_lo;\n", name);
      store = fmt::format("      r.{}_lo = lo;\n", name);
      read = fmt::format("(j >= r.{}_lo)", name);
    } else {
      fields += fmt::format("    int {}_hi;\n", name);
      store = fmt::format("      r.{}_hi = hi;\n", name);
      read = fmt::format("(j <= r.{}_hi)", name);
    }
    bound_assignments += "    {\n"
                         "      [[maybe_unused]] const int p_lo = p, p_hi = p, h_lo = h, h_hi = h;\n" +
                         detail::row_bound_body(mask_elements, c.bound) + store + "    }\n";
    mask_reads[static_cast<std::size_t>(c.node)] = read;
  }
  const Expr* mask_tree = mask != nullptr ? &mask_elements : nullptr;
  const Expr* score_tree = score != nullptr ? &score_elements : nullptr;
  for (const auto& [expr, rows] :
       {std::pair{mask_tree, &mask_rows}, std::pair{score_tree, &score_rows}}) {
    for (int index : rows->order) {
      const ExprNode& n = expr->nodes[static_cast<std::size_t>(index)];
      const std::string& name = rows->names[static_cast<std::size_t>(index)];
      // The language's type names (int, float, bool) are the C++ ones.
      fields += fmt::format("    {} {};\n", to_string(n.type), name);
      assignments += fmt::format("    r.{} = {};\n", name, value_code(*expr, index));
    }
  }
  assignments += bound_assignments;
  out += fmt::format(
      "  struct row_values {{\n"
      "{}"
      "  }};\n"
      "  template <class P>\n"
      "  __device__ static row_values row(const P& prm, int b, int h, int hk, int p, int n_q, "
      "int n_k) {{\n"
      "    row_values r{{}};\n"
      "{}"
      "    return r;\n"
      "  }}\n",
      fields, assignments);
  // The per-element code; where it divides by runtime args it is a
  // template of whether they are all positive (divisors_positive(), once
  // per tile), which spares each quotient its sign cases.
  bool divides = false;
  const std::string columns = detail::column_functions(
      {{mask_tree, &mask_cols}, {score_tree, &score_cols}}, &divides);
  const std::string mask_code =
      mask != nullptr ? value_code(mask_elements, mask_elements.root, &mask_reads, &divides)
                      : std::string();
  const std::string score_code =
      score != nullptr ? value_code(score_elements, score_elements.root, &score_reads, &divides)
                       : std::string();
  // With column values, mask() and score() read them too (`c`).
  const char* col_param = columns.empty() ? "" : "const col_values& c, ";
  const char* element_template =
      divides || !columns.empty() ? "  template <bool kPositiveDivisors, class P>\n" : "  template <class P>\n";
  std::vector<std::string> divisors;  // of both expressions, once each
  for (const Expr* expr : {mask, score}) {
    if (expr == nullptr) continue;
    for (const std::string& d : runtime_divisors(*expr)) {
      if (std::find(divisors.begin(), divisors.end(), d) == divisors.end()) divisors.push_back(d);
    }
  }
  std::string positive;
  for (const std::string& d : divisors) {
    positive += (positive.empty() ? "(prm." : " && (prm.") + d + " > 0)";
  }
  out += fmt::format(
      "  static constexpr bool has_divisors = {};\n"
      "  template <class P>\n"
      "  __device__ static bool divisors_positive(const P& prm) {{\n"
      "    return {};\n"
      "  }}\n",
      divides, divides ? positive : "true");
  out += columns;
  if (mask != nullptr) {
    out += fmt::format(
        "{}"
        "  __device__ static bool mask(const P& prm, const row_values& r, {}{}) {{\n"
        "    return {};\n"
        "  }}\n"
        "  template <class P>\n"
        "  __device__ static int classify(const P& prm, int b, int h_lo, int h_hi, int p_lo, "
        "int p_hi, int j_lo, int j_hi, int n_q, int n_k) {{\n"
        "{}"
        "  }}\n",
        element_template, col_param, kPositionParams, mask_code, detail::classify_body(*mask));
    // The key range the mask's bounding conjuncts leave a query tile
    // (expr_bounds.cpp); the kernels start their empty-tile scans inside it.
    const ExprKeyBounds bounds = key_bounds_of(*mask);
    // Where the whole mask is not a row's key range, the conjuncts that are
    // (detail::row_exact_conjuncts): row_key_bounds() at one row, and the
    // rest of the mask, mask_rest(), which the kernels test per key instead
    // of mask() where they fold the bounds into the row's range.
    const std::vector<detail::RowBoundCompare> folded =
        bounds.exact_rows || !row_bound_compares ? std::vector<detail::RowBoundCompare>{}
                                                 : detail::row_exact_conjuncts(mask_elements);
    out += detail::key_bounds_traits(bounds, !folded.empty());
    if (!folded.empty()) {
      ExprKeyBounds row_bounds;
      bool below = false, above = false;
      std::vector<std::string> rest_reads = mask_reads;
      for (const detail::RowBoundCompare& c : folded) {
        row_bounds.bounds.push_back(c.bound);
        below = below || c.lower;
        above = above || c.upper;
        rest_reads[static_cast<std::size_t>(c.node)] = "true";
      }
      bool rest_divides = false;
      const std::string rest_code =
          value_code(mask_elements, mask_elements.root, &rest_reads, &rest_divides);
      out += fmt::format(
          "  static constexpr bool row_key_bounds_below = {};\n"
          "  static constexpr bool row_key_bounds_above = {};\n"
          "  template <class P>\n"
          "  __device__ static void row_key_bounds(const P& prm, int b, int h, int hk, int p, int n_q, "
          "int n_k, long long& first, long long& last) {{\n"
          "    [[maybe_unused]] const int p_lo = p, p_hi = p, h_lo = h, h_hi = h;\n"
          "{}"
          "  }}\n"
          "{}"
          "  __device__ static bool mask_rest(const P& prm, const row_values& r, {}{}) {{\n"
          "    return {};\n"
          "  }}\n",
          below, above, detail::key_bounds_body(mask_elements, row_bounds), element_template,
          col_param, kPositionParams, rest_code);
    }
    if (!bounds.bounds.empty()) {
      out += fmt::format(
          "  template <class P>\n"
          "  __device__ static void key_bounds(const P& prm, int b, int h_lo, int h_hi, int p_lo, "
          "int p_hi, int n_q, int n_k, long long& first, long long& last) {{\n"
          "{}"
          "  }}\n",
          detail::key_bounds_body(*mask, bounds));
    }
  } else {
    out += detail::key_bounds_traits(ExprKeyBounds{});
  }
  if (score != nullptr) {
    out += fmt::format(
        "{}"
        "  __device__ static float score(const P& prm, const row_values& r, {}float s, {}) {{\n"
        "    return {};\n"
        "  }}\n",
        element_template, col_param, kPositionParams, score_code);
  }
  // The key tiles where the score is s itself, which skip it (expr.h
  // ExprScoreIdentity).
  const ExprScoreIdentity identity =
      score != nullptr ? score_identity_of(*score) : ExprScoreIdentity{};
  if (score != nullptr) {
    out += fmt::format("  static constexpr bool has_score_identity = {};\n", identity.possible());
  }
  if (identity.possible()) {
    out += fmt::format(
        "  template <class P>\n"
        "  __device__ static bool score_identity(const P& prm, int b, int h_lo, int h_hi, "
        "int p_lo, int p_hi, int j_lo, int j_hi, int n_q, int n_k) {{\n"
        "{}"
        "  }}\n",
        detail::score_identity_body(*score, identity));
  }
  out += "};\n";
  return out;
}

}  // namespace attnjit

// The expression language of a spec's `mask` and `score` (reference:
// docs/expressions.md): a hand-written lexer and recursive-descent parser,
// a type checker that makes every conversion explicit in the tree, a host
// evaluator (fp64 floats, wrapping int32), tile classification by interval
// analysis, and the emitter of the generated unit's `struct attnjit_user`.
//
// Generated code is printed from the checked tree only: identifiers are
// variables from a fixed table or declared args (checked names), literals
// are typed values the emitter prints; no text of the expression is pasted.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

// The public C++ API: exported from libattnjit.so (the build hides the rest).
#pragma GCC visibility push(default)

namespace attnjit {

enum class ExprType { kInt, kFloat, kBool };
const char* to_string(ExprType type);  // "int", "float", "bool"

// How an expression tensor is indexed (the arg's `per` key).
enum class TensorDomain {
  kKeyToken,    // t[x]: key position x of the sequence, row cu_seqlens_k[b] + x
  kQueryToken,  // t[x]: query position x (key axis), row cu_seqlens_q[b] + x - (n_k - n_q)
  kSequence,    // t[b]: one value per sequence; the index must be `b`
  kHead,        // t[x]: x in [0, num_heads_q)
  kKvHead,      // t[x]: x in [0, num_heads_kv)
  kTable,       // t[x]: x in [0, size), size a literal or an int32 arg
};
const char* to_string(TensorDomain domain);  // "key_token", ...
// The domain named by a `per` value, or false.
bool parse_tensor_domain(std::string_view text, TensorDomain& domain);

// What an expression may read besides its variables: the spec's int32 and
// float scalar args and its tensor args (`per`).
struct ExprScalar {
  std::string name;
  ExprType type = ExprType::kInt;  // kInt (int32) or kFloat
};
struct ExprTensor {
  std::string name;
  ExprType elem = ExprType::kInt;  // kInt (const int32*) or kFloat (const float*)
  TensorDomain per = TensorDomain::kKeyToken;
  int64_t size = 0;       // kTable: a literal size, or
  std::string size_arg;   // kTable: an int32 scalar arg holding it
  // Values do not decrease over the domain (int32, not per sequence): a
  // read over an index range lies between the reads at its clipped ends.
  bool sorted = false;
};
struct ExprContext {
  std::vector<ExprScalar> scalars;
  std::vector<ExprTensor> tensors;
  // Names of other args, which an expression cannot read (for the message).
  std::vector<std::string> other_args;
  // int32 args num_heads_q and num_heads_kv exist: classification bounds
  // hk by h / (num_heads_q / num_heads_kv), else by [0, h].
  bool has_head_counts = false;
};

enum class ExprKind { kMask, kScore };  // mask: bool; score: float, may read `s`

enum class ExprVar { kP, kJ, kB, kH, kHk, kNq, kNk, kS };
const char* to_string(ExprVar var);  // its name in the language

enum class ExprOp {
  kIntLit, kFloatLit, kBoolLit,
  kVar,      // var
  kScalar,   // index: ExprContext::scalars
  kTensor,   // index: ExprContext::tensors; kids[0] the index
  kToFloat,  // int -> float (the checker's only conversion)
  kNeg, kNot, kAbs,
  kAdd, kSub, kMul, kDiv, kMod,
  kEq, kNe, kLt, kLe, kGt, kGe,
  kAnd, kOr,
  kMin, kMax,
  kSelect,  // kids: condition, then, else
  kExp, kLog, kTanh, kSqrt,
};

// A binary operator as the language spells it ("+", "==", "and", ...;
// "?" for an op that is none).
const char* binary_spelling(ExprOp op);
// A function's name in the language ("min", "select", ...; "?" for none).
const char* function_spelling(ExprOp op);
// A float literal's fp32 value as the canonical form prints it ("2.0",
// "0.1"); the emitted code adds the `f`.
std::string float_text(double value);

struct ExprNode {
  ExprOp op = ExprOp::kIntLit;
  ExprType type = ExprType::kInt;
  int32_t int_value = 0;  // kIntLit
  double float_value = 0; // kFloatLit: a value exactly representable as fp32
  bool bool_value = false;
  ExprVar var = ExprVar::kP;
  int index = -1;          // kScalar, kTensor
  int kids[3] = {-1, -1, -1};
  int offset = 0;          // 0-based offset in the expression text
};

struct Expr {
  ExprKind kind = ExprKind::kMask;
  std::vector<ExprNode> nodes;  // children before parents
  int root = -1;
  ExprContext context;  // what kScalar / kTensor indices refer to
  std::string text;     // as written
  // The canonical form: fully parenthesized, literals re-printed. Parsing
  // it gives the same tree.
  std::string canonical() const;
  ExprType type() const { return nodes.at(root).type; }
};

// Limits: longer text, deeper nesting and larger trees are errors.
constexpr std::size_t kMaxExprLength = 4096;
constexpr int kMaxExprDepth = 64;     // nodes on a path of the tree
constexpr int kMaxExprNesting = 256;  // parentheses, calls, indexes, prefix operators in the text

// Parses and checks. `file`, `line` and `column` locate the first character
// of `text` (one line) in its file; errors are Error(kSpec)
// "file:line:column: message" with the column of the offending token.
Expr parse_expr(std::string_view text, ExprKind kind, const ExprContext& context,
                const std::string& file, int line, int column);

// --- Host evaluation (the CPU reference) ------------------------------------

// The data a tensor arg points to, whole (as the kernel sees it).
struct ExprTensorData {
  std::vector<int32_t> ints;    // elem kInt
  std::vector<double> floats;   // elem kFloat (fp32 values)
};

struct ExprEnv {
  int b = 0, h = 0, hk = 0, p = 0, j = 0, n_q = 0, n_k = 0;
  double s = 0;                          // score only
  std::vector<double> scalars;           // per ExprContext::scalars (int32 values exactly)
  std::vector<ExprTensorData> tensors;   // per ExprContext::tensors
  std::vector<int32_t> cu_seqlens_q, cu_seqlens_k;  // key/query token tensors
  int num_heads_q = 0, num_heads_kv = 0;            // head tensors, hk bounds
};

// One value of any type.
struct ExprValue {
  ExprType type = ExprType::kInt;
  int32_t i = 0;
  double f = 0;
  bool b = false;
};

// int32 as the device computes it; floats in fp64. Throws Error(kArgument)
// when a tensor read needs an element past the data given.
ExprValue evaluate(const Expr& expr, const ExprEnv& env);
bool evaluate_mask(const Expr& expr, const ExprEnv& env);
double evaluate_score(const Expr& expr, const ExprEnv& env);  // env.s is the score

// --- Tile classification -----------------------------------------------------

// A tile: sequence env.b, query heads [h_lo, h_hi], query positions
// [p_lo, p_hi], key positions [j_lo, j_hi] (each lo <= hi); runtime scalars
// and tensor elements at a single index are exact (from env), other tensor
// values and every float are unknown.
struct ExprTile {
  int h_lo = 0, h_hi = 0, p_lo = 0, p_hi = 0, j_lo = 0, j_hi = 0;
};
enum class TileClass { kEmpty = 0, kPartial = 1, kFull = 2 };
const char* to_string(TileClass tile_class);
// Sound: kEmpty only when the mask is false for every pair of the tile,
// kFull only when it is true for every pair. The same algorithm as the
// emitted classify().
TileClass classify_mask(const Expr& mask, const ExprTile& tile, const ExprEnv& env);

// --- Key bounds --------------------------------------------------------------

// A conjunct of the mask that bounds the key position j
// (user_expr.cuh key_bound): X cmp y, or abs(X) cmp y for < and <=, with
// X = sj * j + t or X = j / c, and y, t, c int nodes free of j.
struct ExprKeyBound {
  int cmp = 0;              // expr::kCmpLt, kCmpLe, kCmpGt, kCmpGe, kCmpEq
  int sj = 1;               // +1 or -1
  int t = -1;               // t's node; -1: t = 0
  bool t_negated = false;   // t is minus its node (X = j - node)
  int y = -1;               // y's node
  bool abs_form = false;
  int divisor = -1;         // X = j / divisor's node (sj 1, no t); -1: none
};
struct ExprKeyBounds {
  std::vector<ExprKeyBound> bounds;  // one per bounding conjunct of the root's `and` tree
  // Every conjunct is one of them: the bounds are the whole mask's shape,
  // and the kernels skip the per-tile scans for empty tiles at the ends.
  bool whole_mask = false;
  // whole_mask, and for one query row (one p, one head) the bounds give
  // exactly its visible keys whatever the args: every bound is j, j - p or
  // p - j (which never wrap for a row's positions, p in [n_k - n_q,
  // n_k - 1]) or abs() of one, against a literal, a variable or a scalar,
  // with no divisor. The kernels then fold each row's interval
  // into the built-in key range once and test no key against the mask.
  bool exact_rows = false;
  // Some bound limits j from below (j >= ..., p - j <= ..., abs) / from
  // above (j <= ..., j - p <= ..., abs): the sides a row's range narrows.
  bool below = false, above = false;
};
// The bounding conjuncts of a mask (none for a mask without one).
ExprKeyBounds key_bounds_of(const Expr& mask);
// The key positions [first, last] of [0, env.n_k - 1] that the bounds
// leave for the tile's heads and positions (its j range is not read); the
// emitted key_bounds() computes the same. Sound: every visible pair of the
// tile has its j inside. first > last: no key is visible.
struct KeySpan {
  int64_t first = 0, last = -1;
};
KeySpan key_bounds(const Expr& mask, const ExprTile& tile, const ExprEnv& env);

// --- Tiles where the score is the identity ------------------------------------

// A score that is a sum (+ and -, in any grouping) of s once with a plus
// sign and terms t_i (s + t, t + s, s - t, s + a + b, ...) is s itself on a
// tile where every t_i is exactly zero for every pair; the kernels then
// skip the score there (a bias on key 0 touches one key tile of a row's
// many). A term is zero when the
// tests below hold by the interval analysis classify runs: a float literal
// 0.0; an int converted to float whose interval is the point 0; a sum,
// difference or negation of zeros; a select whose condition cannot be true
// (or false) on the tile and whose other side (or both sides) is zero. A
// product is never zero here (0 * inf is NaN).
struct ExprZeroTest {
  enum Kind { kNever, kAlways, kIntZero, kBoth, kSelect };
  Kind kind = kNever;
  int node = -1;       // kIntZero: the int node; kSelect: the condition's node
  int a = -1, b = -1;  // kBoth: two tests; kSelect: the then and else sides' tests
};
struct ExprScoreIdentity {
  std::vector<ExprZeroTest> tests;  // operands first; the last one is t's
  // Whether some tile can pass (the score has the form and t can be zero).
  bool possible() const { return !tests.empty() && tests.back().kind != ExprZeroTest::kNever; }
};
ExprScoreIdentity score_identity_of(const Expr& score);
// Sound: true only when score(s) == s for every s and every pair of the
// tile (up to the sign of a zero). The same algorithm as the emitted
// score_identity().
bool score_is_identity(const Expr& score, const ExprTile& tile, const ExprEnv& env);

// --- Emission ----------------------------------------------------------------

// `struct attnjit_user { ... };` for a generated unit (docs/expressions.md
// "Generated code"), preceded by comments holding each expression's
// canonical form. Either pointer may be null (has_mask / has_score false;
// the missing function is not emitted). Throws Error(kCodegen) for a tree
// that is not well formed (an Expr built by hand).
// row_bound_compares: a mask's comparisons that bound j exactly for a row
// read bounds row() computes, and its top-level conjuncts that do are
// folded into each row's key range (row_key_bounds, mask_rest;
// docs/expressions.md, "What an element test costs"); off, they stay per
// key, which the mma.sync path's many rows per thread hold in fewer
// registers (codegen turns them on for sm_90a only).
std::string emit_user_struct(const Expr* mask, const Expr* score, bool row_bound_compares = true);

// Division by a runtime int32 arg: an int `/` or `%` whose divisor is an
// int32 scalar arg divides through a multiplier the runtime computes per
// launch (divisor_magic, templates/common/int_divisor.cuh) into a hidden int64 params field,
// divisor_field(arg), which parse_spec appends to the spec's args.
std::string divisor_field(const std::string& arg);  // "attnjit_div_<arg>"
// The int32 arg that node n of expr (an int `/` or `%`) divides by, or
// null: the element code and classify() divide by it through the field.
const std::string* runtime_divisor(const Expr& expr, const ExprNode& n);
// Those args of `expr`, each once, in the order of first use.
std::vector<std::string> runtime_divisors(const Expr& expr);
// The field's value for a divisor d (0 for d <= 0, which the device
// divides without it).
int64_t divisor_multiplier(int32_t d);

// The header the emitted code includes (templates/attention/user_expr.cuh).
constexpr const char* kUserExprHeader = "attention/user_expr.cuh";

// --- The expression VM ---------------------------------------------------------

// A checked tree as a program of templates/attention/user_vm.cuh (its
// instruction format and limits), which one compiled kernel runs for any
// spec (docs/expressions.md "The expression VM"). Instruction i is node i
// of the tree. The scalar and tensor args it reads go to slots (int,
// float and tensor slots apart), given in order of first use and shared
// by the programs compiled with the same VmSlots (a spec's mask and
// score); a table sized by an int32 arg gives that arg a slot too.
struct VmSlots {
  std::vector<std::string> ints, floats, tensors;  // arg names, by slot
};
struct VmProgram {
  std::vector<uint32_t> code;  // two words per instruction
  int count = 0;               // instructions (0: no program)
  int result = 0;              // the root's register
};
// The program of a checked tree, or false (and why) when it does not fit
// the VM's limits (instructions, slots; `slots` may then hold more names
// than fit). Throws Error(kCodegen) for a tree that is not well formed, as
// emit_user_struct does.
bool compile_vm(const Expr& expr, VmSlots& slots, VmProgram& program, std::string* why = nullptr);

// The `struct attnjit_user` of the VM variant (expression_vm_spec): its
// mask and score run the programs its params hold; classify() says every
// tile is partial (the programs are not known when the kernel compiles).
std::string emit_vm_user_struct();
// The header it includes (templates/attention/user_vm.cuh).
constexpr const char* kUserVmHeader = "attention/user_vm.cuh";

}  // namespace attnjit

#pragma GCC visibility pop

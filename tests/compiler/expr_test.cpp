// The expression language (docs/expressions.md): lexer, parser and type
// checker errors with their exact positions, the evaluator's defined
// integer semantics, canonical printing and the emitter's output. The spec
// keys that carry expressions: expr_spec_test.cpp.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <initializer_list>

#include "attnjit/codegen.h"
#include "attnjit/expr.h"
#include "attnjit/nvrtc.h"
#include "attnjit/signature.h"
#include "attnjit/spec.h"
#include "test_support.h"

namespace attnjit {
namespace {

using testing::error_message;

ExprContext test_context() {
  ExprContext ctx;
  ctx.scalars = {{"chunk", ExprType::kInt}, {"temp", ExprType::kFloat}, {"wl", ExprType::kInt}};
  ExprTensor doc{"doc", ExprType::kInt, TensorDomain::kKeyToken, 0, ""};
  ExprTensor qdoc{"qdoc", ExprType::kInt, TensorDomain::kQueryToken, 0, ""};
  ExprTensor prefix{"prefix", ExprType::kInt, TensorDomain::kSequence, 0, ""};
  ExprTensor slopes{"slopes", ExprType::kFloat, TensorDomain::kHead, 0, ""};
  ExprTensor bias{"bias", ExprType::kFloat, TensorDomain::kTable, 4, ""};
  ctx.tensors = {doc, qdoc, prefix, slopes, bias};
  ctx.other_args = {"q", "k"};
  return ctx;
}

Expr parse(const std::string& text, ExprKind kind = ExprKind::kMask) {
  return parse_expr(text, kind, test_context(), "t.yaml", 3, 7);
}

// Each of `parts` appears in `text` (emitted code).
void expect_contains(const std::string& text, std::initializer_list<const char*> parts) {
  for (const char* part : parts) {
    EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;
  }
}

// The message for `text`, which starts at t.yaml:3:7.
std::string expr_error(const std::string& text, ExprKind kind = ExprKind::kMask) {
  return error_message([&] { parse(text, kind); }, ErrorKind::kSpec);
}

TEST(ExprErrors, Lexer) {
  EXPECT_EQ(expr_error("p && j"), "t.yaml:3:9: unexpected character '&' (use 'and')");
  EXPECT_EQ(expr_error("p || j"), "t.yaml:3:9: unexpected character '|' (use 'or')");
  EXPECT_EQ(expr_error("!(p < j)"), "t.yaml:3:7: unexpected character '!' (use 'not')");
  EXPECT_EQ(expr_error("p = j"), "t.yaml:3:9: unexpected character '=' (use '==' to compare)");
  EXPECT_EQ(expr_error("p < j ? true : false"),
            "t.yaml:3:13: unexpected character '?' (use select(c, a, b))");
  EXPECT_EQ(expr_error("p < j; system(1)"), "t.yaml:3:12: unexpected character ';'");
  EXPECT_EQ(expr_error("p < \"j\""), "t.yaml:3:11: unexpected character '\"'");
  EXPECT_EQ(expr_error("p < j\n"), "t.yaml:3:12: unexpected character '\\n'");
  EXPECT_EQ(expr_error("p < 12abc"), "t.yaml:3:11: malformed number '12abc'");
  EXPECT_EQ(expr_error("p < 1."), "t.yaml:3:11: malformed number '1.'");
  EXPECT_EQ(expr_error("p < 1e"), "t.yaml:3:11: malformed number '1e'");
  EXPECT_EQ(expr_error("p < 0x10"), "t.yaml:3:11: malformed number '0x10'");
  EXPECT_EQ(expr_error("p < 2147483648"),
            "t.yaml:3:11: integer literal '2147483648' is out of range for int (0 to 2147483647; "
            "write -2147483647 - 1 for the least int)");
  EXPECT_EQ(expr_error("temp < 1e39"), "t.yaml:3:14: float literal '1e39' is out of range for float");
}

TEST(ExprErrors, Syntax) {
  EXPECT_EQ(expr_error(""), "t.yaml:3:7: mask is empty");
  EXPECT_EQ(expr_error("   ", ExprKind::kScore), "t.yaml:3:7: score is empty");
  EXPECT_EQ(expr_error("p <"), "t.yaml:3:10: expected an expression, got end of expression");
  EXPECT_EQ(expr_error("(p < j"), "t.yaml:3:13: expected ')', got end of expression");
  EXPECT_EQ(expr_error("p < j)"), "t.yaml:3:12: unexpected ')' after the expression");
  EXPECT_EQ(expr_error("p < j j"), "t.yaml:3:13: unexpected 'j' after the expression");
  EXPECT_EQ(expr_error("0 < p < 5"),
            "t.yaml:3:13: comparisons do not chain: write 'a < b and b < c'");
  EXPECT_EQ(expr_error("doc[p < j"), "t.yaml:3:16: expected ']', got end of expression");
  EXPECT_EQ(expr_error("min(p, j < 3"), "t.yaml:3:19: expected ')', got end of expression");
  EXPECT_EQ(expr_error("p < j and or"), "t.yaml:3:17: expected an expression, got 'or'");
  EXPECT_EQ(expr_error("1 + not true"),
            "t.yaml:3:11: 'not' binds looser than comparisons and arithmetic: write (not ...)");
}

TEST(ExprErrors, Names) {
  EXPECT_EQ(expr_error("p < chunkk"), "t.yaml:3:11: unknown name 'chunkk' (did you mean 'chunk'?)");
  EXPECT_EQ(expr_error("system(p) == 0"), "t.yaml:3:7: unknown function 'system'");
  EXPECT_EQ(expr_error("mni(p, j) == 0"),
            "t.yaml:3:7: unknown function 'mni' (did you mean 'min'?)");
  EXPECT_EQ(expr_error("p(1) == 0"), "t.yaml:3:7: 'p' is not a function");
  EXPECT_EQ(expr_error("min == 0"), "t.yaml:3:7: function 'min' needs its arguments in parentheses");
  EXPECT_EQ(expr_error("q[p] == 0"),
            "t.yaml:3:7: arg 'q' cannot be read by an expression (only int32 and float scalars, "
            "and const int32* or const float* args with 'per')");
  EXPECT_EQ(expr_error("s > 0.0"), "t.yaml:3:7: the score 's' is defined only in score");
  EXPECT_EQ(expr_error("p[0] == 0"), "t.yaml:3:8: 'p' is not a tensor and cannot be indexed");
  EXPECT_EQ(expr_error("chunk[0] == 0"),
            "t.yaml:3:12: 'chunk' is not a tensor and cannot be indexed");
  EXPECT_EQ(expr_error("doc == 0"), "t.yaml:3:7: tensor 'doc' must be indexed: doc[...]");
  EXPECT_EQ(expr_error("prefix[b + 1] > j"),
            "t.yaml:3:13: tensor 'prefix' is per sequence: index it with b");
  EXPECT_EQ(expr_error("doc[1.5] == 0"),
            "t.yaml:3:10: the index of tensor 'doc' must be int, got float");
  // Injection attempts never get past the lexer or the name lookup.
  EXPECT_EQ(expr_error("p < j); asm(\"trap;\""), "t.yaml:3:12: unexpected ')' after the expression");
  EXPECT_EQ(expr_error("__builtin_trap() == 0"), "t.yaml:3:7: unknown function '__builtin_trap'");
  EXPECT_EQ(expr_error("prm.q == 0"), "t.yaml:3:10: unexpected character '.'");
  EXPECT_EQ(expr_error("p < j // x"), "t.yaml:3:14: expected an expression, got '/'");
}

TEST(ExprErrors, Types) {
  EXPECT_EQ(expr_error("p + j"), "t.yaml:3:7: mask must be bool, got int");
  EXPECT_EQ(expr_error("p < j", ExprKind::kScore), "t.yaml:3:7: score must be float, got bool");
  EXPECT_EQ(expr_error("p and j"), "t.yaml:3:9: 'and' needs bool operands, got int and int");
  EXPECT_EQ(expr_error("p < j or 1"), "t.yaml:3:13: 'or' needs bool operands, got bool and int");
  EXPECT_EQ(expr_error("not p"), "t.yaml:3:7: 'not' needs a bool operand, got int");
  EXPECT_EQ(expr_error("-(p < j)"), "t.yaml:3:7: unary '-' needs an int or float operand, got bool");
  EXPECT_EQ(expr_error("(p < j) + 1 > 0"),
            "t.yaml:3:15: '+' needs int or float operands, got bool and int");
  EXPECT_EQ(expr_error("temp % 2 > 0"), "t.yaml:3:12: '%' needs int operands, got float and int");
  EXPECT_EQ(expr_error("(p < j) < true"), "t.yaml:3:15: '<' cannot compare bool and bool");
  EXPECT_EQ(expr_error("(p < j) == 1"), "t.yaml:3:15: '==' cannot compare bool and int");
  EXPECT_EQ(expr_error("min(p, j < 3) > 0"),
            "t.yaml:3:7: min needs int or float arguments, got int and bool");
  EXPECT_EQ(expr_error("min(p) > 0"), "t.yaml:3:7: min takes 2 arguments, got 1");
  EXPECT_EQ(expr_error("abs(p, j) > 0"), "t.yaml:3:7: abs takes 1 argument, got 2");
  EXPECT_EQ(expr_error("abs(true)"), "t.yaml:3:7: abs needs an int or float argument, got bool");
  EXPECT_EQ(expr_error("select(p, true, false)"),
            "t.yaml:3:7: the condition of select must be bool, got int");
  EXPECT_EQ(expr_error("select(p < j, true, 1)"),
            "t.yaml:3:7: the branches of select must have one type, got bool and int");
  EXPECT_EQ(expr_error("exp(p < j)", ExprKind::kScore),
            "t.yaml:3:7: exp needs a float (or int) argument, got bool");
}

TEST(ExprErrors, Limits) {
  std::string deep = "p < j";
  for (int i = 0; i < 70; ++i) deep = "(" + deep + ")";
  EXPECT_EQ(parse(deep).canonical(), "p < j");  // parentheses make no node
  for (int i = 0; i < 200; ++i) deep = "(" + deep + ")";
  EXPECT_EQ(expr_error(deep),
            "t.yaml:3:263: expression nests more than 256 parentheses, calls, indexes and prefix "
            "operators deep");
  std::string negs(100, '-');
  EXPECT_NE(expr_error(negs + "p < j").find("nests deeper than 64 levels"), std::string::npos);
  std::string sum = "p";
  for (int i = 0; i < 80; ++i) sum += " + p";
  EXPECT_NE(expr_error(sum + " < j").find("nests deeper than 64 levels"), std::string::npos);
  EXPECT_EQ(expr_error("p < j" + std::string(5000, ' ')),
            "t.yaml:3:7: expression is longer than 4096 characters");
}

TEST(Expr, TypesAndPromotion) {
  EXPECT_EQ(parse("p < j").type(), ExprType::kBool);
  const Expr score = parse("s - slopes[h] * abs(p - j)", ExprKind::kScore);
  EXPECT_EQ(score.type(), ExprType::kFloat);
  // An int score is promoted to float.
  const Expr int_score = parse("p - j", ExprKind::kScore);
  EXPECT_EQ(int_score.type(), ExprType::kFloat);
  EXPECT_EQ(int_score.nodes[int_score.root].op, ExprOp::kToFloat);
  // Mixed int and float arithmetic and comparisons promote the int.
  EXPECT_EQ(parse("temp * p < j").type(), ExprType::kBool);
  EXPECT_EQ(parse("select(p < j, 1, 2.5) < temp").type(), ExprType::kBool);
  EXPECT_EQ(parse("(p < j) == (j < p)").type(), ExprType::kBool);
}

TEST(Expr, CanonicalFormRoundTrips) {
  for (const char* text :
       {"p / chunk == j / chunk", "j < prefix[b] or j <= p", "doc[p] == doc[j] and not (j > p)",
        "-p + - -j * 3 % 5 >= min(abs(p), max(j, -2147483647 - 1))",
        "select(temp * 2 > 1.5e-3, p, j) != 0", "bias[j - p] < 0.1 or qdoc[p] == doc[j]"}) {
    const Expr first = parse(text);
    const Expr again = parse(first.canonical());
    EXPECT_EQ(first.canonical(), again.canonical()) << text;
    EXPECT_EQ(first.nodes.size(), again.nodes.size()) << text;
  }
  EXPECT_EQ(parse("p / chunk == j / chunk").canonical(), "(p / chunk) == (j / chunk)");
  EXPECT_EQ(parse("temp < 0.1").canonical(), "temp < 0.1");
  EXPECT_EQ(parse("temp < 3e38").canonical(), "temp < 3e+38");
  EXPECT_EQ(parse("temp < 2").canonical(), "temp < 2");
  EXPECT_EQ(parse("exp(2) < 1", ExprKind::kMask).canonical(), "exp(2) < 1");
}

ExprEnv env_for(int p, int j) {
  ExprEnv env;
  env.p = p;
  env.j = j;
  env.scalars = {0, 0.5, 0};
  return env;
}

int32_t eval_int(const std::string& text, int p, int j) {
  const Expr e = parse_expr(text, ExprKind::kScore, test_context(), "t", 1, 1);
  // score promotes: read the int below the promotion.
  Expr inner = e;
  inner.root = e.nodes[e.root].kids[0];
  return evaluate(inner, env_for(p, j)).i;
}

TEST(ExprEval, IntegerSemantics) {
  // Floored division and modulo.
  EXPECT_EQ(eval_int("p / j", 7, 2), 3);
  EXPECT_EQ(eval_int("p / j", -7, 2), -4);
  EXPECT_EQ(eval_int("p / j", 7, -2), -4);
  EXPECT_EQ(eval_int("p / j", -7, -2), 3);
  EXPECT_EQ(eval_int("p % j", 7, 2), 1);
  EXPECT_EQ(eval_int("p % j", -7, 2), 1);
  EXPECT_EQ(eval_int("p % j", 7, -2), -1);
  EXPECT_EQ(eval_int("p % j", -7, -2), -1);
  // Division by zero.
  EXPECT_EQ(eval_int("p / j", 7, 0), 0);
  EXPECT_EQ(eval_int("p % j", 7, 0), 7);
  EXPECT_EQ(eval_int("p % j", -7, 0), -7);
  // Two's-complement wrap-around.
  EXPECT_EQ(eval_int("p + j", INT_MAX, 1), INT_MIN);
  EXPECT_EQ(eval_int("p - j", INT_MIN, 1), INT_MAX);
  EXPECT_EQ(eval_int("p * j", 65536, 65536), 0);
  EXPECT_EQ(eval_int("p * j", INT_MAX, 2), -2);
  EXPECT_EQ(eval_int("-p", INT_MIN, 0), INT_MIN);
  EXPECT_EQ(eval_int("abs(p)", INT_MIN, 0), INT_MIN);
  EXPECT_EQ(eval_int("p / j", INT_MIN, -1), INT_MIN);
  EXPECT_EQ(eval_int("p % j", INT_MIN, -1), 0);
  EXPECT_EQ(eval_int("-2147483647 - 1", 0, 0), INT_MIN);
  EXPECT_EQ(eval_int("min(p, j) + max(p, j)", -3, 9), 6);
}

TEST(ExprEval, MasksScoresAndTensors) {
  const ExprContext ctx = test_context();
  ExprEnv env;
  env.b = 1;
  env.n_q = 2;
  env.n_k = 4;
  env.h = 1;
  env.num_heads_q = 2;
  env.scalars = {2, 0.5, 0};
  env.cu_seqlens_k = {0, 3, 7};
  env.cu_seqlens_q = {0, 1, 3};
  env.tensors.resize(5);
  env.tensors[0].ints = {9, 9, 9, 5, 5, 6, 6};   // doc: sequence 1 is rows 3..6
  env.tensors[1].ints = {9, 5, 6};               // qdoc: sequence 1 is rows 1..2
  env.tensors[2].ints = {0, 3};                  // prefix
  env.tensors[3].floats = {0.25, 0.5};           // slopes
  env.tensors[4].floats = {1, 2, 3, 4};          // bias
  const auto mask = [&](const std::string& text, int p, int j) {
    ExprEnv e = env;
    e.p = p;
    e.j = j;
    return evaluate_mask(parse_expr(text, ExprKind::kMask, ctx, "t", 1, 1), e);
  };
  EXPECT_TRUE(mask("p / chunk == j / chunk", 3, 2));
  EXPECT_FALSE(mask("p / chunk == j / chunk", 3, 1));
  EXPECT_TRUE(mask("j < prefix[b] or j <= p", 0, 2));
  EXPECT_FALSE(mask("j < prefix[b] or j <= p", 0, 3));
  EXPECT_TRUE(mask("doc[p] == doc[j]", 3, 2));   // 6 == 6
  EXPECT_FALSE(mask("doc[p] == doc[j]", 3, 1));  // 6 != 5
  EXPECT_TRUE(mask("doc[p] == 0 and doc[-1] == 0", 4, 0));  // outside the domain: 0
  // Query positions 2 and 3 (n_k - n_q = 2) are queries 0 and 1: rows 1, 2.
  EXPECT_TRUE(mask("qdoc[p] == 5 and qdoc[3] == 6 and qdoc[1] == 0", 2, 0));
  EXPECT_TRUE(mask("bias[j] == 3.0 and bias[4] == 0.0", 0, 2));
  ExprEnv e = env;
  e.s = 2.0;
  e.p = 3;
  e.j = 0;
  EXPECT_DOUBLE_EQ(
      evaluate_score(parse_expr("s - slopes[h] * abs(p - j)", ExprKind::kScore, ctx, "t", 1, 1), e),
      2.0 - 0.5 * 3);
  EXPECT_DOUBLE_EQ(evaluate_score(parse_expr("tanh(s / temp) * temp + sqrt(4) + log(exp(1.0))",
                                             ExprKind::kScore, ctx, "t", 1, 1),
                                  e),
                   std::tanh(4.0) * 0.5 + 2 + 1);
  // Data too short for a read is an argument error, not a crash.
  e.tensors[0].ints.resize(2);
  EXPECT_NE(error_message([&] {
              evaluate_mask(parse_expr("doc[j] == 0", ExprKind::kMask, ctx, "t", 1, 1), e);
            }, ErrorKind::kArgument).find("expression tensor 'doc' (key_token)"),
            std::string::npos);
}

TEST(ExprEmit, MaskAndScoreStruct) {
  const Expr mask = parse("p / chunk == j / chunk");
  const Expr score = parse("s * temp + 1.0", ExprKind::kScore);
  EXPECT_EQ(emit_user_struct(&mask, nullptr),
            "// The spec's expressions (docs/expressions.md), in canonical form:\n"
            "// mask: (p / chunk) == (j / chunk)\n"
            "struct attnjit_user {\n"
            "  static constexpr bool has_mask = true;\n"
            "  static constexpr bool has_score = false;\n"
            "  struct row_values {\n"
            "    int mask_0;\n"
            "  };\n"
            "  template <class P>\n"
            "  __device__ static row_values row(const P& prm, int b, int h, int hk, int p, int n_q, "
            "int n_k) {\n"
            "    row_values r{};\n"
            "    r.mask_0 = ::attnjit::expr::div_by(p, prm.chunk, prm.attnjit_div_chunk);\n"
            "    return r;\n"
            "  }\n"
            "  static constexpr bool has_divisors = true;\n"
            "  template <class P>\n"
            "  __device__ static bool divisors_positive(const P& prm) {\n"
            "    return (prm.chunk > 0);\n"
            "  }\n"
            "  template <bool kPositiveDivisors, class P>\n"
            "  __device__ static bool mask(const P& prm, const row_values& r, int b, int h, int hk, "
            "int p, int j, int n_q, int n_k) {\n"
            "    return (r.mask_0 == ::attnjit::expr::div_by<kPositiveDivisors>(j, prm.chunk, "
            "prm.attnjit_div_chunk));\n"
            "  }\n"
            "  template <class P>\n"
            "  __device__ static int classify(const P& prm, int b, int h_lo, int h_hi, int p_lo, "
            "int p_hi, int j_lo, int j_hi, int n_q, int n_k) {\n"
            "    const ::attnjit::expr::ival v0 = ::attnjit::expr::irange(p_lo, p_hi);\n"
            "    const ::attnjit::expr::ival v2 = ::attnjit::expr::idiv_by(v0, prm.chunk, "
            "prm.attnjit_div_chunk);\n"
            "    const ::attnjit::expr::ival v3 = ::attnjit::expr::irange(j_lo, j_hi);\n"
            "    const ::attnjit::expr::ival v5 = ::attnjit::expr::idiv_by(v3, prm.chunk, "
            "prm.attnjit_div_chunk);\n"
            "    const ::attnjit::expr::bval v6 = ::attnjit::expr::ieq(v2, v5);\n"
            "    return ::attnjit::expr::tile_class(v6);\n"
            "  }\n"
            "  static constexpr bool has_key_bounds = true;\n"
            "  static constexpr bool key_bounds_whole_mask = true;\n"
            "  static constexpr bool key_bounds_exact_rows = false;\n"
            "  static constexpr bool key_bounds_below = true;\n"
            "  static constexpr bool key_bounds_above = true;\n"
            "  static constexpr bool has_row_key_bounds = false;\n"
            "  template <class P>\n"
            "  __device__ static void key_bounds(const P& prm, int b, int h_lo, int h_hi, int p_lo, "
            "int p_hi, int n_q, int n_k, long long& first, long long& last) {\n"
            "    const ::attnjit::expr::ival v0 = ::attnjit::expr::irange(p_lo, p_hi);\n"
            "    const ::attnjit::expr::ival v2 = ::attnjit::expr::idiv_by(v0, prm.chunk, "
            "prm.attnjit_div_chunk);\n"
            "    const ::attnjit::expr::ival v4 = ::attnjit::expr::ipoint(prm.chunk);\n"
            "    ::attnjit::expr::key_bound(4, 1, ::attnjit::expr::ipoint(0), v2, false, v4, 0, "
            "n_k - 1, first, last);\n"
            "  }\n"
            "};\n");
  const std::string both = emit_user_struct(&mask, &score);
  EXPECT_NE(both.find("// score: (s * temp) + 1.0\n"), std::string::npos) << both;
  EXPECT_NE(both.find("  static constexpr bool has_score = true;\n"), std::string::npos);
  EXPECT_NE(both.find("  __device__ static float score(const P& prm, const row_values& r, float s, "
                      "int b, int h, int hk, int p, int j, int n_q, int n_k) {\n"
                      "    return ((s * prm.temp) + 1.0f);\n"),
            std::string::npos)
      << both;
  // An int operand of float arithmetic is promoted, explicitly.
  const Expr promoted = parse("s * temp + 1", ExprKind::kScore);
  EXPECT_NE(emit_user_struct(nullptr, &promoted).find("return ((s * prm.temp) + static_cast<float>(1));"),
            std::string::npos);
  const std::string score_only = emit_user_struct(nullptr, &score);
  EXPECT_EQ(score_only.find("mask("), std::string::npos);
  EXPECT_EQ(score_only.find("classify("), std::string::npos);
  // Tensor reads go through the bounds-checked loads of their domain; in
  // the element code a token read takes the form that clamps its index
  // into the domain (_at: a score's sequence has keys and queries).
  const Expr reads = parse("doc[p] == qdoc[j] and prefix[b] > 0 and slopes[h] > bias[j - p]");
  const std::string text = emit_user_struct(&reads, nullptr);
  expect_contains(
      text, {"::attnjit::expr::load_key_token(prm.doc, prm.cu_seqlens_k, b, n_k, p)",
             "::attnjit::expr::load_query_token_at(prm.qdoc, prm.cu_seqlens_q, b, n_q, n_k, j)",
             "::attnjit::expr::load_sequence(prm.prefix, b)",
             "::attnjit::expr::load_bounded(prm.slopes, prm.num_heads_q, h)",
             "::attnjit::expr::load_bounded(prm.bias, 4, ::attnjit::expr::sub(j, p))"});
  // The reads that depend on neither j nor s are row values, computed in
  // row() and read per element as r.<name>; the others stay per element.
  expect_contains(
      text,
      {"    r.mask_0 = ::attnjit::expr::load_key_token(prm.doc, prm.cu_seqlens_k, b, n_k, p);\n",
       "    r.mask_1 = (::attnjit::expr::load_sequence(prm.prefix, b) > 0);\n",
       "    r.mask_2 = ::attnjit::expr::load_bounded(prm.slopes, prm.num_heads_q, h);\n",
       "    int mask_0;\n    bool mask_1;\n    float mask_2;\n"});
  EXPECT_NE(text.find("return ::attnjit::expr::land(::attnjit::expr::land((r.mask_0 == "
                      "::attnjit::expr::load_query_token_at(prm.qdoc, prm.cu_seqlens_q, b, n_q, "
                      "n_k, j)), r.mask_1), (r.mask_2 > "),
            std::string::npos)
      << text;
  // Without any, the struct is empty and the expressions read none.
  const Expr plain = parse("p + j < chunk");
  const std::string none = emit_user_struct(&plain, nullptr);
  EXPECT_NE(none.find("  struct row_values {\n  };\n"), std::string::npos) << none;
  EXPECT_EQ(none.find("r."), std::string::npos) << none;
}

// A comparison that bounds j exactly for a row on one side, wherever it
// stands, reads the bound row() computes once (row_bound() at the row's
// point) instead of forming p - j per key; `j < x` compares j already and
// keeps its form, and so do a two-sided form (abs) and one that is not
// exact for a row (p + j).
TEST(ExprEmit, BoundingComparisonsCompareJWithTheRowsBounds) {
  const Expr mask = parse("j < chunk or p - j < wl or abs(j - p) <= chunk or p + j < wl");
  const std::string text = emit_user_struct(&mask, nullptr);
  expect_contains(text,
                  {"  struct row_values {\n    int mask_b0_lo;\n  };\n",
                   "::attnjit::expr::row_bound(0, -1, ", "(j < prm.chunk)", "(j >= r.mask_b0_lo)",
                   "(::attnjit::expr::iabs(::attnjit::expr::sub(j, p)) <= prm.chunk)",
                   "(::attnjit::expr::add(p, j) < prm.wl)"});
  EXPECT_EQ(text.find("sub(p, j)"), std::string::npos) << text;
  // Off (the mma.sync targets' units), every comparison keeps its form.
  const std::string off = emit_user_struct(&mask, nullptr, false);
  EXPECT_NE(off.find("(::attnjit::expr::sub(p, j) < prm.wl)"), std::string::npos) << off;
  EXPECT_EQ(off.find("row_bound"), std::string::npos) << off;
}

// The top-level conjuncts that are one row's key range, where the whole
// mask is not: row_key_bounds() at the row's point, and mask_rest() with
// them as `true`; a mask that is a row's range whole has neither (the
// kernels fold all of it), nor has one without such a conjunct.
TEST(ExprEmit, RowExactConjunctsLeaveTheRestToMaskRest) {
  const Expr mask = parse("j <= p and (j < chunk or p - j <= wl)");
  const std::string text = emit_user_struct(&mask, nullptr);
  expect_contains(
      text,
      {"  static constexpr bool has_row_key_bounds = true;\n"
       "  static constexpr bool row_key_bounds_below = false;\n"
       "  static constexpr bool row_key_bounds_above = true;\n",
       "__device__ static void row_key_bounds(const P& prm, int b, int h, int hk, int p, int n_q, "
       "int n_k, long long& first, long long& last) {",
       "::attnjit::expr::key_bound(1, 1, ::attnjit::expr::ipoint(0), v1, false, "
       "::attnjit::expr::ipoint(1), 0, n_k - 1, first, last);",
       "return ::attnjit::expr::land(true, ::attnjit::expr::lor((j < prm.chunk), "
       "(j >= r.mask_b0_lo)));"});
  for (const char* folded_whole : {"j <= p and p - j <= wl", "j < chunk or j <= p"}) {
    const Expr m = parse(folded_whole);
    EXPECT_NE(emit_user_struct(&m, nullptr).find("has_row_key_bounds = false;"), std::string::npos)
        << folded_whole;
  }
}

TEST(ExprEmit, RejectsMalformedTrees) {
  Expr bad = parse("p < j");
  bad.context.scalars.push_back({"x; asm(\"trap;\")", ExprType::kInt});
  EXPECT_NE(error_message([&] { emit_user_struct(&bad, nullptr); }, ErrorKind::kCodegen)
                .find("is not an identifier"),
            std::string::npos);
  Expr cyclic = parse("p < j");
  cyclic.nodes[0].kids[0] = 2;
  cyclic.nodes[0].op = ExprOp::kNeg;
  EXPECT_NE(error_message([&] { emit_user_struct(&cyclic, nullptr); }, ErrorKind::kCodegen)
                .find("bad child"),
            std::string::npos);
  Expr mistyped = parse("p < j");
  mistyped.nodes[mistyped.root].type = ExprType::kInt;
  EXPECT_NE(error_message([&] { emit_user_struct(&mistyped, nullptr); }, ErrorKind::kCodegen)
                .find("not well typed"),
            std::string::npos);
}

}  // namespace
}  // namespace attnjit

namespace attnjit {
namespace {

// The emitted struct and user_expr.cuh compile under NVRTC, with every
// function of the struct instantiated (the attention templates do not call
// them yet).
TEST(ExprNvrtc, EmittedCodeCompiles) {
  ExprContext ctx;
  ctx.scalars = {{"chunk", ExprType::kInt}, {"temp", ExprType::kFloat}};
  ctx.tensors = {{"doc", ExprType::kInt, TensorDomain::kKeyToken, 0, ""},
                 {"qdoc", ExprType::kInt, TensorDomain::kQueryToken, 0, ""},
                 {"prefix", ExprType::kInt, TensorDomain::kSequence, 0, ""},
                 {"slopes", ExprType::kFloat, TensorDomain::kHead, 0, ""},
                 {"kvt", ExprType::kInt, TensorDomain::kKvHead, 0, ""},
                 {"bias", ExprType::kFloat, TensorDomain::kTable, 0, "chunk"}};
  ctx.has_head_counts = true;
  const Expr mask = parse_expr(
      "(p / chunk == j / chunk or j < prefix[b]) and doc[p] == qdoc[j] and kvt[hk] % 3 != "
      "abs(-h) and bias[j] < temp",
      ExprKind::kMask, ctx, "t", 1, 1);
  const Expr score = parse_expr(
      "select(p >= j, s * temp, s) - slopes[h] * min(abs(p - j), 64) + exp(s) + log(temp) + "
      "tanh(s) + sqrt(max(s, 0.0))",
      ExprKind::kScore, ctx, "t", 1, 1);
  GeneratedSource source;
  source.name = "expr_probe.cu";
  source.entry = "expr_probe";
  source.text =
      "#include \"attention/user_expr.cuh\"\n"
      "struct Params {\n"
      "  int chunk; float temp; long long attnjit_div_chunk;\n"
      "  const int* doc; const int* qdoc; const int* prefix; const float* slopes;\n"
      "  const int* kvt; const float* bias; const int* cu_seqlens_q; const int* cu_seqlens_k;\n"
      "  int num_heads_q, num_heads_kv;\n"
      "  float* out; int* cls;\n"
      "};\n" +
      emit_user_struct(&mask, &score) +
      "struct PlainConfig {};\n"
      "struct UserConfig { using user = attnjit_user; };\n"
      "extern \"C\" __device__ const unsigned expr_probe_launch_info[4] = {128, 0, 1, 0};\n"
      "extern \"C\" __global__ void __launch_bounds__(128, 1) expr_probe(const __grid_constant__ "
      "Params prm) {\n"
      "  const int p = threadIdx.x, j = blockIdx.x;\n"
      "  static_assert(!::attnjit::expr::user_of<PlainConfig>::type::has_mask, \"no user\");\n"
      "  static_assert(::attnjit::expr::user_of<UserConfig>::type::has_score, \"its user\");\n"
      "  const attnjit_user::row_values r = attnjit_user::row(prm, 0, 1, 0, p, 4, 8);\n"
      "  static_assert(attnjit_user::has_divisors, \"j / chunk per element\");\n"
      "  const bool positive = attnjit_user::divisors_positive(prm);\n"
      "  if (positive ? attnjit_user::mask<true>(prm, r, 0, 1, 0, p, j, 4, 8)\n"
      "               : attnjit_user::mask<false>(prm, r, 0, 1, 0, p, j, 4, 8))\n"
      "    prm.out[p] = attnjit_user::score<false>(prm, r, 0.5f, 0, 1, 0, p, j, 4, 8);\n"
      "  prm.cls[p] = attnjit_user::classify(prm, 0, 0, 3, p, p + 63, j, j + 63, 4, 8);\n"
      "}\n";
  CompileOptions options;
  options.target = parse_target("sm_80");
  const CompiledKernel kernel = compile_source(source, options);
  EXPECT_FALSE(kernel.cubin.empty());
  EXPECT_NE(kernel.ptx.find(".entry expr_probe("), std::string::npos);
}

}  // namespace
}  // namespace attnjit

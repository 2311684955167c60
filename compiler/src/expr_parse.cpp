// parse_expr(): the lexer, the recursive-descent parser and the type
// checker of the expression language (docs/expressions.md); its names and
// canonical printer are expr_print.cpp. The checker runs as each node is built, so every node
// of a returned tree is typed, and int -> float promotions are explicit
// kToFloat nodes.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

#include "attnjit/error.h"
#include "attnjit/expr.h"
#include "names.h"

namespace attnjit {

namespace {

constexpr ExprVar kVars[] = {ExprVar::kP,  ExprVar::kJ,  ExprVar::kB,  ExprVar::kH,
                             ExprVar::kHk, ExprVar::kNq, ExprVar::kNk, ExprVar::kS};

struct FunctionInfo {
  const char* name;
  ExprOp op;
  int arity;
};
constexpr FunctionInfo kFunctions[] = {
    {"min", ExprOp::kMin, 2},   {"max", ExprOp::kMax, 2},   {"abs", ExprOp::kAbs, 1},
    {"select", ExprOp::kSelect, 3}, {"exp", ExprOp::kExp, 1},   {"log", ExprOp::kLog, 1},
    {"tanh", ExprOp::kTanh, 1}, {"sqrt", ExprOp::kSqrt, 1}};

const FunctionInfo* find_function(std::string_view name) {
  for (const FunctionInfo& f : kFunctions) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

}  // namespace

const char* function_spelling(ExprOp op) {
  for (const FunctionInfo& f : kFunctions) {
    if (f.op == op) return f.name;
  }
  return "?";
}

namespace {

enum class Tok {
  kInt, kFloat, kIdent, kLParen, kRParen, kLBracket, kRBracket, kComma,
  kPlus, kMinus, kStar, kSlash, kPercent, kEq, kNe, kLt, kLe, kGt, kGe, kEnd,
};

struct Token {
  Tok kind = Tok::kEnd;
  std::string_view text;
  int offset = 0;
};

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }


class Parser {
 public:
  Parser(std::string_view text, ExprKind kind, const ExprContext& context, const std::string& file,
         int line, int column)
      : text_(text), file_(file), line_(line), column_(column) {
    expr_.kind = kind;
    expr_.context = context;
    expr_.text = std::string(text);
  }

  Expr run() {
    if (text_.size() > kMaxExprLength) {
      fail(0, "expression is longer than " + std::to_string(kMaxExprLength) + " characters");
    }
    advance();
    if (tok_.kind == Tok::kEnd) fail(0, std::string(what()) + " is empty");
    const int root = parse_or();
    if (tok_.kind != Tok::kEnd) {
      fail(tok_.offset, "unexpected " + shown(tok_) + " after the expression");
    }
    const ExprType type = expr_.nodes[root].type;
    if (expr_.kind == ExprKind::kMask && type != ExprType::kBool) {
      fail(0, std::string("mask must be bool, got ") + to_string(type));
    }
    if (expr_.kind == ExprKind::kScore) {
      if (type == ExprType::kBool) fail(0, "score must be float, got bool");
      expr_.root = promote(root);
    } else {
      expr_.root = root;
    }
    return std::move(expr_);
  }

 private:
  const char* what() const { return expr_.kind == ExprKind::kMask ? "mask" : "score"; }

  [[noreturn]] void fail(int offset, const std::string& message) const {
    throw Error(ErrorKind::kSpec,
                fmt::format("{}:{}:{}: {}", file_, line_, column_ + offset, message));
  }

  static std::string shown(const Token& t) {
    if (t.kind == Tok::kEnd) return "end of expression";
    return detail::quoted(t.text);
  }

  // --- Lexer ---------------------------------------------------------------

  void advance() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
    tok_ = Token{Tok::kEnd, std::string_view(), static_cast<int>(pos_)};
    if (pos_ >= text_.size()) return;
    const std::size_t start = pos_;
    const char c = text_[pos_];
    const auto single = [&](Tok kind) {
      ++pos_;
      tok_ = Token{kind, text_.substr(start, 1), static_cast<int>(start)};
    };
    const auto pair = [&](char next, Tok two, Tok one) {
      if (pos_ + 1 < text_.size() && text_[pos_ + 1] == next) {
        pos_ += 2;
        tok_ = Token{two, text_.substr(start, 2), static_cast<int>(start)};
      } else {
        single(one);
      }
    };
    if (is_ident_start(c)) {
      while (pos_ < text_.size() && (is_ident_start(text_[pos_]) || is_digit(text_[pos_]))) ++pos_;
      tok_ = Token{Tok::kIdent, text_.substr(start, pos_ - start), static_cast<int>(start)};
      return;
    }
    if (is_digit(c)) return lex_number();
    switch (c) {
      case '(':
        return single(Tok::kLParen);
      case ')':
        return single(Tok::kRParen);
      case '[':
        return single(Tok::kLBracket);
      case ']':
        return single(Tok::kRBracket);
      case ',':
        return single(Tok::kComma);
      case '+':
        return single(Tok::kPlus);
      case '-':
        return single(Tok::kMinus);
      case '*':
        return single(Tok::kStar);
      case '/':
        return single(Tok::kSlash);
      case '%':
        return single(Tok::kPercent);
      case '<':
        return pair('=', Tok::kLe, Tok::kLt);
      case '>':
        return pair('=', Tok::kGe, Tok::kGt);
      case '=':
        if (pos_ + 1 < text_.size() && text_[pos_ + 1] == '=') return pair('=', Tok::kEq, Tok::kEq);
        fail(int(start), "unexpected character '=' (use '==' to compare)");
      case '!':
        if (pos_ + 1 < text_.size() && text_[pos_ + 1] == '=') return pair('=', Tok::kNe, Tok::kNe);
        fail(int(start), "unexpected character '!' (use 'not')");
      case '&':
        fail(int(start), "unexpected character '&' (use 'and')");
      case '|':
        fail(int(start), "unexpected character '|' (use 'or')");
      case '?':
        fail(int(start), "unexpected character '?' (use select(c, a, b))");
      default:
        break;
    }
    fail(int(start), "unexpected character " + detail::quoted(text_.substr(start, 1)));
  }

  // Decimal ints (int32), and floats: digits '.' digits [exponent] or
  // digits exponent, exactly representable after rounding to fp32 and finite.
  void lex_number() {
    const std::size_t start = pos_;
    bool is_float = false;
    while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '.') {
      is_float = true;
      ++pos_;
      const std::size_t fraction = pos_;
      while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
      if (pos_ == fraction) bad_number(start);
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      is_float = true;
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      const std::size_t digits = pos_;
      while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
      if (pos_ == digits) bad_number(start);
    }
    if (pos_ < text_.size() && (is_ident_start(text_[pos_]) || is_digit(text_[pos_]) ||
                                text_[pos_] == '.')) {
      bad_number(start);
    }
    tok_ = Token{is_float ? Tok::kFloat : Tok::kInt, text_.substr(start, pos_ - start),
                 static_cast<int>(start)};
  }

  [[noreturn]] void bad_number(std::size_t start) const {
    std::size_t end = pos_;
    while (end < text_.size() && (is_ident_start(text_[end]) || is_digit(text_[end]) ||
                                  text_[end] == '.')) {
      ++end;
    }
    fail(int(start), "malformed number " + detail::quoted(text_.substr(start, end - start)));
  }

  // --- Tree ----------------------------------------------------------------

  int add(ExprNode node) {
    int depth = 1;
    for (int kid : node.kids) {
      if (kid >= 0) depth = std::max(depth, depths_[kid] + 1);
    }
    if (depth > kMaxExprDepth) {
      fail(node.offset, "expression nests deeper than " + std::to_string(kMaxExprDepth) +
                            " levels (each operator, call and index is one)");
    }
    expr_.nodes.push_back(node);
    depths_.push_back(depth);
    return static_cast<int>(expr_.nodes.size()) - 1;
  }

  ExprType type_of(int node) const { return expr_.nodes[node].type; }

  // int -> float; anything else unchanged.
  int promote(int node) {
    if (type_of(node) != ExprType::kInt) return node;
    ExprNode n;
    n.op = ExprOp::kToFloat;
    n.type = ExprType::kFloat;
    n.kids[0] = node;
    n.offset = expr_.nodes[node].offset;
    return add(n);
  }

  bool numeric(int node) const {
    return type_of(node) == ExprType::kInt || type_of(node) == ExprType::kFloat;
  }

  int binary(ExprOp op, int a, int b, int offset) {
    const std::string spelling = binary_spelling(op);
    const std::string got = fmt::format("{} and {}", to_string(type_of(a)), to_string(type_of(b)));
    ExprNode n;
    n.op = op;
    n.offset = offset;
    switch (op) {
      case ExprOp::kAnd:
      case ExprOp::kOr:
        if (type_of(a) != ExprType::kBool || type_of(b) != ExprType::kBool) {
          fail(offset, "'" + spelling + "' needs bool operands, got " + got);
        }
        n.type = ExprType::kBool;
        break;
      case ExprOp::kMod:
        if (type_of(a) != ExprType::kInt || type_of(b) != ExprType::kInt) {
          fail(offset, "'%' needs int operands, got " + got);
        }
        n.type = ExprType::kInt;
        break;
      case ExprOp::kAdd:
      case ExprOp::kSub:
      case ExprOp::kMul:
      case ExprOp::kDiv:
        if (!numeric(a) || !numeric(b)) {
          fail(offset, "'" + spelling + "' needs int or float operands, got " + got);
        }
        n.type = type_of(a) == ExprType::kInt && type_of(b) == ExprType::kInt ? ExprType::kInt
                                                                               : ExprType::kFloat;
        break;
      case ExprOp::kEq:
      case ExprOp::kNe:
        if (type_of(a) == ExprType::kBool && type_of(b) == ExprType::kBool) {
          n.type = ExprType::kBool;
          break;
        }
        [[fallthrough]];
      default:  // ordering comparisons
        if (!numeric(a) || !numeric(b)) fail(offset, "'" + spelling + "' cannot compare " + got);
        n.type = ExprType::kBool;
        break;
    }
    // Mixed int and float: the int operand is promoted.
    if (numeric(a) && numeric(b) && type_of(a) != type_of(b)) {
      a = promote(a);
      b = promote(b);
    }
    n.kids[0] = a;
    n.kids[1] = b;
    return add(n);
  }

  // --- Grammar (docs/expressions.md "Grammar") -------------------------------

  struct DepthGuard {
    Parser& p;
    DepthGuard(Parser& parser, int offset) : p(parser) {
      // Bounds the recursion; the tree's own depth is checked in add().
      // Canonical text takes up to two levels per node of the tree.
      if (++p.nesting_ > kMaxExprNesting) {
        p.fail(offset, "expression nests more than " + std::to_string(kMaxExprNesting) +
                           " parentheses, calls, indexes and prefix operators deep");
      }
    }
    ~DepthGuard() { --p.nesting_; }
  };

  bool at_keyword(std::string_view word) const {
    return tok_.kind == Tok::kIdent && tok_.text == word;
  }

  int parse_or() {
    int left = parse_and();
    while (at_keyword("or")) {
      const int offset = tok_.offset;
      advance();
      left = binary(ExprOp::kOr, left, parse_and(), offset);
    }
    return left;
  }

  int parse_and() {
    int left = parse_not();
    while (at_keyword("and")) {
      const int offset = tok_.offset;
      advance();
      left = binary(ExprOp::kAnd, left, parse_not(), offset);
    }
    return left;
  }

  int parse_not() {
    if (!at_keyword("not")) return parse_comparison();
    const int offset = tok_.offset;
    DepthGuard guard(*this, offset);
    advance();
    const int operand = parse_not();
    if (type_of(operand) != ExprType::kBool) {
      fail(offset, std::string("'not' needs a bool operand, got ") + to_string(type_of(operand)));
    }
    ExprNode n;
    n.op = ExprOp::kNot;
    n.type = ExprType::kBool;
    n.kids[0] = operand;
    n.offset = offset;
    return add(n);
  }

  static std::optional<ExprOp> comparison(Tok kind) {
    switch (kind) {
      case Tok::kEq:
        return ExprOp::kEq;
      case Tok::kNe:
        return ExprOp::kNe;
      case Tok::kLt:
        return ExprOp::kLt;
      case Tok::kLe:
        return ExprOp::kLe;
      case Tok::kGt:
        return ExprOp::kGt;
      case Tok::kGe:
        return ExprOp::kGe;
      default:
        return std::nullopt;
    }
  }

  int parse_comparison() {
    const int left = parse_additive();
    const std::optional<ExprOp> op = comparison(tok_.kind);
    if (!op) return left;
    const int offset = tok_.offset;
    advance();
    const int right = parse_additive();
    if (comparison(tok_.kind)) {
      fail(tok_.offset, "comparisons do not chain: write 'a < b and b < c'");
    }
    return binary(*op, left, right, offset);
  }

  int parse_additive() {
    int left = parse_multiplicative();
    while (tok_.kind == Tok::kPlus || tok_.kind == Tok::kMinus) {
      const ExprOp op = tok_.kind == Tok::kPlus ? ExprOp::kAdd : ExprOp::kSub;
      const int offset = tok_.offset;
      advance();
      left = binary(op, left, parse_multiplicative(), offset);
    }
    return left;
  }

  int parse_multiplicative() {
    int left = parse_unary();
    while (tok_.kind == Tok::kStar || tok_.kind == Tok::kSlash || tok_.kind == Tok::kPercent) {
      const ExprOp op = tok_.kind == Tok::kStar    ? ExprOp::kMul
                        : tok_.kind == Tok::kSlash ? ExprOp::kDiv
                                                   : ExprOp::kMod;
      const int offset = tok_.offset;
      advance();
      left = binary(op, left, parse_unary(), offset);
    }
    return left;
  }

  int parse_unary() {
    if (tok_.kind != Tok::kMinus) return parse_primary();
    const int offset = tok_.offset;
    DepthGuard guard(*this, offset);
    advance();
    const int operand = parse_unary();
    if (!numeric(operand)) {
      fail(offset, std::string("unary '-' needs an int or float operand, got ") +
                       to_string(type_of(operand)));
    }
    ExprNode n;
    n.op = ExprOp::kNeg;
    n.type = type_of(operand);
    n.kids[0] = operand;
    n.offset = offset;
    return add(n);
  }

  void expect(Tok kind, const char* spelling) {
    if (tok_.kind != kind) {
      fail(tok_.offset, std::string("expected '") + spelling + "', got " + shown(tok_));
    }
    advance();
  }

  int parse_primary() {
    const Token t = tok_;
    switch (t.kind) {
      case Tok::kInt:
        return int_literal(t);
      case Tok::kFloat:
        return float_literal(t);
      case Tok::kLParen: {
        DepthGuard guard(*this, t.offset);
        advance();
        const int inner = parse_or();
        expect(Tok::kRParen, ")");
        return inner;
      }
      case Tok::kIdent:
        return parse_name();
      default:
        fail(t.offset, "expected an expression, got " + shown(t));
    }
  }

  int int_literal(const Token& t) {
    int64_t value = 0;
    const auto [end, error] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), value);
    if (error != std::errc() || end != t.text.data() + t.text.size() ||
        value > std::numeric_limits<int32_t>::max()) {
      fail(t.offset, "integer literal " + detail::quoted(t.text) + " is out of range for int " +
                         "(0 to 2147483647; write -2147483647 - 1 for the least int)");
    }
    advance();
    ExprNode n;
    n.op = ExprOp::kIntLit;
    n.type = ExprType::kInt;
    n.int_value = static_cast<int32_t>(value);
    n.offset = t.offset;
    return add(n);
  }

  int float_literal(const Token& t) {
    const std::string digits(t.text);
    char* end = nullptr;
    const double value = std::strtod(digits.c_str(), &end);
    const float rounded = static_cast<float>(value);
    if (end != digits.c_str() + digits.size() || !std::isfinite(rounded)) {
      fail(t.offset, "float literal " + detail::quoted(t.text) + " is out of range for float");
    }
    advance();
    ExprNode n;
    n.op = ExprOp::kFloatLit;
    n.type = ExprType::kFloat;
    n.float_value = static_cast<double>(rounded);
    n.offset = t.offset;
    return add(n);
  }

  std::vector<std::string> known_names() const {
    std::vector<std::string> names;
    for (ExprVar v : kVars) names.push_back(to_string(v));
    for (const ExprScalar& s : expr_.context.scalars) names.push_back(s.name);
    for (const ExprTensor& t : expr_.context.tensors) names.push_back(t.name);
    for (const FunctionInfo& f : kFunctions) names.push_back(f.name);
    for (const char* k : {"and", "or", "not", "true", "false"}) names.push_back(k);
    return names;
  }

  int parse_name() {
    const Token t = tok_;
    advance();
    if (t.text == "true" || t.text == "false") {
      ExprNode n;
      n.op = ExprOp::kBoolLit;
      n.type = ExprType::kBool;
      n.bool_value = t.text == "true";
      n.offset = t.offset;
      return add(n);
    }
    if (t.text == "and" || t.text == "or") {
      fail(t.offset, "expected an expression, got " + shown(t));
    }
    if (t.text == "not") {
      fail(t.offset, "'not' binds looser than comparisons and arithmetic: write (not ...)");
    }
    if (tok_.kind == Tok::kLParen) return parse_call(t);
    for (ExprVar v : kVars) {
      if (t.text != to_string(v)) continue;
      if (v == ExprVar::kS && expr_.kind == ExprKind::kMask) {
        fail(t.offset, "the score 's' is defined only in score");
      }
      if (tok_.kind == Tok::kLBracket) {
        fail(tok_.offset, detail::quoted(t.text) + " is not a tensor and cannot be indexed");
      }
      ExprNode n;
      n.op = ExprOp::kVar;
      n.type = v == ExprVar::kS ? ExprType::kFloat : ExprType::kInt;
      n.var = v;
      n.offset = t.offset;
      return add(n);
    }
    const ExprContext& ctx = expr_.context;
    for (std::size_t i = 0; i < ctx.scalars.size(); ++i) {
      if (t.text != ctx.scalars[i].name) continue;
      if (tok_.kind == Tok::kLBracket) {
        fail(tok_.offset, detail::quoted(t.text) + " is not a tensor and cannot be indexed");
      }
      ExprNode n;
      n.op = ExprOp::kScalar;
      n.type = ctx.scalars[i].type;
      n.index = static_cast<int>(i);
      n.offset = t.offset;
      return add(n);
    }
    for (std::size_t i = 0; i < ctx.tensors.size(); ++i) {
      if (t.text == ctx.tensors[i].name) return parse_index(t, static_cast<int>(i));
    }
    if (find_function(t.text) != nullptr) {
      fail(t.offset, "function " + detail::quoted(t.text) + " needs its arguments in parentheses");
    }
    for (const std::string& other : ctx.other_args) {
      if (t.text == other) {
        fail(t.offset, "arg " + detail::quoted(t.text) +
                           " cannot be read by an expression (only int32 and float scalars, "
                           "and const int32* or const float* args with 'per')");
      }
    }
    fail(t.offset, "unknown name " + detail::quoted(t.text) + detail::did_you_mean(t.text, known_names()));
  }

  int parse_index(const Token& name, int tensor) {
    const ExprTensor& decl = expr_.context.tensors[static_cast<std::size_t>(tensor)];
    if (tok_.kind != Tok::kLBracket) {
      fail(name.offset, "tensor " + detail::quoted(name.text) + " must be indexed: " +
                            std::string(name.text) + "[...]");
    }
    DepthGuard guard(*this, tok_.offset);
    const int bracket = tok_.offset;
    advance();
    const int index = parse_or();
    expect(Tok::kRBracket, "]");
    if (type_of(index) != ExprType::kInt) {
      fail(bracket, "the index of tensor " + detail::quoted(name.text) + " must be int, got " +
                        to_string(type_of(index)));
    }
    if (decl.per == TensorDomain::kSequence) {
      const ExprNode& i = expr_.nodes[index];
      if (i.op != ExprOp::kVar || i.var != ExprVar::kB) {
        fail(bracket, "tensor " + detail::quoted(name.text) +
                          " is per sequence: index it with b");
      }
    }
    ExprNode n;
    n.op = ExprOp::kTensor;
    n.type = decl.elem;
    n.index = tensor;
    n.kids[0] = index;
    n.offset = name.offset;
    return add(n);
  }

  int parse_call(const Token& name) {
    const FunctionInfo* f = find_function(name.text);
    if (f == nullptr) {
      std::vector<std::string> functions;
      for (const FunctionInfo& info : kFunctions) functions.push_back(info.name);
      const std::vector<std::string> names = known_names();
      const bool known =
          std::find(names.begin(), names.end(), std::string(name.text)) != names.end();
      if (known) fail(name.offset, detail::quoted(name.text) + " is not a function");
      fail(name.offset, "unknown function " + detail::quoted(name.text) +
                            detail::did_you_mean(name.text, functions));
    }
    DepthGuard guard(*this, name.offset);
    advance();  // (
    std::vector<int> args;
    if (tok_.kind != Tok::kRParen) {
      while (true) {
        args.push_back(parse_or());
        if (tok_.kind != Tok::kComma) break;
        advance();
      }
    }
    expect(Tok::kRParen, ")");
    if (static_cast<int>(args.size()) != f->arity) {
      fail(name.offset, fmt::format("{} takes {} argument{}, got {}", f->name, f->arity,
                                    f->arity == 1 ? "" : "s", args.size()));
    }
    ExprNode n;
    n.op = f->op;
    n.offset = name.offset;
    const std::string fname = f->name;
    switch (f->op) {
      case ExprOp::kMin:
      case ExprOp::kMax:
        if (!numeric(args[0]) || !numeric(args[1])) {
          fail(name.offset, fmt::format("{} needs int or float arguments, got {} and {}", fname,
                                        to_string(type_of(args[0])), to_string(type_of(args[1]))));
        }
        if (type_of(args[0]) != type_of(args[1])) {
          args[0] = promote(args[0]);
          args[1] = promote(args[1]);
        }
        n.type = type_of(args[0]);
        break;
      case ExprOp::kAbs:
        if (!numeric(args[0])) {
          fail(name.offset, std::string("abs needs an int or float argument, got ") +
                                to_string(type_of(args[0])));
        }
        n.type = type_of(args[0]);
        break;
      case ExprOp::kSelect: {
        if (type_of(args[0]) != ExprType::kBool) {
          fail(name.offset, std::string("the condition of select must be bool, got ") +
                                to_string(type_of(args[0])));
        }
        const ExprType a = type_of(args[1]);
        const ExprType b = type_of(args[2]);
        if (a != b && !(numeric(args[1]) && numeric(args[2]))) {
          fail(name.offset, fmt::format("the branches of select must have one type, got {} and {}",
                                        to_string(a), to_string(b)));
        }
        if (a != b) {
          args[1] = promote(args[1]);
          args[2] = promote(args[2]);
        }
        n.type = type_of(args[1]);
        break;
      }
      default:  // exp, log, tanh, sqrt
        if (!numeric(args[0])) {
          fail(name.offset, fmt::format("{} needs a float (or int) argument, got {}", fname,
                                        to_string(type_of(args[0]))));
        }
        args[0] = promote(args[0]);
        n.type = ExprType::kFloat;
        break;
    }
    for (std::size_t i = 0; i < args.size(); ++i) n.kids[i] = args[i];
    return add(n);
  }

  std::string_view text_;
  std::string file_;
  int line_, column_;
  std::size_t pos_ = 0;
  Token tok_;
  int nesting_ = 0;
  Expr expr_;
  std::vector<int> depths_;
};

}  // namespace

Expr parse_expr(std::string_view text, ExprKind kind, const ExprContext& context,
                const std::string& file, int line, int column) {
  return Parser(text, kind, context, file, line, column).run();
}

}  // namespace attnjit

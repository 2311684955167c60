// Random expressions over the whole grammar of docs/expressions.md, as
// text, for the property tests (tests/compiler/expr_classify_test.cpp),
// the host build of emitted code (tests/reference/expr_device_test.cpp)
// and the fuzzer's seeds. Every generated text type-checks in
// random_context(); binary operations are parenthesized, so the text's
// structure is the tree's.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "attnjit/expr.h"

namespace attnjit::testing {

// chunk, wl, wr (int32), temp (float); doc (key_token), qdoc (query_token),
// prefix (sequence), kvt (kv_head), bias (table of 6), all int32 except
// slopes (head, float); sdoc (key_token) and sbias (table of 6), sorted
// int32 (non-decreasing over their domains).
inline ExprContext random_context() {
  ExprContext ctx;
  ctx.scalars = {{"chunk", ExprType::kInt},
                 {"wl", ExprType::kInt},
                 {"temp", ExprType::kFloat},
                 {"wr", ExprType::kInt}};
  ctx.tensors = {{"doc", ExprType::kInt, TensorDomain::kKeyToken, 0, ""},
                 {"qdoc", ExprType::kInt, TensorDomain::kQueryToken, 0, ""},
                 {"prefix", ExprType::kInt, TensorDomain::kSequence, 0, ""},
                 {"kvt", ExprType::kInt, TensorDomain::kKvHead, 0, ""},
                 {"bias", ExprType::kInt, TensorDomain::kTable, 6, ""},
                 {"slopes", ExprType::kFloat, TensorDomain::kHead, 0, ""},
                 {"sdoc", ExprType::kInt, TensorDomain::kKeyToken, 0, "", true},
                 {"sbias", ExprType::kInt, TensorDomain::kTable, 6, "", true}};
  ctx.has_head_counts = true;
  return ctx;
}

class RandomExpr {
 public:
  // float_compares: masks may compare floats (whose value the device
  // computes in fp32 and the host evaluator in fp64).
  explicit RandomExpr(uint64_t seed, bool float_compares = true)
      : rng_(seed), float_compares_(float_compares) {}

  std::string mask(int depth) { return boolean(depth); }
  std::string score(int depth) { return floating(depth, true); }

  std::string integer(int depth) {
    if (depth <= 0 || pick(10) < 3) return int_leaf();
    switch (pick(14)) {
      case 0:
        return bin(integer(depth - 1), "+", integer(depth - 1));
      case 1:
        return bin(integer(depth - 1), "-", integer(depth - 1));
      case 2:
        return bin(integer(depth - 1), "*", integer(depth - 1));
      case 3:
        return bin(integer(depth - 1), "/", integer(depth - 1));
      case 4:
        return bin(integer(depth - 1), "%", integer(depth - 1));
      case 5:
        return "min(" + integer(depth - 1) + ", " + integer(depth - 1) + ")";
      case 6:
        return "max(" + integer(depth - 1) + ", " + integer(depth - 1) + ")";
      case 7:
        return "abs(" + integer(depth - 1) + ")";
      case 8:
        return "(-" + integer(depth - 1) + ")";
      case 9:
        return "select(" + boolean(depth - 1) + ", " + integer(depth - 1) + ", " +
               integer(depth - 1) + ")";
      case 10:
        return (pick(2) ? "doc[" : "sdoc[") + integer(depth - 1) + "]";
      case 11:
        return "qdoc[" + integer(depth - 1) + "]";
      case 12: {
        static const char* kTables[] = {"kvt[", "bias[", "sbias["};
        return kTables[pick(3)] + integer(depth - 1) + "]";
      }
      default:
        return bin(position(), pick(2) ? "/" : "%", divisor());
    }
  }

  std::string boolean(int depth) {
    if (depth <= 0 || pick(10) < 1) return pick(2) ? "true" : "false";
    static const char* kCompare[] = {"<", "<=", ">", ">=", "==", "!="};
    switch (pick(9)) {
      case 0:
      case 1:
      case 2:
        return bin(integer(depth - 1), kCompare[pick(6)], integer(depth - 1));
      case 3:
        return bin(boolean(depth - 1), "and", boolean(depth - 1));
      case 4:
        return bin(boolean(depth - 1), "or", boolean(depth - 1));
      case 5:
        return "(not " + boolean(depth - 1) + ")";
      case 6:
        return bin(boolean(depth - 1), pick(2) ? "==" : "!=", boolean(depth - 1));
      case 7:
        if (!float_compares_) return bin(integer(depth - 1), kCompare[pick(6)], position());
        return bin(floating(depth - 1, false), kCompare[pick(6)], floating(depth - 1, false));
      default:  // the shapes of real masks: positions against positions
        return bin(bin(position(), pick(2) ? "-" : "+", int_leaf()), kCompare[pick(6)],
                   position());
    }
  }

  std::string floating(int depth, bool score) {
    if (depth <= 0 || pick(10) < 3) {
      switch (pick(4)) {
        case 0:
          return score ? "s" : "temp";
        case 1:
          return "temp";
        case 2:
          return "slopes[" + (depth > 0 ? integer(depth - 1) : std::string("h")) + "]";
        default:
          return pick(2) ? "0.5" : "1.25e-1";
      }
    }
    static const char* kOps[] = {"+", "-", "*", "/"};
    static const char* kFunctions[] = {"exp", "log", "tanh", "sqrt", "abs"};
    switch (pick(5)) {
      case 0:
        return bin(floating(depth - 1, score), kOps[pick(4)], floating(depth - 1, score));
      case 1:  // mixed: the int is promoted
        return bin(floating(depth - 1, score), kOps[pick(4)], integer(depth - 1));
      case 2:
        return std::string(kFunctions[pick(5)]) + "(" + floating(depth - 1, score) + ")";
      case 3:
        return std::string(pick(2) ? "min(" : "max(") + floating(depth - 1, score) + ", " +
               integer(depth - 1) + ")";
      default:
        return "select(" + boolean(depth - 1) + ", " + floating(depth - 1, score) + ", " +
               floating(depth - 1, score) + ")";
    }
  }

 private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }

  static std::string bin(const std::string& a, const char* op, const std::string& b) {
    return "(" + a + " " + op + " " + b + ")";
  }

  std::string position() {
    static const char* kPositions[] = {"p", "j", "p", "j", "h", "hk"};
    return kPositions[pick(6)];
  }

  std::string divisor() {
    static const char* kDivisors[] = {"chunk", "3", "64", "wl", "1", "0", "wr"};
    return kDivisors[pick(7)];
  }

  std::string int_leaf() {
    static const char* kLeaves[] = {"p",   "j",     "p",  "j",   "b",  "h",
                                    "hk",  "n_q",   "n_k", "chunk", "wl", "prefix[b]"};
    switch (pick(5)) {
      case 0:
        return std::to_string(pick(10));
      case 1:
        if (pick(4) == 0) return pick(2) ? "2147483647" : "(-2147483647 - 1)";
        return std::to_string(pick(200));
      default:
        return kLeaves[pick(12)];
    }
  }

  std::mt19937_64 rng_;
  bool float_compares_;
};

}  // namespace attnjit::testing

// libFuzzer target: parse_expr() (lexer, parser, type checker) over
// arbitrary text, as a mask or a score (the input's first byte picks one),
// in the context of support/expr_random.h.
//
// A finding is: a crash, sanitizer report, hang or blow-up; an exception
// other than attnjit::Error(kSpec) out of parse_expr, or one whose message
// is not one line at "fuzz.yaml:1:<column>" inside the text; an accepted
// expression whose canonical form does not parse back to itself, whose
// emitted struct breaks the generated-text rules (no control byte, no
// backslash, no block comment, no preprocessor line) or is rejected by the
// emitter; an evaluation or classification that throws; or an expression
// the expression VM refuses within its limits, whose program's run is
// caught by a sanitizer, or (int and bool only: no rounding) whose VM value
// differs from the evaluator's.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <map>
#include <vector>

#include "attention/user_vm.cuh"
#include "attnjit/error.h"
#include "attnjit/expr.h"
#include "fuzz/generated_source_check.h"
#include "support/expr_random.h"

namespace {

using namespace attnjit;

[[noreturn]] void finding(const std::string& what, const std::string& detail) {
  std::fprintf(stderr, "attnjit fuzz finding: %s\n%s\n", what.c_str(), detail.c_str());
  std::abort();
}

const ExprContext& context() {
  static const ExprContext ctx = testing::random_context();
  return ctx;
}

ExprEnv environment() {
  ExprEnv env;
  env.b = 1;
  env.n_q = 3;
  env.n_k = 5;
  env.h = 3;
  env.hk = 1;
  env.p = 4;
  env.j = 2;
  env.s = 0.75;
  env.cu_seqlens_q = {0, 2, 5};
  env.cu_seqlens_k = {0, 4, 9};
  env.num_heads_q = 8;
  env.num_heads_kv = 2;
  env.scalars = {3, -1, 0.5, 7};
  env.tensors.resize(8);
  env.tensors[0].ints = {0, 1, 1, 2, 2, 2, 3, 3, 4};
  env.tensors[1].ints = {5, 6, 7, 8, 9};
  env.tensors[2].ints = {10, 20};
  env.tensors[3].ints = {1, 2};
  env.tensors[4].ints = {1, 2, 3, 4, 5, 6};
  env.tensors[5].floats = {0.5, 0.25, 0.125, 1, 2, 3, 4, 5};
  env.tensors[6].ints = {0, 0, 1, 3, -2, -2, 0, 4, 4};  // sorted per sequence
  env.tensors[7].ints = {-1, 0, 0, 2, 5, 9};            // sorted
  return env;
}

// The VM's value of `expr` at `env` (random_context()'s args in the slots
// compile_vm gives them); false when it refuses (reason in *why).
bool run_vm(const Expr& expr, const ExprEnv& env, int& value, std::string* why) {
  VmProgram program;
  VmSlots slots;
  if (!compile_vm(expr, slots, program, why)) return false;
  const ExprContext& ctx = context();
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < ctx.scalars.size(); ++i) index[ctx.scalars[i].name] = i;
  for (std::size_t i = 0; i < ctx.tensors.size(); ++i) index[ctx.tensors[i].name] = i;
  int ints[vm::kIntSlots] = {};
  float floats[vm::kFloatSlots] = {};
  const void* tensors[vm::kTensorSlots] = {};
  static std::vector<std::vector<float>> float_data;
  float_data.assign(env.tensors.size(), {});
  for (std::size_t i = 0; i < slots.ints.size(); ++i) {
    ints[i] = static_cast<int>(env.scalars[index.at(slots.ints[i])]);
  }
  for (std::size_t i = 0; i < slots.floats.size(); ++i) {
    floats[i] = static_cast<float>(env.scalars[index.at(slots.floats[i])]);
  }
  for (std::size_t i = 0; i < slots.tensors.size(); ++i) {
    const std::size_t t = index.at(slots.tensors[i]);
    if (ctx.tensors[t].elem == ExprType::kFloat) {
      for (double f : env.tensors[t].floats) float_data[t].push_back(static_cast<float>(f));
      tensors[i] = float_data[t].data();
    } else {
      tensors[i] = env.tensors[t].ints.data();
    }
  }
  const vm::Inputs in{env.b, env.h, env.hk, env.p, env.j, env.n_q, env.n_k,
                      static_cast<float>(env.s), ints, floats, tensors,
                      env.cu_seqlens_q.data(), env.cu_seqlens_k.data(), env.num_heads_q,
                      env.num_heads_kv};
  value = vm::run(program.code.data(), program.count, program.result, in);
  return true;
}

void check_error(const Error& e, std::size_t text_size) {
  const std::string message = e.what();
  if (e.kind() != ErrorKind::kSpec) finding("parse_expr threw non-kSpec", message);
  if (message.rfind("fuzz.yaml:1:", 0) != 0) finding("unpositioned error", message);
  const long column = std::strtol(message.c_str() + 12, nullptr, 10);
  if (column < 1 || static_cast<std::size_t>(column) > text_size + 1) {
    finding("error column outside the text", message);
  }
  // One line of printable ASCII (quoted text is escaped: \xb3, \n).
  for (char c : message) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f) finding("raw byte in a message", message);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const ExprKind kind = data[0] & 1 ? ExprKind::kScore : ExprKind::kMask;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  Expr expr;
  try {
    expr = parse_expr(text, kind, context(), "fuzz.yaml", 1, 1);
  } catch (const Error& e) {
    check_error(e, text.size());
    return 0;
  }
  const std::string canonical = expr.canonical();
  // The canonical form adds parentheses: past the length limit it is not
  // an input any more (it is still printed into generated code).
  if (canonical.size() <= kMaxExprLength) try {
    const Expr again = parse_expr(canonical, kind, context(), "canonical", 1, 1);
    if (again.canonical() != canonical) finding("canonical form is not stable", canonical);
  } catch (const Error& e) {
    finding("canonical form does not parse", canonical + "\n" + e.what());
  }
  std::string code;
  try {
    code = kind == ExprKind::kMask ? emit_user_struct(&expr, nullptr)
                                   : emit_user_struct(nullptr, &expr);
  } catch (const Error& e) {
    finding("emitter rejected a checked tree", e.what());
  }
  if (auto problem = testing::text_problem(code)) finding("emitted code: " + *problem, code);
  if (auto problem = testing::preprocessor_problem(code, {}, 0)) {
    finding("emitted code: " + *problem, code);
  }
  try {
    ExprEnv env = environment();
    const ExprValue value = evaluate(expr, env);
    (void)value;
    if (kind == ExprKind::kMask) {
      for (const ExprTile& tile : {ExprTile{0, 7, -3, 9, -2, 6}, ExprTile{3, 3, 4, 4, 2, 2},
                                   ExprTile{0, 0, 2147483600, 2147483647, -2147483647, 0}}) {
        const TileClass c = classify_mask(expr, tile, env);
        if (tile.p_lo == tile.p_hi && tile.j_lo == tile.j_hi && tile.h_lo == tile.h_hi) {
          env.p = tile.p_lo;
          env.j = tile.j_lo;
          env.h = tile.h_lo;
          env.hk = tile.h_lo / 4;
          // One pair: the class must agree with its value.
          const bool visible = evaluate_mask(expr, env);
          if ((c == TileClass::kEmpty && visible) || (c == TileClass::kFull && !visible)) {
            finding("unsound class of a single pair", canonical);
          }
        }
      }
    }
  } catch (const Error& e) {
    finding("evaluation threw", e.what());
  }
  // The expression VM: within its limits it takes every checked tree, and
  // its run is clean; without floats its value is the evaluator's.
  try {
    int value = 0;
    std::string why;
    if (!run_vm(expr, environment(), value, &why)) {
      if (expr.nodes.size() <= static_cast<std::size_t>(vm::kMaxInstructions)) {
        finding("the VM refused a tree within its limits", canonical + "\n" + why);
      }
      return 0;
    }
    bool has_float = false;
    for (const ExprNode& n : expr.nodes) has_float = has_float || n.type == ExprType::kFloat;
    if (kind == ExprKind::kMask && !has_float &&
        (value != 0) != evaluate_mask(expr, environment())) {
      finding("the VM's mask differs from the evaluator's", canonical);
    }
  } catch (const Error& e) {
    finding("the VM threw", e.what());
  }
  return 0;
}

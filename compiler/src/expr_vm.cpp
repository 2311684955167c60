// compile_vm(): a checked expression tree as a program of the expression VM
// (templates/attention/user_vm.cuh). Node i becomes instruction i, so the
// program is the tree in the order the checker keeps (children first) and
// register numbers are node numbers.
#include <string>

#include <fmt/format.h>

#include "attention/user_vm.cuh"
#include "attnjit/error.h"
#include "attnjit/expr.h"
#include "check.h"
#include "expr_tree.h"

namespace attnjit {
namespace {

unsigned var_op(ExprVar var) {
  switch (var) {
    case ExprVar::kP:
      return vm::kVarP;
    case ExprVar::kJ:
      return vm::kVarJ;
    case ExprVar::kB:
      return vm::kVarB;
    case ExprVar::kH:
      return vm::kVarH;
    case ExprVar::kHk:
      return vm::kVarHk;
    case ExprVar::kNq:
      return vm::kVarNq;
    case ExprVar::kNk:
      return vm::kVarNk;
    case ExprVar::kS:
      return vm::kVarS;
  }
  return vm::kOpCount;
}

unsigned domain_code(TensorDomain domain) {
  switch (domain) {
    case TensorDomain::kKeyToken:
      return vm::kKeyToken;
    case TensorDomain::kQueryToken:
      return vm::kQueryToken;
    case TensorDomain::kSequence:
      return vm::kSequence;
    case TensorDomain::kHead:
      return vm::kHead;
    case TensorDomain::kKvHead:
      return vm::kKvHead;
    case TensorDomain::kTable:
      return vm::kTable;
  }
  return vm::kTable;
}

// The VM operation of an arithmetic or comparison node, by its operands'
// type (bools compare as 0 / 1 ints).
unsigned typed_op(ExprOp op, ExprType operands) {
  const bool f = operands == ExprType::kFloat;
  switch (op) {
    case ExprOp::kNeg:
      return f ? vm::kNegFloat : vm::kNegInt;
    case ExprOp::kAbs:
      return f ? vm::kAbsFloat : vm::kAbsInt;
    case ExprOp::kAdd:
      return f ? vm::kAddFloat : vm::kAddInt;
    case ExprOp::kSub:
      return f ? vm::kSubFloat : vm::kSubInt;
    case ExprOp::kMul:
      return f ? vm::kMulFloat : vm::kMulInt;
    case ExprOp::kDiv:
      return f ? vm::kDivFloat : vm::kDivInt;
    case ExprOp::kMod:
      return vm::kModInt;  // int only (check_expr_tree)
    case ExprOp::kMin:
      return f ? vm::kMinFloat : vm::kMinInt;
    case ExprOp::kMax:
      return f ? vm::kMaxFloat : vm::kMaxInt;
    case ExprOp::kEq:
      return f ? vm::kEqFloat : vm::kEqInt;
    case ExprOp::kNe:
      return f ? vm::kNeFloat : vm::kNeInt;
    case ExprOp::kLt:
      return f ? vm::kLtFloat : vm::kLtInt;
    case ExprOp::kLe:
      return f ? vm::kLeFloat : vm::kLeInt;
    case ExprOp::kGt:
      return f ? vm::kGtFloat : vm::kGtInt;
    case ExprOp::kGe:
      return f ? vm::kGeFloat : vm::kGeInt;
    default:
      return vm::kOpCount;
  }
}

uint32_t word(unsigned op, int a = 0, int b = 0, int c = 0) {
  return op | static_cast<uint32_t>(a) << 8 | static_cast<uint32_t>(b) << 16 |
         static_cast<uint32_t>(c) << 24;
}

uint32_t float_bits(double value) { return static_cast<uint32_t>(vm::as_bits(static_cast<float>(value))); }

// The slot of `name` in `names`, added at the end when new.
int slot_of(std::vector<std::string>& names, const std::string& name) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<int>(i);
  }
  names.push_back(name);
  return static_cast<int>(names.size()) - 1;
}

}  // namespace

bool compile_vm(const Expr& expr, VmSlots& slots, VmProgram& program, std::string* why) {
  detail::check_expr_tree(expr);
  const auto refuse = [&](std::string reason) {
    if (why != nullptr) *why = std::move(reason);
    return false;
  };
  const ExprContext& ctx = expr.context;
  const int count = static_cast<int>(expr.nodes.size());
  if (count > vm::kMaxInstructions) {
    return refuse(fmt::format("{} nodes (the VM runs at most {})", count, vm::kMaxInstructions));
  }
  VmProgram out;
  const auto scalar_slot = [&](const ExprScalar& s) {
    return slot_of(s.type == ExprType::kFloat ? slots.floats : slots.ints, s.name);
  };
  // A table whose size is an int32 arg reads it from that arg's slot.
  const auto size_code = [&](const ExprTensor& t) -> int32_t {
    if (t.per != TensorDomain::kTable) return 0;
    if (t.size_arg.empty()) return static_cast<int32_t>(t.size);
    for (const ExprScalar& s : ctx.scalars) {
      if (s.name == t.size_arg && s.type == ExprType::kInt) return -1 - scalar_slot(s);
    }
    throw Error(ErrorKind::kCodegen,
                "expression tree: table " + t.name + " is sized by an arg that is no int32 scalar");
  };
  for (int i = 0; i < count; ++i) {
    const ExprNode& n = expr.nodes[static_cast<std::size_t>(i)];
    const auto kid = [&](int k) { return n.kids[k]; };
    const auto kid_type = [&](int k) { return expr.nodes[static_cast<std::size_t>(n.kids[k])].type; };
    uint32_t w = 0, imm = 0;
    switch (n.op) {
      case ExprOp::kIntLit:
        w = word(vm::kConstInt);
        imm = static_cast<uint32_t>(n.int_value);
        break;
      case ExprOp::kBoolLit:
        w = word(vm::kConstInt);
        imm = n.bool_value ? 1u : 0u;
        break;
      case ExprOp::kFloatLit:
        w = word(vm::kConstFloat);
        imm = float_bits(n.float_value);
        break;
      case ExprOp::kVar:
        w = word(var_op(n.var));
        break;
      case ExprOp::kScalar: {
        const int slot = scalar_slot(ctx.scalars[static_cast<std::size_t>(n.index)]);
        w = word(n.type == ExprType::kFloat ? vm::kScalarFloat : vm::kScalarInt, slot);
        break;
      }
      case ExprOp::kTensor: {
        const ExprTensor& t = ctx.tensors[static_cast<std::size_t>(n.index)];
        w = word(t.elem == ExprType::kFloat ? vm::kLoadFloat : vm::kLoadInt, kid(0),
                 slot_of(slots.tensors, t.name), domain_code(t.per));
        imm = static_cast<uint32_t>(size_code(t));
        break;
      }
      case ExprOp::kToFloat:
        w = word(vm::kToFloat, kid(0));
        break;
      case ExprOp::kNot:
        w = word(vm::kNot, kid(0));
        break;
      case ExprOp::kNeg:
      case ExprOp::kAbs:
        w = word(typed_op(n.op, n.type), kid(0));
        break;
      case ExprOp::kExp:
        w = word(vm::kExp, kid(0));
        break;
      case ExprOp::kLog:
        w = word(vm::kLog, kid(0));
        break;
      case ExprOp::kTanh:
        w = word(vm::kTanh, kid(0));
        break;
      case ExprOp::kSqrt:
        w = word(vm::kSqrt, kid(0));
        break;
      case ExprOp::kAnd:
        w = word(vm::kAnd, kid(0), kid(1));
        break;
      case ExprOp::kOr:
        w = word(vm::kOr, kid(0), kid(1));
        break;
      case ExprOp::kSelect:
        w = word(vm::kSelect, kid(0), kid(1), kid(2));
        break;
      default:  // binary arithmetic and comparisons
        w = word(typed_op(n.op, kid_type(0)), kid(0), kid(1));
        break;
    }
    ATTNJIT_CHECK((w & 255u) < vm::kOpCount, "every checked node has a VM operation");
    out.code.push_back(w);
    out.code.push_back(imm);
  }
  if (slots.ints.size() > static_cast<std::size_t>(vm::kIntSlots) ||
      slots.floats.size() > static_cast<std::size_t>(vm::kFloatSlots) ||
      slots.tensors.size() > static_cast<std::size_t>(vm::kTensorSlots)) {
    return refuse(fmt::format("{} int32, {} float and {} tensor args read (the VM has {}, {} and "
                              "{} slots)",
                              slots.ints.size(), slots.floats.size(), slots.tensors.size(),
                              vm::kIntSlots, vm::kFloatSlots, vm::kTensorSlots));
  }
  out.count = count;
  out.result = expr.root;
  program = std::move(out);
  return true;
}

std::string emit_vm_user_struct() {
  return std::string("// The expression VM (docs/expressions.md): the mask and score programs and\n"
         "// their args' slots are params fields; every tile is partial.\n")
         + "struct attnjit_user {\n"
         "  static constexpr bool has_mask = true;\n"
         "  static constexpr bool has_score = true;\n"
         "  struct row_values {};\n"
         "  static constexpr bool has_divisors = false;\n"
         "  template <class P>\n"
         "  __device__ static bool divisors_positive(const P&) {\n"
         "    return true;\n"
         "  }\n"
         "  template <class P>\n"
         "  __device__ static row_values row(const P&, int, int, int, int, int, int) {\n"
         "    return row_values{};\n"
         "  }\n"
         "  template <class P>\n"
         "  __device__ static bool mask(const P& prm, const row_values&, int b, int h, int hk, "
         "int p, int j, int n_q, int n_k) {\n"
         "    return ::attnjit::vm::params_mask(prm, b, h, hk, p, j, n_q, n_k);\n"
         "  }\n"
         "  template <class P>\n"
         "  __device__ static int classify(const P&, int, int, int, int, int, int, int, int, "
         "int) {\n"
         "    return 1;\n"
         "  }\n" +
         detail::key_bounds_traits(ExprKeyBounds{}) +
         "  static constexpr bool has_score_identity = false;\n" +
         "  template <class P>\n"
         "  __device__ static float score(const P& prm, const row_values&, float s, int b, int h, "
         "int hk, int p, int j, int n_q, int n_k) {\n"
         "    return ::attnjit::vm::params_score(prm, s, b, h, hk, p, j, n_q, n_k);\n"
         "  }\n"
         "};\n";
}

}  // namespace attnjit

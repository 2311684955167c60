// The expression VM: a spec's checked `mask` or `score` tree as a flat
// program that one compiled kernel interprets for any spec (docs/
// expressions.md "The expression VM"), so that a variant no cache holds
// yet can run before its own kernel compiles, as the generic tier does for
// the built-in flags (docs/tiers.md). compile_vm() (compiler/src/
// expr_vm.cpp) writes the program; run() here evaluates it with the
// functions of user_expr.cuh (int32 wrap-around, floored division, bounded
// tensor reads, fp32 floats): int and bool results are the specialized
// code's, floats agree up to rounding (the specialized code may fuse a
// multiply-add or fold constants; docs/expressions.md). Plain C++17 like
// user_expr.cuh: NVRTC compiles it, and the host tests and the compiler
// include it.
#pragma once

#include "attention/user_expr.cuh"

#if !defined(__CUDACC_RTC__) && !defined(__CUDACC__)
#include <cstring>
#endif

namespace attnjit {
namespace vm {

// An instruction is two 32-bit words: word 0 holds the operation (bits
// 0-7) and three operands a, b, c (bits 8-15, 16-23, 24-31); word 1 an
// immediate (an int32, or a float's bits). Instruction i writes register
// i; its operands name registers of earlier instructions unless the
// operation says otherwise. Bools are 0 or 1, floats are held as bits.
enum Op : unsigned {
  kConstInt,    // imm
  kConstFloat,  // imm: the float's bits
  kVarP, kVarJ, kVarB, kVarH, kVarHk, kVarNq, kVarNk, kVarS,
  kScalarInt,    // a: int slot
  kScalarFloat,  // a: float slot
  kLoadInt,      // a: the index's register, b: tensor slot, c: Domain,
  kLoadFloat,    //   imm: a table's size (>= 0) or -1 - the int slot holding it
  kToFloat,
  kNegInt, kAbsInt, kAddInt, kSubInt, kMulInt, kDivInt, kModInt, kMinInt, kMaxInt,
  kNegFloat, kAbsFloat, kAddFloat, kSubFloat, kMulFloat, kDivFloat, kMinFloat, kMaxFloat,
  kExp, kLog, kTanh, kSqrt,
  kEqInt, kNeInt, kLtInt, kLeInt, kGtInt, kGeInt,  // also bools (0 / 1) for == and !=
  kEqFloat, kNeFloat, kLtFloat, kLeFloat, kGtFloat, kGeFloat,
  kNot, kAnd, kOr,
  kSelect,  // a ? b : c (the bits of b or c)
  kOpCount
};

// A tensor's domain (kLoad*'s c), in TensorDomain's order.
enum Domain : unsigned { kKeyToken, kQueryToken, kSequence, kHead, kKvHead, kTable };

// Limits of a program: registers (= instructions) and the slots of its
// scalar and tensor args.
constexpr int kMaxInstructions = 64;
constexpr int kIntSlots = 8;
constexpr int kFloatSlots = 8;
constexpr int kTensorSlots = 8;

// What a program reads besides its registers: the element's variables,
// the args' values by slot, and what the tensor reads need.
struct Inputs {
  int b, h, hk, p, j, n_q, n_k;
  float s;  // the score (score programs)
  const int* ints;              // kIntSlots values
  const float* floats;          // kFloatSlots values
  const void* const* tensors;   // kTensorSlots device pointers (int32 or float elements)
  const int* cu_seqlens_q;
  const int* cu_seqlens_k;
  int num_heads_q, num_heads_kv;
};

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
ATTNJIT_EXPR_FN float as_float(int bits) { return __int_as_float(bits); }
ATTNJIT_EXPR_FN int as_bits(float value) { return __float_as_int(value); }
#else
inline float as_float(int bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline int as_bits(float value) {
  int i;
  std::memcpy(&i, &value, sizeof i);
  return i;
}
#endif

// A tensor read of the domain `domain` at x (user_expr.cuh's loads).
template <class T>
ATTNJIT_EXPR_FN T load(const Inputs& in, const T* t, unsigned domain, int size_code, int x) {
  switch (domain) {
    case kKeyToken:
      return expr::load_key_token(t, in.cu_seqlens_k, in.b, in.n_k, x);
    case kQueryToken:
      return expr::load_query_token(t, in.cu_seqlens_q, in.b, in.n_q, in.n_k, x);
    case kSequence:
      return expr::load_sequence(t, in.b);
    case kHead:
      return expr::load_bounded(t, in.num_heads_q, x);
    case kKvHead:
      return expr::load_bounded(t, in.num_heads_kv, x);
    default:  // kTable
      return expr::load_bounded(t, size_code >= 0 ? size_code : in.ints[-1 - size_code], x);
  }
}

// The value of register `result` after running the program's `count`
// instructions (compile_vm checked it: operands name earlier registers,
// slots and domains are in range).
ATTNJIT_EXPR_FN int run(const unsigned* code, int count, int result, const Inputs& in) {
  int r[kMaxInstructions];
  for (int k = 0; k < count; ++k) {
    const unsigned w = code[2 * k];
    const int imm = static_cast<int>(code[2 * k + 1]);
    const unsigned op = w & 255u, a = (w >> 8) & 255u, b = (w >> 16) & 255u, c = w >> 24;
    const int x = op >= kLoadInt ? r[a] : 0;  // only read where a is a register
    const int y = op >= kAddInt && op != kToFloat ? r[b] : 0;
    const float fx = as_float(x), fy = as_float(y);
    int v = 0;
    switch (op) {
      case kConstInt: case kConstFloat: v = imm; break;
      case kVarP: v = in.p; break;
      case kVarJ: v = in.j; break;
      case kVarB: v = in.b; break;
      case kVarH: v = in.h; break;
      case kVarHk: v = in.hk; break;
      case kVarNq: v = in.n_q; break;
      case kVarNk: v = in.n_k; break;
      case kVarS: v = as_bits(in.s); break;
      case kScalarInt: v = in.ints[a]; break;
      case kScalarFloat: v = as_bits(in.floats[a]); break;
      case kLoadInt: v = load(in, static_cast<const int*>(in.tensors[b]), c, imm, x); break;
      case kLoadFloat:
        v = as_bits(load(in, static_cast<const float*>(in.tensors[b]), c, imm, x));
        break;
      case kToFloat: v = as_bits(static_cast<float>(x)); break;
      case kNegInt: v = expr::neg(x); break;
      case kAbsInt: v = expr::iabs(x); break;
      case kAddInt: v = expr::add(x, y); break;
      case kSubInt: v = expr::sub(x, y); break;
      case kMulInt: v = expr::mul(x, y); break;
      case kDivInt: v = expr::div(x, y); break;
      case kModInt: v = expr::mod(x, y); break;
      case kMinInt: v = expr::imin(x, y); break;
      case kMaxInt: v = expr::imax(x, y); break;
      case kNegFloat: v = as_bits(-fx); break;
      case kAbsFloat: v = as_bits(expr::fabs_(fx)); break;
      case kAddFloat: v = as_bits(fx + fy); break;
      case kSubFloat: v = as_bits(fx - fy); break;
      case kMulFloat: v = as_bits(fx * fy); break;
      case kDivFloat: v = as_bits(fx / fy); break;
      case kMinFloat: v = as_bits(expr::fmin_(fx, fy)); break;
      case kMaxFloat: v = as_bits(expr::fmax_(fx, fy)); break;
      case kExp: v = as_bits(expr::fexp(fx)); break;
      case kLog: v = as_bits(expr::flog(fx)); break;
      case kTanh: v = as_bits(expr::ftanh(fx)); break;
      case kSqrt: v = as_bits(expr::fsqrt(fx)); break;
      case kEqInt: v = x == y; break;
      case kNeInt: v = x != y; break;
      case kLtInt: v = x < y; break;
      case kLeInt: v = x <= y; break;
      case kGtInt: v = x > y; break;
      case kGeInt: v = x >= y; break;
      case kEqFloat: v = fx == fy; break;
      case kNeFloat: v = fx != fy; break;
      case kLtFloat: v = fx < fy; break;
      case kLeFloat: v = fx <= fy; break;
      case kGtFloat: v = fx > fy; break;
      case kGeFloat: v = fx >= fy; break;
      case kNot: v = !x; break;
      case kAnd: v = x && y; break;
      case kOr: v = x || y; break;
      default: v = x ? y : r[c]; break;  // kSelect
    }
    r[k] = v;
  }
  return r[result];
}

// A mask program's value, and a score program's.
ATTNJIT_EXPR_FN bool run_mask(const unsigned* code, int count, int result, const Inputs& in) {
  return run(code, count, result, in) != 0;
}
ATTNJIT_EXPR_FN float run_score(const unsigned* code, int count, int result, const Inputs& in) {
  return as_float(run(code, count, result, in));
}

// The VM variant's element functions (expr_vm.cpp emit_vm_user_struct):
// the programs and the args' slots are fields of its params struct
// (expression_vm_spec: vm_mask_code, vm_i0..vm_i7, vm_f0.., vm_t0..), a
// program of count 0 is absent (every key visible, the score unchanged).
// One call per element, not inlined: the kernel keeps one copy of the
// interpreter (this tier answers while a variant's own kernel compiles;
// speed is not its point).
template <class P>
ATTNJIT_EXPR_FN Inputs params_inputs(const P& prm, const int* ints, const float* floats,
                                     const void* const* tensors, int b, int h, int hk, int p,
                                     int j, int n_q, int n_k, float s) {
  return Inputs{b,      h,      hk,      p,  j, n_q, n_k, s, ints, floats, tensors,
                prm.cu_seqlens_q, prm.cu_seqlens_k, prm.num_heads_q, prm.num_heads_kv};
}
template <class P>
ATTNJIT_EXPR_COLD int params_run(const P& prm, const int* code, int count, int result, int b,
                                 int h, int hk, int p, int j, int n_q, int n_k, float s) {
  const int ints[kIntSlots] = {prm.vm_i0, prm.vm_i1, prm.vm_i2, prm.vm_i3,
                               prm.vm_i4, prm.vm_i5, prm.vm_i6, prm.vm_i7};
  const float floats[kFloatSlots] = {prm.vm_f0, prm.vm_f1, prm.vm_f2, prm.vm_f3,
                                     prm.vm_f4, prm.vm_f5, prm.vm_f6, prm.vm_f7};
  const void* const tensors[kTensorSlots] = {prm.vm_t0, prm.vm_t1, prm.vm_t2, prm.vm_t3,
                                             prm.vm_t4, prm.vm_t5, prm.vm_t6, prm.vm_t7};
  return run(reinterpret_cast<const unsigned*>(code), count, result,
             params_inputs(prm, ints, floats, tensors, b, h, hk, p, j, n_q, n_k, s));
}
template <class P>
ATTNJIT_EXPR_FN bool params_mask(const P& prm, int b, int h, int hk, int p, int j, int n_q,
                                 int n_k) {
  if (prm.vm_mask_count <= 0) return true;
  return params_run(prm, prm.vm_mask_code, prm.vm_mask_count, prm.vm_mask_result, b, h, hk, p,
                    j, n_q, n_k, 0.f) != 0;
}
template <class P>
ATTNJIT_EXPR_FN float params_score(const P& prm, float s, int b, int h, int hk, int p, int j,
                                   int n_q, int n_k) {
  if (prm.vm_score_count <= 0) return s;
  return as_float(params_run(prm, prm.vm_score_code, prm.vm_score_count, prm.vm_score_result, b,
                             h, hk, p, j, n_q, n_k, s));
}

}  // namespace vm
}  // namespace attnjit

// The expression VM (templates/attention/user_vm.cuh, compile_vm) computes
// what the code emitted from the same expressions computes, bit for bit, on
// the generated cases and on every operation's edge values; its slots, its
// params fields and its limits.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "expr_device_support.h"

namespace attnjit {
namespace {

using namespace expr_device;  // NOLINT: the shared test support

// The VM's inputs for a problem: random_context()'s args in the slots
// compile_vm gave them.
struct VmProblem {
  int ints[vm::kIntSlots] = {};
  float floats[vm::kFloatSlots] = {};
  const void* tensors[vm::kTensorSlots] = {};

  VmProblem(const VmSlots& slots, const Params& prm) {
    const std::map<std::string, int> int_args = {
        {"chunk", prm.chunk}, {"wl", prm.wl}, {"wr", prm.wr}};
    const std::map<std::string, const void*> tensor_args = {
        {"doc", prm.doc},   {"qdoc", prm.qdoc},     {"prefix", prm.prefix}, {"kvt", prm.kvt},
        {"bias", prm.bias}, {"slopes", prm.slopes}, {"sdoc", prm.sdoc},     {"sbias", prm.sbias}};
    for (std::size_t i = 0; i < slots.ints.size(); ++i) ints[i] = int_args.at(slots.ints[i]);
    for (std::size_t i = 0; i < slots.floats.size(); ++i) floats[i] = prm.temp;  // the one float
    for (std::size_t i = 0; i < slots.tensors.size(); ++i) {
      tensors[i] = tensor_args.at(slots.tensors[i]);
    }
  }
  vm::Inputs inputs(const ExprEnv& env, const Params& prm) const {
    return vm::Inputs{env.b, env.h, env.hk, env.p, env.j, env.n_q, env.n_k, float(env.s),
                      ints, floats, tensors, prm.cu_seqlens_q, prm.cu_seqlens_k,
                      prm.num_heads_q, prm.num_heads_kv};
  }
};

bool same_float(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || vm::as_bits(a) == vm::as_bits(b);
}

// Slots in order of first use, shared by the programs of one VmSlots; a
// table sized by an arg gives it a slot.
TEST(ExprVm, SlotsAreGivenInOrderOfFirstUse) {
  const ExprContext ctx = testing::random_context();
  const Expr mask = parse_expr("p - j <= wr and chunk < 3 and temp > 0.5 and doc[j] == sbias[1]",
                               ExprKind::kMask, ctx, "t", 1, 1);
  const Expr score = parse_expr("s + slopes[h] * wl + wr", ExprKind::kScore, ctx, "t", 1, 1);
  VmSlots slots;
  VmProgram m, sc;
  ASSERT_TRUE(compile_vm(mask, slots, m));
  EXPECT_EQ(slots.ints, (std::vector<std::string>{"wr", "chunk"}));
  EXPECT_EQ(slots.floats, (std::vector<std::string>{"temp"}));
  EXPECT_EQ(slots.tensors, (std::vector<std::string>{"doc", "sbias"}));
  ASSERT_TRUE(compile_vm(score, slots, sc));
  EXPECT_EQ(slots.ints, (std::vector<std::string>{"wr", "chunk", "wl"}));
  EXPECT_EQ(slots.tensors, (std::vector<std::string>{"doc", "sbias", "slopes"}));
  EXPECT_EQ(m.count, int(mask.nodes.size()));
  EXPECT_EQ(m.code.size(), 2 * mask.nodes.size());
  EXPECT_EQ(m.result, mask.root);
  ExprContext sized = ctx;
  sized.tensors.push_back({"tab", ExprType::kInt, TensorDomain::kTable, 0, "chunk"});
  VmSlots table_slots;
  ASSERT_TRUE(compile_vm(parse_expr("tab[j] > 0", ExprKind::kMask, sized, "t", 1, 1),
                         table_slots, m));
  EXPECT_EQ(table_slots.ints, (std::vector<std::string>{"chunk"}));
}

// Every case of the emitted code (the fixed list and the random ones over
// the whole grammar): the VM's mask and score equal the emitted mask() and
// score() on random problems and elements, floats to the bit.
TEST(ExprVm, RunsWhatTheEmittedCodeComputes) {
  const ExprContext ctx = testing::random_context();
  std::mt19937_64 rng(7);
  long long elements = 0;
  expr_cases::for_each_case<Params>([&](int index, auto user) {
    using User = decltype(user);
    const auto& c = expr_cases::kCases[index];
    const Expr mask = parse_expr(c.mask, ExprKind::kMask, ctx, "case", 1, 1);
    const Expr score = parse_expr(c.score, ExprKind::kScore, ctx, "case", 1, 1);
    VmProgram mask_vm, score_vm;
    VmSlots vm_slots;
    std::string why;
    ASSERT_TRUE(compile_vm(mask, vm_slots, mask_vm, &why)) << c.mask << ": " << why;
    ASSERT_TRUE(compile_vm(score, vm_slots, score_vm, &why)) << c.score << ": " << why;
    for (int trial = 0; trial < 12; ++trial) {
      Problem problem(rng);
      const VmProblem slots(vm_slots, problem.prm);
      ExprEnv env = problem.env;
      const int group = env.num_heads_q / env.num_heads_kv;
      const bool scores = env.n_q >= 1 && env.n_k >= 1;  // (as above)
      for (int e = 0; scores && e < 64; ++e) {
        env.h = int(rng() % 8);
        env.hk = env.h / group;
        env.p = int(rng() % 60) - 10;
        env.j = int(rng() % 60) - 10;
        env.s = double(int(rng() % 33) - 16) * 0.375;
        const vm::Inputs in = slots.inputs(env, problem.prm);
        const auto row = User::row(problem.prm, env.b, env.h, env.hk, env.p, env.n_q, env.n_k);
        const auto cols = cols_at<User, false>(problem.prm, env.j, env.j);
        ASSERT_EQ(vm::run_mask(mask_vm.code.data(), mask_vm.count, mask_vm.result, in),
                  (mask_of<User, false>(problem.prm, row, cols, env.b, env.h, env.hk, env.p,
                                        env.j, env.n_q, env.n_k)))
            << c.mask << " p=" << env.p << " j=" << env.j << " h=" << env.h;
        const float want = score_of<User, false>(problem.prm, row, cols, float(env.s), env.b,
                                                 env.h, env.hk, env.p, env.j, env.n_q, env.n_k);
        const float got = vm::run_score(score_vm.code.data(), score_vm.count, score_vm.result, in);
        ASSERT_TRUE(same_float(want, got)) << c.score << ": " << want << " vs " << got;
        ++elements;
      }
    }
  });
  std::printf("%lld elements\n", elements);
  EXPECT_GT(elements, 20000);
}

// Each operation on edge values, against the host evaluator: int results
// exactly (the VM's register of the int subtree), comparisons with ties
// and NaN, and a table sized by an int32 arg read through that arg's slot.
TEST(ExprVm, EveryOperationOnEdgeValues) {
  ExprContext ctx;
  ctx.scalars = {{"x", ExprType::kInt}, {"n", ExprType::kInt}, {"f", ExprType::kFloat},
                 {"y", ExprType::kInt}};
  ctx.tensors = {{"tab", ExprType::kInt, TensorDomain::kTable, 0, "n"}};
  const int tab[] = {10, 11, 12, 13, 14, 15, 16, 17};
  const void* tensors[vm::kTensorSlots] = {tab};
  const int ints_values[] = {INT_MIN, INT_MIN + 1, -7, -2, -1, 0, 1, 2, 3, 7, INT_MAX};
  const float float_values[] = {-2.f, 0.f, 0.5f, 1.f, NAN, INFINITY, -INFINITY};
  const char* int_ops[] = {"x + y", "x - y", "x * y", "x / y", "x % y", "min(x, y)",
                           "max(x, y)", "-x", "abs(x)", "select(x < y, x, y)"};
  const char* masks[] = {"x < y", "x <= y", "x > y", "x >= y", "x == y", "x != y",
                         "f < 0.5", "f <= 0.5", "f > 0.5", "f >= 0.5", "f == 0.5", "f != 0.5",
                         "(x < y) == (y < x)", "(x < y) != (f < 0.5)", "x < y and f < 0.5",
                         "x < y or f < 0.5", "not (x < y)", "tab[x] == y", "tab[y] > 12"};
  long long checked = 0;
  for (const int x : ints_values) {
    for (const int y : ints_values) {
      for (const float f : float_values) {
        const int n = 3;  // tab's size: reads at 3.. and below 0 give 0
        const std::map<std::string, int> int_args = {{"x", x}, {"n", n}, {"y", y}};
        ExprEnv env;
        env.scalars = {double(x), double(n), double(f), double(y)};
        env.tensors.resize(1);
        env.tensors[0].ints.assign(std::begin(tab), std::end(tab));
        // The inputs for the slots compile_vm gave (x, n, y in any order; f).
        const auto inputs = [&](const VmSlots& slots, int* ints, float* floats) {
          for (std::size_t i = 0; i < slots.ints.size(); ++i) ints[i] = int_args.at(slots.ints[i]);
          floats[0] = f;
          return vm::Inputs{0, 0, 0, 0, 0, 0, 0, 0.f, ints, floats, tensors, nullptr, nullptr,
                            1, 1};
        };
        int ints[vm::kIntSlots] = {};
        float floats[vm::kFloatSlots] = {};
        for (const char* text : int_ops) {
          const Expr m = parse_expr(std::string("(") + text + ") == 0", ExprKind::kMask, ctx, "t",
                                    1, 1);
          Expr sub = m;
          sub.root = m.nodes[std::size_t(m.root)].kids[0];
          VmProgram program;
          VmSlots slots;
          ASSERT_TRUE(compile_vm(m, slots, program));
          const vm::Inputs in = inputs(slots, ints, floats);
          ASSERT_EQ(vm::run(program.code.data(), program.count, sub.root, in), evaluate(sub, env).i)
              << text << " x=" << x << " y=" << y;
          ++checked;
        }
        for (const char* text : masks) {
          const Expr m = parse_expr(text, ExprKind::kMask, ctx, "t", 1, 1);
          VmProgram program;
          VmSlots slots;
          ASSERT_TRUE(compile_vm(m, slots, program));
          const vm::Inputs in = inputs(slots, ints, floats);
          ASSERT_EQ(vm::run_mask(program.code.data(), program.count, program.result, in),
                    evaluate_mask(m, env))
              << text << " x=" << x << " y=" << y << " f=" << f;
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 20000);
}

// The VM variant's params as its generated struct holds them (the fields
// params_mask / params_score read).
struct VmParams {
  const int* cu_seqlens_q;
  const int* cu_seqlens_k;
  int num_heads_q, num_heads_kv;
  const int* vm_mask_code;
  int vm_mask_count, vm_mask_result;
  const int* vm_score_code;
  int vm_score_count, vm_score_result;
  int vm_i0, vm_i1, vm_i2, vm_i3, vm_i4, vm_i5, vm_i6, vm_i7;
  float vm_f0, vm_f1, vm_f2, vm_f3, vm_f4, vm_f5, vm_f6, vm_f7;
  const int *vm_t0, *vm_t1, *vm_t2, *vm_t3, *vm_t4, *vm_t5, *vm_t6, *vm_t7;
};

// Slot k is field vm_ik / vm_fk / vm_tk, the programs come from their
// fields, and count 0 means no mask (all visible) and no score (s).
TEST(ExprVm, ParamsFieldsAreTheSlots) {
  ExprContext ctx;
  for (int i = 0; i < vm::kIntSlots; ++i) ctx.scalars.push_back({"i" + std::to_string(i)});
  for (int i = 0; i < vm::kFloatSlots; ++i) {
    ctx.scalars.push_back({"f" + std::to_string(i), ExprType::kFloat});
  }
  for (int i = 0; i < vm::kTensorSlots; ++i) {
    ctx.tensors.push_back({"t" + std::to_string(i), ExprType::kInt, TensorDomain::kTable, 4, ""});
  }
  std::string mask_text = "i0 == 0", tensor_text = "t0[1] == 0", score_text = "s + f0";
  for (int i = 1; i < 8; ++i) {
    mask_text += fmt::format(" and i{} == {}", i, 10 * i);
    tensor_text += fmt::format(" and t{}[1] == {}", i, 100 * i);
    score_text += fmt::format(" + f{}", i);
  }
  const Expr mask = parse_expr(mask_text, ExprKind::kMask, ctx, "t", 1, 1);
  const Expr tensor_mask = parse_expr(tensor_text, ExprKind::kMask, ctx, "t", 1, 1);
  const Expr score = parse_expr(score_text, ExprKind::kScore, ctx, "t", 1, 1);
  VmProgram m, tm, sc;
  VmSlots mask_slots, tensor_slots, score_slots;  // each in order: i0.., t0.., f0..
  ASSERT_TRUE(compile_vm(mask, mask_slots, m));
  ASSERT_TRUE(compile_vm(tensor_mask, tensor_slots, tm));
  ASSERT_TRUE(compile_vm(score, score_slots, sc));
  ASSERT_EQ(mask_slots.ints.back(), "i7");
  ASSERT_EQ(tensor_slots.tensors.back(), "t7");
  ASSERT_EQ(score_slots.floats.back(), "f7");
  std::vector<int> code_t(tm.code.begin(), tm.code.end());
  std::vector<std::vector<int>> tabs(8);
  for (int i = 0; i < 8; ++i) tabs[std::size_t(i)] = {0, 100 * i, 0, 0};
  std::vector<int> code_m(m.code.begin(), m.code.end()), code_s(sc.code.begin(), sc.code.end());
  VmParams prm{nullptr, nullptr, 1, 1, code_m.data(), m.count, m.result, code_s.data(), sc.count,
               sc.result, 0, 10, 20, 30, 40, 50, 60, 70, 1, 2, 4, 8, 16, 32, 64, 128,
               tabs[0].data(), tabs[1].data(), tabs[2].data(), tabs[3].data(), tabs[4].data(),
               tabs[5].data(), tabs[6].data(), tabs[7].data()};
  EXPECT_TRUE(vm::params_mask(prm, 0, 0, 0, 0, 0, 1, 1));
  EXPECT_EQ(vm::params_score(prm, 0.5f, 0, 0, 0, 0, 0, 1, 1), 255.5f);
  prm.vm_i7 = 71;  // the last int slot's field
  EXPECT_FALSE(vm::params_mask(prm, 0, 0, 0, 0, 0, 1, 1));
  prm.vm_i7 = 70;
  VmParams tensors = prm;
  tensors.vm_mask_code = code_t.data();
  tensors.vm_mask_count = tm.count;
  tensors.vm_mask_result = tm.result;
  EXPECT_TRUE(vm::params_mask(tensors, 0, 0, 0, 0, 0, 1, 1));
  tabs[7][1] = 7;  // the last tensor slot's field
  EXPECT_FALSE(vm::params_mask(tensors, 0, 0, 0, 0, 0, 1, 1));
  prm.vm_mask_count = 0;
  prm.vm_score_count = 0;
  EXPECT_TRUE(vm::params_mask(prm, 0, 0, 0, 0, 0, 1, 1));
  EXPECT_EQ(vm::params_score(prm, 0.5f, 0, 0, 0, 0, 0, 1, 1), 0.5f);
}

// What does not fit is refused with the reason, not truncated.
TEST(ExprVm, RefusesWhatExceedsItsLimits) {
  const ExprContext ctx = testing::random_context();
  std::string text = "p";
  for (int i = 0; i < 40; ++i) text = "(" + text + " + j)";
  const Expr big = parse_expr(text + " >= 0", ExprKind::kMask, ctx, "t", 1, 1);
  VmProgram program;
  VmSlots slots;
  std::string why;
  EXPECT_FALSE(compile_vm(big, slots, program, &why));
  EXPECT_NE(why.find("nodes"), std::string::npos) << why;
  ExprContext many = ctx;
  std::string sum = "extra0";
  for (int i = 0; i <= vm::kIntSlots; ++i) {
    many.scalars.push_back({"extra" + std::to_string(i)});
    if (i > 0) sum = "(" + sum + " + extra" + std::to_string(i) + ")";
  }
  // Args that are declared but not read take no slot.
  EXPECT_TRUE(compile_vm(parse_expr("p >= extra7", ExprKind::kMask, many, "t", 1, 1), slots,
                         program));
  VmSlots fresh;
  EXPECT_FALSE(compile_vm(parse_expr(sum + " > 0", ExprKind::kMask, many, "t", 1, 1), fresh,
                          program, &why));
  EXPECT_NE(why.find("int32"), std::string::npos) << why;
}

}  // namespace
}  // namespace attnjit

// The host's copy of a launch's arguments into the kernel's parameter
// struct (runtime/src/variant.cpp, kernel_params): every spec arg that
// AttentionArgs has under the same name is copied by the code generated
// from the spec's `args` (attention_prefill_params_host.h), and the others are
// exactly the ones the launch derives. A spec arg added without either
// fails here.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

#include "attention_prefill_params_host.h"
#include "attnjit/attention.h"

namespace attnjit {
namespace {

using Params = attention_prefill_params<void>;

TEST(KernelParams, EverySpecArgIsCopiedOrDerived) {
  // What the launch fills in itself: the split workspace and count, the
  // GQA group and its divisor, the TMA maps (Variant::launch, kernel_params).
  const std::set<std::string> derived = {"o_partial",       "lse_partial", "split_counters",
                                         "gqa_group_magic", "gqa_group",   "k_map",
                                         "v_map"};
  std::set<std::string> not_copied;
  const auto& names = attention_prefill_params_arg_names;
  const auto& copied = attention_prefill_params_copied<AttentionArgs>;
  static_assert(std::size(attention_prefill_params_arg_names) ==
                std::size(attention_prefill_params_copied<AttentionArgs>));
  ASSERT_EQ(std::size(names), attention_spec().args.size());
  for (size_t i = 0; i < std::size(names); ++i) {
    EXPECT_EQ(names[i], attention_spec().args[i].name) << "the spec's order";
    if (!copied[i]) not_copied.insert(names[i]);
  }
  EXPECT_EQ(not_copied, derived);
}

TEST(KernelParams, TheCopyTakesEachSameNamedField) {
  AttentionArgs a;
  int marker = 0;
  a.q = &marker;
  a.o = &marker + 1;
  a.q_row_stride = 123;
  a.v_page_stride = 456;
  a.num_heads_kv = 7;
  a.page_size = 48;
  a.window_left = 9;
  a.scale = 0.5f;
  a.num_splits = 3;  // (a request: the launch overrides the kernel's)
  Params p;
  std::memset(&p, 0, sizeof(p));
  attention_prefill_params_copy_same_named(a, p);
  EXPECT_EQ(p.q, a.q);
  EXPECT_EQ(p.o, a.o);
  EXPECT_EQ(p.q_row_stride, 123);
  EXPECT_EQ(p.v_page_stride, 456);
  EXPECT_EQ(p.num_heads_kv, 7);
  EXPECT_EQ(p.page_size, 48);
  EXPECT_EQ(p.window_left, 9);
  EXPECT_EQ(p.scale, 0.5f);
  EXPECT_EQ(p.num_splits, 3);
  EXPECT_EQ(p.gqa_group, 0) << "derived, not copied";
}

}  // namespace
}  // namespace attnjit

// The expression VM's variant (expression_vm_spec): its params end with the
// VM's args after the attention spec's, its unit defines the VM's
// `struct attnjit_user` (no expression of any spec in it), and NVRTC
// compiles it for sm_80 and sm_90a, contiguous and paged, spilling no more
// than the built-in variant of the same flags.
#include <gtest/gtest.h>

#include "attnjit/codegen.h"
#include "attnjit/expr.h"
#include "attnjit/kernel_params.h"
#include "attnjit/nvrtc.h"
#include "attnjit/signature.h"
#include "attnjit/spec.h"

namespace attnjit {
namespace {

std::map<std::string, FlagValue> flags_of(const FlagSet& set) {
  return {set.values.begin(), set.values.end()};
}

TEST(ExprVmSpec, ExtendsTheAttentionParamsWithTheVmArgs) {
  const Spec& vm = expression_vm_spec();
  const Spec base = load_embedded_spec("attention");
  EXPECT_TRUE(vm.expression_vm);
  EXPECT_EQ(vm.params_family, base.family);
  EXPECT_FALSE(vm.mask || vm.score);
  const ParamsLayout own = params_layout(vm), inherited = params_layout(base);
  ASSERT_GT(own.fields.size(), inherited.fields.size());
  for (size_t i = 0; i < inherited.fields.size(); ++i) {
    EXPECT_EQ(own.fields[i].name, inherited.fields[i].name);
    EXPECT_EQ(own.fields[i].offset, inherited.fields[i].offset);
  }
  std::vector<std::string> added;
  for (size_t i = inherited.fields.size(); i < own.fields.size(); ++i) {
    added.push_back(own.fields[i].name);
  }
  ASSERT_EQ(added.size(), 6u + 8u + 8u + 8u);
  EXPECT_EQ(added.front(), "vm_mask_code");
  EXPECT_EQ(added.back(), "vm_t7");
  // A spec's expressions never reach this unit; the user spec machinery
  // does not see the VM's args as expression inputs.
  EXPECT_TRUE(expr_context(vm).tensors.empty());
}

TEST(ExprVmSpec, UnitHasTheVmStructAndCompiles) {
  const Spec& vm = expression_vm_spec();
  for (const char* target : {"sm_80", "sm_90a"}) {
    for (const char* layout : {"contiguous", "paged"}) {
      const FlagSet flags = resolve_flags(
          vm, {{"head_dim", FlagValue(int64_t{128})}, {"causal", FlagValue(true)},
               {"kv_layout", FlagValue(std::string(layout))}});
      const Signature sig =
          make_signature(vm, flags, CompileOptions::from_environment(parse_target(target)));
      const GeneratedSource src = generate_source(vm, sig);
      EXPECT_NE(src.text.find(std::string("#include \"") + kUserVmHeader + "\""),
                std::string::npos);
      EXPECT_NE(src.text.find("::attnjit::vm::params_mask(prm"), std::string::npos);
      EXPECT_EQ(src.text.find(kUserExprHeader), std::string::npos) << "only the VM's header";
      const CompiledKernel k = compile_source(src, sig.options);
      EXPECT_GT(k.resources.threads, 0) << target << " " << layout;
      // sm_90a spills nothing; sm_80 at most a word or two more than the
      // built-in variant of the same flags (D128: the built-in 0 B
      // contiguous and 24 B paged, the VM 4 B contiguous, with the softmax's
      // slack max; 72-88 B each before it).
      int allowed = 0;
      if (sig.options.target.sm == 80) {
        const Spec base = load_embedded_spec("attention");
        const Signature builtin = make_signature(
            base, resolve_flags(base, flags_of(flags)), sig.options);
        allowed = compile_source(generate_source(base, builtin), builtin.options)
                      .resources.spill_stores + 8;
      }
      EXPECT_LE(k.resources.spill_stores, allowed) << target << " " << layout;
    }
  }
}

}  // namespace
}  // namespace attnjit

// A user spec's variants through the runtime, no GPU (issue 14): compiled
// through the cache for sm_80, its own args checked by name and type before
// anything reaches the driver, and only specs that extend the attention
// spec accepted.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "attnjit/attention.h"
#include "attnjit/cache.h"
#include "attnjit/driver.h"
#include "attnjit/error.h"
#include "attnjit/selfcheck.h"
#include "attnjit/spec.h"
#include "attnjit/target.h"
#include "runtime/fake_args.h"

namespace attnjit {
namespace {

std::shared_ptr<const Spec> chunked_local() {
  return std::make_shared<const Spec>(load_spec_file(
      std::string(ATTNJIT_SOURCE_DIR) + "/specs/examples/chunked_local.yaml"));
}

using testing::fake_args;

std::string launch_error(AttentionKernel& kernel, const std::vector<UserArg>& user,
                         ErrorKind* kind = nullptr) {
  try {
    kernel.launch(fake_args(), nullptr, user);
  } catch (const Error& e) {
    if (kind != nullptr) *kind = e.kind();
    return e.what();
  }
  return "";
}

TEST(UserSpec, OwnArgsAreCheckedByNameAndType) {
  const auto spec = chunked_local();
  KernelCache cache{CacheConfig{}};
  const Target target = parse_target("sm_80");
  FlagSet flags = resolve_flags(*spec, {{"head_dim", int64_t{128}}, {"causal", true}});
  auto kernel = AttentionKernel::get_user(spec, flags, cache, &target);
  ASSERT_NE(kernel->user_spec(), nullptr);
  EXPECT_EQ(kernel->user_spec()->family, "chunked_local");
  EXPECT_NE(kernel->kernel().name().find("chunked_local"), std::string::npos);

  EXPECT_NE(launch_error(*kernel, {}).find("needs its arg `chunk`"), std::string::npos);
  EXPECT_NE(launch_error(*kernel, {{"chunk", 1.5f}}).find("`chunk` takes an int32"),
            std::string::npos);
  EXPECT_NE(launch_error(*kernel, {{"chunk", int32_t{64}}, {"chunks", int32_t{1}}})
                .find("has no arg `chunks`"),
            std::string::npos);
  // The hidden multiplier for division by chunk is the runtime's to fill.
  EXPECT_NE(launch_error(*kernel, {{"chunk", int32_t{64}}, {"attnjit_div_chunk", int32_t{1}}})
                .find("has no arg `attnjit_div_chunk`"),
            std::string::npos);
  try {
    kernel->launch(fake_args(), nullptr);
    ADD_FAILURE() << "a launch without the spec's args went through";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pass them"), std::string::npos) << e.what();
  }
  std::string why;
  if (Driver::available(&why)) GTEST_SKIP() << "a GPU is here: the no-driver half runs elsewhere";
  ErrorKind kind = ErrorKind::kArgument;
  launch_error(*kernel, {{"chunk", int32_t{64}}}, &kind);
  EXPECT_EQ(kind, ErrorKind::kDriver);  // everything else passed
}

// Division by an inherited int32 arg (num_heads_kv): its multiplier comes
// from the value the launch writes, with no arg from the caller, and a
// spec without args of its own launches without any.
TEST(UserSpec, DivisionByAnInheritedArgNeedsNoArgFromTheCaller) {
  const auto spec = std::make_shared<const Spec>(parse_spec(
      "family: by_kv_heads\nextends: attention\nmask: \"j / num_heads_kv <= p\"\n", "t.yaml"));
  ASSERT_EQ(spec->args.back().divisor_of, "num_heads_kv");
  KernelCache cache{CacheConfig{}};
  const Target target = parse_target("sm_80");
  auto kernel = AttentionKernel::get_user(spec, resolve_flags(*spec, {{"head_dim", int64_t{128}}}),
                                          cache, &target);
  EXPECT_NE(launch_error(*kernel, {{"attnjit_div_num_heads_kv", int32_t{1}}})
                .find("has no arg `attnjit_div_num_heads_kv`"),
            std::string::npos);
  std::string why;
  if (Driver::available(&why)) GTEST_SKIP() << "a GPU is here: the no-driver half runs elsewhere";
  for (const bool with_list : {true, false}) {
    ErrorKind kind = ErrorKind::kArgument;
    std::string message;
    try {
      if (with_list) {
        kernel->launch(fake_args(), nullptr, std::vector<UserArg>{});
      } else {
        kernel->launch(fake_args(), nullptr);
      }
    } catch (const Error& e) {
      kind = e.kind();
      message = e.what();
    }
    EXPECT_EQ(kind, ErrorKind::kDriver) << message;  // everything before the driver passed
  }
}

TEST(UserSpec, OnlySpecsThatExtendTheAttentionSpec) {
  const auto axpy = std::make_shared<const Spec>(
      load_spec_file(std::string(ATTNJIT_SOURCE_DIR) + "/tests/compiler/data/axpy.yaml"));
  KernelCache cache{CacheConfig{}};
  const Target target = parse_target("sm_80");
  try {
    AttentionKernel::get_user(axpy, resolve_flags(*axpy, {}), cache, &target);
    ADD_FAILURE() << "a spec that does not extend attention was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kSpec);
    EXPECT_NE(std::string(e.what()).find("extends: attention"), std::string::npos) << e.what();
  }
}

// A per-key-token tensor is read through cu_seqlens_k: with a paged cache
// (which needs no cu_seqlens_k otherwise) a launch without it is refused.
TEST(UserSpec, KeyTokenTensorsNeedTheKeyOffsets) {
  const auto spec = std::make_shared<const Spec>(
      load_spec_file(std::string(ATTNJIT_SOURCE_DIR) + "/specs/examples/document.yaml"));
  KernelCache cache{CacheConfig{}};
  const Target target = parse_target("sm_80");
  auto kernel = AttentionKernel::get_user(
      spec, resolve_flags(*spec, {{"head_dim", int64_t{128}}, {"kv_layout", std::string("paged")}}),
      cache, &target);
  AttentionArgs a = fake_args();
  a.cu_seqlens_k = nullptr;
  a.block_table = reinterpret_cast<const int32_t*>(uintptr_t(0x70000));
  a.seqused_k = reinterpret_cast<const int32_t*>(uintptr_t(0x80000));
  a.block_table_stride = 16;
  a.page_size = 16;
  a.num_pages = 16;
  a.k_page_stride = a.v_page_stride = 16 * 128;
  try {
    kernel->launch(a, nullptr, {{"doc", static_cast<const void*>(reinterpret_cast<void*>(0x90000))}});
    ADD_FAILURE() << "launched without cu_seqlens_k";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pass cu_seqlens_k"), std::string::npos) << e.what();
  }
}

// The check's values for a spec's own args follow each arg's domain.
TEST(UserSpec, DefaultValuesFollowTheDomains) {
  CheckShape shape{"s", {1, 30, 5}, {10, 200, 5}, 8, 2};
  const auto load = [](const char* file) {
    return load_spec_file(std::string(ATTNJIT_SOURCE_DIR) + "/specs/examples/" + file);
  };
  const auto document = default_user_values(load("document.yaml"), shape, 1);
  ASSERT_EQ(document.size(), 1u);
  EXPECT_EQ(document[0].name, "doc");
  EXPECT_EQ(document[0].ints.size(), 215u);  // one id per key token
  const auto prefix = default_user_values(load("prefix_lm.yaml"), shape, 2);
  ASSERT_EQ(prefix.size(), 1u);
  ASSERT_EQ(prefix[0].ints.size(), 3u);  // one per sequence, inside it
  for (size_t b = 0; b < 3; ++b) {
    EXPECT_GE(prefix[0].ints[b], 0);
    EXPECT_LE(prefix[0].ints[b], shape.seqlens_k[b]);
  }
  const auto alibi = default_user_values(load("alibi.yaml"), shape, 3);
  ASSERT_EQ(alibi.size(), 1u);
  EXPECT_EQ(alibi[0].floats.size(), 8u);  // one per query head
  const auto chunked = default_user_values(load("chunked_local.yaml"), shape, 4);
  ASSERT_EQ(chunked.size(), 1u);
  EXPECT_GE(chunked[0].int_value, 1);
  EXPECT_LE(chunked[0].int_value, 200);
  const auto both = default_user_values(load("key0_bias_expr.yaml"), shape, 5);
  ASSERT_EQ(both.size(), 2u);  // the mask's scalar and the score's tensor
}

}  // namespace
}  // namespace attnjit

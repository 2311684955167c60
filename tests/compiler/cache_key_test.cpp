// Cache keys: every input counts, nothing else does.
#include "attnjit/cache_key.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "attnjit/codegen.h"
#include "attnjit/embedded.h"
#include "attnjit/nvrtc_version.h"
#include "test_support.h"

namespace attnjit {
namespace {

CompileOptions options_for(const std::string& target) {
  CompileOptions options;
  options.target = parse_target(target);
  return options;
}

Signature attention_signature(const std::map<std::string, FlagValue>& given,
                              const CompileOptions& options) {
  const Spec spec = load_embedded_spec("attention");
  return make_signature(spec, resolve_flags(spec, given), options);
}

TEST(CacheKey, SameInputsSameKey) {
  const Signature signature = attention_signature({}, options_for("sm_90a"));
  const CacheKey first = make_cache_key(signature, "source");
  const CacheKey second = make_cache_key(attention_signature({}, options_for("sm_90a")), "source");
  EXPECT_EQ(first, second);
  EXPECT_EQ(first.hex.size(), 64u);
  EXPECT_EQ(first.hex.find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(CacheKey, EveryInputChangesTheKey) {
  const Signature base = attention_signature({}, options_for("sm_90a"));
  std::set<std::string> keys = {make_cache_key(base, "source").hex};
  const auto add = [&](const CacheKey& key) { EXPECT_TRUE(keys.insert(key.hex).second); };
  add(make_cache_key(attention_signature({{"causal", true}}, options_for("sm_90a")), "source"));
  add(make_cache_key(attention_signature({{"head_dim", int64_t{64}}}, options_for("sm_90a")),
                     "source"));
  add(make_cache_key(attention_signature({}, options_for("sm_90")), "source"));
  add(make_cache_key(attention_signature({}, options_for("sm_80")), "source"));
  for (int option = 0; option < 4; ++option) {
    CompileOptions options = options_for("sm_90a");
    if (option == 0) options.line_info = true;
    if (option == 1) options.fast_math = false;
    if (option == 2) options.max_registers = 128;
    if (option == 3) options.emit_ptx = false;
    add(make_cache_key(attention_signature({}, options), "source"));
  }
  add(make_cache_key(base, "sourcf"));
}

TEST(CacheKey, InputsAreSpelledOut) {
  const Signature signature = attention_signature({}, options_for("sm_90a"));
  const CacheKeyInputs inputs = cache_key_inputs(signature, "source");
  EXPECT_EQ(inputs.canonical_signature, signature.canonical());
  EXPECT_EQ(inputs.target, "sm_90a");
  EXPECT_EQ(inputs.nvrtc_version, nvrtc_version());
  EXPECT_EQ(inputs.nvrtc_flags, signature.options.nvrtc_flags());
  EXPECT_EQ(inputs.generated_source, "source");
  EXPECT_EQ(inputs.headers_digest, embedded_headers_digest());
  EXPECT_EQ(hash_cache_key(inputs), make_cache_key(signature, "source"));
  // The flags are hashed sorted, whatever order a caller gives.
  CacheKeyInputs reordered = inputs;
  std::reverse(reordered.nvrtc_flags.begin(), reordered.nvrtc_flags.end());
  EXPECT_EQ(hash_cache_key(reordered), hash_cache_key(inputs));
}

TEST(CacheKey, OneTemplateByteChangesTheKey) {
  std::vector<EmbeddedHeader> headers = embedded_headers();
  EXPECT_EQ(headers_digest(headers), embedded_headers_digest());
  const Signature signature = attention_signature({}, options_for("sm_90a"));
  CacheKeyInputs inputs = cache_key_inputs(signature, "source");
  const CacheKey before = hash_cache_key(inputs);
  for (EmbeddedHeader& header : headers) {
    if (header.path == "testing/axpy.cuh") header.contents[header.contents.size() / 2] ^= 1;
  }
  inputs.headers_digest = headers_digest(headers);
  EXPECT_NE(inputs.headers_digest, embedded_headers_digest());
  EXPECT_NE(hash_cache_key(inputs), before);
  inputs = cache_key_inputs(signature, "source");
  inputs.nvrtc_version = "13.1";
  EXPECT_NE(hash_cache_key(inputs), before);
}

TEST(CacheKey, FieldBoundariesMatter) {
  CacheKeyInputs a;
  a.canonical_signature = "ab";
  a.target = "c";
  CacheKeyInputs b = a;
  b.canonical_signature = "a";
  b.target = "bc";
  EXPECT_NE(hash_cache_key(a), hash_cache_key(b));
}

TEST(CacheKey, NoPathInTheKey) {
  // The spec's file name is for messages only.
  const std::string text = testing::read_text(testing::axpy_spec_path());
  const Spec here = parse_spec(text, "/some/where/axpy.yaml");
  const Spec there = parse_spec(text, "elsewhere.yaml");
  const Signature a = make_signature(here, resolve_flags(here, {}), options_for("sm_80"));
  const Signature b = make_signature(there, resolve_flags(there, {}), options_for("sm_80"));
  EXPECT_EQ(make_cache_key(a, generate_source(here, a).text),
            make_cache_key(b, generate_source(there, b).text));
  const CacheKeyInputs inputs = cache_key_inputs(a, generate_source(here, a).text);
  for (const std::string& field : {inputs.canonical_signature, inputs.generated_source}) {
    EXPECT_EQ(field.find("/some/where"), std::string::npos);
    EXPECT_EQ(field.find(ATTNJIT_SOURCE_DIR), std::string::npos);
  }
}

}  // namespace
}  // namespace attnjit

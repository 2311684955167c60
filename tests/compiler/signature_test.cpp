// Signatures and cache keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "attnjit/codegen.h"
#include "attnjit/embedded.h"
#include "attnjit/nvrtc.h"
#include "attnjit/sha256.h"
#include "attnjit/signature.h"
#include "test_support.h"

namespace attnjit {
namespace {

using testing::error_message;

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

Signature axpy_signature(const std::map<std::string, FlagValue>& given,
                         const CompileOptions& options,
                         const std::map<std::string, int64_t>& overrides = {}) {
  const Spec spec = testing::axpy_spec();
  return make_signature(spec, resolve_flags(spec, given), options, overrides);
}

TEST(Signature, CanonicalGolden) {
  const Signature signature =
      axpy_signature({{"mode", std::string("clamp")}}, options_for("sm_90a"));
  EXPECT_EQ(signature.canonical(),
            "axpy[dtype=f32,vec=1,accumulate=true,stage_in_smem=false,mode=clamp|block_threads=256]"
            "@sm_90a{emit_ptx=true,fast_math=true,line_info=false,max_registers=0}");
  EXPECT_EQ(signature.family, "axpy");
  EXPECT_EQ(signature.entry, "axpy");
}

TEST(Signature, CanonicalShapeOfAttention) {
  const Signature signature = attention_signature({{"causal", true}}, options_for("sm_90a"));
  const std::string canonical = signature.canonical();
  EXPECT_EQ(
      canonical.rfind("attention_prefill[dtype=bf16,head_dim=128,causal=true,window=false,", 0), 0u)
      << canonical;
  EXPECT_NE(canonical.find("|block_m="), std::string::npos) << canonical;
  const std::string options =
      "]@sm_90a{emit_ptx=true,fast_math=true,line_info=false,max_registers=0}";
  EXPECT_EQ(canonical.substr(canonical.size() - options.size()), options);
}

TEST(Signature, DisplayName) {
  const Signature signature = attention_signature({}, options_for("sm_90a"));
  const std::string name = signature.display_name();
  EXPECT_EQ(name, "attention_prefill_" + sha256_hex(signature.canonical()).substr(0, 8));
  EXPECT_NE(name, attention_signature({{"causal", true}}, options_for("sm_90a")).display_name());
  EXPECT_EQ(axpy_signature({}, options_for("sm_80")).display_name(), "axpy_ee8da1eb");
}

TEST(Signature, TuningRulesFirstMatchWins) {
  const Spec spec = parse_spec(
      "family: f\ntemplate: testing/axpy.cuh\nentry: f\n"
      "flags:\n  d: {type: int, values: [64, 128, 256], default: 64}\n"
      "tuning:\n  params: [bm]\n  rules:\n"
      "    - {when: {d: [128, 256]}, bm: 32}\n"
      "    - {when: {d: 256}, bm: 16}\n"
      "    - {bm: 64}\n",
      "f.yaml");
  const auto bm = [&](int64_t d) {
    return make_signature(spec, resolve_flags(spec, {{"d", d}}), options_for("sm_80"))
        .tuning_value("bm");
  };
  EXPECT_EQ(bm(64), 64);
  EXPECT_EQ(bm(128), 32);
  EXPECT_EQ(bm(256), 32);
}

TEST(Signature, TuningRulesFilterByTarget) {
  EXPECT_EQ(axpy_signature({}, options_for("sm_90a")).tuning_value("block_threads"), 256);
  EXPECT_EQ(axpy_signature({}, options_for("sm_80")).tuning_value("block_threads"), 128);
  EXPECT_EQ(axpy_signature({}, options_for("sm_90")).tuning_value("block_threads"), 128);
  EXPECT_EQ(
      axpy_signature({{"vec", int64_t{4}}}, options_for("sm_90a")).tuning_value("block_threads"),
      128);
}

TEST(Signature, OverridesWin) {
  EXPECT_EQ(axpy_signature({}, options_for("sm_90a"), {{"block_threads", 64}})
                .tuning_value("block_threads"),
            64);
  EXPECT_EQ(error_message(
                [&] {
                  axpy_signature({}, options_for("sm_90a"), {{"block_thread", 64}});
                },
                ErrorKind::kFlags),
            "unknown tuning param 'block_thread' (did you mean 'block_threads'?)");
  EXPECT_EQ(error_message(
                [&] {
                  axpy_signature({}, options_for("sm_90a"), {{"block_threads", 1LL << 40}});
                },
                ErrorKind::kFlags),
            "tuning param 'block_threads': 1099511627776 does not fit in a 32-bit int");
}

TEST(Signature, UnsetParamsAreErrors) {
  const Spec spec = parse_spec(
      "family: f\ntemplate: testing/axpy.cuh\nentry: f\n"
      "flags:\n  k: {type: int, values: [1, 2], default: 1}\n"
      "tuning:\n  params: [bm, bn]\n  rules:\n    - {when: {k: 1}, bm: 64}\n",
      "f.yaml");
  EXPECT_EQ(
      error_message([&] { make_signature(spec, resolve_flags(spec, {}), options_for("sm_80")); },
                    ErrorKind::kFlags),
      "tuning param 'bn' is not set by the tuning rule at f.yaml:9:7 and has no override");
  const FlagSet two = resolve_flags(spec, {{"k", int64_t{2}}});
  EXPECT_EQ(
      error_message([&] { make_signature(spec, two, options_for("sm_80")); }, ErrorKind::kFlags),
      "no tuning rule of 'f' matches k=2 on sm_80 and tuning param 'bm' has no override");
  const Signature overridden =
      make_signature(spec, two, options_for("sm_80"), {{"bm", 32}, {"bn", 16}});
  EXPECT_EQ(
      overridden.canonical(),
      "f[k=2|bm=32,bn=16]@sm_80{emit_ptx=true,fast_math=true,line_info=false,max_registers=0}");
}

TEST(Signature, RejectsAFlagSetOfAnotherSpec) {
  const Spec attention = load_embedded_spec("attention");
  const FlagSet foreign = resolve_flags(attention, {});
  EXPECT_EQ(
      error_message([&] { make_signature(testing::axpy_spec(), foreign, options_for("sm_80")); },
                    ErrorKind::kFlags),
      "flag set has " + std::to_string(attention.flags.size()) + " flags, spec 'axpy' declares 5");
  FlagSet reordered = resolve_flags(testing::axpy_spec(), {});
  std::swap(reordered.values[0], reordered.values[1]);
  EXPECT_EQ(
      error_message([&] { make_signature(testing::axpy_spec(), reordered, options_for("sm_80")); },
                    ErrorKind::kFlags),
      "flag set does not match spec 'axpy' at flag 'dtype'; build it with resolve_flags()");
}

TEST(CacheKey, Sha256) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  Sha256 pieces;
  pieces.update("a");
  pieces.update("");
  pieces.update("bc");
  EXPECT_EQ(pieces.hex(), sha256_hex("abc"));
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

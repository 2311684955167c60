// The constexpr signature of one kernel variant and the cache key built
// from it (DESIGN.md decision 4).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "attnjit/options.h"
#include "attnjit/spec.h"

namespace attnjit {

// Everything that identifies one variant: the spec's family and flag
// values, the tile config picked by the tuning rules, and the options.
struct Signature {
  std::string family;
  std::string entry;
  FlagSet flags;
  std::vector<std::pair<std::string, int64_t>> tuning;  // spec param order
  CompileOptions options;

  // "attention_prefill[dtype=bf16,head_dim=128,...|block_m=128,...]@sm_90a"
  std::string canonical() const;
  // A short, file-name-safe name: family plus an 8-hex digest.
  std::string display_name() const;
  int64_t tuning_value(const std::string& param) const;  // asserts presence
};

// Applies the spec's tuning rules. Throws Error(kFlags) when no rule
// matches or a rule leaves a param unset. `overrides` (param -> value)
// win over the rules, for the autotuner.
Signature make_signature(const Spec& spec, const FlagSet& flags, const CompileOptions& options,
                         const std::map<std::string, int64_t>& overrides = {});

// Bumped whenever the on-disk entry layout changes.
constexpr int kCacheFormatVersion = 1;

struct CacheKey {
  std::string hex;  // 64 lowercase hex digits (SHA-256)
  bool operator==(const CacheKey& o) const { return hex == o.hex; }
  bool operator!=(const CacheKey& o) const { return hex != o.hex; }
  bool operator<(const CacheKey& o) const { return hex < o.hex; }
};

// SHA-256 over: the expanded source, the bytes of every embedded header it
// may include, the canonical signature, the target, NVRTC's version, the
// sorted options and kCacheFormatVersion. No path, no time, no host name.
CacheKey make_cache_key(const Signature& signature, const std::string& generated_source);

// The same key with every input spelled out; make_cache_key() fills
// nvrtc_version() and embedded_headers_digest(). Each field is hashed with
// its length in front, so no two input lists share a byte stream.
struct CacheKeyInputs {
  std::string canonical_signature;
  std::string target;
  std::string nvrtc_version;
  std::vector<std::string> nvrtc_flags;  // sorted
  std::string generated_source;
  std::string headers_digest;
};
CacheKeyInputs cache_key_inputs(const Signature& signature, const std::string& generated_source);
CacheKey hash_cache_key(const CacheKeyInputs& inputs);

}  // namespace attnjit

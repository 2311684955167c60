// The cache key of one variant (one struct decides both the generated code and the key): what a compiled
// binary is stored and found under, in memory and on disk.
#pragma once

#include <string>
#include <vector>

#include "attnjit/signature.h"

// The public C++ API: exported from libattnjit.so (the build hides the rest).
#pragma GCC visibility push(default)

namespace attnjit {

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

#pragma GCC visibility pop

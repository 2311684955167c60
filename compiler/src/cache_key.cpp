#include "attnjit/cache_key.h"

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "attnjit/embedded.h"
#include "attnjit/nvrtc_version.h"
#include "attnjit/sha256.h"

namespace attnjit {
namespace {

// Hashes fields with their length in front (8 bytes, little endian), so
// that no two lists of fields share a byte stream.
class FieldHasher {
 public:
  void field(const std::string& bytes) {
    char length[8];
    uint64_t size = bytes.size();
    for (char& byte : length) {
      byte = static_cast<char>(size & 0xff);
      size >>= 8;
    }
    hash_.update(std::string_view(length, sizeof length));
    hash_.update(bytes);
  }
  std::string hex() { return hash_.hex(); }

 private:
  Sha256 hash_;
};

}  // namespace

CacheKeyInputs cache_key_inputs(const Signature& signature, const std::string& generated_source) {
  return CacheKeyInputs{signature.canonical(), signature.options.target.name(),
                        nvrtc_version(),       signature.options.nvrtc_flags(),
                        generated_source,      embedded_headers_digest()};
}

CacheKey hash_cache_key(const CacheKeyInputs& inputs) {
  FieldHasher hasher;
  hasher.field("attnjit-cache-v" + std::to_string(kCacheFormatVersion));
  hasher.field(inputs.canonical_signature);
  hasher.field(inputs.target);
  hasher.field(inputs.nvrtc_version);
  std::vector<std::string> flags = inputs.nvrtc_flags;
  std::sort(flags.begin(), flags.end());
  hasher.field(std::to_string(flags.size()));
  for (const std::string& flag : flags) hasher.field(flag);
  hasher.field(inputs.generated_source);
  hasher.field(inputs.headers_digest);
  return CacheKey{hasher.hex()};
}

CacheKey make_cache_key(const Signature& signature, const std::string& generated_source) {
  return hash_cache_key(cache_key_inputs(signature, generated_source));
}

}  // namespace attnjit

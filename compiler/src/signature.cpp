// Signatures and cache keys (DESIGN.md decision 4).
#include "attnjit/signature.h"

#include <algorithm>
#include <limits>

#include "attnjit/embedded.h"
#include "attnjit/error.h"
#include "attnjit/nvrtc.h"
#include "attnjit/sha256.h"
#include "check.h"
#include "names.h"

namespace attnjit {
namespace {

void check_flag_set(const Spec& spec, const FlagSet& flags) {
  const bool same_size = flags.values.size() == spec.flags.size();
  for (std::size_t i = 0; same_size && i < spec.flags.size(); ++i) {
    const FlagDecl& decl = spec.flags[i];
    if (flags.values[i].first != decl.name || !decl.accepts(flags.values[i].second)) {
      throw Error(ErrorKind::kFlags, "flag set does not match spec " + detail::quoted(spec.family) +
                                         " at flag " + detail::quoted(decl.name) +
                                         "; build it with resolve_flags()");
    }
  }
  if (!same_size) {
    throw Error(ErrorKind::kFlags, "flag set has " + std::to_string(flags.values.size()) +
                                       " flags, spec " + detail::quoted(spec.family) +
                                       " declares " + std::to_string(spec.flags.size()));
  }
}

bool rule_matches(const TuningRule& rule, const FlagSet& flags, const Target& target) {
  for (const auto& [flag, values] : rule.when) {
    if (std::find(values.begin(), values.end(), flags.at(flag)) == values.end()) return false;
  }
  if (rule.targets.empty()) return true;
  return std::find(rule.targets.begin(), rule.targets.end(), target.name()) != rule.targets.end();
}

std::string flags_text(const FlagSet& flags) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : flags.values) parts.push_back(name + "=" + to_string(value));
  return detail::join(parts, ",");
}

void check_overrides(const Spec& spec, const std::map<std::string, int64_t>& overrides) {
  for (const auto& [param, value] : overrides) {
    const auto& params = spec.tuning.params;
    if (std::find(params.begin(), params.end(), param) == params.end()) {
      throw Error(ErrorKind::kFlags, "unknown tuning param " + detail::quoted(param) +
                                         detail::did_you_mean(param, params));
    }
    if (value < std::numeric_limits<int32_t>::min() ||
        value > std::numeric_limits<int32_t>::max()) {
      throw Error(ErrorKind::kFlags, "tuning param " + detail::quoted(param) + ": " +
                                         std::to_string(value) + " does not fit in a 32-bit int");
    }
  }
}

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

std::string Signature::canonical() const {
  std::vector<std::string> params;
  for (const auto& [param, value] : tuning) params.push_back(param + "=" + std::to_string(value));
  FlagSet flag_set{flags};
  return family + "[" + flags_text(flag_set) + "|" + detail::join(params, ",") + "]@" +
         options.canonical();
}

std::string Signature::display_name() const {
  return family + "_" + sha256_hex(canonical()).substr(0, 8);
}

int64_t Signature::tuning_value(const std::string& param) const {
  for (const auto& [name, value] : tuning) {
    if (name == param) return value;
  }
  detail::check_failed("param in tuning", "Signature::tuning_value: no such tuning param", __FILE__,
                       __LINE__);
}

Signature make_signature(const Spec& spec, const FlagSet& flags, const CompileOptions& options,
                         const std::map<std::string, int64_t>& overrides) {
  check_flag_set(spec, flags);
  check_overrides(spec, overrides);
  const TuningRule* rule = nullptr;
  for (const TuningRule& candidate : spec.tuning.rules) {
    if (rule_matches(candidate, flags, options.target)) {
      rule = &candidate;
      break;
    }
  }
  Signature signature{spec.family, spec.entry, flags, {}, options};
  for (const std::string& param : spec.tuning.params) {
    if (auto it = overrides.find(param); it != overrides.end()) {
      signature.tuning.emplace_back(param, it->second);
      continue;
    }
    if (rule != nullptr) {
      if (auto it = rule->values.find(param); it != rule->values.end()) {
        signature.tuning.emplace_back(param, it->second);
        continue;
      }
      throw Error(ErrorKind::kFlags, "tuning param " + detail::quoted(param) +
                                         " is not set by the tuning rule at " + rule->loc.str() +
                                         " and has no override");
    }
    throw Error(ErrorKind::kFlags, "no tuning rule of " + detail::quoted(spec.family) +
                                       " matches " + flags_text(flags) + " on " +
                                       options.target.name() + " and tuning param " +
                                       detail::quoted(param) + " has no override");
  }
  return signature;
}

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

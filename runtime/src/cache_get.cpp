// KernelCache::get: the one place where the cache meets the compiler
// (kept apart so that the rest of the cache links without it).
#include "attnjit/cache.h"
#include "attnjit/cache_key.h"
#include "attnjit/codegen.h"
#include "attnjit/nvrtc.h"
#include "attnjit/nvrtc_version.h"

namespace attnjit {

namespace {

EntryDescription describe(const Signature& signature) {
  EntryDescription description;
  description.canonical_signature = signature.canonical();
  description.display_name = signature.display_name();
  description.target = signature.options.target;
  description.nvrtc_version = nvrtc_version();
  return description;
}

}  // namespace

LookupResult KernelCache::get(const Spec& spec, const Signature& signature) {
  GeneratedSource source = generate_source(spec, signature);
  CacheKey key = make_cache_key(signature, source.key_text());
  return get_or_compile(key, describe(signature),
                        [&] { return compile_source(source, signature.options); });
}

std::optional<LookupResult> KernelCache::find(const Spec& spec, const Signature& signature) {
  GeneratedSource source = generate_source(spec, signature);
  return find_cached(make_cache_key(signature, source.key_text()), describe(signature));
}

}  // namespace attnjit

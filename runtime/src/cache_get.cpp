// KernelCache::get: the one place where the cache meets the compiler
// (kept apart so that the rest of the cache links without it).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

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

void build_variants(std::vector<BuildItem>& items, KernelCache& cache, int jobs,
                    const std::function<void(const BuildItem&, size_t)>& done) {
  if (jobs < 1) jobs = int(std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0};
  size_t finished = 0;
  std::mutex mutex;
  auto worker = [&] {
    for (size_t i = next++; i < items.size(); i = next++) {
      BuildItem& item = items[i];
      const auto t0 = std::chrono::steady_clock::now();
      try {
        const LookupResult r = cache.get(*item.spec, item.signature);
        item.source = r.source;
        item.key = r.entry->key.hex;
        item.resources = r.entry->kernel.resources;
      } catch (const std::exception& e) {
        item.error = e.what();
      }
      item.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::lock_guard<std::mutex> lock(mutex);
      ++finished;
      if (done) done(item, finished);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < std::min<int>(jobs, int(items.size())); ++t) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
}

}  // namespace attnjit

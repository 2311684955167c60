// The kernel cache.
//
// Lookup order: memory, then read-only AOT directories, then the writable
// user directory, then compile (unless no-JIT). Compiled binaries are
// content-addressed by CacheKey; disk entries are published atomically
// (write a temp file in the same directory, fsync, rename), carry a
// SHA-256 checksum of their payload, and are verified on load. A corrupt,
// truncated or foreign entry is logged, ignored and recompiled, never
// trusted and never fatal. An unwritable user directory degrades to memory
// only with one warning. Concurrent requests for one key compile once
// (single-flight); a hit never waits behind another key's compile.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attnjit/cache_key.h"
#include "attnjit/nvrtc.h"
#include "attnjit/signature.h"
#include "attnjit/spec.h"
#include "attnjit/target.h"

// The public C++ API: exported from libattnjit.so (the build hides the rest).
#pragma GCC visibility push(default)

namespace attnjit {

struct CacheConfig {
  // Writable directory; empty disables the disk cache. Default (from_env):
  // $ATTNJIT_CACHE_DIR, else $XDG_CACHE_HOME/attnjit, else ~/.cache/attnjit.
  std::string user_dir;
  // Read-only directories searched before user_dir ($ATTNJIT_AOT_DIRS,
  // ':'-separated).
  std::vector<std::string> aot_dirs;
  // A miss in every cache is an error instead of a compile
  // ($ATTNJIT_NO_JIT, a switch read by env_bool).
  bool no_jit = false;
  // Print every cold compile to stderr ($ATTNJIT_LOG, a switch). Cache faults
  // (corrupt entries, failed writes, an unwritable directory) are warned
  // about on stderr whether or not this is set.
  bool log = false;

  static CacheConfig from_environment();
};

struct CacheStats {
  uint64_t memory_hits = 0;
  uint64_t disk_hits = 0;  // user dir or AOT dir
  uint64_t aot_hits = 0;   // of which from an AOT dir
  uint64_t compiles = 0;
  uint64_t corrupt_entries = 0;  // found, rejected, recompiled
  uint64_t write_failures = 0;
};

enum class EntrySource { kMemory, kAot, kDisk, kCompiled };
const char* to_string(EntrySource source);

// What the cache holds for one key.
struct CacheEntry {
  CacheKey key;
  std::string canonical_signature;
  std::string display_name;
  CompiledKernel kernel;
  // Informational (the key already covers both): shown by `inspect`.
  std::string target;         // "sm_90a"
  std::string nvrtc_version;  // "13.0"
};

// What get_or_compile records beside the binary.
struct EntryDescription {
  std::string canonical_signature;
  std::string display_name;
  // The target the binary is for, typed (the signature's options.target):
  // recorded in a new entry, and an entry found on disk for another target
  // is rejected. Unset: neither.
  std::optional<Target> target;
  std::string nvrtc_version;
};

struct LookupResult {
  std::shared_ptr<const CacheEntry> entry;
  EntrySource source = EntrySource::kCompiled;
};

class KernelCache {
 public:
  explicit KernelCache(CacheConfig config);
  ~KernelCache();
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  // The process-wide cache configured from the environment.
  static KernelCache& global();

  // Returns the binary for this variant: generates the source, computes the
  // key, and walks memory -> AOT -> user dir -> compile. Throws
  // Error(kNoJit) on a miss in no-JIT mode, Error(kCompile) when NVRTC
  // fails.
  LookupResult get(const Spec& spec, const Signature& signature);

  // Lower-level form used by get(): `compile` runs at most once per key
  // across concurrent callers in this process.
  // Counting: a caller that waited for another caller's compile of the
  // same key counts as a memory hit. A failed compile is not counted and is
  // rethrown to every caller waiting for it; the next call tries again.
  LookupResult get_or_compile(const CacheKey& key, const std::string& canonical_signature,
                              const std::string& display_name, const Target& target,
                              const std::function<CompiledKernel()>& compile);
  LookupResult get_or_compile(const CacheKey& key, const EntryDescription& description,
                              const std::function<CompiledKernel()>& compile);

  // The binary for this variant if memory, an AOT dir or the user dir
  // holds it: never compiles, never waits for another caller's compile
  // (nullopt then). A disk hit is kept in memory, as get() keeps it.
  std::optional<LookupResult> find(const Spec& spec, const Signature& signature);
  std::optional<LookupResult> find_cached(const CacheKey& key,
                                          const EntryDescription& description);

  CacheStats stats() const;
  const CacheConfig& config() const;
  // True once the user directory was found unwritable (memory-only mode).
  // Set by the first write that fails for a lasting reason (permission,
  // read-only filesystem, a path that cannot be a directory); a full disk
  // or a directory removed meanwhile only fails that one write.
  bool disk_disabled() const;

  // Entry files: <dir>/<key[0:2]>/<key>.ajk
  static std::string entry_path(const std::string& dir, const CacheKey& key);
  // The advisory lock beside it (flock), taken around compile and publish
  // so that processes sharing a user directory compile a key once; its
  // holder removes it as it lets go, so none stays behind.
  static std::string lock_path(const std::string& dir, const CacheKey& key);

  // Unique for the process lifetime (never reused, unlike an address).
  uint64_t instance_id() const { return instance_id_; }

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  uint64_t instance_id_;
};

// Serialization of one entry (magic, format version, key, checksum,
// metadata JSON, cubin, ptx). decode throws Error(kCache) with the reason
// on any mismatch: bad magic, other format version, other key, checksum
// mismatch, truncation.
std::string encode_entry(const CacheEntry& entry);
CacheEntry decode_entry(const std::string& bytes, const CacheKey& expected);

// For `attnjit inspect`: every entry under dir, verified.
struct EntryReport {
  std::string path;
  std::string key;
  std::string display_name;
  std::string canonical_signature;
  size_t bytes = 0;
  bool ok = false;
  std::string problem;  // when !ok
};
std::vector<EntryReport> scan_cache_dir(const std::string& dir);

// One variant of a parallel build (build_variants): what to compile, and
// what came of it.
struct BuildItem {
  const Spec* spec = nullptr;
  Signature signature;
  EntrySource source = EntrySource::kCompiled;
  double seconds = 0;
  std::string key;  // the entry's, when built
  ResourceUsage resources;
  std::string error;  // empty: built
};

// Looks every item up in `cache` (compiling it where no cache holds it),
// `jobs` at a time (0: one per core); an item's failure is recorded in it
// and the others go on. After each item, `done(item, finished)` runs under
// a lock (finished: how many are done), for progress.
void build_variants(std::vector<BuildItem>& items, KernelCache& cache, int jobs,
                    const std::function<void(const BuildItem&, size_t)>& done = {});

}  // namespace attnjit

#pragma GCC visibility pop

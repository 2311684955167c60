// The kernel cache: memory with single-flight per key, then the read-only
// AOT directories, then the user directory, then compile.
//
// Locking: `mutex` guards only the slot map and is never held across disk
// I/O or a compile, so a hit on one key never waits behind work on another.
// The first caller for a key becomes its leader and resolves it; callers
// that arrive meanwhile wait on that key's Flight. Across processes, the
// leader holds an flock on the key's lock file in the user directory from
// the second look on disk until the entry is published.
#include "attnjit/cache.h"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "attnjit/error.h"
#include "cache_disk.h"
#include "log.h"

namespace attnjit {
namespace {

// How long a process waits for another one compiling the same key before
// it compiles too. Long enough for any real compile; short enough that a
// hung peer costs a delay, not a deadlock.
constexpr std::chrono::milliseconds kLockWaitLimit(60 * 1000);

// The result of one key's resolution, handed to the callers waiting on it.
struct Flight {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  std::shared_ptr<const CacheEntry> entry;
  std::exception_ptr error;
};

struct Slot {
  std::shared_ptr<const CacheEntry> entry;  // set once resolved
  std::shared_ptr<Flight> flight;           // set while being resolved
};

std::string target_of(const EntryDescription& description) {
  return description.target ? description.target->name() : "";
}

// Metadata text from a file, made safe for a one-line warning.
std::string printable(const std::string& text) {
  std::string out;
  for (char c : text.substr(0, 200)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return text.size() > 200 ? out + "..." : out;
}

// An entry under the right key, with a valid checksum, whose metadata names
// another target or variant was not written by this cache for this key (a
// tool, a hand, a bug did it): its binary is not trusted. An sm_80 cubin
// under an sm_90a key would otherwise fail at module load, every launch.
void check_describes(const CacheEntry& entry, const EntryDescription& description) {
  const std::string target = target_of(description);
  if (!target.empty() && entry.target != target)
    throw Error(ErrorKind::kCache,
                fmt::format("entry is for target {}, not {}", printable(entry.target), target));
  if (!description.canonical_signature.empty() &&
      entry.canonical_signature != description.canonical_signature)
    throw Error(ErrorKind::kCache,
                fmt::format("entry describes {}, not {}", printable(entry.canonical_signature),
                            description.canonical_signature));
}

}  // namespace

struct KernelCache::Impl {
  explicit Impl(CacheConfig c) : config(std::move(c)) {}

  CacheConfig config;
  std::mutex mutex;  // guards `slots` only
  std::unordered_map<std::string, Slot> slots;

  std::atomic<uint64_t> memory_hits{0};
  std::atomic<uint64_t> disk_hits{0};
  std::atomic<uint64_t> aot_hits{0};
  std::atomic<uint64_t> compiles{0};
  std::atomic<uint64_t> corrupt_entries{0};
  std::atomic<uint64_t> write_failures{0};
  std::atomic<bool> disk_disabled{false};

  // Writes (and the compile locks) stop once the user dir proves unwritable;
  // its existing entries are still read: a full or read-only disk costs the
  // new kernels their disk copy, not the old ones.
  bool user_dir_readable() const { return !config.user_dir.empty(); }
  bool user_dir_writable() const { return user_dir_readable() && !disk_disabled.load(); }

  LookupResult wait_for(Flight& flight);
  void finish(const CacheKey& key, Flight& flight, std::shared_ptr<const CacheEntry> entry,
              std::exception_ptr error);

  // The AOT dirs, then the user dir (counted as hits); nullopt on a miss.
  // *user_corrupt: the user dir's entry was there but bad (reported).
  std::optional<LookupResult> load_stored(const CacheKey& key, const EntryDescription& description,
                                          bool* user_corrupt);
  LookupResult resolve(const CacheKey& key, const EntryDescription& description,
                       const std::function<CompiledKernel()>& compile);
  std::shared_ptr<const CacheEntry> load_from(const std::string& dir, const CacheKey& key,
                                              const EntryDescription& description,
                                              bool report_corrupt, bool* corrupt);
  std::shared_ptr<const CacheEntry> compile_entry(const CacheKey& key,
                                                  const EntryDescription& description,
                                                  const std::function<CompiledKernel()>& compile);
  void publish(const CacheEntry& entry);
  bool ensure_shard_dir(const std::string& dir);
  void note_write_failure(const std::string& what, const std::string& reason);
  void disable_disk(const std::string& reason);
  Error no_jit_error(const CacheKey& key, const EntryDescription& description) const;
};

LookupResult KernelCache::Impl::wait_for(Flight& flight) {
  std::unique_lock<std::mutex> lock(flight.mutex);
  flight.done_cv.wait(lock, [&] { return flight.done; });
  if (flight.error) std::rethrow_exception(flight.error);
  memory_hits.fetch_add(1, std::memory_order_relaxed);
  return LookupResult{flight.entry, EntrySource::kMemory};
}

void KernelCache::Impl::finish(const CacheKey& key, Flight& flight,
                               std::shared_ptr<const CacheEntry> entry, std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = slots.find(key.hex);
    if (entry) {
      it->second.entry = entry;
      it->second.flight.reset();
    } else {
      slots.erase(it);  // a failure is not cached: the next call retries
    }
  }
  std::lock_guard<std::mutex> lock(flight.mutex);
  flight.done = true;
  flight.entry = std::move(entry);
  flight.error = std::move(error);
  flight.done_cv.notify_all();
}

std::optional<LookupResult> KernelCache::Impl::load_stored(const CacheKey& key,
                                                           const EntryDescription& description,
                                                           bool* user_corrupt) {
  bool corrupt = false;
  for (const std::string& dir : config.aot_dirs) {
    if (auto entry = load_from(dir, key, description, /*report_corrupt=*/true, &corrupt)) {
      aot_hits.fetch_add(1, std::memory_order_relaxed);
      disk_hits.fetch_add(1, std::memory_order_relaxed);
      return LookupResult{entry, EntrySource::kAot};
    }
  }
  if (user_dir_readable()) {
    auto entry =
        load_from(config.user_dir, key, description, /*report_corrupt=*/true, user_corrupt);
    if (entry) {
      disk_hits.fetch_add(1, std::memory_order_relaxed);
      return LookupResult{entry, EntrySource::kDisk};
    }
  }
  return std::nullopt;
}

LookupResult KernelCache::Impl::resolve(const CacheKey& key, const EntryDescription& description,
                                        const std::function<CompiledKernel()>& compile) {
  bool user_corrupt = false;
  if (std::optional<LookupResult> found = load_stored(key, description, &user_corrupt)) {
    return *found;
  }
  if (config.no_jit) throw no_jit_error(key, description);

  // Another process may be compiling this key: wait for it, then look again.
  cache_disk::FileLock lock;
  std::string shard = config.user_dir + "/" + key.hex.substr(0, 2);
  if (user_dir_writable() && cache_disk::ensure_directory(shard).ok()) {
    lock =
        cache_disk::FileLock::acquire(KernelCache::lock_path(config.user_dir, key), kLockWaitLimit);
    if (lock.held()) {
      // A corrupt entry already reported is not reported twice.
      auto entry = load_from(config.user_dir, key, description,
                             /*report_corrupt=*/!user_corrupt, &user_corrupt);
      if (entry) {
        disk_hits.fetch_add(1, std::memory_order_relaxed);
        return LookupResult{entry, EntrySource::kDisk};
      }
    }
  }
  auto entry = compile_entry(key, description, compile);
  if (user_dir_writable()) publish(*entry);
  return LookupResult{entry, EntrySource::kCompiled};
}

std::shared_ptr<const CacheEntry> KernelCache::Impl::load_from(const std::string& dir,
                                                               const CacheKey& key,
                                                               const EntryDescription& description,
                                                               bool report_corrupt, bool* corrupt) {
  std::string path = KernelCache::entry_path(dir, key);
  cache_disk::ReadResult read = cache_disk::read_file(path);
  if (read.status == cache_disk::ReadResult::kMissing) return nullptr;
  if (read.status == cache_disk::ReadResult::kFailed) {
    log_line(
        fmt::format("attnjit: cannot read cache entry {} ({}); ignoring it", path, read.reason));
    return nullptr;
  }
  try {
    auto entry = std::make_shared<const CacheEntry>(decode_entry(read.bytes, key));
    check_describes(*entry, description);
    return entry;
  } catch (const Error& e) {
    *corrupt = true;
    if (report_corrupt) {
      corrupt_entries.fetch_add(1, std::memory_order_relaxed);
      log_line(fmt::format("attnjit: ignoring bad cache entry {}: {}", path, e.what()));
    }
    return nullptr;
  }
}

std::shared_ptr<const CacheEntry> KernelCache::Impl::compile_entry(
    const CacheKey& key, const EntryDescription& description,
    const std::function<CompiledKernel()>& compile) {
  auto start = std::chrono::steady_clock::now();
  CompiledKernel kernel = compile();
  std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  compiles.fetch_add(1, std::memory_order_relaxed);
  if (kernel.compile_seconds <= 0) kernel.compile_seconds = elapsed.count();
  if (config.log)
    log_line(fmt::format("attnjit: compiled {} in {:.0f} ms ({})", description.display_name,
                         elapsed.count() * 1000, key.hex.substr(0, 12)));
  auto entry = std::make_shared<CacheEntry>();
  entry->key = key;
  entry->canonical_signature = description.canonical_signature;
  entry->display_name = description.display_name;
  entry->kernel = std::move(kernel);
  entry->target = target_of(description);
  entry->nvrtc_version = description.nvrtc_version;
  return entry;
}

void KernelCache::Impl::publish(const CacheEntry& entry) {
  std::string bytes = encode_entry(entry);
  std::string shard = config.user_dir + "/" + entry.key.hex.substr(0, 2);
  std::string path = KernelCache::entry_path(config.user_dir, entry.key);
  // Twice at most: the directory may have been removed under us.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!ensure_shard_dir(shard)) return;
    cache_disk::WriteResult result = cache_disk::publish_file(path, bytes);
    if (result.ok()) return;
    if (result.error == ENOENT && attempt == 0) continue;
    if (cache_disk::is_transient(result.error) || result.error == ENOENT)
      return note_write_failure(path, result.reason);
    return disable_disk(result.reason);
  }
}

bool KernelCache::Impl::ensure_shard_dir(const std::string& dir) {
  cache_disk::WriteResult result = cache_disk::ensure_directory(dir);
  if (result.ok()) return true;
  if (cache_disk::is_transient(result.error))
    note_write_failure(dir, result.reason);
  else
    disable_disk(result.reason);
  return false;
}

void KernelCache::Impl::note_write_failure(const std::string& what, const std::string& reason) {
  write_failures.fetch_add(1, std::memory_order_relaxed);
  log_line(
      fmt::format("attnjit: could not write {} ({}); keeping the kernel in "
                  "memory only",
                  what, reason));
}

void KernelCache::Impl::disable_disk(const std::string& reason) {
  write_failures.fetch_add(1, std::memory_order_relaxed);
  if (disk_disabled.exchange(true)) return;
  log_line(
      fmt::format("attnjit: cache directory {} is not writable ({}); "
                  "new kernels stay in memory, existing entries are still read",
                  config.user_dir, reason));
}

Error KernelCache::Impl::no_jit_error(const CacheKey& key,
                                      const EntryDescription& description) const {
  std::string searched = "memory";
  for (const std::string& dir : config.aot_dirs) searched += ", " + dir;
  if (!config.user_dir.empty()) {
    searched += ", " + config.user_dir;
    if (disk_disabled.load()) searched += " (read-only)";
  }
  return Error(ErrorKind::kNoJit, fmt::format("no-JIT mode: {} ({}) is in no cache (searched: "
                                              "{}); build it with `attnjit build-cache`",
                                              description.display_name, key.hex, searched));
}

namespace {
std::atomic<uint64_t> next_cache_instance{1};
}  // namespace

KernelCache::KernelCache(CacheConfig config)
    : impl_(std::make_unique<Impl>(std::move(config))), instance_id_(next_cache_instance++) {}

KernelCache::~KernelCache() = default;

KernelCache& KernelCache::global() {
  // Never destroyed, like the kernels that point into it (see attention.cpp).
  static KernelCache& cache = *new KernelCache(CacheConfig::from_environment());
  return cache;
}

LookupResult KernelCache::get_or_compile(const CacheKey& key,
                                         const std::string& canonical_signature,
                                         const std::string& display_name, const Target& target,
                                         const std::function<CompiledKernel()>& compile) {
  EntryDescription description;
  description.canonical_signature = canonical_signature;
  description.display_name = display_name;
  description.target = target;
  return get_or_compile(key, description, compile);
}

LookupResult KernelCache::get_or_compile(const CacheKey& key, const EntryDescription& description,
                                         const std::function<CompiledKernel()>& compile) {
  if (!cache_disk::is_key_hex(key.hex))
    throw Error(ErrorKind::kCache,
                fmt::format("malformed cache key '{}' for {}", key.hex, description.display_name));
  std::shared_ptr<Flight> flight;
  bool leader = false;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    Slot& slot = impl_->slots.try_emplace(key.hex).first->second;
    if (slot.entry) {
      impl_->memory_hits.fetch_add(1, std::memory_order_relaxed);
      return LookupResult{slot.entry, EntrySource::kMemory};
    }
    if (!slot.flight) {
      slot.flight = std::make_shared<Flight>();
      leader = true;
    }
    flight = slot.flight;
  }
  if (!leader) return impl_->wait_for(*flight);
  LookupResult result;
  try {
    result = impl_->resolve(key, description, compile);
  } catch (...) {
    impl_->finish(key, *flight, nullptr, std::current_exception());
    throw;
  }
  impl_->finish(key, *flight, result.entry, nullptr);
  return result;
}

std::optional<LookupResult> KernelCache::find_cached(const CacheKey& key,
                                                     const EntryDescription& description) {
  if (!cache_disk::is_key_hex(key.hex)) return std::nullopt;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    auto it = impl_->slots.find(key.hex);
    if (it != impl_->slots.end()) {
      if (it->second.entry) {
        impl_->memory_hits.fetch_add(1, std::memory_order_relaxed);
        return LookupResult{it->second.entry, EntrySource::kMemory};
      }
      if (it->second.flight) return std::nullopt;  // being resolved by another caller
    }
  }
  // The AOT dirs and the user dir as resolve() reads them; no file lock,
  // no compile.
  bool user_corrupt = false;
  std::optional<LookupResult> found = impl_->load_stored(key, description, &user_corrupt);
  if (!found) return std::nullopt;
  std::lock_guard<std::mutex> lock(impl_->mutex);
  Slot& slot = impl_->slots.try_emplace(key.hex).first->second;
  if (!slot.entry && !slot.flight) slot.entry = found->entry;
  return found;
}

CacheStats KernelCache::stats() const {
  CacheStats s;
  s.memory_hits = impl_->memory_hits.load();
  s.disk_hits = impl_->disk_hits.load();
  s.aot_hits = impl_->aot_hits.load();
  s.compiles = impl_->compiles.load();
  s.corrupt_entries = impl_->corrupt_entries.load();
  s.write_failures = impl_->write_failures.load();
  return s;
}

const CacheConfig& KernelCache::config() const { return impl_->config; }

bool KernelCache::disk_disabled() const { return impl_->disk_disabled.load(); }

}  // namespace attnjit

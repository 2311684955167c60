// Cache faults that tests/runtime does not cover: an entry replaced between
// the check and the load, a full disk (a 64 KiB tmpfs, and a file size
// limit), a read-only file system, entries for another target or variant
// under the right key, and files that are not entries at all (a FIFO, a
// directory). In each case the process keeps working from memory, every
// lookup gets its own variant, and no partial entry is left or loaded.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>

#include "attnjit/cache.h"
#include "attnjit/cache_key.h"
#include "attnjit/codegen.h"
#include "attnjit/error.h"
#include "attnjit/signature.h"
#include "compiler/test_support.h"
#include "reliability_support.h"
#include "runtime/cache_test_support.h"

namespace attnjit {
namespace {

namespace fs = std::filesystem;
using testing::fake_entry;
using testing::fake_kernel;
using testing::fake_key;
using testing::get_fake;
using testing::read_bytes;
using testing::write_bytes;

// A fake kernel whose cubin has `bytes` bytes (distinct per tag).
CompiledKernel sized_kernel(const std::string& tag, size_t bytes) {
  CompiledKernel kernel = fake_kernel(tag);
  kernel.cubin.resize(bytes, static_cast<char>(tag.size()));
  return kernel;
}

LookupResult get_sized(KernelCache& cache, const std::string& tag, size_t bytes,
                       std::atomic<int>* compiles = nullptr) {
  return cache.get_or_compile(fake_key(tag), "fake[tag=" + tag + "]@sm_90a", "fake_" + tag,
                              testing::fake_target(), [&] {
                                if (compiles) ++*compiles;
                                return sized_kernel(tag, bytes);
                              });
}

// Files under `dir` that are neither entries nor lock files (a temp file of
// an abandoned publish, for instance).
int stray_files(const std::string& dir) {
  int stray = 0;
  std::error_code ec;
  for (const auto& item : fs::recursive_directory_iterator(dir, ec)) {
    if (!item.is_regular_file()) continue;
    const std::string ext = item.path().extension().string();
    if (ext != ".ajk" && ext != ".lock") ++stray;
  }
  return stray;
}

// ---- an entry replaced between the check and the load -------------------

// A second thread keeps replacing the entry of key A with a valid entry of
// key B (atomically, by rename, as a peer would publish) and back, while
// fresh caches look A up. Each lookup is a disk hit on A's entry or a
// rejection of B's followed by a compile: never B's kernel. The lookups
// start once the swapper runs and go on until both outcomes were seen
// often enough (or a minute passed): on a loaded machine the swapper may
// get little time, and a fixed count of lookups could then see no swap.
TEST(EntrySwapped, BetweenCheckAndLoadIsRejectedByTheKeyCheck) {
  testing::TempDir dir;
  const std::string path = KernelCache::entry_path(dir.path(), fake_key("A"));
  const std::string a_bytes = testing::encode_entry_of("A");
  const std::string b_bytes = testing::encode_entry_of("B");
  write_bytes(path, a_bytes);
  std::atomic<bool> stop{false};
  std::atomic<int> swaps{0};
  std::thread swapper([&] {
    for (int i = 0; !stop.load(); ++i) {
      const std::string temp = path + ".swap";
      write_bytes(temp, i % 2 ? a_bytes : b_bytes);
      fs::rename(temp, path);
      ++swaps;
    }
  });
  while (swaps.load() < 2) std::this_thread::yield();
  int disk_hits = 0, rejected = 0, wrong = 0, lookups = 0;
  ::testing::internal::CaptureStderr();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((disk_hits < 20 || rejected < 20) && std::chrono::steady_clock::now() < deadline) {
    KernelCache cache(testing::disk_config(dir.path()));
    LookupResult r = get_fake(cache, "A");
    ++lookups;
    if (r.entry->kernel.cubin != fake_kernel("A").cubin) ++wrong;
    if (r.source == EntrySource::kDisk) ++disk_hits;
    if (cache.stats().corrupt_entries > 0) ++rejected;
  }
  stop = true;
  swapper.join();
  const std::string err = ::testing::internal::GetCapturedStderr();
  std::printf("[ swap     ] %d lookups: %d disk hits, %d rejections of the swapped entry\n",
              lookups, disk_hits, rejected);
  EXPECT_EQ(wrong, 0);
  EXPECT_GT(disk_hits, 0);
  EXPECT_GT(rejected, 0);
  EXPECT_NE(err.find("entry is for key " + fake_key("B").hex), std::string::npos);
}

// Same, with a careless writer that rewrites the file in place in two
// halves: a reader may see half of either entry. Checksums and sizes reject
// every torn read.
TEST(EntrySwapped, TornInPlaceWritesAreNeverLoaded) {
  testing::TempDir dir;
  const std::string path = KernelCache::entry_path(dir.path(), fake_key("A"));
  const std::string a_bytes = testing::encode_entry_of("A");
  const std::string b_bytes = testing::encode_entry_of("B");
  write_bytes(path, a_bytes);
  std::atomic<bool> stop{false};
  std::atomic<int> writes{0};
  std::thread writer([&] {
    for (int i = 0; !stop.load(); ++i, ++writes) {
      const std::string& bytes = i % 3 ? a_bytes : b_bytes;
      const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CREAT, 0644);
      if (fd < 0) continue;
      const size_t half = bytes.size() / 2;
      (void)!::write(fd, bytes.data(), half);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      (void)!::write(fd, bytes.data() + half, bytes.size() - half);
      ::close(fd);
    }
  });
  while (writes.load() < 2) std::this_thread::yield();
  int wrong = 0, lookups = 0, rejected = 0;
  ::testing::internal::CaptureStderr();
  // (At least 600 lookups, and on until 5 rejections or a minute: a
  // loaded machine may give the writer little time.)
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (; lookups < 600 || (rejected < 5 && std::chrono::steady_clock::now() < deadline);
       ++lookups) {
    KernelCache cache(testing::disk_config(dir.path()));
    LookupResult r = get_fake(cache, "A");
    if (r.entry->kernel.cubin != fake_kernel("A").cubin) ++wrong;
    if (cache.stats().corrupt_entries > 0) ++rejected;
  }
  stop = true;
  writer.join();
  ::testing::internal::GetCapturedStderr();
  std::printf("[ torn     ] %d lookups: %d torn or foreign entries rejected\n", lookups, rejected);
  EXPECT_EQ(wrong, 0);
  EXPECT_GT(rejected, 0);
}

// ---- a full disk ---------------------------------------------------------

// Runs `body` in a child process with its own mount namespace, where it may
// mount a tmpfs that nobody else sees and that vanishes with the child.
// Returns "skip: why" when this machine does not allow it.
testing::ChildResult in_private_mounts(const std::function<int(FILE*)>& body) {
  return testing::run_in_child([&](FILE* out) {
    if (::unshare(CLONE_NEWNS) != 0) {
      std::fprintf(out, "skip: unshare(CLONE_NEWNS): %s\n", std::strerror(errno));
      return 0;
    }
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      std::fprintf(out, "skip: making / private: %s\n", std::strerror(errno));
      return 0;
    }
    return body(out);
  });
}

bool mount_tmpfs(const std::string& dir, const char* size, FILE* out) {
  fs::create_directories(dir);
  const std::string options = std::string("size=") + size;
  if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, options.c_str()) != 0) {
    std::fprintf(out, "skip: mount -t tmpfs -o %s: %s\n", options.c_str(), std::strerror(errno));
    return false;
  }
  return true;
}

#define CHILD_EXPECT(condition)                                                          \
  do {                                                                                   \
    if (!(condition)) std::fprintf(out, "failed: %s (line %d)\n", #condition, __LINE__); \
  } while (0)

void report_child(const testing::ChildResult& child) {
  if (child.output.rfind("skip:", 0) == 0) GTEST_SKIP() << child.output;
  EXPECT_TRUE(child.exited_ok()) << "status " << child.status;
  EXPECT_EQ(child.output.find("failed:"), std::string::npos) << child.output;
  EXPECT_NE(child.output.find("done"), std::string::npos) << child.output;
  std::printf("%s", child.output.c_str());
}

TEST(FullDisk, SmallTmpfsKeepsServingFromMemoryAndLosesNothing) {
  testing::TempDir dir;
  const std::string mnt = dir / "mnt";
  report_child(in_private_mounts([&](FILE* out) {
    if (!mount_tmpfs(mnt, "64k", out)) return 0;
    constexpr int kVariants = 10;
    constexpr size_t kCubin = 12 * 1024;  // about five fit
    const std::string cache_dir = mnt + "/cache";
    int published = 0;
    {
      KernelCache cache(testing::disk_config(cache_dir));
      std::atomic<int> compiles{0};
      for (int i = 0; i < kVariants; ++i) {
        const std::string tag = "full" + std::to_string(i);
        LookupResult r = get_sized(cache, tag, kCubin, &compiles);
        CHILD_EXPECT(r.entry->kernel.cubin == sized_kernel(tag, kCubin).cubin);
        CHILD_EXPECT(r.source == EntrySource::kCompiled);
      }
      // Everything is still served, from memory.
      for (int i = 0; i < kVariants; ++i) {
        const std::string tag = "full" + std::to_string(i);
        LookupResult r = get_sized(cache, tag, kCubin, &compiles);
        CHILD_EXPECT(r.source == EntrySource::kMemory);
        CHILD_EXPECT(r.entry->kernel.cubin == sized_kernel(tag, kCubin).cubin);
      }
      CHILD_EXPECT(compiles.load() == kVariants);
      CHILD_EXPECT(!cache.disk_disabled());  // a full disk costs writes, not the disk
      const CacheStats s = cache.stats();
      CHILD_EXPECT(s.write_failures > 0);
      for (int i = 0; i < kVariants; ++i)
        published +=
            fs::exists(KernelCache::entry_path(cache_dir, fake_key("full" + std::to_string(i))));
      CHILD_EXPECT(published > 0 && published < kVariants);
      CHILD_EXPECT(int(s.write_failures) == kVariants - published);
      CHILD_EXPECT(stray_files(cache_dir) == 0);  // failed temp files are removed
      std::fprintf(out,
                   "[ full     ] 64 KiB tmpfs: %d of %d entries published, %llu write failures, "
                   "all %d served from memory\n",
                   published, kVariants, (unsigned long long)s.write_failures, kVariants);

      // Space comes back: the next variant is published again.
      fs::remove(KernelCache::entry_path(cache_dir, fake_key("full0")));
      fs::remove(KernelCache::entry_path(cache_dir, fake_key("full1")));
      get_sized(cache, "after", kCubin);
      CHILD_EXPECT(fs::exists(KernelCache::entry_path(cache_dir, fake_key("after"))));
    }
    // A later process: what is on disk decodes; the rest compiles again.
    KernelCache next(testing::disk_config(cache_dir));
    std::atomic<int> recompiled{0};
    for (int i = 0; i < kVariants; ++i) {
      const std::string tag = "full" + std::to_string(i);
      LookupResult r = get_sized(next, tag, kCubin, &recompiled);
      CHILD_EXPECT(r.entry->kernel.cubin == sized_kernel(tag, kCubin).cubin);
    }
    CHILD_EXPECT(next.stats().corrupt_entries == 0);
    std::fprintf(out, "done\n");
    return 0;
  }));
}

// The same through a file size limit (RLIMIT_FSIZE with SIGXFSZ ignored),
// which works without mount privileges: an entry over the limit fails with
// EFBIG, which costs that one write and not the disk.
TEST(FullDisk, FileSizeLimitCostsOnlyTheOversizedWrite) {
  testing::TempDir dir;
  const std::string cache_dir = dir / "cache";
  report_child(testing::run_in_child([&](FILE* out) {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit = {32 * 1024, 32 * 1024};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) {
      std::fprintf(out, "skip: setrlimit: %s\n", std::strerror(errno));
      return 0;
    }
    KernelCache cache(testing::disk_config(cache_dir));
    ::testing::internal::CaptureStderr();
    LookupResult big = get_sized(cache, "big", 64 * 1024);
    LookupResult small = get_sized(cache, "small", 1024);
    const std::string err = ::testing::internal::GetCapturedStderr();
    CHILD_EXPECT(big.entry->kernel.cubin == sized_kernel("big", 64 * 1024).cubin);
    CHILD_EXPECT(small.entry->kernel.cubin == sized_kernel("small", 1024).cubin);
    CHILD_EXPECT(cache.stats().write_failures == 1);
    CHILD_EXPECT(!cache.disk_disabled());
    CHILD_EXPECT(!fs::exists(KernelCache::entry_path(cache_dir, fake_key("big"))));
    CHILD_EXPECT(fs::exists(KernelCache::entry_path(cache_dir, fake_key("small"))));
    CHILD_EXPECT(stray_files(cache_dir) == 0);
    CHILD_EXPECT(err.find("File too large") != std::string::npos);
    CHILD_EXPECT(get_sized(cache, "big", 64 * 1024).source == EntrySource::kMemory);
    KernelCache next(testing::disk_config(cache_dir));
    CHILD_EXPECT(get_sized(next, "small", 1024).source == EntrySource::kDisk);
    std::fprintf(out,
                 "[ fsize    ] RLIMIT_FSIZE 32 KiB: the 64 KiB entry stayed in memory, "
                 "the 1 KiB one was published\ndone\n");
    return 0;
  }));
}

// ---- a read-only file system ----------------------------------------------

TEST(ReadOnlyFilesystem, ServesItsEntriesAndDegradesToMemoryWithOneWarning) {
  testing::TempDir dir;
  const std::string mnt = dir / "mnt";
  report_child(in_private_mounts([&](FILE* out) {
    if (!mount_tmpfs(mnt, "1m", out)) return 0;
    {
      KernelCache writer(testing::disk_config(mnt));
      get_fake(writer, "kept");
    }
    if (::mount(nullptr, mnt.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, "size=1m") != 0) {
      std::fprintf(out, "skip: remount read-only: %s\n", std::strerror(errno));
      return 0;
    }
    KernelCache cache(testing::disk_config(mnt));
    std::atomic<int> compiles{0};
    ::testing::internal::CaptureStderr();
    CHILD_EXPECT(get_fake(cache, "kept", &compiles).source == EntrySource::kDisk);
    CHILD_EXPECT(get_fake(cache, "new1", &compiles).source == EntrySource::kCompiled);
    CHILD_EXPECT(get_fake(cache, "new2", &compiles).source == EntrySource::kCompiled);
    CHILD_EXPECT(get_fake(cache, "new1", &compiles).source == EntrySource::kMemory);
    const std::string err = ::testing::internal::GetCapturedStderr();
    CHILD_EXPECT(compiles.load() == 2);
    CHILD_EXPECT(cache.disk_disabled());
    CHILD_EXPECT(testing::count_substr(err, "is not writable") == 1);
    CHILD_EXPECT(err.find("Read-only file system") != std::string::npos);
    // Once writes are off the directory is still read: a variant that is on
    // disk but not yet in this cache's memory is a disk hit, not a compile.
    KernelCache fresh(testing::disk_config(mnt));
    CHILD_EXPECT(get_fake(fresh, "new3", &compiles).source == EntrySource::kCompiled);
    CHILD_EXPECT(fresh.disk_disabled());
    LookupResult again = get_fake(fresh, "kept", &compiles);
    CHILD_EXPECT(again.source == EntrySource::kDisk);
    CHILD_EXPECT(again.entry->kernel.cubin == fake_kernel("kept").cubin);
    CHILD_EXPECT(compiles.load() == 3);
    std::fprintf(out,
                 "[ rofs     ] read-only tmpfs: 1 entry served from disk, 2 variants "
                 "compiled into memory, 1 warning\ndone\n");
    return 0;
  }));
}

// ---- entries under the right key that describe another variant -----------

CacheEntry entry_with(const std::string& tag, const std::string& target,
                      const std::string& signature) {
  CacheEntry entry = fake_entry(tag);
  entry.target = target;
  entry.canonical_signature = signature;
  return entry;
}

TEST(WrongTarget, EntryForAnotherTargetUnderTheKeyIsRejectedAndReplaced) {
  testing::TempDir dir;
  const std::string path = KernelCache::entry_path(dir.path(), fake_key("t"));
  // A valid entry (right key, right checksum) whose binary is for sm_80.
  write_bytes(path, encode_entry(entry_with("t", "sm_80", "fake[tag=t]@sm_80")));
  KernelCache cache(testing::disk_config(dir.path()));
  std::atomic<int> compiles{0};
  ::testing::internal::CaptureStderr();
  LookupResult r = get_fake(cache, "t", &compiles);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.source, EntrySource::kCompiled);
  EXPECT_EQ(r.entry->target, "sm_90a");
  EXPECT_EQ(compiles.load(), 1);
  EXPECT_EQ(cache.stats().corrupt_entries, 1u);
  EXPECT_NE(err.find("is for target sm_80, not sm_90a"), std::string::npos) << err;
  const CacheEntry replaced = decode_entry(read_bytes(path), fake_key("t"));
  EXPECT_EQ(replaced.target, "sm_90a");
  KernelCache next(testing::disk_config(dir.path()));
  EXPECT_EQ(get_fake(next, "t").source, EntrySource::kDisk);
}

TEST(WrongTarget, EntryForAnotherVariantUnderTheKeyIsRejected) {
  testing::TempDir dir;
  write_bytes(KernelCache::entry_path(dir.path(), fake_key("v")),
              encode_entry(entry_with("v", "sm_90a", "fake[tag=other]@sm_90a")));
  KernelCache cache(testing::disk_config(dir.path()));
  ::testing::internal::CaptureStderr();
  LookupResult r = get_fake(cache, "v");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.source, EntrySource::kCompiled);
  EXPECT_EQ(r.entry->canonical_signature, "fake[tag=v]@sm_90a");
  EXPECT_NE(err.find("describes fake[tag=other]@sm_90a"), std::string::npos) << err;
}

TEST(WrongTarget, AotEntryForAnotherTargetIsSkippedAndTheAotDirUntouched) {
  testing::TempDir aot;
  testing::TempDir user;
  const std::string path = KernelCache::entry_path(aot.path(), fake_key("a"));
  const std::string bytes = encode_entry(entry_with("a", "sm_86", "fake[tag=a]@sm_86"));
  write_bytes(path, bytes);
  CacheConfig config = testing::disk_config(user.path());
  config.aot_dirs = {aot.path()};
  KernelCache cache(config);
  ::testing::internal::CaptureStderr();
  LookupResult r = get_fake(cache, "a");
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.source, EntrySource::kCompiled);
  EXPECT_EQ(r.entry->target, "sm_90a");
  EXPECT_EQ(read_bytes(path), bytes);
  // No-JIT: a wrong-target entry is not a hit either.
  CacheConfig strict = config;
  strict.user_dir.clear();
  strict.no_jit = true;
  KernelCache no_jit(strict);
  ::testing::internal::CaptureStderr();
  EXPECT_THROW(get_fake(no_jit, "a"), Error);
  ::testing::internal::GetCapturedStderr();
}

// The real thing: an sm_80 build of an axpy variant copied where the
// sm_90a build of the same flags belongs. The file's own key differs, so
// the key check rejects it and KernelCache::get compiles for sm_90a.
TEST(WrongTarget, RealEntryCopiedUnderAnotherTargetsKey) {
  testing::TempDir dir;
  const Spec spec = testing::axpy_spec();
  const FlagSet flags = resolve_flags(spec, {});
  CompileOptions sm80;
  sm80.target = parse_target("sm_80");
  CompileOptions sm90a;
  sm90a.target = parse_target("sm_90a");
  const Signature s80 = make_signature(spec, flags, sm80);
  const Signature s90 = make_signature(spec, flags, sm90a);
  KernelCache cache(testing::disk_config(dir.path()));
  const LookupResult built = cache.get(spec, s80);
  const CacheKey key90 = make_cache_key(s90, generate_source(spec, s90).key_text());
  write_bytes(KernelCache::entry_path(dir.path(), key90),
              read_bytes(KernelCache::entry_path(dir.path(), built.entry->key)));
  KernelCache next(testing::disk_config(dir.path()));
  ::testing::internal::CaptureStderr();
  const LookupResult r = next.get(spec, s90);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.source, EntrySource::kCompiled);
  EXPECT_EQ(r.entry->target, "sm_90a");
  EXPECT_EQ(r.entry->key, key90);
  EXPECT_NE(err.find("entry is for key " + built.entry->key.hex), std::string::npos) << err;
}

// ---- nothing lost through the disk ---------------------------------------

// Every field of a compiled kernel survives the disk: a disk hit is the
// same kernel as the compile that wrote it (min_blocks used to be dropped).
TEST(NothingLost, DiskHitKeepsEveryResourceField) {
  testing::TempDir dir;
  CompiledKernel kernel = fake_kernel("r");
  kernel.resources.min_blocks = 2;
  auto compile = [&] { return kernel; };
  {
    KernelCache cache(testing::disk_config(dir.path()));
    cache.get_or_compile(fake_key("r"), "fake[tag=r]@sm_90a", "fake_r", testing::fake_target(),
                         compile);
  }
  KernelCache next(testing::disk_config(dir.path()));
  const LookupResult r = next.get_or_compile(fake_key("r"), "fake[tag=r]@sm_90a", "fake_r",
                                             testing::fake_target(), compile);
  ASSERT_EQ(r.source, EntrySource::kDisk);
  const ResourceUsage& got = r.entry->kernel.resources;
  EXPECT_EQ(got.registers, kernel.resources.registers);
  EXPECT_EQ(got.static_smem, kernel.resources.static_smem);
  EXPECT_EQ(got.spill_stores, kernel.resources.spill_stores);
  EXPECT_EQ(got.spill_loads, kernel.resources.spill_loads);
  EXPECT_EQ(got.stack_frame, kernel.resources.stack_frame);
  EXPECT_EQ(got.dynamic_smem, kernel.resources.dynamic_smem);
  EXPECT_EQ(got.threads, kernel.resources.threads);
  EXPECT_EQ(got.min_blocks, 2);
  EXPECT_EQ(r.entry->kernel.entry, kernel.entry);
  EXPECT_EQ(r.entry->kernel.log, kernel.log);
  EXPECT_EQ(r.entry->kernel.ptx, kernel.ptx);
}

// ---- files that are not entries -------------------------------------------

// A FIFO where an entry belongs (a mistake or a prank in a shared cache
// directory) must not block the lookup: it is skipped and replaced.
TEST(NotAnEntry, FifoAtTheEntryPathDoesNotBlock) {
  testing::TempDir dir;
  const std::string path = KernelCache::entry_path(dir.path(), fake_key("f"));
  fs::create_directories(fs::path(path).parent_path());
  ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0) << std::strerror(errno);
  const testing::ChildResult child = testing::run_in_child([&](FILE* out) {
    ::alarm(20);  // a blocked open would hang forever
    KernelCache cache(testing::disk_config(dir.path()));
    LookupResult r = get_fake(cache, "f");
    CHILD_EXPECT(r.source == EntrySource::kCompiled);
    CHILD_EXPECT(r.entry->kernel.cubin == fake_kernel("f").cubin);
    std::fprintf(out, "done\n");
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(child.status))
      << "killed by signal " << (WIFSIGNALED(child.status) ? WTERMSIG(child.status) : 0)
      << " (the lookup blocked on the FIFO)";
  report_child(child);
  // Replaced by a regular, valid entry.
  EXPECT_TRUE(fs::is_regular_file(path));
  EXPECT_NO_THROW(decode_entry(read_bytes(path), fake_key("f")));
}

TEST(NotAnEntry, DirectoryOrDeviceAtTheEntryPathIsSkipped) {
  testing::TempDir dir;
  const std::string as_dir = KernelCache::entry_path(dir.path(), fake_key("d"));
  fs::create_directories(as_dir);
  const std::string as_link = KernelCache::entry_path(dir.path(), fake_key("z"));
  fs::create_directories(fs::path(as_link).parent_path());
  fs::create_symlink("/dev/zero", as_link);
  KernelCache cache(testing::disk_config(dir.path()));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(get_fake(cache, "d").entry->kernel.cubin, fake_kernel("d").cubin);
  EXPECT_EQ(get_fake(cache, "z").entry->kernel.cubin, fake_kernel("z").cubin);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("not a regular file"), std::string::npos) << err;
  EXPECT_EQ(get_fake(cache, "d").source, EntrySource::kMemory);
  // The occupied path costs that one entry's write, not the disk cache.
  EXPECT_FALSE(cache.disk_disabled());
  EXPECT_EQ(get_fake(cache, "e").source, EntrySource::kCompiled);
  KernelCache fresh(testing::disk_config(dir.path()));
  EXPECT_EQ(get_fake(fresh, "e").source, EntrySource::kDisk);
}

}  // namespace
}  // namespace attnjit

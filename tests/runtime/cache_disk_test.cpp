// The disk levels of the cache: user directory, AOT directories, faults
// (damaged entries, unwritable or vanishing directories) and no-JIT mode.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <map>

#include "attnjit/cache.h"
#include "attnjit/error.h"
#include "attnjit/signature.h"
#include "attnjit/target.h"
#include "cache_test_support.h"

namespace attnjit {
namespace {

namespace fs = std::filesystem;
using testing::expect_stats;
using testing::fake_entry;
using testing::fake_kernel;
using testing::fake_key;
using testing::get_fake;
using testing::read_bytes;
using testing::write_bytes;

// Every file under `dir` with its contents.
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& item : fs::recursive_directory_iterator(dir))
    if (item.is_regular_file()) files[item.path().string()] = read_bytes(item.path().string());
  return files;
}

// The entry for `tag` on disk decodes and holds the fake kernel.
void expect_good_entry(const std::string& dir, const std::string& tag) {
  std::string path = KernelCache::entry_path(dir, fake_key(tag));
  ASSERT_TRUE(fs::exists(path)) << path;
  CacheEntry entry = decode_entry(read_bytes(path), fake_key(tag));
  EXPECT_EQ(entry.kernel.cubin, fake_kernel(tag).cubin);
  EXPECT_EQ(entry.display_name, "fake_" + tag);
}

TEST(CacheDisk, EntryIsPublishedAndHitByTheNextProcess) {
  testing::TempDir dir;
  {
    KernelCache cache(testing::disk_config(dir.path()));
    EXPECT_EQ(get_fake(cache, "k").source, EntrySource::kCompiled);
    expect_stats(cache.stats(), 0, 0, 0, 1, 0, 0);
  }
  expect_good_entry(dir.path(), "k");
  std::string path = KernelCache::entry_path(dir.path(), fake_key("k"));
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  // Only the entry: no temp file, and no lock file (its holder removes
  // it as it lets go), left behind.
  EXPECT_EQ(snapshot(dir.path()).size(), 1u);
  EXPECT_FALSE(fs::exists(KernelCache::lock_path(dir.path(), fake_key("k"))));

  KernelCache cache(testing::disk_config(dir.path()));
  std::atomic<int> compiles{0};
  LookupResult r = get_fake(cache, "k", &compiles);
  EXPECT_EQ(r.source, EntrySource::kDisk);
  EXPECT_EQ(r.entry->kernel.cubin, fake_kernel("k").cubin);
  EXPECT_EQ(r.entry->kernel.log, fake_kernel("k").log);
  EXPECT_EQ(get_fake(cache, "k", &compiles).source, EntrySource::kMemory);
  EXPECT_EQ(compiles.load(), 0);
  expect_stats(cache.stats(), 1, 1, 0, 0, 0, 0);
}

// A real signature's canonical text ends in "@sm_90a{emit_ptx=...}", so
// the target an entry is recorded and checked under must come from the
// signature's options, not from that text: an entry KernelCache::get wrote
// for sm_90a must be a hit, not "an entry for another target".
TEST(CacheDisk, EntryOfARealSignatureIsRecordedUnderItsTypedTarget) {
  testing::TempDir dir;
  Signature signature;
  signature.family = "fake";
  signature.entry = "fake_entry";
  signature.options.target = parse_target("sm_90a");
  CacheEntry written = fake_entry("typed");
  written.canonical_signature = signature.canonical();
  written.display_name = signature.display_name();
  write_bytes(KernelCache::entry_path(dir.path(), written.key), encode_entry(written));

  KernelCache cache(testing::disk_config(dir.path()));
  ::testing::internal::CaptureStderr();
  LookupResult r =
      cache.get_or_compile(fake_key("typed"), signature.canonical(), signature.display_name(),
                           signature.options.target, [] { return fake_kernel("typed"); });
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.source, EntrySource::kDisk) << err;
  EXPECT_EQ(r.entry->target, "sm_90a");
  EXPECT_EQ(err, "");
  expect_stats(cache.stats(), 0, 1, 0, 0, 0, 0);

  KernelCache memory(testing::memory_config());
  LookupResult compiled =
      memory.get_or_compile(fake_key("typed"), signature.canonical(), signature.display_name(),
                            signature.options.target, [] { return fake_kernel("typed"); });
  EXPECT_EQ(compiled.entry->target, "sm_90a");
}

TEST(CacheDisk, EmptyUserDirMeansMemoryOnly) {
  KernelCache cache(testing::memory_config());
  EXPECT_EQ(get_fake(cache, "m").source, EntrySource::kCompiled);
  EXPECT_FALSE(cache.disk_disabled());
  expect_stats(cache.stats(), 0, 0, 0, 1, 0, 0);
}

// A way to damage the entry of key "victim", and the reason decode gives.
struct Damage {
  const char* name;
  std::function<std::string(const std::string& good)> apply;
  const char* reason;
};

// gtest's "GetParam() = ..." (its failure lines, the test list) shows the
// name, not the struct's bytes.
void PrintTo(const Damage& damage, std::ostream* os) { *os << damage.name; }

class CacheDamage : public ::testing::TestWithParam<Damage> {};

TEST_P(CacheDamage, IsDetectedCountedRecompiledAndReplaced) {
  testing::TempDir dir;
  std::string path = KernelCache::entry_path(dir.path(), fake_key("victim"));
  write_bytes(path, GetParam().apply(testing::encode_entry_of("victim")));

  KernelCache cache(testing::disk_config(dir.path()));
  std::atomic<int> compiles{0};
  ::testing::internal::CaptureStderr();
  LookupResult r = get_fake(cache, "victim", &compiles);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.source, EntrySource::kCompiled);
  EXPECT_EQ(compiles.load(), 1);
  EXPECT_EQ(testing::count_substr(err, "attnjit: ignoring bad cache entry " + path + ": "), 1)
      << err;
  EXPECT_NE(err.find(GetParam().reason), std::string::npos) << err;
  expect_stats(cache.stats(), 0, 0, 0, /*compiles=*/1, /*corrupt=*/1, 0);
  expect_good_entry(dir.path(), "victim");  // replaced by a good one

  KernelCache next(testing::disk_config(dir.path()));
  EXPECT_EQ(get_fake(next, "victim").source, EntrySource::kDisk);
  expect_stats(next.stats(), 0, 1, 0, 0, 0, 0);
}

std::string flip_bit(std::string bytes, size_t from_end) {
  bytes[bytes.size() - from_end] ^= 0x04;
  return bytes;
}

INSTANTIATE_TEST_SUITE_P(
    AllKinds, CacheDamage,
    ::testing::Values(
        Damage{"bit_flip_in_cubin", [](const std::string& g) { return flip_bit(g, 20); },
               "checksum mismatch"},
        Damage{"bit_flip_in_metadata",
               [](const std::string& g) { return flip_bit(g, g.size() - 140); },
               "checksum mismatch"},
        Damage{"truncated", [](const std::string& g) { return g.substr(0, g.size() * 2 / 3); },
               "truncated"},
        Damage{"empty", [](const std::string&) { return std::string(); }, "empty file"},
        Damage{"foreign_magic",
               [](const std::string& g) {
                 return "\x7f"
                        "ELF" +
                        g.substr(4);
               },
               "bad magic"},
        Damage{"other_format_version",
               [](const std::string& g) {
                 std::string b = g;
                 b[8] = static_cast<char>(kCacheFormatVersion + 1);
                 return b;
               },
               "cache format version"},
        Damage{"another_keys_entry",
               [](const std::string&) { return testing::encode_entry_of("intruder"); },
               "entry is for key"}),
    [](const ::testing::TestParamInfo<Damage>& info) { return std::string(info.param.name); });

void expect_memory_only_after_one_warning(const std::string& user_dir) {
  KernelCache cache(testing::disk_config(user_dir));
  std::atomic<int> compiles{0};
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(get_fake(cache, "u1", &compiles).source, EntrySource::kCompiled);
  EXPECT_EQ(get_fake(cache, "u2", &compiles).source, EntrySource::kCompiled);
  EXPECT_EQ(get_fake(cache, "u1", &compiles).source, EntrySource::kMemory);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(cache.disk_disabled());
  EXPECT_EQ(compiles.load(), 2);
  EXPECT_EQ(testing::count_substr(err, "\n"), 1) << err;
  EXPECT_EQ(err.rfind("attnjit: cache directory " + user_dir + " is not writable (", 0), 0u) << err;
  EXPECT_NE(err.find("); new kernels stay in memory, existing entries are still read\n"), std::string::npos) << err;
  // The failed write that disabled the disk is the only one counted.
  expect_stats(cache.stats(), 1, 0, 0, 2, 0, /*write_failures=*/1);
}

TEST(CacheDisk, UserDirUnderARegularFileDegradesToMemory) {
  testing::TempDir dir;
  write_bytes(dir / "file", "not a directory");
  expect_memory_only_after_one_warning(dir / "file/cache");
}

TEST(CacheDisk, UserDirUnderProcDegradesToMemory) {
  expect_memory_only_after_one_warning("/proc/attnjit-test-" + std::to_string(::getpid()));
}

TEST(CacheDisk, RemovedDirectoryIsRecreatedOnTheNextStore) {
  testing::TempDir dir;
  std::string user_dir = dir / "cache";
  KernelCache cache(testing::disk_config(user_dir));
  get_fake(cache, "before");
  expect_good_entry(user_dir, "before");
  fs::remove_all(user_dir);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(get_fake(cache, "after").source, EntrySource::kCompiled);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  expect_good_entry(user_dir, "after");
  EXPECT_FALSE(cache.disk_disabled());
  expect_stats(cache.stats(), 0, 0, 0, 2, 0, 0);
}

TEST(CacheDisk, DirectoryRemovedDuringCompileIsRecreated) {
  testing::TempDir dir;
  std::string user_dir = dir / "cache";
  KernelCache cache(testing::disk_config(user_dir));
  LookupResult r = cache.get_or_compile(
      fake_key("midway"), "fake[tag=midway]@sm_90a", "fake_midway", testing::fake_target(), [&] {
        fs::remove_all(user_dir);  // under the lock the compile holds
        return fake_kernel("midway");
      });
  EXPECT_EQ(r.source, EntrySource::kCompiled);
  expect_good_entry(user_dir, "midway");
  EXPECT_FALSE(cache.disk_disabled());
  expect_stats(cache.stats(), 0, 0, 0, 1, 0, 0);
}

TEST(CacheDisk, AotEntryIsHitWithAnEmptyUserDir) {
  testing::TempDir aot, user;
  write_bytes(KernelCache::entry_path(aot.path(), fake_key("shipped")),
              testing::encode_entry_of("shipped"));
  auto before = snapshot(aot.path());
  CacheConfig config = testing::disk_config(user.path());
  config.aot_dirs = {aot / "absent", aot.path()};
  KernelCache cache(config);
  std::atomic<int> compiles{0};
  LookupResult r = get_fake(cache, "shipped", &compiles);
  EXPECT_EQ(r.source, EntrySource::kAot);
  EXPECT_EQ(r.entry->kernel.cubin, fake_kernel("shipped").cubin);
  EXPECT_EQ(get_fake(cache, "shipped", &compiles).source, EntrySource::kMemory);
  EXPECT_EQ(compiles.load(), 0);
  expect_stats(cache.stats(), 1, /*disk_hits=*/1, /*aot_hits=*/1, 0, 0, 0);
  EXPECT_TRUE(fs::is_empty(user.path()));  // not copied to the user dir
  EXPECT_EQ(snapshot(aot.path()), before);
}

TEST(CacheDisk, AotDirIsNeverWrittenNorCleaned) {
  testing::TempDir aot, user;
  std::string bad = KernelCache::entry_path(aot.path(), fake_key("rotten"));
  write_bytes(bad, "garbage");
  auto before = snapshot(aot.path());
  CacheConfig config = testing::disk_config(user.path());
  config.aot_dirs = {aot.path()};
  KernelCache cache(config);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(get_fake(cache, "rotten").source, EntrySource::kCompiled);
  EXPECT_EQ(get_fake(cache, "fresh").source, EntrySource::kCompiled);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("ignoring bad cache entry " + bad), std::string::npos);
  EXPECT_EQ(snapshot(aot.path()), before);   // the bad entry stays
  expect_good_entry(user.path(), "rotten");  // compiled into the user dir
  expect_good_entry(user.path(), "fresh");
  expect_stats(cache.stats(), 0, 0, 0, 2, /*corrupt=*/1, 0);

  KernelCache next(config);  // the user dir now wins over the bad AOT entry
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(get_fake(next, "rotten").source, EntrySource::kDisk);
  ::testing::internal::GetCapturedStderr();
  expect_stats(next.stats(), 0, 1, 0, 0, 1, 0);
}

TEST(CacheDisk, NoJitMissIsAnErrorNamingEveryPlaceSearched) {
  testing::TempDir aot, user;
  CacheConfig config = testing::disk_config(user.path());
  config.aot_dirs = {aot / "one", aot / "two"};
  config.no_jit = true;
  KernelCache cache(config);
  std::atomic<int> compiles{0};
  try {
    get_fake(cache, "missing", &compiles);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNoJit);
    EXPECT_EQ(std::string(e.what()), "no-JIT mode: fake_missing (" + fake_key("missing").hex +
                                         ") is in no cache (searched: memory, " + aot / "one" +
                                         ", " + aot / "two" + ", " + user.path() +
                                         "); build it with `attnjit build-cache`");
  }
  EXPECT_EQ(compiles.load(), 0);
  expect_stats(cache.stats(), 0, 0, 0, 0, 0, 0);
  EXPECT_TRUE(fs::is_empty(user.path()));
}

TEST(CacheDisk, NoJitServesAotAndUserEntries) {
  testing::TempDir aot, user;
  write_bytes(KernelCache::entry_path(aot.path(), fake_key("a")), testing::encode_entry_of("a"));
  write_bytes(KernelCache::entry_path(user.path(), fake_key("u")), testing::encode_entry_of("u"));
  CacheConfig config = testing::disk_config(user.path());
  config.aot_dirs = {aot.path()};
  config.no_jit = true;
  KernelCache cache(config);
  EXPECT_EQ(get_fake(cache, "a").source, EntrySource::kAot);
  EXPECT_EQ(get_fake(cache, "u").source, EntrySource::kDisk);
  expect_stats(cache.stats(), 0, 2, 1, 0, 0, 0);
}

TEST(CacheDisk, NoJitWithADamagedEntryCountsItAndFails) {
  testing::TempDir user;
  write_bytes(KernelCache::entry_path(user.path(), fake_key("d")), "junk");
  CacheConfig config = testing::disk_config(user.path());
  config.no_jit = true;
  KernelCache cache(config);
  ::testing::internal::CaptureStderr();
  EXPECT_THROW(get_fake(cache, "d"), Error);
  ::testing::internal::GetCapturedStderr();
  expect_stats(cache.stats(), 0, 0, 0, 0, /*corrupt=*/1, 0);
}

}  // namespace
}  // namespace attnjit

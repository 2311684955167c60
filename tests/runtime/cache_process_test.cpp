// Several processes sharing one user directory: each gets a valid entry,
// and the flock around compile-and-publish makes the key compile once.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "attnjit/cache.h"
#include "cache_disk.h"
#include "cache_test_support.h"

namespace attnjit {
namespace {

using testing::fake_kernel;
using testing::fake_key;

// Exit codes of a racing child.
constexpr int kChildCompiled = 10;
constexpr int kChildDiskHit = 11;
constexpr int kChildOther = 12;
constexpr int kChildWrongEntry = 13;
constexpr int kChildThrew = 14;

// Whether flock excludes a second open file description here (it does on
// local file systems; some network file systems do not support it).
bool flock_works(const std::string& dir) {
  std::string path = dir + "/probe.lock";
  int a = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  int b = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  bool works = a >= 0 && b >= 0 && ::flock(a, LOCK_EX | LOCK_NB) == 0 &&
               ::flock(b, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  if (a >= 0) ::close(a);
  if (b >= 0) ::close(b);
  return works;
}

// Runs in a forked child: waits for the start signal, then looks the key
// up in its own cache. Never returns.
[[noreturn]] void race(const std::string& user_dir, const std::string& log, int start_fd) {
  char go = 0;
  if (::read(start_fd, &go, 1) != 1) ::_exit(kChildThrew);
  try {
    KernelCache cache(testing::disk_config(user_dir));
    LookupResult r = cache.get_or_compile(
        fake_key("raced"), "fake[tag=raced]@sm_90a", "fake_raced", testing::fake_target(), [&] {
          int fd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
          if (fd >= 0) {
            (void)!::write(fd, "compile\n", 8);
            ::close(fd);
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
          return fake_kernel("raced");
        });
    if (r.entry->kernel.cubin != fake_kernel("raced").cubin) ::_exit(kChildWrongEntry);
    if (r.source == EntrySource::kCompiled) ::_exit(kChildCompiled);
    if (r.source == EntrySource::kDisk) ::_exit(kChildDiskHit);
    ::_exit(kChildOther);
  } catch (...) {
    ::_exit(kChildThrew);
  }
}

TEST(CacheProcesses, TwoProcessesRacingOnOneKeyCompileItOnce) {
  constexpr int kProcesses = 2;
  testing::TempDir dir;
  std::string user_dir = dir / "cache";
  std::string log = dir / "compiles.log";
  int start[2];
  ASSERT_EQ(::pipe(start), 0);
  std::vector<pid_t> children;
  for (int i = 0; i < kProcesses; ++i) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(start[1]);
      race(user_dir, log, start[0]);
    }
    children.push_back(pid);
  }
  ::close(start[0]);
  ASSERT_EQ(::write(start[1], "gg", kProcesses), kProcesses);  // both go
  ::close(start[1]);

  int compiled = 0, disk_hits = 0;
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    int code = WEXITSTATUS(status);
    EXPECT_TRUE(code == kChildCompiled || code == kChildDiskHit) << "child exit code " << code;
    compiled += code == kChildCompiled;
    disk_hits += code == kChildDiskHit;
  }
  int compiles = testing::count_substr(testing::read_bytes(log), "compile\n");
  // Without a working flock both may compile (each then uses its own
  // result and the last rename wins); with one, the second process waits
  // for the first and reads its entry.
  EXPECT_LE(compiles, kProcesses);
  if (flock_works(dir.path())) {
    EXPECT_EQ(compiles, 1);
    EXPECT_EQ(compiled, 1);
    EXPECT_EQ(disk_hits, kProcesses - 1);
  }
  CacheEntry entry = decode_entry(
      testing::read_bytes(KernelCache::entry_path(user_dir, fake_key("raced"))), fake_key("raced"));
  EXPECT_EQ(entry.kernel.cubin, fake_kernel("raced").cubin);
}

// The same exclusion inside one process: two caches, as two processes
// would have, each with its own lock file description.
TEST(CacheProcesses, TwoCachesOnOneDirectoryCompileOnce) {
  testing::TempDir dir;
  KernelCache a(testing::disk_config(dir.path()));
  KernelCache b(testing::disk_config(dir.path()));
  std::atomic<int> compiles{0};
  auto slow = [&] {
    ++compiles;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return fake_kernel("twin");
  };
  std::thread other([&] {
    b.get_or_compile(fake_key("twin"), "fake[tag=twin]@sm_90a", "fake_twin", testing::fake_target(),
                     slow);
  });
  a.get_or_compile(fake_key("twin"), "fake[tag=twin]@sm_90a", "fake_twin", testing::fake_target(),
                   slow);
  other.join();
  if (flock_works(dir.path())) {
    EXPECT_EQ(compiles.load(), 1);
    EXPECT_EQ(a.stats().compiles + b.stats().compiles, 1u);
    EXPECT_EQ(a.stats().disk_hits + b.stats().disk_hits, 1u);
  }
}

// The lock file goes with its holder's release, and exclusion holds
// anyway: threads (each lock its own open file description, as processes
// have) take one lock path in turn many times over, so that waiters often
// sit on a file its holder has just removed; never two inside at once, and
// no file at the end.
TEST(CacheProcesses, LockFilesAreRemovedAndStillExclude) {
  testing::TempDir dir;
  if (!flock_works(dir.path())) GTEST_SKIP() << "flock does not exclude here";
  const std::string path = dir / "k.lock";
  {
    cache_disk::FileLock lock = cache_disk::FileLock::acquire(path, std::chrono::seconds(5));
    ASSERT_TRUE(lock.held());
    EXPECT_TRUE(std::filesystem::exists(path));
  }
  EXPECT_FALSE(std::filesystem::exists(path));

  constexpr int kThreads = 6;
  constexpr int kRounds = 150;
  std::atomic<int> inside{0}, overlaps{0}, unheld{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kRounds; ++i) {
        cache_disk::FileLock lock = cache_disk::FileLock::acquire(path, std::chrono::seconds(30));
        if (!lock.held()) {
          ++unheld;
          continue;
        }
        if (++inside != 1) ++overlaps;
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        --inside;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(unheld.load(), 0);
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace attnjit

// The in-memory cache: single-flight per key, no waiting across keys,
// failures, counters, the compile log line.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "attnjit/cache.h"
#include "attnjit/error.h"
#include "cache_test_support.h"

namespace attnjit {
namespace {

using testing::expect_stats;
using testing::fake_kernel;
using testing::fake_key;
using testing::get_fake;

TEST(CacheMemory, SecondLookupIsAMemoryHit) {
  KernelCache cache(testing::memory_config());
  std::atomic<int> compiles{0};
  LookupResult first = get_fake(cache, "a", &compiles);
  LookupResult second = get_fake(cache, "a", &compiles);
  EXPECT_EQ(first.source, EntrySource::kCompiled);
  EXPECT_EQ(second.source, EntrySource::kMemory);
  EXPECT_EQ(first.entry, second.entry);
  EXPECT_EQ(compiles.load(), 1);
  EXPECT_EQ(first.entry->display_name, "fake_a");
  EXPECT_EQ(first.entry->target, "sm_90a");
  EXPECT_EQ(first.entry->kernel.cubin, fake_kernel("a").cubin);
  expect_stats(cache.stats(), /*memory_hits=*/1, /*disk_hits=*/0,
               /*aot_hits=*/0, /*compiles=*/1, /*corrupt_entries=*/0,
               /*write_failures=*/0);
}

TEST(CacheMemory, ManyThreadsOnOneKeyCompileOnce) {
  constexpr int kThreads = 32;
  KernelCache cache(testing::memory_config());
  std::atomic<int> compiles{0};
  std::promise<void> go;
  std::shared_future<void> start = go.get_future().share();
  std::vector<std::future<LookupResult>> results;
  for (int i = 0; i < kThreads; ++i) {
    results.push_back(std::async(std::launch::async, [&] {
      start.wait();
      return cache.get_or_compile(fake_key("shared"), "fake[shared]@sm_90a", "fake_shared",
                                  testing::fake_target(), [&] {
                                    ++compiles;
                                    std::this_thread::sleep_for(std::chrono::milliseconds(100));
                                    return fake_kernel("shared");
                                  });
    }));
  }
  go.set_value();
  std::shared_ptr<const CacheEntry> entry;
  int compiled = 0;
  for (auto& result : results) {
    LookupResult r = result.get();
    if (!entry) entry = r.entry;
    EXPECT_EQ(r.entry, entry);  // one object shared by every caller
    compiled += r.source == EntrySource::kCompiled;
  }
  EXPECT_EQ(compiles.load(), 1);
  EXPECT_EQ(compiled, 1);
  // Callers that waited for the compile count as memory hits.
  expect_stats(cache.stats(), kThreads - 1, 0, 0, 1, 0, 0);
}

// Key "slow" compiles until released; meanwhile "fast" compiles and hits.
void check_hit_does_not_wait(KernelCache& cache) {
  std::promise<void> started, release;
  std::shared_future<void> released = release.get_future().share();
  auto slow = std::async(std::launch::async, [&] {
    return cache.get_or_compile(fake_key("slow"), "fake[slow]@sm_90a", "fake_slow",
                                testing::fake_target(), [&] {
                                  started.set_value();
                                  released.wait();
                                  return fake_kernel("slow");
                                });
  });
  started.get_future().wait();
  // A waiter on the slow key stays blocked ...
  auto waiter = std::async(std::launch::async, [&] { return get_fake(cache, "slow"); });
  // ... while the other key compiles and then hits, both without waiting.
  auto fast = std::async(std::launch::async, [&] {
    get_fake(cache, "fast");
    return get_fake(cache, "fast");
  });
  ASSERT_EQ(fast.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "a lookup of another key waited behind the slow compile";
  EXPECT_EQ(fast.get().source, EntrySource::kMemory);
  EXPECT_EQ(waiter.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  EXPECT_EQ(slow.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
  release.set_value();
  EXPECT_EQ(slow.get().source, EntrySource::kCompiled);
  EXPECT_EQ(waiter.get().source, EntrySource::kMemory);
  expect_stats(cache.stats(), /*memory_hits=*/2, 0, 0, /*compiles=*/2, 0, 0);
}

TEST(CacheMemory, HitOnOneKeyNeverWaitsForAnothersCompile) {
  KernelCache cache(testing::memory_config());
  check_hit_does_not_wait(cache);
}

TEST(CacheMemory, HitOnOneKeyNeverWaitsForAnothersCompileWithDisk) {
  testing::TempDir dir;
  KernelCache cache(testing::disk_config(dir.path()));
  check_hit_does_not_wait(cache);
}

TEST(CacheMemory, FailedCompileReachesEveryWaiterAndIsRetried) {
  KernelCache cache(testing::memory_config());
  std::promise<void> started, release;
  std::shared_future<void> released = release.get_future().share();
  auto failing = [&] {
    return cache.get_or_compile(fake_key("bad"), "fake[bad]@sm_90a", "fake_bad",
                                testing::fake_target(), [&]() -> CompiledKernel {
                                  started.set_value();
                                  released.wait();
                                  throw Error(ErrorKind::kCompile, "nvrtc: no");
                                });
  };
  auto leader = std::async(std::launch::async, failing);
  started.get_future().wait();
  // The follower normally waits for the leader and gets its error; should
  // it arrive only after the failure (a very slow machine) it compiles and
  // fails the same way, so the test does not depend on timing.
  auto follower = std::async(std::launch::async, [&] {
    return cache.get_or_compile(
        fake_key("bad"), "fake[bad]@sm_90a", "fake_bad", testing::fake_target(),
        []() -> CompiledKernel { throw Error(ErrorKind::kCompile, "nvrtc: no"); });
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  release.set_value();
  for (auto* result : {&leader, &follower}) {
    try {
      result->get();
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kCompile);
      EXPECT_STREQ(e.what(), "nvrtc: no");
    }
  }
  // The failure was not cached: the next call compiles.
  std::atomic<int> compiles{0};
  EXPECT_EQ(get_fake(cache, "bad", &compiles).source, EntrySource::kCompiled);
  EXPECT_EQ(compiles.load(), 1);
  expect_stats(cache.stats(), 0, 0, 0, 1, 0, 0);
}

TEST(CacheMemory, MalformedKeyIsRejected) {
  KernelCache cache(testing::memory_config());
  for (const char* bad : {"", "../../etc/passwd", "ABCDEF"}) {
    try {
      cache.get_or_compile(CacheKey{bad}, "sig", "name", testing::fake_target(),
                           [] { return fake_kernel("x"); });
      ADD_FAILURE() << "accepted key '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kCache);
    }
  }
  EXPECT_EQ(cache.stats().compiles, 0u);
}

TEST(CacheMemory, LogLineNamesVariantDurationAndKey) {
  CacheConfig config;
  config.log = true;
  KernelCache cache(config);
  ::testing::internal::CaptureStderr();
  get_fake(cache, "logged");
  get_fake(cache, "logged");  // a hit logs nothing
  std::string err = ::testing::internal::GetCapturedStderr();
  std::string prefix = "attnjit: compiled fake_logged in ";
  ASSERT_EQ(err.rfind(prefix, 0), 0u) << err;
  std::string suffix = " ms (" + fake_key("logged").hex.substr(0, 12) + ")\n";
  EXPECT_EQ(err.substr(err.size() - suffix.size()), suffix) << err;
  EXPECT_EQ(testing::count_substr(err, "\n"), 1);
}

TEST(CacheMemory, QuietWithoutLog) {
  KernelCache cache(testing::memory_config());
  ::testing::internal::CaptureStderr();
  get_fake(cache, "quiet");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(CacheMemory, DescriptionOverloadRecordsTargetAndNvrtcVersion) {
  KernelCache cache(testing::memory_config());
  EntryDescription description;
  description.canonical_signature = "fake[x]@sm_80";
  description.display_name = "fake_x";
  description.target = parse_target("sm_89");
  description.nvrtc_version = "13.0";
  LookupResult r =
      cache.get_or_compile(fake_key("described"), description, [] { return fake_kernel("x"); });
  EXPECT_EQ(r.entry->target, "sm_89");
  EXPECT_EQ(r.entry->nvrtc_version, "13.0");
  EXPECT_EQ(r.entry->canonical_signature, "fake[x]@sm_80");
}

TEST(CacheMemory, EntrySourceNames) {
  EXPECT_STREQ(to_string(EntrySource::kMemory), "memory");
  EXPECT_STREQ(to_string(EntrySource::kAot), "aot");
  EXPECT_STREQ(to_string(EntrySource::kDisk), "disk");
  EXPECT_STREQ(to_string(EntrySource::kCompiled), "compiled");
}

}  // namespace
}  // namespace attnjit

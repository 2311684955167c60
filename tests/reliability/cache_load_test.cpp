// Load: several processes with several threads each, requesting overlapping
// sets of variants from one cache directory. Every key is compiled once per
// machine (counted in a shared log and by the caches' counters), every
// lookup gets its own variant's entry, and nothing partial is ever loaded
// or left behind. Then the same with the directory removed meanwhile, and
// with real NVRTC compiles of the axpy test family through KernelCache::get.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "attnjit/cache.h"
#include "attnjit/cache_key.h"
#include "attnjit/codegen.h"
#include "attnjit/signature.h"
#include "attnjit/spec.h"
#include "compiler/test_support.h"
#include "reliability_support.h"
#include "runtime/cache_test_support.h"

namespace attnjit {
namespace {

namespace fs = std::filesystem;
using testing::fake_kernel;
using testing::fake_key;

struct Load {
  int processes;
  int threads;
  int variants;             // distinct keys
  int per_thread;           // keys each thread asks for (overlapping windows)
  int rounds;               // times each thread walks its keys
  int compile_ms;           // a fake compile's duration
  bool remove_dir = false;  // a chaos thread removes the cache dir meanwhile
};

std::string tag_of(int variant) { return "load" + std::to_string(variant); }

// What one child process saw, summed over its threads.
struct ChildCounts {
  uint64_t lookups = 0, wrong = 0, errors = 0;
  CacheStats stats;
};

std::string encode(const ChildCounts& c) {
  std::ostringstream out;
  out << c.lookups << " " << c.wrong << " " << c.errors << " " << c.stats.memory_hits << " "
      << c.stats.disk_hits << " " << c.stats.compiles << " " << c.stats.corrupt_entries << " "
      << c.stats.write_failures;
  return out.str();
}

ChildCounts decode(const std::string& text) {
  ChildCounts c;
  std::istringstream in(text);
  in >> c.lookups >> c.wrong >> c.errors >> c.stats.memory_hits >> c.stats.disk_hits >>
      c.stats.compiles >> c.stats.corrupt_entries >> c.stats.write_failures;
  return c;
}

void append_line(const std::string& path, const std::string& line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const std::string text = line + "\n";
  (void)!::write(fd, text.data(), text.size());  // one write: lines never interleave
  ::close(fd);
}

// One child process: `threads` threads on one KernelCache, after the start
// signal. Thread t of process p asks for the window of keys that starts at
// (p * threads + t) * step, in its own random order, `rounds` times.
int run_child(const Load& load, int process, const std::string& user_dir, const std::string& log,
              int start_fd, FILE* out) {
  char go = 0;
  if (::read(start_fd, &go, 1) != 1) return 3;
  KernelCache cache(testing::disk_config(user_dir));
  std::atomic<uint64_t> lookups{0}, wrong{0}, errors{0};
  std::vector<std::thread> threads;
  const int step = std::max(1, load.variants / (load.processes * load.threads));
  for (int t = 0; t < load.threads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 random(1000 * process + t);
      std::vector<int> keys;
      const int first = (process * load.threads + t) * step;
      for (int i = 0; i < load.per_thread; ++i) keys.push_back((first + i) % load.variants);
      for (int round = 0; round < load.rounds; ++round) {
        std::shuffle(keys.begin(), keys.end(), random);
        for (int variant : keys) {
          const std::string tag = tag_of(variant);
          try {
            LookupResult r = cache.get_or_compile(
                fake_key(tag), "fake[tag=" + tag + "]@sm_90a", "fake_" + tag,
                testing::fake_target(), [&] {
                  append_line(log, tag);
                  std::this_thread::sleep_for(std::chrono::milliseconds(load.compile_ms));
                  return fake_kernel(tag);
                });
            const bool right = r.entry && r.entry->key == fake_key(tag) &&
                               r.entry->kernel.cubin == fake_kernel(tag).cubin &&
                               r.entry->kernel.ptx == fake_kernel(tag).ptx &&
                               r.entry->canonical_signature == "fake[tag=" + tag + "]@sm_90a";
            if (!right) ++wrong;
          } catch (...) {
            ++errors;
          }
          ++lookups;
        }
      }
    });
  }
  std::atomic<bool> stop{false};
  std::thread chaos;
  if (load.remove_dir && process == 0) {
    chaos = std::thread([&] {
      while (!stop.load()) {
        std::error_code ec;
        fs::remove_all(user_dir, ec);
        std::this_thread::sleep_for(std::chrono::milliseconds(7));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  stop = true;
  if (chaos.joinable()) chaos.join();
  ChildCounts counts;
  counts.lookups = lookups;
  counts.wrong = wrong;
  counts.errors = errors;
  counts.stats = cache.stats();
  std::fprintf(out, "%s\n", encode(counts).c_str());
  return 0;
}

struct LoadResult {
  std::vector<ChildCounts> children;
  std::map<std::string, int> compiles_per_key;  // from the shared log
  double seconds = 0;
};

LoadResult run_load(const Load& load, const std::string& user_dir, const std::string& log) {
  int start[2];
  EXPECT_EQ(::pipe(start), 0);
  const auto begin = std::chrono::steady_clock::now();
  std::vector<testing::Child> children;
  for (int p = 0; p < load.processes; ++p) {
    children.push_back(testing::spawn_child(
        [&](FILE* out) { return run_child(load, p, user_dir, log, start[0], out); }));
  }
  // Every child waits on the start pipe: release them together.
  const std::string go(size_t(load.processes), 'g');
  EXPECT_EQ(::write(start[1], go.data(), go.size()), ssize_t(go.size()));
  ::close(start[0]);
  ::close(start[1]);
  LoadResult result;
  for (const testing::Child& child : children) {
    const testing::ChildResult done = testing::wait_child(child);
    EXPECT_TRUE(done.exited_ok()) << "status " << done.status << ": " << done.output;
    result.children.push_back(decode(done.output));
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  std::istringstream lines(testing::read_bytes(log));
  for (std::string line; std::getline(lines, line);) ++result.compiles_per_key[line];
  return result;
}

// Every file under `dir` is a valid entry under its own name, and nothing
// else: no temp file of an abandoned publish, and no lock file (each
// holder removes its lock as it lets go).
void expect_only_good_files(const std::string& dir, int* entries) {
  *entries = 0;
  std::error_code ec;
  for (const auto& item : fs::recursive_directory_iterator(dir, ec)) {
    if (!item.is_regular_file()) continue;
    const fs::path& path = item.path();
    ASSERT_EQ(path.extension(), ".ajk") << "stray file " << path;
    const CacheKey key{path.stem().string()};
    EXPECT_NO_THROW(decode_entry(testing::read_bytes(path.string()), key)) << path;
    ++*entries;
  }
}

// gtest's "GetParam() = ..." reads as the load, not as the struct's bytes.
void PrintTo(const Load& l, std::ostream* os) {
  *os << l.processes << " processes x " << l.threads << " threads, " << l.variants << " keys, "
      << l.per_thread << " per thread, " << l.rounds << " rounds, " << l.compile_ms
      << " ms compiles" << (l.remove_dir ? ", dir removed" : "");
}

class CacheLoad : public ::testing::TestWithParam<Load> {};

TEST_P(CacheLoad, EachKeyCompiledOnceAndEveryLookupRight) {
  const Load load = GetParam();
  testing::TempDir dir;
  const std::string user_dir = dir / "cache";
  const std::string log = dir / "compiles.log";
  const LoadResult result = run_load(load, user_dir, log);

  uint64_t lookups = 0, compiles = 0, disk_hits = 0, memory_hits = 0;
  for (const ChildCounts& c : result.children) {
    EXPECT_EQ(c.wrong, 0u);
    EXPECT_EQ(c.errors, 0u);
    EXPECT_EQ(c.stats.corrupt_entries, 0u);
    // Every lookup is exactly one of: memory hit, disk hit, compile.
    EXPECT_EQ(c.stats.memory_hits + c.stats.disk_hits + c.stats.compiles, c.lookups);
    lookups += c.lookups;
    compiles += c.stats.compiles;
    disk_hits += c.stats.disk_hits;
    memory_hits += c.stats.memory_hits;
  }
  const uint64_t expected_lookups =
      uint64_t(load.processes) * load.threads * load.per_thread * load.rounds;
  EXPECT_EQ(lookups, expected_lookups);
  int requested = 0;  // keys some thread asked for
  {
    std::vector<bool> asked(size_t(load.variants), false);
    const int step = std::max(1, load.variants / (load.processes * load.threads));
    for (int p = 0; p < load.processes; ++p)
      for (int t = 0; t < load.threads; ++t)
        for (int i = 0; i < load.per_thread; ++i)
          asked[size_t(((p * load.threads + t) * step + i) % load.variants)] = true;
    requested = int(std::count(asked.begin(), asked.end(), true));
  }
  RecordProperty("lookups", std::to_string(lookups));
  RecordProperty("compiles", std::to_string(compiles));
  RecordProperty("disk_hits", std::to_string(disk_hits));
  RecordProperty("memory_hits", std::to_string(memory_hits));
  RecordProperty("seconds", std::to_string(result.seconds));
  std::printf(
      "[ load     ] %d processes x %d threads, %d keys (%d requested): %llu lookups, "
      "%llu compiles, %llu disk hits, %llu memory hits, %.2f s\n",
      load.processes, load.threads, load.variants, requested, (unsigned long long)lookups,
      (unsigned long long)compiles, (unsigned long long)disk_hits, (unsigned long long)memory_hits,
      result.seconds);

  if (load.remove_dir) {
    // With the directory vanishing, keys may compile again; never wrongly.
    EXPECT_GE(compiles, uint64_t(requested));
  } else {
    // One compile per key on the machine: the shared log and the counters.
    EXPECT_EQ(compiles, uint64_t(requested));
    EXPECT_EQ(int(result.compiles_per_key.size()), requested);
    for (const auto& [key, count] : result.compiles_per_key) EXPECT_EQ(count, 1) << key;
  }
  int entries = 0;
  expect_only_good_files(user_dir, &entries);
  if (!load.remove_dir) EXPECT_EQ(entries, requested);

  // A process started afterwards finds every key it can on disk, right.
  KernelCache after(testing::disk_config(user_dir));
  std::atomic<int> recompiled{0};
  for (int v = 0; v < load.variants; ++v) {
    const std::string tag = tag_of(v);
    LookupResult r = testing::get_fake(after, tag, &recompiled);
    EXPECT_EQ(r.entry->kernel.cubin, fake_kernel(tag).cubin);
  }
  if (!load.remove_dir) EXPECT_EQ(recompiled.load(), load.variants - requested);
}

INSTANTIATE_TEST_SUITE_P(Sizes, CacheLoad,
                         ::testing::Values(Load{4, 4, 32, 16, 3, 30}, Load{8, 8, 96, 24, 2, 20},
                                           Load{16, 8, 256, 48, 2, 5},
                                           Load{6, 4, 48, 20, 3, 10, /*remove_dir=*/true}),
                         [](const ::testing::TestParamInfo<Load>& info) {
                           const Load& l = info.param;
                           return std::to_string(l.processes) + "x" + std::to_string(l.threads) +
                                  "x" + std::to_string(l.variants) +
                                  (l.remove_dir ? "_dir_removed" : "");
                         });

// Real compiles: processes x threads over the axpy family's matrix on two
// targets, through KernelCache::get (generate, key, NVRTC).
TEST(CacheLoadNvrtc, AxpyMatrixCompiledOncePerKeyAcrossProcesses) {
  const Spec spec = testing::axpy_spec();
  const std::vector<FlagSet> variants = expand_matrix(spec).variants;
  std::vector<Signature> signatures;
  for (const char* target : {"sm_80", "sm_90a"}) {
    CompileOptions options;
    options.target = parse_target(target);
    for (const FlagSet& flags : variants)
      signatures.push_back(make_signature(spec, flags, options));
  }
  std::vector<std::string> keys;
  for (const Signature& s : signatures)
    keys.push_back(make_cache_key(s, generate_source(spec, s).key_text()).hex);
  constexpr int kProcesses = 3;
  constexpr int kThreads = 3;
  testing::TempDir dir;
  const std::string user_dir = dir / "cache";
  int start[2];
  ASSERT_EQ(::pipe(start), 0);
  const auto begin = std::chrono::steady_clock::now();
  std::vector<testing::Child> children;
  for (int p = 0; p < kProcesses; ++p) {
    children.push_back(testing::spawn_child([&](FILE* out) {
      char go = 0;
      if (::read(start[0], &go, 1) != 1) return 3;
      KernelCache cache(testing::disk_config(user_dir));
      std::atomic<int> wrong{0}, errors{0};
      std::vector<std::thread> threads;
      for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
          std::vector<size_t> order(signatures.size());
          for (size_t i = 0; i < order.size(); ++i) order[i] = i;
          std::shuffle(order.begin(), order.end(), std::mt19937(17 * p + t));
          for (size_t i : order) {
            try {
              LookupResult r = cache.get(spec, signatures[i]);
              const bool right = r.entry->key.hex == keys[i] &&
                                 r.entry->canonical_signature == signatures[i].canonical() &&
                                 r.entry->target == signatures[i].options.target.name() &&
                                 r.entry->kernel.cubin.rfind(
                                     "\x7f"
                                     "ELF",
                                     0) == 0;
              if (!right) ++wrong;
            } catch (...) {
              ++errors;
            }
          }
        });
      }
      for (std::thread& thread : threads) thread.join();
      std::fprintf(out, "%d %d %llu\n", wrong.load(), errors.load(),
                   (unsigned long long)cache.stats().compiles);
      return 0;
    }));
  }
  ASSERT_EQ(::write(start[1], "ggg", kProcesses), kProcesses);
  ::close(start[0]);
  ::close(start[1]);
  std::vector<testing::ChildResult> results;
  for (const testing::Child& child : children) results.push_back(testing::wait_child(child));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  unsigned long long compiles = 0;
  for (const testing::ChildResult& child : results) {
    ASSERT_TRUE(child.exited_ok()) << child.status << ": " << child.output;
    int wrong = -1, errors = -1;
    unsigned long long c = 0;
    std::istringstream(child.output) >> wrong >> errors >> c;
    EXPECT_EQ(wrong, 0);
    EXPECT_EQ(errors, 0);
    compiles += c;
  }
  std::printf(
      "[ load     ] axpy: %d processes x %d threads, %zu keys: %llu NVRTC compiles, %.2f s\n",
      kProcesses, kThreads, keys.size(), compiles, seconds);
  EXPECT_EQ(compiles, keys.size());
  int entries = 0;
  expect_only_good_files(user_dir, &entries);
  EXPECT_EQ(size_t(entries), keys.size());
}

}  // namespace
}  // namespace attnjit

// Helpers for the cache tests: temporary directories, fake keys and fake
// compiled kernels, so that the cache is tested without NVRTC.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "attnjit/cache.h"
#include "attnjit/target.h"

namespace attnjit::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base && *base ? base : "/tmp") + "/attnjit-runtime-test-XXXXXX";
    if (!::mkdtemp(&pattern[0])) ADD_FAILURE() << "mkdtemp failed";
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A well-formed key (64 lowercase hex digits) derived from a name: four
// seeded FNV-1a hashes, enough to keep test keys apart.
inline CacheKey fake_key(const std::string& name) {
  static const char* hex = "0123456789abcdef";
  std::string text;
  for (uint64_t seed = 0; seed < 4; ++seed) {
    uint64_t h = 1469598103934665603ull ^ (seed * 0x9e3779b97f4a7c15ull);
    for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
    for (int i = 15; i >= 0; --i) text.push_back(hex[(h >> (4 * i)) & 15]);
  }
  return CacheKey{text};
}

// Distinct, recognisable bytes per tag; the cubin holds NULs on purpose.
inline CompiledKernel fake_kernel(const std::string& tag) {
  CompiledKernel kernel;
  kernel.entry = "fake_entry";
  kernel.cubin = std::string(
                     "\x7f"
                     "ELF\0\x01\x02",
                     7) +
                 "cubin-of-" + tag;
  kernel.ptx = "// ptx of " + tag;
  kernel.log = "nvrtc log of " + tag;
  kernel.resources.registers = 96;
  kernel.resources.static_smem = 0;
  kernel.resources.spill_stores = 0;
  kernel.resources.spill_loads = 0;
  kernel.resources.stack_frame = 8;
  kernel.resources.dynamic_smem = 65536;
  kernel.resources.threads = 128;
  kernel.compile_seconds = 0.25;
  return kernel;
}

// The target of every fake signature ("...@sm_90a").
inline Target fake_target() { return parse_target("sm_90a"); }

inline CacheEntry fake_entry(const std::string& tag) {
  CacheEntry entry;
  entry.key = fake_key(tag);
  entry.canonical_signature = "fake[tag=" + tag + "]@sm_90a";
  entry.display_name = "fake_" + tag;
  entry.kernel = fake_kernel(tag);
  entry.target = "sm_90a";
  entry.nvrtc_version = "13.0";
  return entry;
}

inline std::string encode_entry_of(const std::string& tag) { return encode_entry(fake_entry(tag)); }

inline CacheConfig disk_config(const std::string& user_dir) {
  CacheConfig config;
  config.user_dir = user_dir;
  return config;
}

inline CacheConfig memory_config() { return CacheConfig{}; }

// get_or_compile with the fake kernel of `tag`, counting compiles.
inline LookupResult get_fake(KernelCache& cache, const std::string& tag,
                             std::atomic<int>* compiles = nullptr) {
  return cache.get_or_compile(fake_key(tag), "fake[tag=" + tag + "]@sm_90a", "fake_" + tag,
                              fake_target(), [&] {
                                if (compiles) ++*compiles;
                                return fake_kernel(tag);
                              });
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline int count_substr(const std::string& text, const std::string& what) {
  int count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size()))
    ++count;
  return count;
}

inline void expect_stats(const CacheStats& s, uint64_t memory_hits, uint64_t disk_hits,
                         uint64_t aot_hits, uint64_t compiles, uint64_t corrupt_entries,
                         uint64_t write_failures) {
  EXPECT_EQ(s.memory_hits, memory_hits) << "memory_hits";
  EXPECT_EQ(s.disk_hits, disk_hits) << "disk_hits";
  EXPECT_EQ(s.aot_hits, aot_hits) << "aot_hits";
  EXPECT_EQ(s.compiles, compiles) << "compiles";
  EXPECT_EQ(s.corrupt_entries, corrupt_entries) << "corrupt_entries";
  EXPECT_EQ(s.write_failures, write_failures) << "write_failures";
}

}  // namespace attnjit::testing

// KernelCache::get end to end with the real compiler (codegen + NVRTC) on
// the small `axpy` test family; needs no GPU.
#include <gtest/gtest.h>

#include <filesystem>

#include "attnjit/cache.h"
#include "attnjit/error.h"
#include "attnjit/nvrtc_version.h"
#include "attnjit/spec.h"
#include "attnjit/target.h"
#include "cache_test_support.h"

namespace attnjit {
namespace {

const Spec& axpy_spec() {
  static const Spec spec = load_spec_file(ATTNJIT_SOURCE_DIR "/tests/compiler/data/axpy.yaml");
  return spec;
}

Signature axpy_signature(const std::string& assignments) {
  const Spec& spec = axpy_spec();
  CompileOptions options;
  options.target = parse_target("sm_90a");
  FlagSet flags = resolve_flags(spec, parse_flag_assignments(spec, assignments));
  return make_signature(spec, flags, options);
}

TEST(CacheGet, CompilesThenHitsMemoryThenDisk) {
  testing::TempDir dir;
  Signature signature = axpy_signature("vec=2,mode=clamp");
  LookupResult first, again;
  {
    KernelCache cache(testing::disk_config(dir.path()));
    first = cache.get(axpy_spec(), signature);
    again = cache.get(axpy_spec(), signature);
    testing::expect_stats(cache.stats(), 1, 0, 0, 1, 0, 0);
  }
  EXPECT_EQ(first.source, EntrySource::kCompiled);
  EXPECT_EQ(again.source, EntrySource::kMemory);
  const CacheEntry& entry = *first.entry;
  EXPECT_EQ(entry.kernel.entry, "axpy");
  EXPECT_EQ(entry.kernel.cubin.compare(0, 4,
                                       "\x7f"
                                       "ELF"),
            0);
  EXPECT_EQ(entry.canonical_signature, signature.canonical());
  EXPECT_EQ(entry.display_name, signature.display_name());
  EXPECT_EQ(entry.target, "sm_90a");
  EXPECT_EQ(entry.nvrtc_version, nvrtc_version());
  EXPECT_TRUE(std::filesystem::exists(KernelCache::entry_path(dir.path(), entry.key)));

  KernelCache next(testing::disk_config(dir.path()));
  LookupResult from_disk = next.get(axpy_spec(), signature);
  EXPECT_EQ(from_disk.source, EntrySource::kDisk);
  EXPECT_EQ(from_disk.entry->key, entry.key);
  EXPECT_EQ(from_disk.entry->kernel.cubin, entry.kernel.cubin);
  EXPECT_EQ(from_disk.entry->kernel.resources.registers, entry.kernel.resources.registers);
  testing::expect_stats(next.stats(), 0, 1, 0, 0, 0, 0);
}

TEST(CacheGet, VariantsHaveDistinctKeys) {
  KernelCache cache(testing::memory_config());
  LookupResult a = cache.get(axpy_spec(), axpy_signature("vec=1"));
  LookupResult b = cache.get(axpy_spec(), axpy_signature("vec=4"));
  EXPECT_NE(a.entry->key.hex, b.entry->key.hex);
  EXPECT_EQ(cache.stats().compiles, 2u);
}

TEST(CacheGet, NoJitMissNamesTheVariant) {
  testing::TempDir dir;
  CacheConfig config = testing::disk_config(dir.path());
  config.no_jit = true;
  KernelCache cache(config);
  Signature signature = axpy_signature("dtype=f64");
  try {
    cache.get(axpy_spec(), signature);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNoJit);
    EXPECT_EQ(std::string(e.what()).rfind("no-JIT mode: " + signature.display_name() + " (", 0), 0u)
        << e.what();
  }
  EXPECT_EQ(cache.stats().compiles, 0u);
}

}  // namespace
}  // namespace attnjit

// The on-disk entry format: round trip, and every kind of damage detected.
#include <gtest/gtest.h>

#include "attnjit/cache.h"
#include "attnjit/error.h"
#include "cache_test_support.h"

namespace attnjit {
namespace {

using testing::fake_entry;
using testing::fake_key;

std::string decode_problem(const std::string& bytes, const CacheKey& key) {
  try {
    decode_entry(bytes, key);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCache);
    return e.what();
  }
  return "";
}

TEST(CacheEntry, RoundTripKeepsEveryField) {
  CacheEntry entry = fake_entry("roundtrip");
  CacheEntry back = decode_entry(encode_entry(entry), entry.key);
  EXPECT_EQ(back.key, entry.key);
  EXPECT_EQ(back.canonical_signature, entry.canonical_signature);
  EXPECT_EQ(back.display_name, entry.display_name);
  EXPECT_EQ(back.target, "sm_90a");
  EXPECT_EQ(back.nvrtc_version, "13.0");
  EXPECT_EQ(back.kernel.entry, entry.kernel.entry);
  EXPECT_EQ(back.kernel.cubin, entry.kernel.cubin);  // holds a NUL
  EXPECT_EQ(back.kernel.ptx, entry.kernel.ptx);
  EXPECT_EQ(back.kernel.log, entry.kernel.log);
  EXPECT_DOUBLE_EQ(back.kernel.compile_seconds, 0.25);
  EXPECT_EQ(back.kernel.resources.registers, 96);
  EXPECT_EQ(back.kernel.resources.stack_frame, 8);
  EXPECT_EQ(back.kernel.resources.dynamic_smem, 65536);
  EXPECT_EQ(back.kernel.resources.threads, 128);
}

TEST(CacheEntry, EncodingIsDeterministicAndStartsWithTheHeader) {
  CacheEntry entry = fake_entry("deterministic");
  std::string bytes = encode_entry(entry);
  EXPECT_EQ(bytes, encode_entry(entry));
  EXPECT_EQ(bytes.compare(0, 8, std::string("ATTNJIT\0", 8)), 0);
  EXPECT_EQ(static_cast<unsigned char>(bytes[8]), kCacheFormatVersion);
  EXPECT_NE(bytes.find(entry.key.hex), std::string::npos);
}

TEST(CacheEntry, EmptyPtxAndLogRoundTrip) {
  CacheEntry entry = fake_entry("noptx");
  entry.kernel.ptx.clear();
  entry.kernel.log.clear();
  CacheEntry back = decode_entry(encode_entry(entry), entry.key);
  EXPECT_TRUE(back.kernel.ptx.empty());
  EXPECT_TRUE(back.kernel.log.empty());
}

TEST(CacheEntry, DecodeRejectsDamage) {
  CacheEntry entry = fake_entry("damage");
  const std::string good = encode_entry(entry);
  const CacheKey& key = entry.key;

  EXPECT_EQ(decode_problem("", key), "empty file");
  EXPECT_NE(decode_problem(good.substr(0, 5), key).find("truncated"), std::string::npos);
  EXPECT_NE(decode_problem(good.substr(0, good.size() / 2), key).find("truncated"),
            std::string::npos);
  EXPECT_NE(decode_problem(good.substr(0, good.size() - 1), key).find("truncated"),
            std::string::npos);
  EXPECT_NE(decode_problem(good + "x", key).find("after the payload"), std::string::npos);

  std::string flipped = good;
  flipped[flipped.size() - 3] ^= 0x10;
  EXPECT_EQ(decode_problem(flipped, key), "checksum mismatch");

  std::string foreign = good;
  foreign.replace(0, 4,
                  "\x7f"
                  "ELF");
  EXPECT_NE(decode_problem(foreign, key).find("bad magic"), std::string::npos);

  std::string other_version = good;
  other_version[8] = static_cast<char>(kCacheFormatVersion + 1);
  EXPECT_NE(decode_problem(other_version, key).find("cache format version"), std::string::npos);

  CacheKey other = fake_key("someone else");
  EXPECT_NE(decode_problem(good, other).find("entry is for key " + key.hex), std::string::npos);
}

TEST(CacheEntry, DecodeRejectsAnEntryWithoutCubin) {
  CacheEntry entry = fake_entry("nocubin");
  entry.kernel.cubin.clear();
  EXPECT_EQ(decode_problem(encode_entry(entry), entry.key), "the entry holds no cubin");
}

TEST(CacheEntry, PathsAreShardedByTheKeysFirstTwoDigits) {
  CacheKey key = fake_key("path");
  EXPECT_EQ(KernelCache::entry_path("/c", key),
            "/c/" + key.hex.substr(0, 2) + "/" + key.hex + ".ajk");
  EXPECT_EQ(KernelCache::lock_path("/c", key),
            "/c/" + key.hex.substr(0, 2) + "/" + key.hex + ".lock");
}

TEST(CacheEntry, ScanReportsGoodAndBadEntries) {
  testing::TempDir dir;
  CacheEntry a = fake_entry("scan-a");
  CacheEntry b = fake_entry("scan-b");
  testing::write_bytes(KernelCache::entry_path(dir.path(), a.key), encode_entry(a));
  testing::write_bytes(KernelCache::entry_path(dir.path(), b.key), encode_entry(b).substr(0, 40));
  testing::write_bytes(KernelCache::lock_path(dir.path(), a.key), "");
  std::vector<EntryReport> reports = scan_cache_dir(dir.path());
  ASSERT_EQ(reports.size(), 2u);
  for (const EntryReport& report : reports) {
    if (report.key == a.key.hex) {
      EXPECT_TRUE(report.ok) << report.problem;
      EXPECT_EQ(report.display_name, "fake_scan-a");
      EXPECT_EQ(report.canonical_signature, a.canonical_signature);
      EXPECT_EQ(report.bytes, encode_entry(a).size());
    } else {
      EXPECT_EQ(report.key, b.key.hex);
      EXPECT_FALSE(report.ok);
      EXPECT_NE(report.problem.find("truncated"), std::string::npos);
    }
  }
  EXPECT_TRUE(scan_cache_dir(dir / "absent").empty());
}

}  // namespace
}  // namespace attnjit

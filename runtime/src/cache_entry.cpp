// The on-disk form of one cache entry, and the scan behind `inspect`.
//
// Layout (integers little-endian):
//   "ATTNJIT\0"              8 bytes of magic
//   u32 format version       kCacheFormatVersion
//   u32 n, n bytes           the key, 64 hex digits
//   32 bytes                 SHA-256 of the payload
//   u64 n                    payload size, exactly the rest of the file
//   payload: u64 n + metadata JSON, u64 n + cubin, u64 n + ptx
// Every field is checked on decode; the checksum covers the payload, and
// the header fields are checked against what the reader expects.
#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "attnjit/cache.h"
#include "attnjit/error.h"
#include "cache_disk.h"

namespace attnjit {
namespace {

constexpr char kMagic[8] = {'A', 'T', 'T', 'N', 'J', 'I', 'T', '\0'};
constexpr size_t kDigestBytes = 32;
constexpr uint32_t kMaxKeyBytes = 256;

std::string sha256_raw(const std::string& bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(), nullptr) != 1 ||
      size != kDigestBytes)
    throw Error(ErrorKind::kCache, "SHA-256 failed in libcrypto");
  return std::string(reinterpret_cast<const char*>(digest), size);
}

class Writer {
 public:
  void raw(const void* data, size_t size) { out_.append(static_cast<const char*>(data), size); }
  void u32(uint32_t value) { little_endian(value, 4); }
  void u64(uint64_t value) { little_endian(value, 8); }
  void sized(const std::string& bytes) {
    u64(bytes.size());
    out_ += bytes;
  }
  std::string& bytes() { return out_; }

 private:
  void little_endian(uint64_t value, int size) {
    for (int i = 0; i < size; ++i) out_.push_back(static_cast<char>(value >> (8 * i)));
  }
  std::string out_;
};

// Bounds-checked reads; every overrun is a truncation.
class Reader {
 public:
  Reader(const std::string& bytes, const char* what) : bytes_(bytes), what_(what) {}
  std::string raw(size_t size) {
    need(size);
    std::string value = bytes_.substr(pos_, size);
    pos_ += size;
    return value;
  }
  uint32_t u32() { return static_cast<uint32_t>(little_endian(4)); }
  uint64_t u64() { return little_endian(8); }
  std::string sized() { return raw(u64()); }
  size_t left() const { return bytes_.size() - pos_; }

 private:
  void need(uint64_t size) const {
    if (size > left())
      throw Error(ErrorKind::kCache, fmt::format("truncated {} ({} bytes where {} more are needed "
                                                 "at offset {})",
                                                 what_, bytes_.size(), size, pos_));
  }
  uint64_t little_endian(int size) {
    need(static_cast<uint64_t>(size));
    uint64_t value = 0;
    for (int i = 0; i < size; ++i)
      value |= uint64_t{static_cast<unsigned char>(bytes_[pos_ + i])} << (8 * i);
    pos_ += static_cast<size_t>(size);
    return value;
  }
  const std::string& bytes_;
  const char* what_;
  size_t pos_ = 0;
};

nlohmann::json resources_json(const ResourceUsage& r) {
  return {{"registers", r.registers},       {"static_smem", r.static_smem},
          {"spill_stores", r.spill_stores}, {"spill_loads", r.spill_loads},
          {"stack_frame", r.stack_frame},   {"dynamic_smem", r.dynamic_smem},
          {"threads", r.threads},           {"min_blocks", r.min_blocks}};
}

ResourceUsage resources_from(const nlohmann::json& j) {
  ResourceUsage r;
  r.registers = j.at("registers").get<int>();
  r.static_smem = j.at("static_smem").get<int>();
  r.spill_stores = j.at("spill_stores").get<int>();
  r.spill_loads = j.at("spill_loads").get<int>();
  r.stack_frame = j.at("stack_frame").get<int>();
  r.dynamic_smem = j.at("dynamic_smem").get<int>();
  r.threads = j.at("threads").get<int>();
  // Absent from entries written before it was recorded: unknown.
  r.min_blocks = j.value("min_blocks", -1);
  return r;
}

std::string metadata_json(const CacheEntry& entry) {
  nlohmann::json meta = {
      {"key", entry.key.hex},
      {"canonical_signature", entry.canonical_signature},
      {"display_name", entry.display_name},
      {"entry", entry.kernel.entry},
      {"resources", resources_json(entry.kernel.resources)},
      {"nvrtc_log", entry.kernel.log},
      {"compile_seconds", entry.kernel.compile_seconds},
      {"nvrtc_version", entry.nvrtc_version},
      {"target", entry.target},
  };
  return meta.dump();
}

void apply_metadata(const std::string& text, CacheEntry& entry) {
  try {
    nlohmann::json meta = nlohmann::json::parse(text);
    if (meta.at("key").get<std::string>() != entry.key.hex)
      throw Error(ErrorKind::kCache, "metadata names another key");
    entry.canonical_signature = meta.at("canonical_signature").get<std::string>();
    entry.display_name = meta.at("display_name").get<std::string>();
    entry.kernel.entry = meta.at("entry").get<std::string>();
    entry.kernel.resources = resources_from(meta.at("resources"));
    entry.kernel.log = meta.at("nvrtc_log").get<std::string>();
    entry.kernel.compile_seconds = meta.at("compile_seconds").get<double>();
    entry.nvrtc_version = meta.at("nvrtc_version").get<std::string>();
    entry.target = meta.at("target").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kCache, fmt::format("bad metadata: {}", e.what()));
  }
}

void check_header(Reader& in, const CacheKey& expected) {
  if (in.left() == 0) throw Error(ErrorKind::kCache, "empty file");
  if (in.left() < sizeof(kMagic))
    throw Error(ErrorKind::kCache, fmt::format("truncated header ({} bytes)", in.left()));
  if (in.raw(sizeof(kMagic)) != std::string(kMagic, sizeof(kMagic)))
    throw Error(ErrorKind::kCache, "not an attnjit cache entry (bad magic)");
  uint32_t version = in.u32();
  if (version != static_cast<uint32_t>(kCacheFormatVersion))
    throw Error(ErrorKind::kCache,
                fmt::format("cache format version {}, expected {}", version, kCacheFormatVersion));
  uint32_t key_size = in.u32();
  if (key_size > kMaxKeyBytes)
    throw Error(ErrorKind::kCache, fmt::format("bad key size {}", key_size));
  std::string key = in.raw(key_size);
  if (key != expected.hex)
    throw Error(ErrorKind::kCache,
                fmt::format("entry is for key {}, not {}",
                            cache_disk::is_key_hex(key) ? key : "<malformed>", expected.hex));
}

}  // namespace

std::string encode_entry(const CacheEntry& entry) {
  Writer payload;
  payload.sized(metadata_json(entry));
  payload.sized(entry.kernel.cubin);
  payload.sized(entry.kernel.ptx);
  Writer out;
  out.raw(kMagic, sizeof(kMagic));
  out.u32(static_cast<uint32_t>(kCacheFormatVersion));
  out.u32(static_cast<uint32_t>(entry.key.hex.size()));
  out.raw(entry.key.hex.data(), entry.key.hex.size());
  out.raw(sha256_raw(payload.bytes()).data(), kDigestBytes);
  out.u64(payload.bytes().size());
  out.bytes() += payload.bytes();
  return std::move(out.bytes());
}

CacheEntry decode_entry(const std::string& bytes, const CacheKey& expected) {
  Reader in(bytes, "entry");
  check_header(in, expected);
  std::string digest = in.raw(kDigestBytes);
  uint64_t payload_size = in.u64();
  if (payload_size != in.left())
    throw Error(ErrorKind::kCache,
                payload_size > in.left()
                    ? fmt::format("truncated entry (payload of {} bytes, {} "
                                  "present)",
                                  payload_size, in.left())
                    : fmt::format("{} bytes after the payload", in.left() - payload_size));
  std::string payload = in.raw(payload_size);
  if (sha256_raw(payload) != digest) throw Error(ErrorKind::kCache, "checksum mismatch");
  Reader sections(payload, "payload");
  CacheEntry entry;
  entry.key = expected;
  std::string metadata = sections.sized();
  entry.kernel.cubin = sections.sized();
  entry.kernel.ptx = sections.sized();
  if (sections.left() != 0) throw Error(ErrorKind::kCache, "bytes after the last payload section");
  apply_metadata(metadata, entry);
  if (entry.kernel.cubin.empty()) throw Error(ErrorKind::kCache, "the entry holds no cubin");
  return entry;
}

std::string KernelCache::entry_path(const std::string& dir, const CacheKey& key) {
  return fmt::format("{}/{}/{}.ajk", dir, key.hex.substr(0, 2), key.hex);
}

std::string KernelCache::lock_path(const std::string& dir, const CacheKey& key) {
  return fmt::format("{}/{}/{}.lock", dir, key.hex.substr(0, 2), key.hex);
}

namespace {

EntryReport inspect_file(const std::filesystem::path& file) {
  EntryReport report;
  report.path = file.string();
  report.key = file.stem().string();
  cache_disk::ReadResult read = cache_disk::read_file(report.path);
  report.bytes = read.bytes.size();
  if (read.status != cache_disk::ReadResult::kOk) {
    report.problem =
        read.status == cache_disk::ReadResult::kMissing ? "vanished while scanning" : read.reason;
    return report;
  }
  if (!cache_disk::is_key_hex(report.key)) {
    report.problem = "the file name is not a cache key";
    return report;
  }
  try {
    CacheEntry entry = decode_entry(read.bytes, CacheKey{report.key});
    report.display_name = entry.display_name;
    report.canonical_signature = entry.canonical_signature;
    report.ok = true;
  } catch (const Error& e) {
    report.problem = e.what();
  }
  return report;
}

}  // namespace

std::vector<EntryReport> scan_cache_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<EntryReport> reports;
  std::error_code ec;
  for (fs::directory_iterator shard(dir, ec), end; !ec && shard != end; shard.increment(ec)) {
    std::error_code inner;
    if (!shard->is_directory(inner)) continue;
    for (fs::directory_iterator file(shard->path(), inner); !inner && file != end;
         file.increment(inner)) {
      const fs::path& path = file->path();
      // Skips lock files and the dot-named temp files of a publish.
      if (path.extension() != ".ajk" || path.filename().string()[0] == '.') continue;
      reports.push_back(inspect_file(path));
    }
  }
  std::sort(reports.begin(), reports.end(),
            [](const EntryReport& a, const EntryReport& b) { return a.path < b.path; });
  return reports;
}

}  // namespace attnjit

// libFuzzer target: decode_entry() over arbitrary bytes (runtime cache
// entries: the one binary format attnjit reads from disk).
//
// The input's first byte picks the mode (fuzz_entry_key.h): a whole entry
// under a fixed key, a whole entry under the key its own header names (so
// that mutations behind the key are explored), or a payload that the target
// wraps in a valid header and checksum (so that the section and metadata
// parsers behind the checksum are reached too).
//
// A finding is: a crash or sanitizer report, an exception other than
// attnjit::Error(kCache), a message over several lines, or an accepted entry
// that is empty, under another key, or that does not survive
// encode_entry/decode_entry unchanged.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "attnjit/cache.h"
#include "attnjit/error.h"
#include "attnjit/sha256.h"
#include "attnjit/signature.h"
#include "fuzz/fuzz_entry_key.h"

namespace {

using namespace attnjit;
using namespace attnjit::testing;

[[noreturn]] void finding(const std::string& what, const std::string& detail) {
  std::fprintf(stderr, "attnjit fuzz finding: %s\n%s\n", what.c_str(), detail.c_str());
  std::abort();
}

void little_endian(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>(value >> (8 * i)));
}

std::string raw_sha256(const std::string& bytes) {
  const std::string hex = sha256_hex(bytes);
  std::string raw;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    raw.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return raw;
}

std::string wrap_payload(const std::string& payload) {
  std::string entry("ATTNJIT\0", 8);
  little_endian(entry, static_cast<uint64_t>(kCacheFormatVersion), 4);
  little_endian(entry, 64, 4);
  entry += kFuzzEntryKey;
  entry += raw_sha256(payload);
  little_endian(entry, payload.size(), 8);
  return entry + payload;
}

// The key an entry's header names, or "" when the header is too short.
std::string header_key(const std::string& bytes) {
  if (bytes.size() < 16) return "";
  uint32_t size = 0;
  for (int i = 0; i < 4; ++i)
    size |= uint32_t(static_cast<unsigned char>(bytes[12 + i])) << (8 * i);
  if (size > 256 || bytes.size() < 16 + size) return "";
  return bytes.substr(16, size);
}

bool same(const CacheEntry& a, const CacheEntry& b) {
  return a.key == b.key && a.canonical_signature == b.canonical_signature &&
         a.display_name == b.display_name && a.target == b.target &&
         a.nvrtc_version == b.nvrtc_version && a.kernel.entry == b.kernel.entry &&
         a.kernel.cubin == b.kernel.cubin && a.kernel.ptx == b.kernel.ptx &&
         a.kernel.log == b.kernel.log &&
         a.kernel.resources.registers == b.kernel.resources.registers &&
         a.kernel.resources.threads == b.kernel.resources.threads &&
         a.kernel.resources.dynamic_smem == b.kernel.resources.dynamic_smem &&
         a.kernel.resources.min_blocks == b.kernel.resources.min_blocks;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int mode = data[0] % kFuzzEntryModes;
  std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  CacheKey expected{kFuzzEntryKey};
  if (mode == kKeyFromHeader) expected.hex = header_key(bytes);
  if (mode == kPayloadOnly) bytes = wrap_payload(bytes);
  CacheEntry entry;
  try {
    entry = decode_entry(bytes, expected);
  } catch (const Error& e) {
    const std::string message = e.what();
    if (e.kind() != ErrorKind::kCache) finding("decode_entry threw non-kCache", message);
    if (message.find('\n') != std::string::npos) finding("multi-line cache error", message);
    return 0;
  }
  if (entry.key != expected) finding("accepted under another key", entry.key.hex);
  if (entry.kernel.cubin.empty()) finding("accepted an entry without cubin", "");
  CacheEntry again;
  try {
    again = decode_entry(encode_entry(entry), expected);
  } catch (const Error& e) {
    finding("re-encoded entry does not decode", e.what());
  }
  if (!same(entry, again)) finding("entry changed through encode/decode", entry.display_name);
  return 0;
}

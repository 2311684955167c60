// The cache key the decode_entry fuzz target and its seed generator agree on.
#pragma once

namespace attnjit::testing {

constexpr const char* kFuzzEntryKey =
    "5e3c0d1f2a4b69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";

// The first byte of an input picks how the rest is read.
enum FuzzEntryMode : unsigned char {
  kWholeEntry = 0,     // an entry file, expected under kFuzzEntryKey
  kKeyFromHeader = 1,  // an entry file, expected under the key it names
  kPayloadOnly = 2,    // a payload, given a valid header and checksum
};
constexpr int kFuzzEntryModes = 3;

// magic, version, key length, 64-digit key, SHA-256, payload size
constexpr unsigned kEntryHeaderBytes = 8 + 4 + 4 + 64 + 32 + 8;

}  // namespace attnjit::testing

// Writes real encoded cache entries as seeds of the decode_entry fuzz target
// (one file per mode, see fuzz_entry_key.h): `make_entry_seeds DIR`.
// run_fuzzers.sh runs it before every fuzzing session, so the seeds follow
// the entry format; the committed copies in corpus/decode_entry are its
// output at the time of writing.
#include <cstdio>
#include <fstream>
#include <string>

#include "attnjit/cache.h"
#include "fuzz/fuzz_entry_key.h"

namespace {

using namespace attnjit;
using namespace attnjit::testing;

CacheEntry seed_entry(bool with_ptx) {
  CacheEntry entry;
  entry.key = CacheKey{kFuzzEntryKey};
  entry.canonical_signature = "axpy[dtype=f32,vec=1,accumulate=true|block_threads=256]@sm_90a";
  entry.display_name = "axpy_5e3c0d1f";
  entry.target = "sm_90a";
  entry.nvrtc_version = "13.0";
  entry.kernel.entry = "axpy";
  entry.kernel.cubin = std::string(
                           "\x7f"
                           "ELF\x02\x01\x01\0\0\0",
                           10) +
                       "seed cubin bytes";
  entry.kernel.ptx = with_ptx ? ".version 8.8\n.target sm_90a\n" : "";
  entry.kernel.log = with_ptx ? "ptxas info: Used 16 registers" : "";
  entry.kernel.resources.registers = 16;
  entry.kernel.resources.threads = 256;
  entry.kernel.resources.dynamic_smem = 0;
  entry.kernel.resources.min_blocks = with_ptx ? 2 : -1;
  entry.kernel.compile_seconds = 0.125;
  return entry;
}

bool write(const std::string& path, unsigned char mode, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.put(static_cast<char>(mode));
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const std::string full = encode_entry(seed_entry(/*with_ptx=*/true));
  const std::string bare = encode_entry(seed_entry(/*with_ptx=*/false));
  bool ok = write(dir + "/entry_full", kWholeEntry, full) &&
            write(dir + "/entry_bare", kWholeEntry, bare) &&
            write(dir + "/entry_key_from_header", kKeyFromHeader, full) &&
            write(dir + "/payload_full", kPayloadOnly, full.substr(kEntryHeaderBytes)) &&
            write(dir + "/payload_bare", kPayloadOnly, bare.substr(kEntryHeaderBytes));
  if (!ok) std::fprintf(stderr, "make_entry_seeds: cannot write under %s\n", dir.c_str());
  return ok ? 0 : 1;
}

// The headers generated code is compiled with, captured at build time
// (templates/** but templates/testing/, cmake/AttnjitEmbed.cmake), and
// nothing else: the spec parser looks a family's template up among them,
// NVRTC gets every one by its path, and their digest is part of every cache
// key.
#pragma once

#include <string>
#include <vector>

// The public C++ API: exported from libattnjit.so (the build hides the rest).
#pragma GCC visibility push(default)

namespace attnjit {

struct EmbeddedHeader {
  std::string path;  // relative to templates/, e.g. "attention/mask.cuh"
  std::string contents;
};

// Sorted by path.
const std::vector<EmbeddedHeader>& embedded_headers();
const EmbeddedHeader* find_embedded_header(const std::string& path);
// SHA-256 over all embedded headers (sorted by path): part of every key.
const std::string& embedded_headers_digest();
// The same digest over any list of headers (paths and contents, each
// length-prefixed, sorted by path).
std::string headers_digest(std::vector<EmbeddedHeader> headers);

// Adds headers beside the library's own, for test binaries whose kernels
// include headers production must not carry (templates/testing/): from then
// on they are found, compiled with and covered by the digest like the
// library's. Must run before the headers are first used (test binaries do
// it during static initialization); a later call, or a path the library
// already embeds, is a programmer error.
void register_embedded_headers(std::vector<EmbeddedHeader> headers);

}  // namespace attnjit

#pragma GCC visibility pop

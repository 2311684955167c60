// The headers generated code is compiled with, captured at build time
// (templates/**, cmake/AttnjitEmbed.cmake), and nothing else: the spec
// parser looks a family's template up among them, NVRTC gets every one by
// its path, and their digest is part of every cache key.
#pragma once

#include <string>
#include <vector>

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

}  // namespace attnjit

// attnjit_pack_specs OUT_DIR: writes OUT_DIR/<name>.pack for each embedded
// spec: its Spec as parse_spec reads the YAML, packed (src/spec_pack.h),
// and OUT_DIR/templates.sha256, the embedded templates' digest, which the
// library embeds (compiler/CMakeLists.txt). Any error in a spec fails the
// build here.
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attnjit/embedded.h"
#include "attnjit/error.h"
#include "attnjit/spec.h"
#include "spec_pack.h"

namespace attnjit::embedded {
// This program makes the packs, so it has none: load_embedded_spec parses
// the YAML here, and embedded_headers_digest() hashes the templates.
const std::vector<std::pair<const char*, std::string_view>>& packs() {
  static const std::vector<std::pair<const char*, std::string_view>> none;
  return none;
}
}  // namespace attnjit::embedded

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: attnjit_pack_specs OUT_DIR\n");
    return 2;
  }
  const auto write = [&](const std::string& file, const std::string& bytes) {
    const std::string path = std::string(argv[1]) + "/" + file;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
    if (out.flush()) return true;
    std::fprintf(stderr, "attnjit_pack_specs: cannot write %s\n", path.c_str());
    return false;
  };
  try {
    for (const std::string& name : attnjit::embedded_spec_names()) {
      if (!write(name + ".pack", attnjit::detail::pack_spec(attnjit::load_embedded_spec(name)))) {
        return 1;
      }
    }
    return write("templates.sha256", attnjit::embedded_headers_digest()) ? 0 : 1;
  } catch (const attnjit::Error& e) {
    std::fprintf(stderr, "attnjit_pack_specs: %s\n", e.what());
    return 1;
  }
}

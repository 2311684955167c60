// attnjit_params_header SPEC OUT [HOST_OUT]: writes the kernel-parameter
// struct of an embedded spec (kernel_params.h) for the host side of the
// build, from the same function that hands it to NVRTC, and (HOST_OUT) its
// host-only companion: the copy of a host argument struct's same-named
// fields. A file is rewritten only when its text changes, so an unrelated
// spec edit rebuilds nothing.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "attnjit/error.h"
#include "attnjit/kernel_params.h"
#include "attnjit/spec.h"

namespace {

// Writes `text` to `path` unless it holds that already; false on failure.
bool write_if_changed(const std::string& path, const std::string& text) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream current;
  current << in.rdbuf();
  if (in && current.str() == text) return true;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.flush()) {
    std::fprintf(stderr, "attnjit_params_header: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: attnjit_params_header EMBEDDED_SPEC OUT_FILE [HOST_OUT_FILE]\n");
    return 2;
  }
  try {
    const attnjit::Spec spec = attnjit::load_embedded_spec(argv[1]);
    if (!write_if_changed(argv[2], attnjit::params_header_text(spec))) return 1;
    if (argc == 4 && !write_if_changed(argv[3], attnjit::params_host_header_text(spec))) return 1;
    return 0;
  } catch (const attnjit::Error& e) {
    std::fprintf(stderr, "attnjit_params_header: %s\n", e.what());
    return 1;
  }
}

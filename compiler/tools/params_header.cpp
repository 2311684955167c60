// attnjit_params_header SPEC OUT: writes the kernel-parameter struct of an
// embedded spec (kernel_params.h) for the host side of the build, from the
// same function that hands it to NVRTC. The file is rewritten only when
// its text changes, so an unrelated spec edit rebuilds nothing.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "attnjit/error.h"
#include "attnjit/kernel_params.h"
#include "attnjit/spec.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: attnjit_params_header EMBEDDED_SPEC OUT_FILE\n");
    return 2;
  }
  try {
    const std::string text = attnjit::params_header_text(attnjit::load_embedded_spec(argv[1]));
    std::ifstream in(argv[2], std::ios::binary);
    std::stringstream current;
    current << in.rdbuf();
    if (in && current.str() == text) return 0;
    std::ofstream out(argv[2], std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) {
      std::fprintf(stderr, "attnjit_params_header: cannot write %s\n", argv[2]);
      return 1;
    }
    return 0;
  } catch (const attnjit::Error& e) {
    std::fprintf(stderr, "attnjit_params_header: %s\n", e.what());
    return 1;
  }
}

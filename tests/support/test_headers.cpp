// Gives the compiler templates/testing/ in every test binary: embedded by
// tests/CMakeLists.txt, registered before main() so that the first use of
// the embedded headers (a spec parse, a compile) already sees them.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attnjit/embedded.h"

namespace attnjit::embedded {
const std::vector<std::pair<const char*, std::string_view>>& test_templates();
}  // namespace attnjit::embedded

namespace {

const bool registered = [] {
  std::vector<attnjit::EmbeddedHeader> headers;
  for (const auto& [path, bytes] : attnjit::embedded::test_templates()) {
    headers.push_back(attnjit::EmbeddedHeader{path, std::string(bytes)});
  }
  attnjit::register_embedded_headers(std::move(headers));
  return true;
}();

}  // namespace

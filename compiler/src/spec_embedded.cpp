// Specs compiled into the library (specs/*.yaml, see cmake/AttnjitEmbed.cmake),
// each with its pack (spec_pack.h).
#include <string_view>
#include <utility>
#include <vector>

#include "attnjit/error.h"
#include "attnjit/spec.h"
#include "names.h"
#include "spec_pack.h"

namespace attnjit {
namespace embedded {
const std::vector<std::pair<const char*, std::string_view>>& specs();
// "<name>.pack" for each spec "<name>.yaml", and the templates' digest
// (compiler/CMakeLists.txt); none in attnjit_pack_specs, which makes them.
const std::vector<std::pair<const char*, std::string_view>>& packs();
}  // namespace embedded

namespace {

constexpr std::string_view kSpecSuffix = ".yaml";
constexpr std::string_view kPackSuffix = ".pack";

struct EmbeddedSpec {
  std::string name;  // the file name without .yaml
  std::string text;
  std::string_view pack;  // empty: none
};

// `path` without `suffix` (`path` itself when it has none).
std::string without_suffix(std::string path, std::string_view suffix) {
  if (path.size() > suffix.size() &&
      path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0) {
    path.resize(path.size() - suffix.size());
  }
  return path;
}

// Built once.
const std::vector<EmbeddedSpec>& spec_table() {
  static const std::vector<EmbeddedSpec> table = [] {
    std::vector<EmbeddedSpec> result;
    for (const auto& [path, bytes] : embedded::specs()) {
      result.push_back(EmbeddedSpec{without_suffix(path, kSpecSuffix), std::string(bytes), {}});
    }
    for (const auto& [path, bytes] : embedded::packs()) {
      const std::string name = without_suffix(path, kPackSuffix);
      for (EmbeddedSpec& spec : result) {
        if (spec.name == name) spec.pack = bytes;
      }
    }
    return result;
  }();
  return table;
}

const EmbeddedSpec* find_spec(const std::string& name) {
  for (const EmbeddedSpec& spec : spec_table()) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> embedded_spec_names() {
  std::vector<std::string> names;
  for (const EmbeddedSpec& spec : spec_table()) names.push_back(spec.name);
  return names;
}

const std::string* find_embedded_spec(const std::string& name) {
  const EmbeddedSpec* spec = find_spec(name);
  return spec == nullptr ? nullptr : &spec->text;
}

std::string_view detail::embedded_spec_pack(const std::string& name) {
  const EmbeddedSpec* spec = find_spec(name);
  return spec == nullptr ? std::string_view() : spec->pack;
}

Spec load_embedded_spec(const std::string& name) {
  const EmbeddedSpec* spec = find_spec(name);
  if (spec == nullptr) {
    throw Error(ErrorKind::kSpec, "unknown embedded spec " + detail::quoted(name) + " (known: " +
                                      detail::join(embedded_spec_names(), ", ") + ")");
  }
  if (!spec->pack.empty()) return detail::unpack_spec(spec->pack);
  return parse_spec(spec->text, "specs/" + name + std::string(kSpecSuffix));
}

}  // namespace attnjit

// Specs compiled into the library (specs/*.yaml, see cmake/AttnjitEmbed.cmake).
#include <string_view>
#include <utility>
#include <vector>

#include "attnjit/error.h"
#include "attnjit/spec.h"
#include "names.h"

namespace attnjit {
namespace embedded {
const std::vector<std::pair<const char*, std::string_view>>& specs();
}  // namespace embedded

namespace {

constexpr std::string_view kSpecSuffix = ".yaml";

// name without .yaml -> text, built once.
const std::vector<std::pair<std::string, std::string>>& spec_table() {
  static const std::vector<std::pair<std::string, std::string>> table = [] {
    std::vector<std::pair<std::string, std::string>> result;
    for (const auto& [path, bytes] : embedded::specs()) {
      std::string name = path;
      if (name.size() > kSpecSuffix.size() &&
          name.compare(name.size() - kSpecSuffix.size(), kSpecSuffix.size(), kSpecSuffix) == 0) {
        name.resize(name.size() - kSpecSuffix.size());
      }
      result.emplace_back(std::move(name), std::string(bytes));
    }
    return result;
  }();
  return table;
}

}  // namespace

std::vector<std::string> embedded_spec_names() {
  std::vector<std::string> names;
  for (const auto& entry : spec_table()) names.push_back(entry.first);
  return names;
}

const std::string* find_embedded_spec(const std::string& name) {
  for (const auto& entry : spec_table()) {
    if (entry.first == name) return &entry.second;
  }
  return nullptr;
}

Spec load_embedded_spec(const std::string& name) {
  const std::string* text = find_embedded_spec(name);
  if (text == nullptr) {
    throw Error(ErrorKind::kSpec, "unknown embedded spec " + detail::quoted(name) + " (known: " +
                                      detail::join(embedded_spec_names(), ", ") + ")");
  }
  return parse_spec(*text, "specs/" + name + std::string(kSpecSuffix));
}

}  // namespace attnjit

#include "attnjit/env.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <utility>

#include "attnjit/error.h"
#include "names.h"

namespace attnjit {

std::string env_text(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

bool env_bool(const char* name, bool default_value) {
  const std::string value = env_text(name);
  if (value.empty()) return default_value;
  std::string lower = value;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static const std::pair<const char*, bool> kSpellings[] = {
      {"1", true},  {"true", true},   {"yes", true}, {"on", true},
      {"0", false}, {"false", false}, {"no", false}, {"off", false},
  };
  for (const auto& [spelling, meaning] : kSpellings) {
    if (lower == spelling) return meaning;
  }
  throw Error(ErrorKind::kFlags,
              std::string(name) + "=" + detail::quoted(value) +
                  " is not a boolean (accepted: 1/0, true/false, yes/no, on/off in any case; "
                  "empty or unset: " +
                  (default_value ? "true" : "false") + ")");
}

}  // namespace attnjit

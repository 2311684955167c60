#include <filesystem>
#include <system_error>

#include "attnjit/attention.h"
#include "attnjit/driver.h"
#include "attnjit/error.h"
#include "commands.h"

namespace attnjit::cli {

Spec load_spec_argument(const std::string& name_or_path) {
  if (find_embedded_spec(name_or_path) != nullptr) {
    return load_embedded_spec(name_or_path);
  }
  std::error_code ec;
  if (!std::filesystem::exists(name_or_path, ec)) {
    std::string names;
    for (const auto& n : embedded_spec_names()) names += (names.empty() ? "" : ", ") + n;
    throw Error(ErrorKind::kSpec, "spec file '" + name_or_path +
                                      "' does not exist, and no embedded spec has that name "
                                      "(embedded: " + names + ")");
  }
  // Directories, devices and files too large for a spec are reported there.
  return load_spec_file(name_or_path);
}

std::vector<Target> targets_or_default(const std::vector<std::string>& names, bool* from_gpu) {
  if (from_gpu) *from_gpu = false;
  std::vector<Target> targets;
  for (const auto& n : names) targets.push_back(parse_target(n));
  if (!targets.empty()) return targets;
  if (Driver::available()) {
    if (from_gpu) *from_gpu = true;
    return {current_device_target()};
  }
  return {parse_target("sm_80"), parse_target("sm_90a")};
}

}  // namespace attnjit::cli

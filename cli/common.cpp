#include <exception>
#include <filesystem>
#include <map>
#include <string>
#include <system_error>

#include "attnjit/attention.h"
#include "attnjit/driver.h"
#include "attnjit/error.h"
#include "commands.h"
#include "names.h"

namespace attnjit::cli {

Signature deployment_signature(const Spec& spec, const FlagSet& flags, const Target& target,
                               const std::map<std::string, int64_t>& overrides) {
  static const std::map<std::string, int64_t> none;
  const bool given = !overrides.empty();
  const std::map<std::string, int64_t>* values = &overrides;
  if (!given) values = spec.family == attention_spec().family ? &env_tuning_for(flags) : &none;
  Signature sig = make_signature(spec, flags, CompileOptions::from_environment(target), *values);
  const std::string generic = "the overrides ";
  if (!values->empty() && sig.tuning_from.rfind(generic, 0) == 0) {
    sig.tuning_from = (given ? "--tuning " : "ATTNJIT_TUNING's ") +
                      sig.tuning_from.substr(generic.size());
  }
  return sig;
}

Spec load_spec_argument(const std::string& name_or_path) {
  if (find_embedded_spec(name_or_path) != nullptr) {
    return load_embedded_spec(name_or_path);
  }
  std::error_code ec;
  if (!std::filesystem::exists(name_or_path, ec)) {
    const std::vector<std::string> names = embedded_spec_names();
    throw Error(ErrorKind::kSpec, "spec file '" + name_or_path +
                                      "' does not exist, and no embedded spec has that name" +
                                      detail::did_you_mean(name_or_path, names) +
                                      " (embedded: " + detail::join(names, ", ") + ")");
  }
  // Directories, devices and files too large for a spec are reported there.
  return load_spec_file(name_or_path);
}

CLI::Validator one_of(std::vector<std::string> names) {
  const std::string listed = detail::join(names, ", ");
  return CLI::Validator(
      [names, listed](std::string& value) -> std::string {
        for (const std::string& n : names) {
          if (n == value) return "";
        }
        return detail::quoted(value) + " is not one of " + listed +
               detail::did_you_mean(value, names);
      },
      "{" + detail::join(names, ",") + "}", "one_of");
}

CLI::Validator non_empty() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        return value.empty() ? "is empty (leave the option out for its default)" : "";
      },
      "", "non_empty");
}

CLI::Validator job_count() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        long long n = 0;
        size_t used = 0;
        try {
          n = std::stoll(value, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != value.size()) {
          return detail::quoted(value) + " is not a whole number of parallel compiles";
        }
        if (n < 0 || n > 4096) {
          return detail::quoted(value) +
                 ": give 1 to 4096 parallel compiles, or 0 for one per core";
        }
        return "";
      },
      "N>=0", "job_count");
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

// libFuzzer target: parse_spec() over arbitrary YAML text.
//
// A finding is: a crash or sanitizer report, an exception other than
// attnjit::Error(kSpec) out of parse_spec, an error message that is not one
// positioned line, or an accepted spec whose generated source breaks
// generated_source_problem() or whose flags do not survive a round trip
// through parse_flag_assignments().
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "attnjit/codegen.h"
#include "attnjit/error.h"
#include "attnjit/signature.h"
#include "attnjit/spec.h"
#include "fuzz/generated_source_check.h"

namespace {

using namespace attnjit;

// Variants generated per accepted input: enough to reach every section of
// the generator, few enough to keep thousands of inputs a second.
constexpr int kMaxVariants = 12;
constexpr double kMaxMatrixProduct = 256;

[[noreturn]] void finding(const std::string& what, const std::string& detail) {
  std::fprintf(stderr, "attnjit fuzz finding: %s\n%s\n", what.c_str(), detail.c_str());
  std::abort();
}

bool single_line(const std::string& message) {
  return message.find('\n') == std::string::npos && message.find('\r') == std::string::npos;
}

// yaml-cpp's own messages are escaped too (SpecReader::load), so every spec
// error is one line.
bool single_line_spec_error(const std::string& message) { return single_line(message); }

std::string assignments_text(const FlagSet& flags) {
  std::string text;
  for (const auto& [name, value] : flags.values) {
    if (!text.empty()) text += ",";
    text += name + "=" + to_string(value);
  }
  return text;
}

void exercise_variant(const Spec& spec, const FlagSet& flags) {
  // The flags round-trip through their command-line form.
  const std::map<std::string, FlagValue> parsed =
      parse_flag_assignments(spec, assignments_text(flags));
  for (const auto& [name, value] : flags.values) {
    const auto it = parsed.find(name);
    if (it == parsed.end() || it->second != value) {
      finding("flag round trip", assignments_text(flags));
    }
  }
  for (const Target& target : supported_targets()) {
    CompileOptions options;
    options.target = target;
    Signature signature;
    try {
      signature = make_signature(spec, flags, options);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kFlags) finding("make_signature threw non-kFlags", e.what());
      continue;  // no tuning rule for this target
    }
    if (signature.display_name().find_first_of("/\\ \n") != std::string::npos) {
      finding("display name is not file-name safe", signature.display_name());
    }
    GeneratedSource source;
    try {
      source = generate_source(spec, signature);
    } catch (const Error& e) {
      // parse_spec leaves templates of folders this build does not embed
      // to the generator; nothing else may fail here.
      const std::string message = e.what();
      if (e.kind() != ErrorKind::kCodegen || message.find("is not embedded") == std::string::npos) {
        finding("generate_source rejected an accepted spec", message);
      }
      return;
    }
    if (auto problem = testing::generated_source_problem(spec, source)) {
      finding("generated source: " + *problem, source.text);
    }
  }
}

double matrix_product(const Spec& spec) {
  double total = 0;
  for (const MatrixEntry& entry : spec.matrix) {
    double product = 1;
    for (const auto& axis : entry.axes) product *= double(axis.second.size());
    total += product;
  }
  return total;
}

void exercise_spec(const Spec& spec) {
  int variants = 0;
  auto try_variant = [&](auto&& resolve) {
    if (variants >= kMaxVariants) return;
    try {
      const FlagSet flags = resolve();
      ++variants;
      exercise_variant(spec, flags);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kFlags) finding("resolve threw non-kFlags", e.what());
      if (!single_line(e.what())) finding("multi-line flags error", e.what());
    }
  };
  try_variant([&] { return resolve_flags(spec, {}); });
  for (const Preset& preset : spec.presets) {
    try_variant([&] { return resolve_preset(spec, preset.name); });
  }
  if (matrix_product(spec) <= kMaxMatrixProduct) {
    const MatrixExpansion expansion = expand_matrix(spec);
    for (const FlagSet& flags : expansion.variants) try_variant([&] { return flags; });
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Spec spec;
  try {
    spec = parse_spec(text, "fuzz.yaml");
  } catch (const Error& e) {
    const std::string message = e.what();
    if (e.kind() != ErrorKind::kSpec) finding("parse_spec threw non-kSpec", message);
    if (message.rfind("fuzz.yaml:", 0) != 0) finding("unpositioned spec error", message);
    if (!single_line_spec_error(message)) finding("multi-line spec error", message);
    return 0;
  }
  exercise_spec(spec);
  return 0;
}

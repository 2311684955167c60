// libFuzzer target: parse_flag_assignments() over arbitrary text, typed by
// the embedded attention spec or the axpy test family (the input's first
// byte picks one).
//
// A finding is: a crash or sanitizer report, an exception other than
// attnjit::Error(kFlags), a message that spans lines or carries raw control
// bytes, an accepted value outside its flag's domain, an accepted map that
// does not survive a round trip, or generated source that breaks
// generated_source_problem().
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "attnjit/codegen.h"
#include "attnjit/error.h"
#include "attnjit/signature.h"
#include "attnjit/spec.h"
#include "fuzz/generated_source_check.h"

namespace {

using namespace attnjit;

[[noreturn]] void finding(const std::string& what, const std::string& detail) {
  std::fprintf(stderr, "attnjit fuzz finding: %s\n%s\n", what.c_str(), detail.c_str());
  std::abort();
}

const std::vector<Spec>& specs() {
  static const std::vector<Spec> loaded = [] {
    std::ifstream file(ATTNJIT_SOURCE_DIR "/tests/compiler/data/axpy.yaml", std::ios::binary);
    std::ostringstream axpy;
    axpy << file.rdbuf();
    return std::vector<Spec>{load_embedded_spec("attention"), parse_spec(axpy.str(), "axpy.yaml")};
  }();
  return loaded;
}

void check_message(const Error& e, ErrorKind expected) {
  const std::string message = e.what();
  if (e.kind() != expected) finding("unexpected error kind", message);
  for (char c : message) {
    if (static_cast<unsigned char>(c) < 0x20) finding("raw control byte in a message", message);
  }
}

std::string assignments_text(const std::map<std::string, FlagValue>& flags) {
  std::string text;
  for (const auto& [name, value] : flags) {
    if (!text.empty()) text += ",";
    text += name + "=" + to_string(value);
  }
  return text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Spec& spec = specs()[data[0] % specs().size()];
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::map<std::string, FlagValue> given;
  try {
    given = parse_flag_assignments(spec, text);
  } catch (const Error& e) {
    check_message(e, ErrorKind::kFlags);
    return 0;
  }
  for (const auto& [name, value] : given) {
    const FlagDecl* decl = spec.find_flag(name);
    if (decl == nullptr || !decl->accepts(value)) finding("accepted an undeclared value", text);
  }
  if (parse_flag_assignments(spec, assignments_text(given)) != given) {
    finding("round trip", text);
  }
  FlagSet flags;
  try {
    flags = resolve_flags(spec, given);
  } catch (const Error& e) {
    check_message(e, ErrorKind::kFlags);
    return 0;
  }
  CompileOptions options;
  options.target = parse_target("sm_90a");
  const Signature signature = make_signature(spec, flags, options);
  const GeneratedSource source = generate_source(spec, signature);
  if (auto problem = testing::generated_source_problem(spec, source)) {
    finding("generated source: " + *problem, source.text);
  }
  return 0;
}

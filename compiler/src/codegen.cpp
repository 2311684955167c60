// generate_source(): the few lines that pin one variant's flags and
// instantiate its entry point. Every value is printed by the generator from
// typed data; the only spec text that reaches the output is identifiers
// checked here once more (a Spec can also be built without parse_spec).
#include "attnjit/codegen.h"

#include <fmt/format.h>

#include <optional>

#include "attnjit/embedded.h"
#include "attnjit/error.h"
#include "attnjit/expr.h"
#include "attnjit/kernel_params.h"
#include "names.h"

namespace attnjit {
namespace {

[[noreturn]] void codegen_error(const SourceLocation& at, const std::string& message) {
  const std::string where = at.str();
  throw Error(ErrorKind::kCodegen, where.empty() ? message : where + ": " + message);
}

void check_identifier(const Spec& spec, const std::string& name, const char* what,
                      const SourceLocation& at) {
  if (auto problem = detail::identifier_problem(name)) {
    codegen_error(at.file.empty() ? SourceLocation{spec.source_name} : at,
                  std::string(what) + " " + detail::quoted(name) + " " + *problem);
  }
}

void check_spec_names(const Spec& spec) {
  const SourceLocation here{spec.source_name};
  check_identifier(spec, spec.family, "family", here);
  check_identifier(spec, spec.entry, "entry", here);
  for (const FlagDecl& decl : spec.flags) {
    check_identifier(spec, decl.name, "flag name", decl.loc);
    for (const std::string& value : decl.enum_values) {
      check_identifier(spec, value, "flag value", decl.loc);
    }
  }
  for (const std::string& param : spec.tuning.params) {
    check_identifier(spec, param, "tuning param name", here);
  }
  for (const ArgDecl& arg : spec.args) {
    // A hidden divisor field: the generator's prefix on a checked arg name.
    check_identifier(spec, arg.divisor_of.empty() ? arg.name : arg.divisor_of, "arg name",
                     arg.loc);
    if (arg.type == ArgType::kConstElemPtr || arg.type == ArgType::kElemPtr) {
      const FlagDecl* decl = spec.find_flag(arg.elem_flag);
      if (decl == nullptr || decl->type != FlagType::kType) {
        codegen_error(arg.loc, "arg " + detail::quoted(arg.name) + ": " +
                                   detail::quoted(arg.elem_flag) + " is not a type flag");
      }
    }
  }
}

void check_template(const Spec& spec) {
  if (auto problem = detail::template_path_problem(spec.template_path)) {
    codegen_error(spec.template_loc,
                  "template path " + detail::quoted(spec.template_path) + " " + *problem);
  }
  if (find_embedded_header(spec.template_path) != nullptr) return;
  std::vector<std::string> paths;
  for (const EmbeddedHeader& header : embedded_headers()) paths.push_back(header.path);
  codegen_error(spec.template_loc, "template " + detail::quoted(spec.template_path) +
                                       " is not embedded" +
                                       detail::did_you_mean(spec.template_path, paths));
}

void check_signature(const Spec& spec, const Signature& signature) {
  bool matches = signature.family == spec.family && signature.entry == spec.entry &&
                 signature.flags.values.size() == spec.flags.size();
  for (std::size_t i = 0; matches && i < spec.flags.size(); ++i) {
    matches = signature.flags.values[i].first == spec.flags[i].name &&
              spec.flags[i].accepts(signature.flags.values[i].second);
  }
  matches = matches && signature.tuning.size() == spec.tuning.params.size();
  for (std::size_t i = 0; matches && i < signature.tuning.size(); ++i) {
    matches = signature.tuning[i].first == spec.tuning.params[i];
  }
  if (!matches) {
    throw Error(ErrorKind::kCodegen, "signature " + detail::quoted(signature.canonical()) +
                                         " was not made from spec " + detail::quoted(spec.family) +
                                         "; build it with make_signature()");
  }
}

// The config's `using user` must not meet a flag or tuning param of that name
// (parse_spec rejects them too; a Spec can be built without it).
void check_user_member(const Spec& spec) {
  for (const FlagDecl& decl : spec.flags) {
    if (decl.name == "user") {
      codegen_error(decl.loc, "flag name 'user' is taken by the config of a spec with mask or score");
    }
  }
  for (const std::string& param : spec.tuning.params) {
    if (param == "user") {
      codegen_error(SourceLocation{spec.source_name},
                    "tuning param 'user' is taken by the config of a spec with mask or score");
    }
  }
}

std::string config_member(const FlagDecl& decl, const FlagValue& value) {
  switch (decl.type) {
    case FlagType::kBool:
      return fmt::format("  static constexpr bool {} = {};\n", decl.name,
                         std::get<bool>(value) ? "true" : "false");
    case FlagType::kInt:
      return fmt::format("  static constexpr int {} = {};\n", decl.name, std::get<int64_t>(value));
    case FlagType::kType:
      return fmt::format("  using {} = ::attnjit::types::{};\n", decl.name,
                         std::get<std::string>(value));
    case FlagType::kEnum: {
      std::vector<std::string> members;
      for (std::size_t i = 0; i < decl.enum_values.size(); ++i) {
        members.push_back(fmt::format("{} = {}", decl.enum_values[i], i));
      }
      return fmt::format(
          "  enum class {0}_t : int {{ {1} }};\n  static constexpr {0}_t {0} = {0}_t::{2};\n",
          decl.name, detail::join(members, ", "), std::get<std::string>(value));
    }
  }
  return "";
}

// The params struct's template arguments: the config's type flags.
std::string params_type(const Spec& spec) {
  std::vector<std::string> args;
  for (const std::string& flag : params_type_flags(spec)) args.push_back("attnjit_config::" + flag);
  const std::string name = "::attnjit::" + params_struct_name(spec);
  return args.empty() ? name : name + "<" + detail::join(args, ", ") + ">";
}

// The kernel takes the generated struct as its one parameter.
std::string entry_point(const Spec& spec) {
  return fmt::format(
      "extern \"C\" __global__ void __launch_bounds__(attnjit_traits::threads, "
      "attnjit_traits::min_blocks) {0}(\n"
      "    const __grid_constant__ {1} params) {{\n"
      "  ::attnjit::{0}_body<attnjit_config>(params);\n"
      "}}\n",
      spec.entry, params_type(spec));
}

}  // namespace

GeneratedSource generate_source(const Spec& spec, const Signature& signature) {
  check_spec_names(spec);
  check_template(spec);
  check_signature(spec, signature);
  std::string config;
  for (std::size_t i = 0; i < spec.flags.size(); ++i) {
    config += config_member(spec.flags[i], signature.flags.values[i].second);
  }
  for (const auto& [param, value] : signature.tuning) {
    config += fmt::format("  static constexpr int {} = {};\n", param, value);
  }
  // The spec's expressions (docs/expressions.md): only a spec that has one
  // gets the include, the struct and the config's `user`, so the units of
  // every other spec are unchanged.
  std::string user_include, user;
  if (spec.expression_vm) {
    user_include = fmt::format("#include \"{}\"\n", kUserVmHeader);
    user = emit_vm_user_struct() + "\n";
    config += "  using user = attnjit_user;\n";
  } else if (spec.mask || spec.score) {
    check_user_member(spec);
    user_include = fmt::format("#include \"{}\"\n", kUserExprHeader);
    // (Row bounds on sm_90a only: on the mma.sync targets, where a thread
    // holds more rows, their row values spilled at 255 registers.)
    user = emit_user_struct(spec.mask ? &*spec.mask : nullptr,
                            spec.score ? &*spec.score : nullptr,
                            signature.options.target.arch_specific) +
           "\n";
    config += "  using user = attnjit_user;\n";
  }
  std::string text = fmt::format(
      "// Generated by attnjit; do not edit.\n"
      "// {0}\n"
      "#include \"{4}\"\n"
      "#include \"{1}\"\n"
      "{5}"
      "\n"
      "{6}"
      "struct attnjit_config {{\n"
      "{2}"
      "}};\n"
      "\n"
      "using attnjit_traits = ::attnjit::{3}_traits<attnjit_config>;\n"
      "static_assert(attnjit_traits::threads > 0 && attnjit_traits::threads <= 1024,\n"
      "              \"{3}_traits: threads must be in [1, 1024]\");\n"
      "\n"
      "// Read by the runtime: threads, dynamic shared memory bytes, min blocks per SM.\n"
      "extern \"C\" __device__ const unsigned {3}_launch_info[4] = {{\n"
      "    attnjit_traits::threads, attnjit_traits::smem_bytes, attnjit_traits::min_blocks, 0}};\n"
      "\n",
      signature.canonical(), spec.template_path, config, spec.entry, params_header_name(spec),
      user_include, user);
  text += entry_point(spec);
  return GeneratedSource{signature.display_name() + ".cu",
                         std::move(text),
                         spec.entry,
                         {GeneratedHeader{params_header_name(spec), params_header_text(spec)}},
                         signature.tuning_from};
}

std::string GeneratedSource::key_text() const {
  std::string out = std::to_string(text.size()) + ":" + text;
  for (const GeneratedHeader& header : headers) {
    out += "," + std::to_string(header.path.size()) + ":" + header.path + "," +
           std::to_string(header.contents.size()) + ":" + header.contents;
  }
  return out;
}

}  // namespace attnjit

// parse_spec(): the top level of a spec, its flags and its args.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include <sys/stat.h>

#include "attnjit/embedded.h"
#include "attnjit/error.h"
#include "attnjit/spec.h"
#include "flag_values.h"
#include "names.h"
#include "spec_sections.h"

namespace attnjit {
namespace detail {
namespace {

const std::vector<std::string> kTopLevelKeys = {
    "family", "description", "extends", "template", "entry", "flags", "constraints",
    "tuning", "args",        "presets", "matrix",   "mask",  "score", "tune_as"};
const std::vector<std::string> kFlagKeys = {"type", "values",   "default",
                                            "doc",  "requires", "excludes"};
const std::vector<std::string> kArgKeys = {"name", "type", "doc", "noalias", "per", "size",
                                           "sorted"};
const std::vector<std::string> kFlagTypes = {"bool", "int", "enum", "type"};
// Flag names the format itself uses: "const int32*" must stay unambiguous
// and a preset's `doc` is its description.
const std::vector<std::string> kReservedFlagNames = {"int32", "int64", "doc"};

// The requires/excludes sugar of one flag, resolved once all flags are known.
struct PendingSugar {
  std::string flag;
  std::optional<MapEntry> requires_entry;
  std::optional<MapEntry> excludes_entry;
};

FlagType parse_flag_type(const SpecReader& reader, const YAML::Node& node,
                         const std::string& flag) {
  const std::string text = reader.text(node, "flag " + quoted(flag) + ": type");
  if (text == "bool") return FlagType::kBool;
  if (text == "int") return FlagType::kInt;
  if (text == "enum") return FlagType::kEnum;
  if (text == "type") return FlagType::kType;
  reader.fail(node, "flag " + quoted(flag) + ": unknown type " + quoted(text) +
                        " (expected bool, int, enum or type)" + did_you_mean(text, kFlagTypes));
}

void parse_domain(const SpecReader& reader, FlagDecl& decl, const YAML::Node& flag_node,
                  const MapEntry* values) {
  const std::string what = "flag " + quoted(decl.name);
  if (decl.type == FlagType::kBool) {
    if (values != nullptr) reader.fail(values->key_node, what + " is a bool and takes no values");
    return;
  }
  if (values == nullptr) {
    reader.fail(flag_node, what + " of type " + to_string(decl.type) + " needs values");
  }
  const std::vector<YAML::Node> items = reader.items(values->value, what + ": values");
  if (items.empty()) reader.fail(values->value, what + " needs at least one value");
  for (const YAML::Node& item : items) {
    if (decl.type == FlagType::kInt) {
      const int64_t value = reader.integer(item, what + ": value");
      if (std::count(decl.int_values.begin(), decl.int_values.end(), value) > 0) {
        reader.fail(item, what + " lists " + std::to_string(value) + " twice");
      }
      decl.int_values.push_back(value);
      continue;
    }
    const std::string name =
        reader.identifier(item, decl.type == FlagType::kEnum ? "enum value" : "type value");
    if (std::count(decl.enum_values.begin(), decl.enum_values.end(), name) > 0) {
      reader.fail(item, what + " lists " + quoted(name) + " twice");
    }
    decl.enum_values.push_back(name);
  }
}

FlagDecl parse_flag(const SpecReader& reader, const MapEntry& flag_entry,
                    std::vector<PendingSugar>& pending) {
  FlagDecl decl;
  decl.name = flag_entry.key;
  decl.loc = reader.location(flag_entry.key_node);
  const std::string what = "flag " + quoted(decl.name);
  if (std::count(kReservedFlagNames.begin(), kReservedFlagNames.end(), decl.name) > 0) {
    reader.fail(flag_entry.key_node,
                "flag name " + quoted(decl.name) + " is reserved by the spec format");
  }
  const YAML::Node& node = flag_entry.value;
  const std::vector<MapEntry> entries = reader.entries(node, what, kFlagKeys);
  decl.type =
      parse_flag_type(reader, reader.required(entries, node, "type", what).value, decl.name);
  parse_domain(reader, decl, node, find_entry(entries, "values"));
  if (const MapEntry* entry = find_entry(entries, "default")) {
    decl.default_value = flag_value(reader, decl, entry->value);
  }
  if (const MapEntry* entry = find_entry(entries, "doc")) {
    decl.doc = reader.text(entry->value, what + ": doc");
  }
  PendingSugar sugar{decl.name, std::nullopt, std::nullopt};
  if (const MapEntry* entry = find_entry(entries, "requires")) sugar.requires_entry = *entry;
  if (const MapEntry* entry = find_entry(entries, "excludes")) sugar.excludes_entry = *entry;
  if (sugar.requires_entry || sugar.excludes_entry) pending.push_back(std::move(sugar));
  return decl;
}

// requires: [a, b] on flag f is {if: {f: true}, require: {a: true, b: true}};
// excludes: [a] is {if: {f: true}, forbid: {a: true}}.
Constraint sugar_constraint(const SpecReader& reader, const std::vector<FlagDecl>& flags,
                            const std::string& flag, const MapEntry& entry) {
  const bool is_requires = entry.key == "requires";
  const std::string what = "flag " + quoted(flag) + ": " + entry.key;
  std::vector<std::string> names;
  for (const FlagDecl& decl : flags) names.push_back(decl.name);
  const auto find = [&](const std::string& name) -> const FlagDecl* {
    const auto it = std::find(names.begin(), names.end(), name);
    return it == names.end() ? nullptr : &flags[static_cast<std::size_t>(it - names.begin())];
  };
  if (find(flag)->type != FlagType::kBool) {
    reader.fail(entry.key_node, what + " needs a bool flag; write a constraint instead");
  }
  Constraint constraint;
  constraint.when[flag] = true;
  constraint.loc = reader.location(entry.key_node);
  for (const YAML::Node& item : reader.items_or_scalar(entry.value, what)) {
    const std::string name = reader.text(item, what);
    const FlagDecl* other = find(name);
    if (other == nullptr) {
      reader.fail(item, "unknown flag " + quoted(name) + " in " + what + did_you_mean(name, names));
    }
    if (other->type != FlagType::kBool) {
      reader.fail(item,
                  what + ": " + quoted(name) + " is not a bool flag; write a constraint instead");
    }
    if (name == flag) reader.fail(item, what + " names the flag itself");
    (is_requires ? constraint.require : constraint.forbid)[name] = true;
  }
  return constraint;
}

void check_enum_type_names(const SpecReader& reader, const std::vector<FlagDecl>& flags,
                           const std::vector<MapEntry>& entries) {
  for (const FlagDecl& decl : flags) {
    if (decl.type != FlagType::kEnum) continue;
    const std::string enum_type = decl.name + "_t";
    if (const MapEntry* clash = find_entry(entries, enum_type)) {
      reader.fail(clash->key_node, "flag name " + quoted(enum_type) +
                                       " collides with the enum type of flag " + quoted(decl.name));
    }
  }
}

// The arg types a spec spells out in full.
const std::vector<std::pair<std::string, ArgType>> kFixedArgTypes = {
    {"const float*", ArgType::kConstF32Ptr},
    {"float*", ArgType::kF32Ptr},
    {"const int32*", ArgType::kConstI32Ptr},
    {"int32*", ArgType::kI32Ptr},
    {"int32", ArgType::kI32},
    {"int64", ArgType::kI64},
    {"float", ArgType::kF32},
    {"tensor_map", ArgType::kTensorMap}};

ArgDecl parse_arg_type(const SpecReader& reader, const Spec& spec, const YAML::Node& node,
                       ArgDecl arg) {
  const std::string text = reader.text(node, "arg " + quoted(arg.name) + ": type");
  for (const auto& [spelling, type] : kFixedArgTypes) {
    if (text == spelling) {
      arg.type = type;
      return arg;
    }
  }
  const bool is_const = text.rfind("const ", 0) == 0;
  const std::string pointee = text.substr(is_const ? 6 : 0);
  if (pointee.size() > 1 && pointee.back() == '*' &&
      !identifier_problem(pointee.substr(0, pointee.size() - 1))) {
    arg.elem_flag = pointee.substr(0, pointee.size() - 1);
    const FlagDecl* decl = spec.find_flag(arg.elem_flag);
    if (decl == nullptr || decl->type != FlagType::kType) {
      std::vector<std::string> type_flags;
      for (const FlagDecl& flag : spec.flags) {
        if (flag.type == FlagType::kType) type_flags.push_back(flag.name);
      }
      reader.fail(node, "arg " + quoted(arg.name) + ": " + quoted(arg.elem_flag) +
                            " is not a type flag" + did_you_mean(arg.elem_flag, type_flags));
    }
    arg.type = is_const ? ArgType::kConstElemPtr : ArgType::kElemPtr;
    return arg;
  }
  reader.fail(node, "arg " + quoted(arg.name) + ": unknown arg type " + quoted(text) +
                        " (expected const <type flag>*, <type flag>*, const float*, float*, "
                        "const int32*, int32*, int32, int64, float or tensor_map)");
}

bool is_pointer(ArgType type) {
  return type != ArgType::kI32 && type != ArgType::kI64 && type != ArgType::kF32 &&
         type != ArgType::kTensorMap;
}

// `sorted: true` of an expression tensor: int32, over a domain with an
// order (not per: sequence, whose only index is b).
void parse_sorted(const SpecReader& reader, const MapEntry& sorted, ArgDecl& arg) {
  const std::string what = "arg " + quoted(arg.name);
  arg.sorted = reader.boolean(sorted.value, what + ": sorted");
  if (!arg.sorted) return;
  if (!arg.per) {
    reader.fail(sorted.key_node, what + ": sorted applies only to an expression tensor (with per)");
  }
  if (arg.type != ArgType::kConstI32Ptr) {
    reader.fail(sorted.key_node, what + ": sorted applies only to \"const int32*\" tensors (a "
                                        "float's value is not used by tile classification)");
  }
  if (*arg.per == TensorDomain::kSequence) {
    reader.fail(sorted.key_node, what + ": sorted does not apply to per: sequence (its only "
                                        "index is b)");
  }
}

// `per`, `size` and `sorted` of an expression tensor (docs/expressions.md
// "Tensors").
void parse_tensor_keys(const SpecReader& reader, const std::vector<MapEntry>& entries,
                       ArgDecl& arg) {
  const std::string what = "arg " + quoted(arg.name);
  const MapEntry* per = find_entry(entries, "per");
  const MapEntry* size = find_entry(entries, "size");
  const MapEntry* sorted = find_entry(entries, "sorted");
  if (per == nullptr) {
    if (size != nullptr) reader.fail(size->key_node, what + ": size applies only with per: table");
    if (sorted != nullptr) parse_sorted(reader, *sorted, arg);
    return;
  }
  if (arg.type != ArgType::kConstI32Ptr && arg.type != ArgType::kConstF32Ptr) {
    reader.fail(per->key_node,
                what + ": per makes an expression tensor, which must be \"const int32*\" or "
                       "\"const float*\"");
  }
  static const std::vector<std::string> kDomains = {"key_token", "query_token", "sequence",
                                                    "head",      "kv_head",     "table"};
  const std::string domain = reader.text(per->value, what + ": per");
  TensorDomain parsed{};
  if (!parse_tensor_domain(domain, parsed)) {
    reader.fail(per->value, what + ": unknown per " + quoted(domain) + " (expected " +
                                join(kDomains, ", ") + ")" + did_you_mean(domain, kDomains));
  }
  arg.per = parsed;
  if (sorted != nullptr) parse_sorted(reader, *sorted, arg);
  if (parsed != TensorDomain::kTable) {
    if (size != nullptr) reader.fail(size->key_node, what + ": size applies only with per: table");
    return;
  }
  if (size == nullptr) {
    reader.fail(per->value, what + ": per: table needs size (a number of elements, or the name "
                                   "of an int32 arg that holds it)");
  }
  if (is_plain_scalar(size->value) && !size->value.Scalar().empty() &&
      (std::isdigit(static_cast<unsigned char>(size->value.Scalar()[0])) ||
       size->value.Scalar()[0] == '-' || size->value.Scalar()[0] == '+')) {
    arg.table_size = reader.integer(size->value, what + ": size");
    if (arg.table_size < 1) reader.fail(size->value, what + ": size must be at least 1");
  } else {
    arg.table_size_arg = reader.identifier(size->value, what + ": size");
  }
}

void check_template_path(const SpecReader& reader, const YAML::Node& node,
                         const std::string& path) {
  if (auto problem = template_path_problem(path)) {
    reader.fail(node, "template path " + quoted(path) + " " + *problem);
  }
  if (find_embedded_header(path) != nullptr) return;
  // Only a build that embeds the template's folder can answer whether the
  // file exists; otherwise generate_source() reports it.
  const std::string folder = path.substr(0, path.rfind('/') + 1);
  std::vector<std::string> siblings;
  for (const EmbeddedHeader& header : embedded_headers()) {
    if (header.path.rfind(folder, 0) == 0 &&
        header.path.find('/', folder.size()) == std::string::npos) {
      siblings.push_back(header.path);
    }
  }
  if (siblings.empty()) return;
  reader.fail(node, "template " + quoted(path) + " is not embedded" + did_you_mean(path, siblings));
}

}  // namespace

FlagValue flag_value(const SpecReader& reader, const FlagDecl& decl, const YAML::Node& node) {
  std::optional<FlagValue> value;
  if (decl.type == FlagType::kBool && is_plain_scalar(node)) {
    if (node.Scalar() == "true") value = true;
    if (node.Scalar() == "false") value = false;
  } else if (decl.type == FlagType::kInt && is_plain_scalar(node)) {
    value = value_from_text(decl, node.Scalar());
  } else if ((decl.type == FlagType::kEnum || decl.type == FlagType::kType) && node.IsScalar()) {
    value = FlagValue(node.Scalar());
  }
  if (!value) reader.fail(node, type_expectation(decl));
  if (auto problem = value_problem(decl, *value)) reader.fail(node, *problem);
  return *value;
}

const FlagDecl& declared_flag(const SpecReader& reader, const Spec& spec, const MapEntry& entry,
                              std::string_view where) {
  const FlagDecl* decl = spec.find_flag(entry.key);
  if (decl == nullptr) {
    reader.fail(entry.key_node, "unknown flag " + quoted(entry.key) + " in " + std::string(where) +
                                    did_you_mean(entry.key, flag_names(spec)));
  }
  return *decl;
}

std::vector<FlagDecl> parse_flags(const SpecReader& reader, const YAML::Node& node,
                                  std::vector<Constraint>& sugar) {
  const std::vector<MapEntry> entries = reader.named_entries(node, "flags", "flag");
  std::vector<FlagDecl> flags;
  std::vector<PendingSugar> pending;
  for (const MapEntry& entry : entries) flags.push_back(parse_flag(reader, entry, pending));
  check_enum_type_names(reader, flags, entries);
  for (const PendingSugar& item : pending) {
    if (item.requires_entry) {
      sugar.push_back(sugar_constraint(reader, flags, item.flag, *item.requires_entry));
    }
    if (item.excludes_entry) {
      sugar.push_back(sugar_constraint(reader, flags, item.flag, *item.excludes_entry));
    }
  }
  return flags;
}

std::vector<ArgDecl> parse_args(const SpecReader& reader, const Spec& spec,
                                const YAML::Node& node) {
  std::vector<ArgDecl> args;
  for (const YAML::Node& item : reader.items(node, "args")) {
    const std::vector<MapEntry> entries = reader.entries(item, "arg", kArgKeys);
    ArgDecl arg;
    const MapEntry& name = reader.required(entries, item, "name", "arg");
    arg.name = reader.identifier(name.value, "arg name");
    arg.loc = reader.location(item);
    for (const ArgDecl& earlier : args) {
      if (earlier.name != arg.name) continue;
      reader.fail(name.value, "duplicate arg " + quoted(arg.name) + " (first at " +
                                  std::to_string(earlier.loc.line) + ":" +
                                  std::to_string(earlier.loc.column) + ")");
    }
    const YAML::Node& type =
        reader.required(entries, item, "type", "arg " + quoted(arg.name)).value;
    arg = parse_arg_type(reader, spec, type, std::move(arg));
    if (const MapEntry* doc = find_entry(entries, "doc")) {
      arg.doc = reader.text(doc->value, "arg " + quoted(arg.name) + ": doc");
    }
    if (const MapEntry* noalias = find_entry(entries, "noalias")) {
      if (!is_pointer(arg.type)) {
        reader.fail(noalias->key_node,
                    "arg " + quoted(arg.name) + ": noalias applies only to pointers");
      }
      arg.no_alias = reader.boolean(noalias->value, "arg " + quoted(arg.name) + ": noalias");
    }
    parse_tensor_keys(reader, entries, arg);
    args.push_back(std::move(arg));
  }
  return args;
}

}  // namespace detail

const char* to_string(ArgType type) {
  for (const auto& [spelling, fixed] : detail::kFixedArgTypes) {
    if (fixed == type) return spelling.c_str();
  }
  return type == ArgType::kConstElemPtr ? "const <type flag>*" : "<type flag>*";
}

std::string SourceLocation::str() const {
  if (line <= 0) return file;
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

Spec parse_spec(const std::string& yaml_text, const std::string& source_name) {
  using detail::find_entry;
  using detail::quoted;
  const detail::SpecReader reader(source_name);
  const YAML::Node root = reader.load(yaml_text);
  if (root.IsNull()) reader.fail(root, "spec is empty");
  const std::vector<detail::MapEntry> entries = reader.entries(root, "spec", detail::kTopLevelKeys);
  Spec spec;
  spec.source_name = source_name;
  spec.family = reader.identifier(reader.required(entries, root, "family", "spec").value, "family");
  if (const auto* entry = find_entry(entries, "description")) {
    spec.description = reader.text(entry->value, "description");
    while (!spec.description.empty() &&
           std::isspace(static_cast<unsigned char>(spec.description.back()))) {
      spec.description.pop_back();
    }
  }
  std::vector<Constraint> sugar;
  if (const auto* extends = find_entry(entries, "extends")) {
    detail::inherit(reader, entries, *extends, spec);
  } else {
    const YAML::Node& template_node = reader.required(entries, root, "template", "spec").value;
    spec.template_path = reader.text(template_node, "template");
    spec.template_loc = reader.location(template_node);
    detail::check_template_path(reader, template_node, spec.template_path);
    spec.entry = reader.identifier(reader.required(entries, root, "entry", "spec").value, "entry");
    if (const auto* entry = find_entry(entries, "flags")) {
      spec.flags = detail::parse_flags(reader, entry->value, sugar);
    }
    if (const auto* entry = find_entry(entries, "constraints")) {
      spec.constraints = detail::parse_constraints(reader, spec, entry->value);
    }
    spec.constraints.insert(spec.constraints.end(), sugar.begin(), sugar.end());
    if (const auto* entry = find_entry(entries, "tuning")) {
      spec.tuning = detail::parse_tuning(reader, spec, entry->value);
    }
  }
  if (const auto* entry = find_entry(entries, "args")) {
    std::vector<ArgDecl> own = detail::parse_args(reader, spec, entry->value);
    for (ArgDecl& arg : own) {
      for (const ArgDecl& inherited : spec.args) {
        if (inherited.name == arg.name) {
          reader.fail(arg.loc, "arg " + quoted(arg.name) + " is already an arg of the extended spec " +
                                   quoted(spec.extends));
        }
      }
    }
    for (ArgDecl& arg : own) spec.args.push_back(std::move(arg));
  }
  detail::check_tensor_args(reader, spec);
  if (const auto* entry = find_entry(entries, "presets")) {
    spec.presets = detail::parse_presets(reader, spec, entry->value);
  }
  if (const auto* entry = find_entry(entries, "matrix")) {
    spec.matrix = detail::parse_matrix(reader, spec, entry->value);
  }
  detail::parse_expressions(reader, yaml_text, entries, spec);
  return spec;
}

Spec load_spec_file(const std::string& path) {
  // A spec is a small text file: read at most this much, so that a device
  // (/dev/zero), a FIFO or a mistaken large file fails with a message.
  constexpr std::size_t kMaxSpecBytes = std::size_t{1} << 20;
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    throw Error(ErrorKind::kSpec, path + ": is a directory, not a spec file");
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    throw Error(ErrorKind::kSpec, path + ": cannot read the spec file: " + std::strerror(errno));
  }
  std::string text(kMaxSpecBytes + 1, '\0');
  file.read(text.data(), std::streamsize(text.size()));
  text.resize(std::size_t(file.gcount()));
  if (text.size() > kMaxSpecBytes) {
    throw Error(ErrorKind::kSpec, path + ": the spec file is larger than the 1 MiB limit");
  }
  if (file.bad()) {
    throw Error(ErrorKind::kSpec, path + ": cannot read the spec file: " + std::strerror(errno));
  }
  return parse_spec(text, path);
}

}  // namespace attnjit

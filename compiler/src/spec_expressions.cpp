// The parts of a spec that add a variant to another (docs/expressions.md):
// `extends`, the `mask` and `score` expressions, and the args they read
// (tensors with `per` and `size`).
#include <algorithm>
#include <string>
#include <vector>

#include "attnjit/embedded.h"
#include "attnjit/error.h"
#include "attnjit/expr.h"
#include "attnjit/spec.h"
#include "names.h"
#include "spec_sections.h"

namespace attnjit {

ExprContext expr_context(const Spec& spec) {
  ExprContext ctx;
  bool heads_q = false, heads_kv = false;
  for (const ArgDecl& arg : spec.args) {
    if (arg.type == ArgType::kI32 || arg.type == ArgType::kF32) {
      ctx.scalars.push_back(
          ExprScalar{arg.name, arg.type == ArgType::kI32 ? ExprType::kInt : ExprType::kFloat});
      heads_q = heads_q || arg.name == "num_heads_q";
      heads_kv = heads_kv || arg.name == "num_heads_kv";
    } else if (arg.per) {
      ExprTensor tensor;
      tensor.name = arg.name;
      tensor.elem = arg.type == ArgType::kConstI32Ptr ? ExprType::kInt : ExprType::kFloat;
      tensor.per = *arg.per;
      tensor.size = arg.table_size;
      tensor.size_arg = arg.table_size_arg;
      tensor.sorted = arg.sorted;
      ctx.tensors.push_back(std::move(tensor));
    } else {
      ctx.other_args.push_back(arg.name);
    }
  }
  ctx.has_head_counts = heads_q && heads_kv;
  return ctx;
}

namespace detail {
namespace {

// The keys a spec with `extends` takes from the extended spec. (`tuning`
// is taken too, but the spec may put rules of its own before it.)
const std::vector<std::string> kInheritedKeys = {"template", "entry", "flags", "constraints"};
// The flags `tune_as` may name: those that shape the mask and pick tiles,
// never one that changes what the kernel reads or writes.
const std::vector<std::string> kTuneAsFlags = {"causal", "window"};
// Names of the expression language's variables (docs/expressions.md).
const std::vector<std::string> kExprVariables = {"p", "j", "b", "h", "hk", "n_q", "n_k", "s"};

// The text of a mask/score scalar and the file position of its first
// character. The expression must stand on one line as written in the file,
// plain or quoted without escapes, so that columns in messages are columns
// of the file.
struct ExprSource {
  std::string text;
  int line = 0, column = 0;
};

ExprSource expression_source(const SpecReader& reader, const std::string& yaml_text,
                             const YAML::Node& node, const std::string& what) {
  const std::string rule = what +
                           " must be written on one line, plain or in double quotes, "
                           "without escapes";
  if (!node.IsScalar()) reader.fail(node, rule);
  const SourceLocation at = reader.location(node);
  std::size_t offset = 0;
  for (int line = 1; line < at.line; ++line) {
    offset = yaml_text.find('\n', offset);
    if (offset == std::string::npos) reader.fail(node, rule);
    ++offset;
  }
  offset += static_cast<std::size_t>(at.column - 1);
  const std::size_t line_end = std::min(yaml_text.find('\n', offset), yaml_text.size());
  if (offset > line_end) reader.fail(node, rule);
  const std::string_view raw(yaml_text.data() + offset, line_end - offset);
  const std::string& value = node.Scalar();
  ExprSource source{value, at.line, at.column};
  const bool has_quote = value.find_first_of("\"'\\") != std::string::npos;
  if (!raw.empty() && (raw[0] == '"' || raw[0] == '\'')) {
    if (has_quote || raw.size() < value.size() + 2 || raw.compare(1, value.size(), value) != 0 ||
        raw[value.size() + 1] != raw[0]) {
      reader.fail(node, rule);
    }
    source.column += 1;
    return source;
  }
  if (!is_plain_scalar(node) || raw.compare(0, value.size(), value) != 0) reader.fail(node, rule);
  return source;
}

void check_expression_names(const SpecReader& reader, const Spec& spec) {
  for (const ArgDecl& arg : spec.args) {
    if (std::count(kExprVariables.begin(), kExprVariables.end(), arg.name) > 0) {
      reader.fail(arg.loc, "arg " + quoted(arg.name) +
                               " has the name of an expression variable (" +
                               join(kExprVariables, ", ") + ")");
    }
  }
  for (const FlagDecl& flag : spec.flags) {
    if (flag.name == "user") {
      reader.fail(flag.loc, "flag name 'user' is taken by the generated config of a spec with "
                            "mask or score (using user = attnjit_user)");
    }
  }
  for (const std::string& param : spec.tuning.params) {
    if (param == "user") {
      reader.fail(SourceLocation{reader.file(), 1, 1},
                  "tuning param 'user' is taken by the generated config of a spec with mask "
                  "or score (using user = attnjit_user)");
    }
  }
}

}  // namespace

// The args an expression tensor's domain reads, and a table's size arg.
void check_tensor_args(const SpecReader& reader, const Spec& spec) {
  const auto has = [&](const std::string& name, ArgType type) {
    for (const ArgDecl& arg : spec.args) {
      if (arg.name == name && arg.type == type) return true;
    }
    return false;
  };
  for (const ArgDecl& arg : spec.args) {
    if (!arg.per) continue;
    const std::string what = "arg " + quoted(arg.name) + " (per: " + to_string(*arg.per) + ")";
    const auto need = [&](const char* name, ArgType type, const char* spelling, const char* why) {
      if (!has(name, type)) {
        reader.fail(arg.loc, what + " needs the " + spelling + " arg '" + name + "' (" + why + ")");
      }
    };
    switch (*arg.per) {
      case TensorDomain::kKeyToken:
        need("cu_seqlens_k", ArgType::kConstI32Ptr, "const int32*", "each sequence's first key row");
        break;
      case TensorDomain::kQueryToken:
        need("cu_seqlens_q", ArgType::kConstI32Ptr, "const int32*",
             "each sequence's first query row");
        break;
      case TensorDomain::kHead:
        need("num_heads_q", ArgType::kI32, "int32", "the number of query heads");
        break;
      case TensorDomain::kKvHead:
        need("num_heads_kv", ArgType::kI32, "int32", "the number of kv heads");
        break;
      case TensorDomain::kTable:
        if (!arg.table_size_arg.empty() && !has(arg.table_size_arg, ArgType::kI32)) {
          reader.fail(arg.loc, what + ": size " + quoted(arg.table_size_arg) +
                                   " is not an int32 arg");
        }
        break;
      case TensorDomain::kSequence:
        break;
    }
  }
}

// `extends: <embedded spec>`: the inherited sections of that spec.
void inherit(const SpecReader& reader, const std::vector<MapEntry>& entries, const MapEntry& entry,
             Spec& spec) {
  const std::string name = reader.text(entry.value, "extends");
  if (find_embedded_spec(name) == nullptr) {
    reader.fail(entry.value, "extends names " + quoted(name) + ", which is no embedded spec" +
                                 did_you_mean(name, embedded_spec_names()) + " (embedded: " +
                                 join(embedded_spec_names(), ", ") + ")");
  }
  for (const std::string& key : kInheritedKeys) {
    if (const MapEntry* own = find_entry(entries, key)) {
      reader.fail(own->key_node, "'" + key + "' comes from the extended spec " + quoted(name) +
                                     " and cannot be given with extends");
    }
  }
  const Spec base = load_embedded_spec(name);
  spec.extends = name;
  spec.params_family = base.params_family.empty() ? base.family : base.params_family;
  spec.template_path = base.template_path;
  spec.template_loc = base.template_loc;
  spec.entry = base.entry;
  spec.flags = base.flags;
  spec.constraints = base.constraints;
  spec.tuning = base.tuning;
  spec.args = base.args;
  if (const MapEntry* own = find_entry(entries, "tuning")) {
    std::vector<TuningRule> rules = parse_own_rules(reader, spec, own->value);
    rules.insert(rules.end(), spec.tuning.rules.begin(), spec.tuning.rules.end());
    spec.tuning.rules = std::move(rules);
  }
}

// `mask:` and `score:`: each parsed and checked against the spec's args.
void parse_expressions(const SpecReader& reader, const std::string& yaml_text,
                       const std::vector<MapEntry>& entries, Spec& spec) {
  const auto* mask = find_entry(entries, "mask");
  const auto* score = find_entry(entries, "score");
  if (mask != nullptr || score != nullptr) {
    check_expression_names(reader, spec);
    const ExprContext context = expr_context(spec);
    for (const auto* entry : {mask, score}) {
      if (entry == nullptr) continue;
      const bool is_mask = entry == mask;
      const char* what = is_mask ? "mask" : "score";
      if (entry->value.IsNull()) {
        reader.fail(entry->key_node, std::string(what) + " needs an expression");
      }
      const ExprSource source =
          expression_source(reader, yaml_text, entry->value, what);
      Expr expr = parse_expr(source.text, is_mask ? ExprKind::kMask : ExprKind::kScore, context,
                             reader.file(), source.line, source.column);
      (is_mask ? spec.mask : spec.score) = std::move(expr);
    }
  }
  // Division by a runtime int32 arg: its multiplier's hidden field, after
  // the spec's own args (no arg of the text can take its name: names
  // starting with 'attnjit' are the generator's).
  for (const std::optional<Expr>* e : {&spec.mask, &spec.score}) {
    if (!e->has_value()) continue;
    for (const std::string& divisor : runtime_divisors(**e)) {
      const std::string field = divisor_field(divisor);
      const bool present = std::any_of(spec.args.begin(), spec.args.end(),
                                       [&](const ArgDecl& arg) { return arg.name == field; });
      if (present) continue;
      ArgDecl hidden;
      hidden.name = field;
      hidden.type = ArgType::kI64;
      hidden.doc = "the runtime's multiplier for division by " + divisor + " (hidden)";
      hidden.divisor_of = divisor;
      spec.args.push_back(std::move(hidden));
    }
  }
  if (const auto* tune_as = find_entry(entries, "tune_as")) {
    if (mask == nullptr) {
      reader.fail(tune_as->key_node,
                  "tune_as needs a mask: it says which built-in mask the mask is shaped like");
    }
    for (const MapEntry& entry : reader.entries(tune_as->value, "tune_as", {})) {
      const FlagDecl& decl = declared_flag(reader, spec, entry, "tune_as");
      if (std::find(kTuneAsFlags.begin(), kTuneAsFlags.end(), decl.name) == kTuneAsFlags.end()) {
        reader.fail(entry.key_node, "tune_as may name only the mask-shape flags (" +
                                        join(kTuneAsFlags, ", ") + "), not " + quoted(decl.name));
      }
      if (!entry.value.IsScalar()) {
        reader.fail(entry.value, "tune_as: flag " + quoted(decl.name) + " takes a single value");
      }
      spec.tune_as[decl.name] = flag_value(reader, decl, entry.value);
    }
  }
}

}  // namespace detail
}  // namespace attnjit

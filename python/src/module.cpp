// attnjit._C: the typed C++ API for Python, on raw device pointers, strides,
// ints and a stream handle. Tensors are taken apart in Python
// (attnjit/_varlen.py), so this module needs no torch headers and the
// launch path converts only ints and floats.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <variant>
#include <vector>

#include "attnjit/attention.h"
#include "attnjit/attnjit.h"
#include "attnjit/cache.h"
#include "attnjit/driver.h"
#include "attnjit/error.h"
#include "attnjit/expr.h"
#include "attnjit/spec.h"
#include "attnjit/target.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace attnjit {
namespace {

PyObject* g_error_type = nullptr;  // attnjit._C.Error, a RuntimeError

// Mistakes in what the caller passed are ValueErrors; the rest (compile,
// driver, cache, no-JIT) are attnjit._C.Error. Both carry `.kind`.
void translate(const std::exception_ptr& thrown, void*) {
  try {
    std::rethrow_exception(thrown);
  } catch (const Error& e) {
    const bool caller_mistake = e.kind() == ErrorKind::kArgument || e.kind() == ErrorKind::kFlags;
    PyObject* type = caller_mistake ? PyExc_ValueError : g_error_type;
    nb::object error = nb::handle(type)(nb::str(e.what()));
    nb::setattr(error, "kind", nb::str(to_string(e.kind())));
    PyErr_SetObject(type, error.ptr());
  }
}

// Flags arrive in the spec's own vocabulary ({"causal": True, "sinks":
// "null_logit", ...}) and are resolved into the spec's FlagSet, the one
// canonical form that keys the memo and the cache.
FlagSet to_flag_set(const nb::dict& given, const Spec& spec = attnjit::attention_spec()) {
  std::map<std::string, FlagValue> flags;
  for (auto [key, value] : given) {
    const std::string name = nb::cast<std::string>(nb::str(key));
    if (nb::isinstance<nb::bool_>(value)) {
      flags[name] = nb::cast<bool>(value);
    } else if (nb::isinstance<nb::int_>(value)) {
      flags[name] = nb::cast<int64_t>(value);
    } else if (nb::isinstance<nb::str>(value)) {
      flags[name] = nb::cast<std::string>(value);
    } else {
      throw Error(ErrorKind::kFlags, "flag '" + name + "' must be a bool, an int or a str, got " +
                                         nb::cast<std::string>(nb::str(nb::type_name(value.type()))));
    }
  }
  return resolve_flags(spec, flags);
}

// The flags of a kernel to launch: the planner picks the schedule per
// launch (Schedule), so a dict naming a schedule flag is refused.
FlagSet launch_flag_set(const nb::dict& given, const Spec& spec = attnjit::attention_spec()) {
  for (const char* name : {"split_kv", "small_pages"}) {
    if (given.contains(name)) {
      throw Error(ErrorKind::kFlags,
                  std::string("'") + name +
                      "' is a schedule the launch picks, not a flag to ask for (num_splits "
                      "asks for or rules out splits; ATTNJIT_SMALL_PAGES=0 turns small pages "
                      "off); attnjit.compile builds such variants for a cache");
    }
  }
  return to_flag_set(given, spec);
}

Target resolve_target(const std::optional<std::string>& target) {
  // Without one, the caller's current context decides (the compile thread
  // has none).
  return target ? parse_target(*target) : attnjit::current_device_target();
}

std::shared_ptr<AttentionKernel> get_kernel(const nb::dict& flags,
                                            const std::optional<std::string>& target) {
  const FlagSet flag_set = launch_flag_set(flags);
  const Target resolved = resolve_target(target);
  // (Compiles nothing: a launch fetches the variant it runs.)
  return AttentionKernel::get(flag_set, KernelCache::global(), &resolved);
}

// The kernel's own variant, fetched (compiled on first use) without the GIL.
Kernel& fetched(AttentionKernel& kernel) {
  nb::gil_scoped_release release;
  return kernel.kernel();
}

// A user spec (docs/expressions.md): a family that extends the attention
// spec with `mask` / `score` expressions and args of its own.
struct UserSpec {
  std::shared_ptr<const Spec> spec;
};

UserSpec load_user_spec(const std::string& text, const std::string& source_name) {
  auto spec = std::make_shared<const Spec>(parse_spec(text, source_name));
  if (spec->params_family != attnjit::attention_spec().family) {
    throw Error(ErrorKind::kSpec, source_name + ": spec '" + spec->family +
                                      "' does not extend the attention spec (`extends: "
                                      "attention`), so it has no attention call");
  }
  return UserSpec{std::move(spec)};
}

// The spec's own args (after the attention spec's), in declaration order:
// name, type, per (None for a scalar), size (a table's: int, the int32
// arg's name, or None), sorted and doc.
nb::list user_spec_args(const UserSpec& u) {
  const size_t inherited = attnjit::attention_spec().args.size();
  nb::list out;
  for (size_t i = inherited; i < u.spec->args.size(); ++i) {
    const ArgDecl& a = u.spec->args[i];
    if (!a.divisor_of.empty()) continue;  // hidden: the runtime fills it
    nb::dict d;
    d["name"] = a.name;
    d["type"] = to_string(a.type);
    d["per"] = a.per ? nb::object(nb::str(to_string(*a.per))) : nb::none();
    if (!a.table_size_arg.empty()) {
      d["size"] = a.table_size_arg;
    } else if (a.per && *a.per == TensorDomain::kTable) {
      d["size"] = a.table_size;
    } else {
      d["size"] = nb::none();
    }
    d["sorted"] = a.sorted;
    d["doc"] = a.doc;
    out.append(d);
  }
  return out;
}

std::shared_ptr<AttentionKernel> get_user_kernel(const UserSpec& u, const nb::dict& flags,
                                                 const std::optional<std::string>& target) {
  const FlagSet flag_set = launch_flag_set(flags, *u.spec);
  const Target resolved = resolve_target(target);
  return AttentionKernel::get_user(u.spec, flag_set, KernelCache::global(), &resolved);
}

// The expression VM's variant of a user spec's flags into the process-wide
// cache (docs/tiers.md "User specs"): unless ATTNJIT_USER_VM=0, a later
// first call of any spec's variant of those flags runs on it while its
// own compiles. Returns the VM kernel's name.
std::string build_user_vm(const UserSpec& u, const nb::dict& flags,
                          const std::optional<std::string>& target) {
  const FlagSet flag_set = to_flag_set(flags, *u.spec);
  const Target resolved = resolve_target(target);
  const Spec& vm = expression_vm_spec();
  const std::map<std::string, FlagValue> values(flag_set.values.begin(), flag_set.values.end());
  const FlagSet vm_flags = resolve_flags(vm, values);
  // Compiles (a few hundred milliseconds, on a large stack): other threads run.
  nb::gil_scoped_release release;
  const std::shared_ptr<const Spec> vm_ptr(std::shared_ptr<const Spec>(), &vm);
  return AttentionKernel::get_user(vm_ptr, vm_flags, KernelCache::global(), &resolved)
      ->kernel()
      .name();
}

// (name, kind, value) triples, kind "int32", "float" or "ptr" (a device
// address as an int), into the launch's typed values.
std::vector<UserArg> to_user_args(
    const std::vector<std::tuple<std::string, std::string, nb::object>>& given) {
  std::vector<UserArg> args;
  for (const auto& [name, kind, value] : given) {
    UserArg arg{name, int32_t(0)};
    if (kind == "int32") {
      const int64_t v = nb::cast<int64_t>(value);
      if (v < INT32_MIN || v > INT32_MAX) {
        throw Error(ErrorKind::kArgument, "attention: arg `" + name + "` is not an int32");
      }
      arg.value = int32_t(v);
    } else if (kind == "float") {
      arg.value = nb::cast<float>(value);
    } else if (kind == "ptr") {
      arg.value = reinterpret_cast<const void*>(nb::cast<uintptr_t>(value));
    } else {
      throw Error(ErrorKind::kArgument, "attention: arg `" + name + "` has unknown kind '" +
                                            kind + "' (int32, float or ptr)");
    }
    args.push_back(std::move(arg));
  }
  return args;
}

using UserArgTriples = std::vector<std::tuple<std::string, std::string, nb::object>>;

// A launch argument as Python passes it: a pointer as an int (0 for null),
// anything else as itself.
template <class T>
using PyValue = std::conditional_t<std::is_pointer_v<T>, uintptr_t, T>;
template <class T>
T from_python(PyValue<T> value) {
  if constexpr (std::is_pointer_v<T>) {
    return reinterpret_cast<T>(value);
  } else {
    return value;
  }
}

// launch's parameters, from attention_args_list.h: every group's but
// split-KV's in the list's order (LAUNCH_ARGS), then the stream, then
// split-KV's, which choose how the launch runs rather than what it
// computes, with their defaults. All may be passed positionally, which is
// what attnjit._varlen does per launch: a keyword costs nanobind a search
// over every parameter.
#define ATTNJIT_PY_POSITIONAL_ARGS(X) \
  ATTNJIT_ATTENTION_ARGS_V1(X)        \
  ATTNJIT_ATTENTION_ARGS_V2_PAGED(X)  \
  ATTNJIT_ATTENTION_ARGS_V3_FP8(X)
#define ATTNJIT_PY_KEYWORD_ARGS(X) ATTNJIT_ATTENTION_ARGS_V3_SPLIT_KV(X)

#define ATTNJIT_COUNT_ARG(type, name, init) +1
static_assert(0 ATTNJIT_PY_POSITIONAL_ARGS(ATTNJIT_COUNT_ARG)
                  ATTNJIT_PY_KEYWORD_ARGS(ATTNJIT_COUNT_ARG) ==
                  0 ATTNJIT_ATTENTION_ARGS(ATTNJIT_COUNT_ARG),
              "launch takes every group of attention_args_list.h: add a new one to "
              "ATTNJIT_PY_POSITIONAL_ARGS");
#undef ATTNJIT_COUNT_ARG

// The names of launch's positional arguments, in order (attnjit._C.LAUNCH_ARGS).
nb::tuple launch_arg_names() {
#define ATTNJIT_ARG_NAME(type, name, init) #name,
  const char* names[] = {ATTNJIT_PY_POSITIONAL_ARGS(ATTNJIT_ARG_NAME)};
#undef ATTNJIT_ARG_NAME
  nb::list out;
  for (const char* name : names) out.append(name);
  return nb::steal<nb::tuple>(PyList_AsTuple(out.ptr()));
}

// One launch over either K/V layout (the flags say which), or with
// plan_only the workspace bytes it would need (the split-KV parts; 0:
// none), so that a caller capturing a CUDA graph can pass a workspace from
// its own allocator.
#define ATTNJIT_PY_PARAM(type, name, init) PyValue<type> name,
int64_t launch(AttentionKernel& kernel,
               ATTNJIT_PY_POSITIONAL_ARGS(ATTNJIT_PY_PARAM) uintptr_t stream,
               ATTNJIT_PY_KEYWORD_ARGS(ATTNJIT_PY_PARAM) bool plan_only,
               const UserArgTriples& user_args) {
  AttentionArgs a;
#define ATTNJIT_PY_COPY(type, name, init) a.name = from_python<type>(name);
  ATTNJIT_ATTENTION_ARGS(ATTNJIT_PY_COPY)
#undef ATTNJIT_PY_COPY
  // The first launch of a variant fetches it (a compile takes a few hundred
  // milliseconds): other Python threads run meanwhile, as they do while a
  // workspace query fetches.
  if (plan_only) {
    nb::gil_scoped_release release;
    validate_attention_args(kernel.flags(), a);
    if (a.num_seqs == 0 || a.max_seqlen_q == 0) return 0;
    return int64_t(kernel.workspace_bytes(a));  // (split-KV parts)
  }
  // In the steady state (the variant compiled) with the GIL held: releasing
  // it costs every launch, and taking it back may wait for other threads.
  const std::vector<UserArg> typed = to_user_args(user_args);
  const CuStream on = reinterpret_cast<CuStream>(stream);
  if (kernel.launch_if_ready(a, on, typed)) return 0;
  nb::gil_scoped_release release;
  kernel.launch(a, on, typed);
  return 0;
}
#undef ATTNJIT_PY_PARAM

// Compiles variants for explicit targets into a cache directory, with no
// GPU needed: the Python build step's form of `attnjit build-cache`.
// `variants` is "matrix" (the spec's matrix and presets), "presets",
// "preset:NAME" or a list of flag dicts; `spec` None is the attention spec. One dict per
// (variant, target): variant, target, source (compiled, disk, aot, memory),
// key, seconds, spills, error (empty on success).
nb::list compile_variants(const std::optional<UserSpec>& user, const nb::object& variants,
                          const std::vector<std::string>& targets,
                          const std::optional<std::string>& cache_dir, int jobs) {
  const Spec& spec = user ? *user->spec : attnjit::attention_spec();
  std::vector<FlagSet> flag_sets;
  // The spec's own lists skip, per target, the flags it has no kernel for
  // there (as `attnjit build-cache` does); a flag dict asked for by name
  // is an error then.
  const bool listed = nb::isinstance<nb::str>(variants);
  if (listed) {
    const std::string which = nb::cast<std::string>(variants);
    if (which == "matrix") {
      flag_sets = matrix_and_presets(spec);
    } else if (which == "presets") {
      std::set<std::string> seen;
      for (const Preset& p : spec.presets) {
        FlagSet f = resolve_preset(spec, p.name);
        if (seen.insert(f.str()).second) flag_sets.push_back(std::move(f));
      }
    } else if (which.rfind("preset:", 0) == 0) {
      flag_sets.push_back(resolve_preset(spec, which.substr(7)));
    } else {
      throw Error(ErrorKind::kArgument,
                  "variants must be 'matrix', 'presets', 'preset:NAME' or a list of flag dicts, "
                  "got '" + which + "'");
    }
  } else {
    for (nb::handle h : variants) flag_sets.push_back(to_flag_set(nb::cast<nb::dict>(h), spec));
  }
  if (targets.empty()) throw Error(ErrorKind::kArgument, "no target given (e.g. 'sm_90a')");
  std::vector<BuildItem> items;
  for (const std::string& t : targets) {
    const Target target = parse_target(t);
    for (const FlagSet& f : flag_sets) {
      if (listed && !unsupported_reason(spec, f, target).empty()) continue;
      BuildItem item;
      item.spec = &spec;
      item.signature = make_signature(spec, f, CompileOptions::from_environment(target));
      items.push_back(std::move(item));
    }
  }
  CacheConfig config = CacheConfig::from_environment();
  if (cache_dir) config.user_dir = *cache_dir;
  {
    nb::gil_scoped_release release;
    KernelCache cache(config);
    build_variants(items, cache, jobs);
    if (cache.disk_disabled()) {
      throw Error(ErrorKind::kCache, "the cache directory " + config.user_dir +
                                         " is not writable; nothing was stored");
    }
  }
  nb::list out;
  for (const BuildItem& item : items) {
    nb::dict d;
    d["variant"] = item.signature.display_name();
    d["flags"] = item.signature.flags.str();
    d["target"] = item.signature.options.target.name();
    d["source"] = item.error.empty() ? to_string(item.source) : "";
    d["key"] = item.key;
    d["seconds"] = item.seconds;
    d["spills"] = std::max(0, item.resources.spill_stores);
    d["error"] = item.error;
    out.append(d);
  }
  return out;
}

nb::dict cache_stats() {
  const CacheStats s = KernelCache::global().stats();
  nb::dict d;
  d["memory_hits"] = s.memory_hits;
  d["disk_hits"] = s.disk_hits;
  d["aot_hits"] = s.aot_hits;
  d["compiles"] = s.compiles;
  d["corrupt_entries"] = s.corrupt_entries;
  d["write_failures"] = s.write_failures;
  d["disk_disabled"] = KernelCache::global().disk_disabled();
  // Launches the generic tier answered (ATTNJIT_TIERED, docs/tiers.md).
  d["generic_launches"] = AttentionKernel::generic_launches();
  return d;
}

}  // namespace
}  // namespace attnjit

NB_MODULE(_C, m) {
  using namespace attnjit;
  m.doc() = "attnjit's C++ runtime: kernels by flags, launches on raw pointers";
  // attnjit._varlen keeps its kernels in a dict for the life of the
  // process, so some are alive at interpreter exit, on purpose.
  nb::set_leak_warnings(false);

  g_error_type = PyErr_NewExceptionWithDoc(
      "attnjit._C.Error",
      "attnjit failed to build, find or launch a kernel (.kind says which "
      "step: compile, driver, cache, no-jit, spec, codegen)",
      PyExc_RuntimeError, nullptr);
  m.attr("Error") = nb::handle(g_error_type);
  nb::register_exception_translator(translate);

  m.def(
      "version", [] { return std::string(attnjit_version()); }, "attnjit's version, e.g. '0.1.0'");

  // launch's parameter names, from attention_args_list.h.
#define ATTNJIT_NB_ARG(type, name, init) nb::arg(#name),
#define ATTNJIT_NB_KEYWORD(type, name, init) nb::arg(#name) = PyValue<type>(init),
  nb::class_<AttentionKernel>(m, "AttentionKernel",
                              "A compiled attention variant; it loads into "
                              "each CUDA context on its first launch there")
      // (Each may fetch the kernel's own variant, compiling it: without the GIL.)
      .def_prop_ro("name", [](AttentionKernel& k) { return fetched(k).name(); })
      .def_prop_ro("key", [](AttentionKernel& k) { return fetched(k).entry().key.hex; })
      .def_prop_ro("signature",
                   [](AttentionKernel& k) { return fetched(k).entry().canonical_signature; })
      .def_prop_ro("source",
                   [](AttentionKernel& k) {
                     fetched(k);
                     return std::string(to_string(k.source()));
                   })
      .def_prop_ro("block_m",
                   [](AttentionKernel& k) {
                     fetched(k);
                     return k.block_m();
                   })
      .def_prop_ro("tier",
                   [](AttentionKernel& k) {
                     fetched(k);
                     return k.tier() == AttentionKernel::Tier::kGeneric ? "generic" : "specialized";
                   })
      .def(
          "wait_specialized",
          [](AttentionKernel& k) {
            nb::gil_scoped_release release;
            k.wait_specialized();
          },
          "Blocks until every variant the kernel's launches fetched (its own where "
          "none was) runs compiled, not a tier (docs/tiers.md); rethrows a compile error.")
      .def("launch", &launch, ATTNJIT_PY_POSITIONAL_ARGS(ATTNJIT_NB_ARG) "stream"_a,
           ATTNJIT_PY_KEYWORD_ARGS(ATTNJIT_NB_KEYWORD) "plan_only"_a = false,
           "user_args"_a = UserArgTriples{},
           "Checks the arguments on the host and launches on `stream` in the "
           "calling thread's current CUDA context (no sync; a decode-shaped "
           "launch goes to the split-KV sibling, whose scratch is `workspace` "
           "or the library's for this stream). The arguments before `stream` "
           "are LAUNCH_ARGS, positionally (pointers as ints, 0 for null; the "
           "paged layout's k and v are its caches). plan_only: launch nothing, "
           "return the workspace bytes the launch needs (0: none). user_args: "
           "a user spec's own args as (name, 'int32' | 'float' | 'ptr', value).");
  m.attr("LAUNCH_ARGS") = launch_arg_names();

  m.def("get_kernel", &get_kernel, "flags"_a, "target"_a = nb::none(),
        "The variant for these flags (a dict in the attention spec's names "
        "and values; unnamed flags take their defaults) from the "
        "process-wide cache (memory, AOT dirs, disk, then NVRTC). target "
        "None: the current CUDA context's device.");
  nb::class_<UserSpec>(m, "UserSpec", "A parsed user spec (extends: attention)")
      .def_prop_ro("family", [](const UserSpec& u) { return u.spec->family; })
      .def_prop_ro("description", [](const UserSpec& u) { return u.spec->description; })
      .def_prop_ro("args", &user_spec_args)
      .def_prop_ro("mask",
                   [](const UserSpec& u) {
                     return u.spec->mask ? nb::object(nb::str(u.spec->mask->canonical().c_str()))
                                         : nb::none();
                   })
      .def_prop_ro("score",
                   [](const UserSpec& u) {
                     return u.spec->score ? nb::object(nb::str(u.spec->score->canonical().c_str()))
                                          : nb::none();
                   })
      .def_prop_ro("presets", [](const UserSpec& u) {
        nb::dict presets;
        for (const Preset& p : u.spec->presets) {
          nb::dict flags;
          for (const auto& [name, value] : p.flags) {
            std::visit([&](const auto& v) { flags[name.c_str()] = v; }, value);
          }
          presets[p.name.c_str()] = flags;
        }
        return presets;
      });
  m.def("load_spec", &load_user_spec, "text"_a, "source_name"_a,
        "Parses and checks a user spec's YAML text (errors name source_name:line:column).");
  m.def("get_user_kernel", &get_user_kernel, "spec"_a, "flags"_a, "target"_a = nb::none(),
        "A variant of a user spec (flags as get_kernel's) from the process-wide cache.");
  m.def("build_user_vm", &build_user_vm, "spec"_a, "flags"_a, "target"_a = nb::none(),
        "The expression VM's variant of a user spec's flags into the process-wide cache "
        "(ATTNJIT_USER_VM); returns its kernel name.");
  m.def("compile_variants", &compile_variants, "spec"_a, "variants"_a, "targets"_a,
        "cache_dir"_a = nb::none(), "jobs"_a = 0,
        "Compiles a spec's variants ('matrix', 'presets' or flag dicts) for explicit targets "
        "into a cache directory; no GPU needed. One dict per variant and target.");
  m.def(
      "flag_values",
      [](const std::string& name) {
        for (const FlagDecl& decl : attention_spec().flags) {
          if (decl.name != name) continue;
          nb::list values;
          for (int64_t v : decl.int_values) values.append(v);
          for (const std::string& v : decl.enum_values) values.append(v);
          return values;
        }
        throw Error(ErrorKind::kFlags, "the attention spec has no flag '" + name + "'");
      },
      "name"_a, "The values the attention spec declares for a flag (e.g. head_dim's).");
  m.def("cache_stats", &cache_stats,
        "Counters of the process-wide kernel cache (and of the generic tier's launches).");
  m.def(
      "driver_available", [] { return Driver::available(); },
      "True if a CUDA driver and a device are present.");
}

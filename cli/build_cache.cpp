// `attnjit build-cache`: the offline job. Every variant of the specs'
// matrix and presets, for every target, compiled in parallel into a cache
// directory with a manifest; a second run finds everything and says so.
// `--shard K/N` builds the K-th of N disjoint parts of that set, so that a
// fleet of machines fills one cache: the shards' directories merge by
// copying (entries are content-addressed files). `--manifest FILE` builds
// the variants a deployment recorded (ATTNJIT_RECORD) instead of the
// matrix.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attnjit/attention.h"
#include "attnjit/cache.h"
#include "attnjit/driver.h"
#include "attnjit/error.h"
#include "attnjit/nvrtc.h"
#include "attnjit/nvrtc_version.h"
#include "attnjit/record.h"
#include "attnjit/selfcheck.h"
#include "commands.h"
#include "names.h"

namespace attnjit::cli {
namespace {

struct BuildArgs {
  std::vector<std::string> specs;
  std::vector<std::string> targets;
  int jobs = 0;
  std::string out;
  bool presets_only = false;
  bool no_check = false;
  bool dry_run = false;
  std::string shard;  // "K/N", empty: everything
  std::string manifest;  // ATTNJIT_RECORD's file, empty: the specs' matrix
  bool generic = false;  // also each attention variant's generic one (docs/tiers.md)
  bool user_vm = false;  // also each variant's expression VM variant (docs/tiers.md)
};

// --shard K/N: K counts from 0 (0 <= K < N).
struct Shard {
  size_t index = 0;
  size_t count = 1;
};

// Throws Error(kArgument) "'3/2': K must be in [0, 2)" for a bad one
// (add_build_cache checks --shard with it while parsing).
Shard parse_shard(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return Error(ErrorKind::kArgument, detail::quoted(text) + ": " + why);
  };
  const size_t slash = text.find('/');
  const auto is_number = [](const std::string& s) {
    return !s.empty() && s.size() <= 9 &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (slash == std::string::npos || !is_number(text.substr(0, slash)) ||
      !is_number(text.substr(slash + 1))) {
    throw bad("expected K/N, the K-th of N shards counting from 0 (e.g. 0/4)");
  }
  Shard shard{std::stoul(text.substr(0, slash)), std::stoul(text.substr(slash + 1))};
  if (shard.count == 0) throw bad("N must be at least 1");
  if (shard.index >= shard.count) {
    throw bad(fmt::format("K must be in [0, {})", shard.count));
  }
  return shard;
}

using WorkItem = BuildItem;  // (attnjit/cache.h)

std::vector<FlagSet> variants_of(const Spec& spec, bool presets_only) {
  if (!presets_only) return matrix_and_presets(spec);
  std::vector<FlagSet> presets;
  std::set<std::string> seen;
  for (const Preset& p : spec.presets) {
    FlagSet flags = resolve_preset(spec, p.name);
    if (seen.insert(flags.str()).second) presets.push_back(std::move(flags));
  }
  return presets;
}

// The manifest's variants, deduplicated, each checked against its spec
// (one of `specs`, by family) and for `targets` when some were given, else
// for the target the line names. An error names the file and line.
std::vector<WorkItem> manifest_items(const std::string& path, const std::vector<Spec>& specs,
                                     const std::vector<std::string>& names,
                                     const std::vector<std::string>& targets) {
  std::vector<WorkItem> items;
  std::set<std::string> seen;
  for (const ManifestLine& line : read_manifest(path)) {
    const RecordedVariant& v = line.variant;
    const std::string where = path + ":" + std::to_string(line.line) + ": ";
    const Spec* spec = nullptr;
    std::string known;
    // By family (what record mode writes) or by the name it was loaded by.
    for (size_t i = 0; i < specs.size(); ++i) {
      if (specs[i].family == v.spec || names[i] == v.spec) spec = &specs[i];
      known += (known.empty() ? "" : ", ") + specs[i].family;
    }
    if (spec == nullptr) {
      throw Error(ErrorKind::kArgument,
                  where + "unknown spec '" + v.spec + "' (known: " + known + ")");
    }
    try {
      const FlagSet flags = resolve_flags(*spec, parse_flag_assignments(*spec, v.flags));
      std::vector<Target> line_targets;
      if (targets.empty()) {
        line_targets.push_back(parse_target(v.target));
      } else {
        for (const std::string& t : targets) line_targets.push_back(parse_target(t));
      }
      for (const Target& t : line_targets) {
        Signature sig = deployment_signature(*spec, flags, t);
        if (seen.insert(sig.canonical()).second) items.push_back({spec, std::move(sig)});
      }
    } catch (const Error& e) {
      throw Error(ErrorKind::kArgument, where + e.what());
    }
  }
  if (items.empty()) {
    throw Error(ErrorKind::kArgument, "manifest '" + path + "' names no variant");
  }
  return items;
}

void run_items(std::vector<WorkItem>& items, KernelCache& cache, int jobs) {
  const auto start = std::chrono::steady_clock::now();
  build_variants(items, cache, jobs, [&](const WorkItem& item, size_t n) {
    // The time left, from the rate so far (the variants take turns on
    // the jobs, so the wall time per finished variant is the rate).
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string left =
        n < items.size() ? fmt::format("  ~{:.0f} s left", elapsed / n * (items.size() - n)) : "";
    std::printf("[%zu/%zu] %-28s %-7s %-9s %7.0f ms%s%s\n", n, items.size(),
                item.signature.display_name().c_str(), item.signature.options.target.name().c_str(),
                item.error.empty() ? to_string(item.source) : "FAILED", item.seconds * 1e3,
                item.error.empty() ? "" : "  (see below)", left.c_str());
    std::fflush(stdout);
  });
}

nlohmann::json manifest_of(const std::vector<WorkItem>& items) {
  nlohmann::json entries = nlohmann::json::array();
  for (const WorkItem& it : items) {
    if (!it.error.empty()) continue;
    entries.push_back({{"family", it.signature.family},
                       {"variant", it.signature.display_name()},
                       {"signature", it.signature.canonical()},
                       {"target", it.signature.options.target.name()},
                       {"key", it.key},
                       {"registers", it.resources.registers},
                       {"dynamic_smem", it.resources.dynamic_smem},
                       {"threads", it.resources.threads},
                       {"spill_stores", it.resources.spill_stores},
                       {"spill_loads", it.resources.spill_loads}});
  }
  return {{"format", kCacheFormatVersion}, {"nvrtc", nvrtc_version()}, {"entries", entries}};
}

void write_manifest(const std::string& dir, const std::string& name,
                    const nlohmann::json& manifest) {
  const std::string path = dir + "/" + name;
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp);
    f << manifest.dump(2) << "\n";
    if (!f) {
      std::fprintf(stderr, "attnjit: warning: cannot write %s\n", path.c_str());
      return;
    }
  }
  std::filesystem::rename(tmp, path);
  std::printf("manifest:   %s\n", path.c_str());
}

// The flags of `flags` that differ from the spec's defaults,
// "head_dim=256,causal=true".
std::string changed_flags(const Spec& spec, const FlagSet& flags) {
  std::string text;
  for (const auto& [name, value] : flags.values) {
    const FlagDecl* decl = nullptr;
    for (const FlagDecl& d : spec.flags) {
      if (d.name == name) decl = &d;
    }
    if (decl != nullptr && decl->default_value && *decl->default_value == value) continue;
    text += (text.empty() ? "" : ",") + name + "=" + to_string(value);
  }
  return text.empty() ? "(every flag at its default)" : text;
}

// The variants whose kernels spill registers to local memory, the most
// bytes first: the first kMaxListed, then how many more (manifest.json
// has every variant's spill_stores and spill_loads).
void print_spills(const std::vector<WorkItem>& items, const std::string& manifest_name) {
  constexpr size_t kMaxListed = 10;
  std::vector<const WorkItem*> spilling;
  for (const WorkItem& it : items) {
    if (it.error.empty() && (it.resources.spill_stores > 0 || it.resources.spill_loads > 0)) {
      spilling.push_back(&it);
    }
  }
  if (spilling.empty()) return;
  std::stable_sort(spilling.begin(), spilling.end(), [](const WorkItem* x, const WorkItem* y) {
    const int bx = x->resources.spill_stores + x->resources.spill_loads;
    const int by = y->resources.spill_stores + y->resources.spill_loads;
    if (bx != by) return bx > by;
    return x->signature.options.target.name() < y->signature.options.target.name();
  });
  std::printf("\n%zu variant(s) spill registers (bytes of spill stores / loads per thread):\n",
              spilling.size());
  for (size_t i = 0; i < spilling.size() && i < kMaxListed; ++i) {
    const WorkItem& it = *spilling[i];
    std::printf("  %-7s %-28s %5d B / %5d B  %s\n", it.signature.options.target.name().c_str(),
                it.signature.display_name().c_str(), it.resources.spill_stores,
                it.resources.spill_loads, changed_flags(*it.spec, it.signature.flags).c_str());
  }
  if (spilling.size() > kMaxListed) {
    std::printf("  ... and %zu more (%s lists every variant's spill_stores and spill_loads)\n",
                spilling.size() - kMaxListed, manifest_name.c_str());
  }
}

int print_summary(const std::vector<WorkItem>& items, const std::string& dir, double wall,
                  const std::string& manifest_name) {
  struct Row {
    int variants = 0, compiled = 0, cached = 0, failed = 0;
    double compile_s = 0;
    int max_regs = 0, spills = 0;
  };
  std::map<std::string, Row> rows;
  for (const WorkItem& it : items) {
    Row& r = rows[it.signature.options.target.name()];
    ++r.variants;
    if (!it.error.empty()) {
      ++r.failed;
      continue;
    }
    if (it.source == EntrySource::kCompiled) {
      ++r.compiled;
      r.compile_s += it.seconds;
    } else {
      ++r.cached;
    }
    r.max_regs = std::max(r.max_regs, it.resources.registers);
    if (it.resources.spill_stores > 0 || it.resources.spill_loads > 0) ++r.spills;
  }
  std::printf("\n%-8s %9s %9s %10s %7s %13s %9s %14s\n", "target", "variants", "compiled",
              "from cache", "failed", "compile time", "max regs", "with spills");
  int compiled = 0, failed = 0;
  for (const auto& [target, r] : rows) {
    std::printf("%-8s %9d %9d %10d %7d %11.1f s %9d %14d\n", target.c_str(), r.variants, r.compiled,
                r.cached, r.failed, r.compile_s, r.max_regs, r.spills);
    compiled += r.compiled;
    failed += r.failed;
  }
  print_spills(items, manifest_name);
  std::printf("cache:      %s (%.1f s wall)\n", dir.c_str(), wall);
  if (compiled == 0 && failed == 0) {
    std::printf("nothing compiled: all %zu variants were already in the cache\n", items.size());
  }
  for (const WorkItem& it : items) {
    if (!it.error.empty()) {
      std::fprintf(stderr, "\n%s %s failed:\n%s\n", it.signature.display_name().c_str(),
                   it.signature.options.target.name().c_str(), it.error.c_str());
    }
  }
  return failed == 0 ? 0 : 1;
}

// With a GPU: each preset of the attention spec, run and checked.
int check_presets(const std::vector<const Spec*>& specs, KernelCache& cache) {
  bool has_attention = false;
  for (const Spec* s : specs) has_attention |= s->family == attention_spec().family;
  if (!has_attention) return 0;
  std::printf("\nchecking the attention presets on the GPU against the CPU reference\n");
  std::vector<std::pair<std::string, FlagSet>> presets;
  for (const Preset& p : attention_spec().presets) {
    presets.emplace_back(p.name, resolve_preset(attention_spec(), p.name));
  }
  return check_on_gpu(presets, cache) == 0 ? 0 : 1;
}

// The cache directory exists (created if need be) and takes a new file:
// checked before compiling, so a bad --out costs nothing.
void require_writable_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    throw Error(ErrorKind::kArgument,
                "cannot use '" + dir + "' as the cache directory: it is not a directory");
  }
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir, ec)) {
    throw Error(ErrorKind::kArgument,
                "cannot create the cache directory '" + dir + "': " + ec.message());
  }
  const std::string probe = dir + "/.attnjit-write-probe." + std::to_string(::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) {
    throw Error(ErrorKind::kArgument, "cannot use '" + dir +
                                          "' as the cache directory: it is not writable (" +
                                          std::strerror(errno) + ")");
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

// --generic: the generic variants (generic_flags) of every flag set of the
// attention spec with the storage of a variant among the items (dtype,
// head dims, layout, K/V dtype, schedule), once each; the tier answers
// with them while a variant compiles (ATTNJIT_TIERED, docs/tiers.md). The
// modes a generic variant cannot switch off by its arguments (soft-cap,
// the sink mode, the clamp) take every value, so that any flag set of the
// same storage, in the matrix or not, finds its generic variant; a value
// the tuning rules refuse for that storage is left out.
void add_generic_variants(std::vector<WorkItem>& items) {
  std::set<std::string> have;
  const auto id = [](const Signature& sig) {
    return sig.canonical() + "@" + sig.options.target.name();
  };
  for (const WorkItem& it : items) have.insert(id(it.signature));
  const size_t count = items.size();
  for (size_t i = 0; i < count; ++i) {
    const Spec& spec = *items[i].spec;
    if (spec.family != attention_spec().family) continue;  // a user spec has its own
    // (Copies: the pushes below move the items.)
    const FlagSet flags = items[i].signature.flags;
    const auto options = items[i].signature.options;
    const AttentionFlags generic = generic_flags(AttentionFlags::from_flag_set(flags));
    for (const bool softcap : {false, true}) {
      for (const SinkMode sinks : {SinkMode::kNullLogit, SinkMode::kBiasKey0}) {
        for (const bool clamp : {false, true}) {
          AttentionFlags g = generic;
          g.softcap = softcap;
          g.sinks = sinks;
          g.mm_clamp = clamp;
          try {
            Signature sig = make_signature(spec, g.to_flag_set(Schedule::of(flags)), options);
            if (have.insert(id(sig)).second) items.push_back({&spec, std::move(sig)});
          } catch (const Error& e) {
            if (e.kind() != ErrorKind::kFlags) throw;  // refused for this storage
          }
        }
      }
    }
  }
}

// --user-vm: the expression VM's variant (expression_vm_spec) of the flags
// of every variant among the items (of the attention spec or a spec that
// extends it), once each; it answers for a user spec's variant while that
// compiles (ATTNJIT_USER_VM, docs/tiers.md).
void add_user_vm_variants(std::vector<WorkItem>& items) {
  const Spec& vm = expression_vm_spec();
  std::set<std::string> have;
  const auto id = [](const Signature& sig) {
    return sig.canonical() + "@" + sig.options.target.name();
  };
  const size_t count = items.size();
  for (size_t i = 0; i < count; ++i) {
    const Spec& spec = *items[i].spec;
    const std::string& family = spec.params_family.empty() ? spec.family : spec.params_family;
    if (family != attention_spec().family || spec.expression_vm) continue;
    const FlagSet& flags = items[i].signature.flags;
    const std::map<std::string, FlagValue> values(flags.values.begin(), flags.values.end());
    Signature sig = make_signature(vm, resolve_flags(vm, values), items[i].signature.options);
    if (have.insert(id(sig)).second) items.push_back({&vm, std::move(sig)});
  }
}

int run_build_cache(const BuildArgs& a) {
  std::vector<Spec> specs;
  const auto names = a.specs.empty() ? embedded_spec_names() : a.specs;
  for (const auto& n : names) specs.push_back(load_spec_argument(n));
  const Shard shard = a.shard.empty() ? Shard{} : parse_shard(a.shard);
  bool from_gpu = false;
  // A manifest without --target names its own targets.
  const std::vector<Target> targets = a.manifest.empty() || !a.targets.empty()
                                          ? targets_or_default(a.targets, &from_gpu)
                                          : std::vector<Target>{};
  CacheConfig config = CacheConfig::from_environment();
  if (!a.out.empty()) config.user_dir = a.out;
  config.aot_dirs.clear();
  config.no_jit = false;
  if (config.user_dir.empty()) {
    throw Error(ErrorKind::kArgument, "no cache directory: pass --out DIR");
  }
  std::vector<WorkItem> items;
  if (!a.manifest.empty()) {
    items = manifest_items(a.manifest, specs, names, a.targets);
  } else {
    // A matrix entry whose flags the spec has no kernel for on a target
    // (a tuning rule that says `unsupported`, e.g. head dims past 256 off
    // sm_90a) is skipped there, and counted.
    std::map<std::string, int> unsupported;
    for (const Spec& spec : specs) {
      for (const FlagSet& flags : variants_of(spec, a.presets_only)) {
        for (const Target& t : targets) {
          if (!unsupported_reason(spec, flags, t).empty()) {
            ++unsupported[t.name()];
            continue;
          }
          items.push_back({&spec, deployment_signature(spec, flags, t)});
        }
      }
    }
    for (const auto& [target, count] : unsupported) {
      std::printf("skipping %d variant(s) with no kernel on %s (`attnjit compile` on one says why)\n",
                  count, target.c_str());
    }
  }
  if (a.generic) add_generic_variants(items);
  if (a.user_vm) add_user_vm_variants(items);
  size_t all_items = items.size();
  if (shard.count > 1) {
    // A variant's place in the whole set sorted by (target, canonical
    // signature) decides its shard: the same on every machine given the
    // same specs, targets and environment, and the N shards partition it.
    std::vector<std::pair<std::string, std::string>> order;
    for (const WorkItem& it : items) {
      order.emplace_back(it.signature.options.target.name(), it.signature.canonical());
    }
    std::vector<size_t> index(items.size());
    for (size_t i = 0; i < index.size(); ++i) index[i] = i;
    std::sort(index.begin(), index.end(), [&](size_t x, size_t y) { return order[x] < order[y]; });
    std::vector<WorkItem> mine;
    for (size_t rank = shard.index; rank < index.size(); rank += shard.count) {
      mine.push_back(items[index[rank]]);
    }
    items = std::move(mine);
  }
  std::set<std::string> target_set;
  for (const WorkItem& it : items) target_set.insert(it.signature.options.target.name());
  std::string target_names;
  for (const std::string& t : target_set) target_names += " " + t;
  const std::string shard_note =
      shard.count > 1 ? fmt::format(" (shard {}/{} of {})", shard.index, shard.count, all_items)
                      : "";
  const std::string what =
      a.manifest.empty() ? fmt::format("{} spec(s)", specs.size()) : "'" + a.manifest + "'";
  if (a.dry_run) {
    std::printf("would build %zu variants%s of %s for%s%s (dry run: nothing compiled)\n",
                items.size(), shard_note.c_str(), what.c_str(), target_names.c_str(),
                from_gpu ? " (the local GPU)" : "");
    for (const WorkItem& it : items) {
      std::printf("  %-7s %-28s %s\n", it.signature.options.target.name().c_str(),
                  it.signature.display_name().c_str(), it.signature.flags.str().c_str());
    }
    return 0;
  }
  // Checked before any compile, after a dry run (which writes nothing).
  require_writable_dir(config.user_dir);
  KernelCache cache(config);
  const int jobs = a.jobs > 0 ? a.jobs : int(std::max(1u, std::thread::hardware_concurrency()));
  std::printf("building %zu variants%s of %s for%s%s into %s with %d jobs\n", items.size(),
              shard_note.c_str(), what.c_str(), target_names.c_str(),
              from_gpu ? " (the local GPU)" : "", config.user_dir.c_str(), jobs);
  const auto t0 = std::chrono::steady_clock::now();
  run_items(items, cache, jobs);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (cache.disk_disabled()) {
    std::fprintf(stderr,
                 "attnjit: error: the cache directory %s is not "
                 "writable; nothing was stored\n",
                 config.user_dir.c_str());
    return 1;
  }
  // A shard's manifest has its own name, so that copying the shards into
  // one directory keeps every one of them.
  const std::string manifest_name =
      shard.count > 1 ? fmt::format("manifest-shard-{}-of-{}.json", shard.index, shard.count)
                      : "manifest.json";
  write_manifest(config.user_dir, manifest_name, manifest_of(items));
  int rc = print_summary(items, config.user_dir, wall, manifest_name);
  if (rc == 0 && !a.no_check) {
    std::string why;
    if (!Driver::available(&why)) {
      std::printf("\nno GPU here (%s): skipped running and checking the kernels\n", why.c_str());
    } else if (!from_gpu) {
      std::printf(
          "\ntargets were given explicitly: run `attnjit check` to run "
          "them on this GPU\n");
    } else {
      std::vector<const Spec*> spec_ptrs;
      for (const Spec& s : specs) spec_ptrs.push_back(&s);
      rc = check_presets(spec_ptrs, cache);
    }
  }
  return rc;
}

}  // namespace

Runner add_build_cache(CLI::App& app) {
  auto a = std::make_shared<BuildArgs>();
  app.add_option("--spec", a->specs,
                 "Embedded spec names or YAML paths (default: every embedded spec)")
      ->check(non_empty());
  app.add_option("--target", a->targets,
                 std::string("Targets: ") + kTargetNames +
                     " (default: the local GPU's, else sm_80 and sm_90a)");
  app.add_option("-j,--jobs", a->jobs, "Parallel compiles, at least 1 (default, or 0: one per core)")
      ->check(job_count());
  app.add_option("-o,--out", a->out,
                 "Cache directory (default: $ATTNJIT_CACHE_DIR, "
                 "$XDG_CACHE_HOME/attnjit or ~/.cache/attnjit)")
      ->check(non_empty());
  auto* presets_only =
      app.add_flag("--presets-only", a->presets_only, "Only the presets, not the matrix");
  app.add_flag("--no-check", a->no_check, "Do not run and check the presets on the local GPU");
  app.add_flag("--dry-run", a->dry_run,
               "List the variants that would be built, one per target, and compile nothing");
  app.add_option("--shard", a->shard,
                 "K/N: build only the K-th of N disjoint shards (K from 0 to N-1) of the "
                 "variants sorted by target and signature; shard directories merge by copying")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            try {
              parse_shard(value);
            } catch (const Error& e) {
              return e.what();
            }
            return "";
          },
          "K/N", "shard"));
  app.add_flag("--generic", a->generic,
               "Also build the generic variants of each attention variant's storage, every "
               "mode a first call may ask for (the tier that answers while a variant "
               "compiles: ATTNJIT_TIERED)");
  app.add_flag("--user-vm", a->user_vm,
               "Also build the expression VM's variant of each variant's flags (the tier that "
               "answers for a user spec's variant while it compiles: ATTNJIT_USER_VM)");
  app.add_option("--manifest", a->manifest,
                 "Build exactly the variants recorded in this file (ATTNJIT_RECORD), for "
                 "--target when given, else for the targets it names")
      ->check(non_empty())
      ->excludes(presets_only);
  return [a] { return run_build_cache(*a); };
}

}  // namespace attnjit::cli

// `attnjit inspect` (a cache directory) and `attnjit specs` (the embedded
// specs).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>
#include <filesystem>
#include <system_error>

#include "attnjit/cache.h"
#include "attnjit/embedded.h"
#include "attnjit/error.h"
#include "attnjit/expr.h"
#include "commands.h"

namespace attnjit::cli {
namespace {

bool is_shard_name(const std::string& name) {
  return name.size() == 2 && std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// Whether `dir`, which holds no entry, is still recognisably a cache: a
// build-cache manifest, or a shard folder (two hex digits) holding nothing
// but what attnjit writes there (entries, lock files, publish temp files)
// or nothing at all. An empty `dir` is not.
bool looks_like_empty_cache(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  bool shard_seen = false;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name == "manifest.json" || (name.rfind("manifest-shard-", 0) == 0 &&
                                    it->path().extension() == ".json")) {
      return true;
    }
    std::error_code inner;
    if (!is_shard_name(name) || !it->is_directory(inner)) continue;
    for (fs::directory_iterator f(it->path(), inner); !inner && f != end; f.increment(inner)) {
      const fs::path& p = f->path();
      const std::string file = p.filename().string();
      const bool ours = p.extension() == ".ajk" || p.extension() == ".lock" ||
                        (file[0] == '.' && file.find(".tmp.") != std::string::npos);
      if (!ours) return false;
    }
    shard_seen = true;
  }
  return shard_seen;
}

int run_inspect(const std::string& dir_arg, bool quiet) {
  const bool explicit_dir = !dir_arg.empty();
  const std::string dir = explicit_dir ? dir_arg : CacheConfig::from_environment().user_dir;
  if (dir.empty()) {
    throw Error(ErrorKind::kArgument, "no cache directory is configured: pass DIR");
  }
  // A directory named on the command line must be one; the default one may
  // not exist yet on a machine where nothing has been compiled.
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(dir, ec);
  if (!std::filesystem::exists(st)) {
    if (explicit_dir) {
      throw Error(ErrorKind::kArgument, "cache directory '" + dir + "' does not exist");
    }
    std::printf("%s: no cache yet (nothing has been compiled into it): 0 entries\n", dir.c_str());
    return 0;
  }
  if (!std::filesystem::is_directory(st)) {
    throw Error(ErrorKind::kArgument, "'" + dir + "' is not a directory");
  }
  std::filesystem::directory_iterator probe(dir, ec);
  if (ec) {
    throw Error(ErrorKind::kArgument, "cannot read cache directory '" + dir + "': " + ec.message());
  }
  const std::vector<EntryReport> entries = scan_cache_dir(dir);
  // A directory with no entry must still look like a cache: `inspect` on
  // some other directory is a mistake, not an empty cache. (The default
  // directory may be empty: nothing has been compiled into it yet.)
  if (entries.empty() && !looks_like_empty_cache(dir)) {
    const bool empty = std::filesystem::is_empty(dir, ec);
    if (!explicit_dir && empty) {
      std::printf("%s: no cache yet (nothing has been compiled into it): 0 entries\n",
                  dir.c_str());
      return 0;
    }
    throw Error(ErrorKind::kArgument,
                "'" + dir + "' is not an attnjit cache directory: it " +
                    (empty ? std::string("is empty") : std::string("holds no cache entries")) +
                    " (a cache holds <2 hex digits>/<key>.ajk files; `attnjit build-cache "
                    "--out DIR` makes one)");
  }
  int bad = 0;
  size_t bytes = 0;
  for (const EntryReport& e : entries) {
    bytes += e.bytes;
    if (!e.ok) ++bad;
    if (quiet && e.ok) continue;
    std::printf("%-4s %.16s  %-28s %8zu B  %s\n", e.ok ? "ok" : "BAD", e.key.c_str(),
                e.display_name.c_str(), e.bytes,
                e.ok ? e.canonical_signature.c_str() : e.problem.c_str());
  }
  std::printf("%s: %zu entries, %d bad, %.1f MiB\n", dir.c_str(), entries.size(), bad,
              bytes / 1048576.0);
  return bad == 0 ? 0 : 1;
}

int run_specs(const std::vector<std::string>& files) {
  std::vector<std::pair<std::string, Spec>> specs;
  if (files.empty()) {
    for (const std::string& name : embedded_spec_names()) {
      specs.emplace_back(name, load_embedded_spec(name));
    }
  } else {
    // Given files: each is parsed and checked (an error names the file,
    // line and column, and the command fails).
    for (const std::string& file : files) specs.emplace_back(file, load_spec_argument(file));
  }
  for (const auto& [name, spec] : specs) {
    std::printf("%s: family %s, template %s, entry %s\n", name.c_str(), spec.family.c_str(),
                spec.template_path.c_str(), spec.entry.c_str());
    // A spec that extends lists what is its own: args, then tuning rules.
    const std::optional<Spec> base =
        spec.extends.empty() ? std::nullopt : std::optional<Spec>(load_embedded_spec(spec.extends));
    if (base) {
      std::printf("  extends %s; its own args:", spec.extends.c_str());
      const size_t inherited = base->args.size();
      size_t shown = 0;
      for (size_t i = inherited; i < spec.args.size(); ++i) {
        const ArgDecl& a = spec.args[i];
        if (!a.divisor_of.empty()) continue;  // hidden: the runtime fills it
        ++shown;
        std::printf(" %s (%s%s%s%s)", a.name.c_str(), to_string(a.type), a.per ? ", per " : "",
                    a.per ? to_string(*a.per) : "", a.sorted ? ", sorted" : "");
      }
      std::printf("%s\n", shown == 0 ? " none" : "");
    }
    if (spec.mask) std::printf("  mask   %s\n", spec.mask->canonical().c_str());
    if (spec.score) std::printf("  score  %s\n", spec.score->canonical().c_str());
    if (!spec.tune_as.empty()) {
      std::string tune_as;
      for (const auto& [name, value] : spec.tune_as) {
        tune_as += (tune_as.empty() ? "" : ",") + name + "=" + to_string(value);
      }
      std::printf("  tiles  as %s (tune_as)\n", tune_as.c_str());
    }
    if (base) {
      // Its own tuning rules come first (parse_own_rules), then the
      // extended spec's.
      const size_t inherited = base->tuning.rules.size();
      for (size_t i = 0; i + inherited < spec.tuning.rules.size(); ++i) {
        std::printf("  tiles  rule at %s, before %s's %zu\n",
                    spec.tuning.rules[i].loc.str().c_str(), spec.extends.c_str(), inherited);
      }
    }
    for (const FlagDecl& f : spec.flags) {
      std::string domain;
      for (auto v : f.int_values) domain += std::to_string(v) + " ";
      for (const auto& v : f.enum_values) domain += v + " ";
      std::printf("  flag   %-12s %-5s %-32s default %s\n", f.name.c_str(), to_string(f.type),
                  domain.c_str(), f.default_value ? to_string(*f.default_value).c_str() : "-");
    }
    for (const Preset& p : spec.presets) {
      std::printf("  preset %-26s %s\n", p.name.c_str(), p.doc.c_str());
    }
    const MatrixExpansion m = expand_matrix(spec);
    std::printf("  matrix %zu variants (%d illegal combinations dropped)\n", m.variants.size(),
                m.dropped_illegal);
    // What `attnjit build-cache` compiles per target: the matrix and the
    // presets it does not already cover.
    const size_t built = matrix_and_presets(spec).size();
    std::printf("  build-cache %zu variants per target (the matrix and %zu preset(s) outside it)\n",
                built, built - m.variants.size());
    // ... less those a tuning rule says have no kernel on a target.
    for (const Target& target : supported_targets()) {
      size_t skipped = 0;
      for (const FlagSet& flags : matrix_and_presets(spec)) {
        if (!unsupported_reason(spec, flags, target).empty()) ++skipped;
      }
      if (skipped > 0) {
        std::printf("  build-cache skips %zu on %s (no kernel there)\n", skipped,
                    target.name().c_str());
      }
    }
  }
  std::printf("embedded templates: %zu headers, digest %.16s\n", embedded_headers().size(),
              embedded_headers_digest().c_str());
  return 0;
}

}  // namespace

Runner add_inspect(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  auto quiet = std::make_shared<bool>(false);
  app.add_option("dir", *dir,
                 "Cache directory (default: the user cache directory); "
                 "one that does not exist or is not a cache is an error")
      ->check(non_empty());
  app.add_flag("-q,--quiet", *quiet, "Only list bad entries");
  return [dir, quiet] { return run_inspect(*dir, *quiet); };
}

Runner add_specs(CLI::App& app) {
  auto files = std::make_shared<std::vector<std::string>>();
  app.add_option("--spec", *files,
                 "Spec files (or embedded names) to list and validate instead of the embedded "
                 "specs");
  return [files] { return run_specs(*files); };
}

}  // namespace attnjit::cli

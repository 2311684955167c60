// `attnjit compile`: one variant, from a preset or flag assignments.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <system_error>

#include <unistd.h>

#include <fmt/format.h>

#include "attnjit/cache.h"
#include "attnjit/cache_key.h"
#include "attnjit/codegen.h"
#include "attnjit/error.h"
#include "attnjit/nvrtc.h"
#include "attnjit/nvrtc_version.h"
#include "commands.h"

namespace attnjit::cli {
namespace {

struct CompileArgs {
  std::string spec = "attention";
  std::string preset;
  std::string flags;
  std::string tuning;
  std::string target = "sm_90a";
  std::string emit = "none";
  std::string out;
  bool no_cache = false;
};

void write_or_print(const std::string& text, const std::string& path) {
  if (path.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return;
  }
  errno = 0;
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  if (!f) {
    throw Error(ErrorKind::kArgument, "cannot write '" + path + "'" +
                                          (errno != 0 ? std::string(": ") + std::strerror(errno)
                                                      : std::string()));
  }
}

void print_resources(const CompiledKernel& k) {
  const ResourceUsage& r = k.resources;
  std::printf(
      "resources:  %d registers, %d B static smem, %d B dynamic smem, "
      "%d threads, spills %d B stores / %d B loads, stack %d B\n",
      r.registers, r.static_smem, r.dynamic_smem, r.threads, r.spill_stores, r.spill_loads,
      r.stack_frame);
}

// -o FILE: its folder must exist and FILE must not be a folder; said
// before anything is compiled.
void check_output_path(const CompileArgs& a) {
  if (a.out.empty()) {
    if (a.emit == "cubin") throw Error(ErrorKind::kArgument, "--emit cubin needs --out FILE");
    return;
  }
  if (a.emit == "none") {
    throw Error(ErrorKind::kArgument, "-o/--out needs --emit source, ptx or cubin");
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(a.out, ec)) {
    throw Error(ErrorKind::kArgument, "cannot write '" + a.out + "': it is a directory");
  }
  const fs::path parent = fs::path(a.out).parent_path();
  if (parent.empty()) return;
  if (!fs::exists(parent, ec)) {
    throw Error(ErrorKind::kArgument,
                "cannot write '" + a.out + "': directory '" + parent.string() + "' does not exist");
  }
  if (!fs::is_directory(parent, ec)) {
    throw Error(ErrorKind::kArgument,
                "cannot write '" + a.out + "': '" + parent.string() + "' is not a directory");
  }
  if (::access(parent.c_str(), W_OK) != 0) {
    throw Error(ErrorKind::kArgument, "cannot write '" + a.out + "': directory '" +
                                          parent.string() + "' is not writable");
  }
}

int run_compile(const CompileArgs& a) {
  check_output_path(a);
  const Spec spec = load_spec_argument(a.spec);
  FlagSet flags = !a.preset.empty() ? resolve_preset(spec, a.preset)
                                    : resolve_flags(spec, parse_flag_assignments(spec, a.flags));
  const Target target = parse_target(a.target);
  const std::map<std::string, int64_t> overrides = parse_tuning_overrides(a.tuning, "--tuning");
  // Without --tuning, the signature the runtime makes ($ATTNJIT_TUNING's
  // values included).
  const Signature sig = deployment_signature(spec, flags, target, overrides);
  const GeneratedSource source = generate_source(spec, sig);
  const CacheKey key = make_cache_key(sig, source.key_text());
  std::FILE* info = a.out.empty() && a.emit != "none" ? stderr : stdout;
  std::fprintf(info, "variant:    %s\nsignature:  %s\nkey:        %s\n", sig.display_name().c_str(),
               sig.canonical().c_str(), key.hex.c_str());
  if (a.emit == "source") {
    write_or_print(source.text, a.out);
    return 0;
  }
  if (a.emit == "params") {  // the kernel ABI: the generated params struct
    write_or_print(source.headers.at(0).contents, a.out);
    return 0;
  }
  CompiledKernel kernel;
  if (a.no_cache) {
    kernel = compile_source(source, sig.options);
    std::fprintf(info, "compiled:   %.0f ms (NVRTC %s)\n", kernel.compile_seconds * 1e3,
                 nvrtc_version().c_str());
  } else {
    KernelCache& cache = KernelCache::global();
    const LookupResult found = cache.get(spec, sig);
    kernel = found.entry->kernel;
    std::fprintf(info, "from:       %s\n", to_string(found.source));
  }
  if (a.emit == "ptx") {
    write_or_print(kernel.ptx, a.out);
  } else if (a.emit == "cubin") {
    write_or_print(kernel.cubin, a.out);  // (--out checked first)
  }
  if (info == stdout || a.emit == "none") print_resources(kernel);
  return 0;
}

}  // namespace

Runner add_compile(CLI::App& app) {
  auto a = std::make_shared<CompileArgs>();
  app.add_option("--spec", a->spec, "Embedded spec name or YAML path")
      ->capture_default_str()
      ->check(non_empty());
  auto* preset = app.add_option("--preset", a->preset, "A preset of the spec")->check(non_empty());
  app.add_option("--flags", a->flags, "Flag assignments, e.g. \"head_dim=128,causal=true\"")
      ->excludes(preset);
  app.add_option("--tuning", a->tuning,
                 "Override the spec's tile configuration, e.g. \"block_m=64,wgmma=1\"");
  app.add_option("--target", a->target, kTargetNames)->capture_default_str();
  app.add_option("--emit", a->emit, "none, source, params (the kernel's parameter struct), ptx or cubin")
      ->check(one_of({"none", "source", "params", "ptx", "cubin"}))
      ->capture_default_str();
  app.add_option("-o,--out", a->out, "Write what --emit selects to this file")->check(non_empty());
  app.add_flag("--no-cache", a->no_cache, "Compile with NVRTC directly, bypassing the cache");
  return [a] { return run_compile(*a); };
}

}  // namespace attnjit::cli

// The JIT's own costs: cold NVRTC compile per variant, disk-cache hit,
// in-memory hit, the first call of a new variant with its generic tier
// cached (docs/tiers.md), the same for a user spec's variant with the
// expression VM's variant cached, the first paged decode in a fresh cache,
// the first call in a fresh process with the variant on disk, and the host time of a launch against a bare
// cuLaunchKernel of an empty kernel. Prints a table, writes JSON (argv[1]).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attnjit/attention.h"
#include "attnjit/cache.h"
#include "attnjit/codegen.h"
#include "attnjit/driver.h"
#include "attnjit/nvrtc.h"
#include "attnjit/nvrtc_version.h"
#include "attnjit/spec.h"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::vector<attnjit::AttentionFlags> sample_variants() {
  using namespace attnjit;
  std::vector<AttentionFlags> out;
  AttentionFlags a;  // D128 plain
  out.push_back(a);
  a.causal = true;
  out.push_back(a);
  AttentionFlags mimo;
  mimo.head_dim = 80;
  mimo.window = true;
  mimo.sinks = SinkMode::kBiasKey0;
  out.push_back(mimo);
  AttentionFlags oss;
  oss.head_dim = 64;
  oss.causal = oss.window = true;
  oss.sinks = SinkMode::kNullLogit;
  out.push_back(oss);
  AttentionFlags gemma;
  gemma.head_dim = 256;
  gemma.causal = gemma.window = gemma.mm_prefix = gemma.mm_clamp = true;
  out.push_back(gemma);
  return out;
}

// The child of the fresh-process measurement: a new process (its CUDA
// context made before the clock, as an engine's has one) asks for causal
// D128 with the variant on disk in `dir`; prints one JSON line: the
// embedded spec's load (its pack), then get() and the fetch of the variant (on a
// GPU its module's load too).
int fresh_first_call(const std::string& dir) {
  using namespace attnjit;
  const bool gpu = Driver::available();
  const Target target = gpu ? current_device_target() : parse_target("sm_90a");
  const auto t0 = Clock::now();
  const Spec& spec = attention_spec();
  (void)spec;
  const double spec_s = seconds_since(t0);
  const auto t1 = Clock::now();
  CacheConfig cfg;
  cfg.user_dir = dir;
  KernelCache cache(cfg);
  AttentionFlags f = sample_variants()[1];
  auto kernel = AttentionKernel::get(f, cache, &target);
  Kernel& k = kernel->kernel();
  if (gpu) k.threads();
  const double fetch_s = seconds_since(t1);
  const nlohmann::json line = {{"spec_ms", spec_s * 1e3},
                               {"fetch_ms", fetch_s * 1e3},
                               {"total_ms", (spec_s + fetch_s) * 1e3},
                               {"source", to_string(kernel->source())}};
  std::printf("%s\n", line.dump().c_str());
  return 0;
}

// Runs fresh_first_call in `runs` child processes of this program.
std::vector<nlohmann::json> fresh_first_calls(const std::string& dir, int runs) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::vector<nlohmann::json> out;
  if (self.find('\'') != std::string::npos || dir.find('\'') != std::string::npos) {
    std::printf("fresh first call: not measured (a quote in %s or %s)\n", self.c_str(),
                dir.c_str());
    return out;
  }
  for (int i = 0; i < runs; ++i) {
    const std::string command = "'" + self + "' --fresh-first-call '" + dir + "'";
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) break;
    std::string text;
    char buffer[512];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) text += buffer;
    if (pclose(pipe) != 0 || text.empty()) {
      std::printf("fresh first call: the child failed: %s\n", text.c_str());
      break;
    }
    nlohmann::json line = nlohmann::json::parse(text);
    if (line["source"] != "disk") {
      std::printf("fresh first call: the child's variant came from %s, not the disk\n",
                  line["source"].get<std::string>().c_str());
      break;
    }
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace attnjit;
  if (argc == 3 && std::string(argv[1]) == "--fresh-first-call") return fresh_first_call(argv[2]);
  // NVRTC keeps ptxas results in the CUDA compute cache (~/.nv), keyed by
  // the PTX: with it on, a "cold" compile of a PTX seen before on the
  // machine takes 40-70 ms on the H200 host and ptxas reports nothing. A
  // cold compile here is one no cache answers.
  setenv("CUDA_CACHE_DISABLE", "1", 1);
  const std::string json_path = argc > 1 ? argv[1] : "jit_costs.json";
  const std::string dir = (std::filesystem::temp_directory_path() / "attnjit-jit-costs").string();
  std::filesystem::remove_all(dir);
  const bool gpu = Driver::available();
  const Target target = gpu ? current_device_target() : parse_target("sm_90a");
  nlohmann::json out = {{"target", target.name()},
                        {"nvrtc", nvrtc_version()},
                        {"cuda_compute_cache", "disabled (CUDA_CACHE_DISABLE=1)"}};

  // Cold compiles: NVRTC on the generated source of each variant (what a
  // cache miss costs), then stored into the disk cache for the next part.
  std::vector<double> cold;
  {
    CacheConfig cfg;
    cfg.user_dir = dir;
    KernelCache cache(cfg);
    const Spec& spec = attention_spec();
    for (const AttentionFlags& f : sample_variants()) {
      const Signature sig = make_signature(spec, resolve_flags(spec, f.to_flag_map()),
                                           CompileOptions::from_environment(target));
      GeneratedSource src = generate_source(spec, sig);
      // A comment unique to this run, so that no cache keyed by the source
      // text can answer either.
      src.text += fmt::format("// cold-compile nonce {}\n",
                              std::chrono::steady_clock::now().time_since_epoch().count());
      const auto t0 = Clock::now();
      const CompiledKernel k = compile_source(src, sig.options);
      cold.push_back(seconds_since(t0));
      std::printf("cold compile  d%-3d %-10s %8.1f ms  (%zu B cubin, %d regs)\n", f.head_dim,
                  to_string(f.sinks), cold.back() * 1e3, k.cubin.size(), k.resources.registers);
      const LookupResult r = cache.get(spec, sig);
      (void)r;
    }
  }
  // Disk hits: a fresh cache object (empty memory) over the same directory.
  // Goes through the cache directly: AttentionKernel memoizes per cache.
  std::vector<double> disk;
  {
    for (int rep = 0; rep < 5; ++rep) {
      CacheConfig cfg;
      cfg.user_dir = dir;
      KernelCache cache(cfg);
      for (const AttentionFlags& f : sample_variants()) {
        const Spec& spec = attention_spec();
        const Signature sig = make_signature(spec, resolve_flags(spec, f.to_flag_map()),
                                             CompileOptions::from_environment(target));
        const auto t0 = Clock::now();
        const LookupResult r = cache.get(spec, sig);
        disk.push_back(seconds_since(t0));
        if (r.source == EntrySource::kCompiled) std::printf("unexpected compile\n");
      }
    }
  }
  // The first call in a fresh process with the variant on disk (what an
  // engine's first call costs after the README's set-up built the cache).
  nlohmann::json fresh = nlohmann::json::array();
  {
    std::vector<double> spec, fetch, total;
    for (const nlohmann::json& r : fresh_first_calls(dir, 7)) {
      spec.push_back(r["spec_ms"]);
      fetch.push_back(r["fetch_ms"]);
      total.push_back(r["total_ms"]);
      fresh.push_back(r);
    }
    out["fresh_process_first_call"] = fresh;
    if (!total.empty()) out["fresh_process_first_call_ms_median"] = median(total);
    std::printf("fresh process first call: %.2f ms (the embedded spec's load %.2f, get and fetch "
                "from disk %.2f; medians of %zu)\n",
                median(total), median(spec), median(fetch), total.size());
  }
  // Memory hits through the typed API (the engine's path).
  std::vector<double> memory;
  {
    CacheConfig cfg;
    cfg.user_dir = dir;
    static KernelCache cache(cfg);
    const AttentionFlags f = sample_variants()[1];
    AttentionKernel::get(f, cache, &target);
    for (int rep = 0; rep < 20; ++rep) {
      const auto t0 = Clock::now();
      for (int i = 0; i < 10000; ++i) AttentionKernel::get(f, cache, &target);
      memory.push_back(seconds_since(t0) / 10000);
    }
  }
  // The first call of a variant no cache holds, with its generic variant
  // in the disk cache and tiering on: get() and the fetch of its variant
  // (two sources generated, two lookups, the generic entry read) and, on a
  // GPU, the generic module's load; the variant's own compile goes on in the background (waited for
  // after the clock stops, so the cache outlives it).
  std::vector<double> tiered;
  {
    const std::string tier_dir = dir + "-tier";
    std::filesystem::remove_all(tier_dir);
    CacheConfig cfg;
    cfg.user_dir = tier_dir;
    {
      KernelCache builder(cfg);
      for (const AttentionFlags& f : sample_variants()) {
        AttentionKernel::get(generic_flags(f), builder, &target)->wait_specialized();
      }
    }
    setenv("ATTNJIT_TIERED", "1", 1);
    KernelCache cache(cfg);
    for (const AttentionFlags& f : sample_variants()) {
      if (generic_flags(f).canonical_text() == f.canonical_text()) continue;
      const auto t0 = Clock::now();
      auto kernel = AttentionKernel::get(f, cache, &target);
      Kernel& first = kernel->kernel();  // the fetch: the generic tier's entry read
      if (gpu) first.threads();          // loads the module into the context
      tiered.push_back(seconds_since(t0));
      std::printf("tiered first  d%-3d %-10s %8.2f ms  (%s)\n", f.head_dim, to_string(f.sinks),
                  tiered.back() * 1e3,
                  kernel->tier() == AttentionKernel::Tier::kGeneric ? "generic" : "specialized");
      kernel->wait_specialized();
    }
    unsetenv("ATTNJIT_TIERED");
    std::filesystem::remove_all(tier_dir);
  }
  // The first call of a user spec's variant (specs/examples, each preset)
  // that no cache holds, with the expression VM's variant of its flags on
  // disk and ATTNJIT_USER_VM=1: get_user (the spec's programs compiled,
  // two lookups, the VM entry read) and, on a GPU, the VM module's load;
  // the variant's own compile goes on in the background (waited for after
  // the clock stops).
  std::vector<double> user_vm;
  {
    const std::string vm_dir = dir + "-user-vm";
    std::filesystem::remove_all(vm_dir);
    CacheConfig cfg;
    cfg.user_dir = vm_dir;
    const Spec& vm = expression_vm_spec();
    const std::shared_ptr<const Spec> vm_ptr(std::shared_ptr<const Spec>(), &vm);
    std::vector<std::pair<std::shared_ptr<const Spec>, FlagSet>> work;
    for (const auto& entry : std::filesystem::directory_iterator(ATTNJIT_SOURCE_DIR "/specs/examples")) {
      if (entry.path().extension() != ".yaml") continue;
      auto spec = std::make_shared<const Spec>(load_spec_file(entry.path().string()));
      for (const Preset& preset : spec->presets) {
        work.emplace_back(spec, resolve_flags(*spec, preset.flags));
      }
    }
    {
      KernelCache builder(cfg);
      for (const auto& [spec, flags] : work) {
        const std::map<std::string, FlagValue> values(flags.values.begin(), flags.values.end());
        AttentionKernel::get_user(vm_ptr, resolve_flags(vm, values), builder, &target)
            ->wait_specialized();
      }
    }
    setenv("ATTNJIT_USER_VM", "1", 1);
    KernelCache cache(cfg);
    for (const auto& [spec, flags] : work) {
      const auto t0 = Clock::now();
      auto kernel = AttentionKernel::get_user(spec, flags, cache, &target);
      Kernel& first = kernel->kernel();  // the fetch: the VM variant's entry read
      if (gpu) first.threads();
      user_vm.push_back(seconds_since(t0));
      std::printf("user VM first %-22s %8.2f ms  (%s)\n", spec->family.c_str(),
                  user_vm.back() * 1e3,
                  kernel->tier() == AttentionKernel::Tier::kGeneric ? "VM" : "specialized");
      kernel->wait_specialized();
    }
    unsetenv("ATTNJIT_USER_VM");
    std::filesystem::remove_all(vm_dir);
  }
  // The first paged decode (pages of 16 keys) of a variant no cache holds,
  // in a fresh memory-only cache with tiering off: get() and the fetch of
  // the variant the decode runs (the split sibling's small_pages sibling),
  // then, apart, the kernel's own variant, which a decode never runs (a
  // get() that compiled it, as before lazy fetching, paid both).
  nlohmann::json first_decodes = nlohmann::json::array();
  {
    setenv("ATTNJIT_TIERED", "0", 1);
    struct Decode {
      const char* name;
      int head_dim, batch, keys, heads_q, heads_kv;
    };
    for (const Decode& d : {Decode{"decode_64x8k_d128_p16", 128, 64, 8192, 32, 8},
                            Decode{"decode_8x32k_d64_p16", 64, 8, 32768, 64, 8}}) {
      KernelCache cache{CacheConfig{}};
      AttentionFlags f;
      f.head_dim = d.head_dim;
      f.causal = true;
      f.kv_layout = KvLayout::kPaged;
      AttentionArgs a;
      a.num_seqs = d.batch;
      a.num_heads_q = d.heads_q;
      a.num_heads_kv = d.heads_kv;
      a.total_q = d.batch;
      a.max_seqlen_q = 1;
      a.max_seqlen_k = d.keys;
      a.page_size = 16;
      const auto t0 = Clock::now();
      auto kernel = AttentionKernel::get(f, cache, &target);
      Kernel& runs = kernel->kernel_for(a);
      if (gpu) runs.threads();
      const double first = seconds_since(t0);
      const uint64_t compiles = cache.stats().compiles;
      const auto t1 = Clock::now();
      kernel->kernel();
      const double own = seconds_since(t1);
      std::printf("first decode  %-24s %8.1f ms  (%llu compile%s; the unused own variant %.1f ms)\n",
                  d.name, first * 1e3, static_cast<unsigned long long>(compiles),
                  compiles == 1 ? "" : "s", own * 1e3);
      first_decodes.push_back({{"problem", d.name}, {"first_decode_s", first},
                               {"compiles", compiles}, {"own_variant_s", own},
                               {"variant", runs.name()}});
    }
    unsetenv("ATTNJIT_TIERED");
  }
  out["first_decode"] = first_decodes;
  const double user_vm_ms = median(user_vm) * 1e3;
  out["user_vm_first_call_ms_median"] = user_vm_ms;
  out["user_vm_first_call_s"] = user_vm;
  const double cold_ms = median(cold) * 1e3, disk_ms = median(disk) * 1e3,
               mem_us = median(memory) * 1e6, tiered_ms = median(tiered) * 1e3;
  out["tiered_first_call_ms_median"] = tiered_ms;
  out["tiered_first_call_s"] = tiered;
  out["cold_compile_ms_median"] = cold_ms;
  out["cold_compile_s"] = cold;
  out["disk_hit_ms_median"] = disk_ms;
  out["memory_hit_us_median"] = mem_us;
  std::printf("\n%-28s %12s %10s\n", "JIT cost", "measured", "target");
  std::printf("%-28s %9.1f ms %10s\n", "cold compile (median)", cold_ms, "<= 1000 ms");
  std::printf("%-28s %9.3f ms %10s\n", "disk-cache hit (median)", disk_ms, "<= 1 ms");
  std::printf("%-28s %9.3f us %10s\n", "memory hit (median)", mem_us, "<= 1 us");
  std::printf("%-28s %9.2f ms %10s\n", "tiered first call (median)", tiered_ms, "<= 5 ms");
  if (out.contains("fresh_process_first_call_ms_median")) {
    std::printf("%-28s %9.2f ms %10s\n", "fresh-process first call",
                out["fresh_process_first_call_ms_median"].get<double>(), "<= 5 ms");
  }
  std::printf("%-28s %9.2f ms %10s\n", "user VM first call (median)", user_vm_ms, "<= 5 ms");
  std::ofstream(json_path) << out.dump(2) << "\n";
  return 0;
}

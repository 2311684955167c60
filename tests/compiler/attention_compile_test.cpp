// Every variant of the attention spec's matrix and presets compiles with
// NVRTC for sm_80 and sm_90a, carries its launch info, asks for no more
// shared memory per block than the target has, and (warpgroup kernels
// that rebalance registers) starts with the registers of the blocks per SM
// its shared memory allows.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "attnjit/codegen.h"
#include "attnjit/error.h"
#include "attnjit/nvrtc.h"
#include "attnjit/signature.h"
#include "attnjit/spec.h"

namespace attnjit {
namespace {

// Opt-in dynamic shared memory per block, bytes.
int smem_limit(const Target& t) {
  if (t.sm == 80) return 166912;
  if (t.sm == 86 || t.sm == 89) return 101376;
  return 232448;  // sm_90
}

// Shared memory of one SM, bytes.
int smem_per_sm(const Target& t) {
  if (t.sm == 80) return 167936;
  if (t.sm == 86 || t.sm == 89) return 102400;
  return 233472;  // sm_90
}

TEST(AttentionCompile, EveryMatrixVariantCompilesForSm80AndSm90a) {
  const Spec spec = load_embedded_spec("attention");
  const std::vector<FlagSet> variants = matrix_and_presets(spec);
  std::vector<Signature> work;
  for (const char* target : {"sm_80", "sm_90a"}) {
    for (const FlagSet& f : variants) {
      work.push_back(
          make_signature(spec, f, CompileOptions::from_environment(parse_target(target))));
    }
  }
  std::atomic<size_t> next{0};
  std::mutex mutex;
  std::vector<std::string> failures;
  auto worker = [&] {
    for (size_t i = next++; i < work.size(); i = next++) {
      const Signature& sig = work[i];
      std::string problem;
      try {
        const CompiledKernel k = compile_source(generate_source(spec, sig), sig.options);
        if (k.cubin.size() < 4 || k.cubin.compare(0, 4,
                                                  "\x7f"
                                                  "ELF") != 0)
          problem = "no ELF cubin";
        if (k.resources.threads <= 0) problem = "no launch info";
        // The warpgroup kernels move registers from the producer to the
        // consumers (setmaxnreg) assuming the kernel starts with the launch
        // bound's share; with fewer, setmaxnreg.inc would wait forever.
        // The blocks per SM the launch bound asks for: min_blocks, or as
        // many as the target's shared memory holds (the kernel's own
        // static and dynamic bytes and the driver's 1 KiB reserve).
        const int per_block =
            std::max(0, k.resources.static_smem) + std::max(0, k.resources.dynamic_smem) + 1024;
        const int fit = std::max(1, smem_per_sm(sig.options.target) / per_block);
        const int blocks = std::min(int(sig.tuning_value("min_blocks")), fit);
        const int share = std::min(255, 65536 / (k.resources.threads * blocks) / 8 * 8);
        // (The fp8 decode block has no producer warpgroup and rebalances
        // nothing: tile_config.cuh, mma_decode.)
        const bool decode_block = sig.tuning_value("wgmma") != 0 &&
                                  sig.flags.get_name("kv_dtype") == "fp8_e4m3" &&
                                  sig.flags.get_bool("split_kv") &&
                                  (sig.flags.get_int("head_dim") == 64 ||
                                   sig.flags.get_int("head_dim") == 128);
        if (sig.tuning_value("wgmma") != 0 && !decode_block && sig.options.max_registers == 0 &&
            k.resources.registers >= 0 && share < 232 && k.resources.registers != share) {
          problem = "uses " + std::to_string(k.resources.registers) +
                    " registers, not the launch bound's share " + std::to_string(share);
        }
        if (k.resources.dynamic_smem > smem_limit(sig.options.target)) {
          problem = "dynamic shared memory " + std::to_string(k.resources.dynamic_smem) +
                    " B exceeds the target's " + std::to_string(smem_limit(sig.options.target));
        }
      } catch (const Error& e) {
        problem = e.what();
      }
      if (!problem.empty()) {
        std::lock_guard<std::mutex> lock(mutex);
        failures.push_back(sig.canonical() + ": " + problem);
      }
    }
  };
  std::vector<std::thread> threads;
  const unsigned n = std::max(2u, std::thread::hardware_concurrency());
  for (unsigned t = 0; t < n; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  std::printf("compiled %zu variants for sm_80 and sm_90a\n", work.size());
  for (const auto& f : failures) ADD_FAILURE() << f;
}

}  // namespace
}  // namespace attnjit

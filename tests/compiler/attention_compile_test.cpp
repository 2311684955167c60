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

#include <fmt/format.h>

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

// Compiles every signature of `work` on all cores and returns
// "signature: problem" for each whose kernel `problem_of` finds fault with
// (an empty string: none) or whose compile throws.
template <class ProblemOf>
std::vector<std::string> compile_all(const Spec& spec, const std::vector<Signature>& work,
                                     const ProblemOf& problem_of) {
  std::atomic<size_t> next{0};
  std::mutex mutex;
  std::vector<std::string> failures;
  auto worker = [&] {
    for (size_t i = next++; i < work.size(); i = next++) {
      const Signature& sig = work[i];
      std::string problem;
      try {
        problem = problem_of(sig, compile_source(generate_source(spec, sig), sig.options));
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
  return failures;
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
  const auto failures = compile_all(spec, work, [&](const Signature& sig, const CompiledKernel& k) {
    std::string problem;
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
    const bool decode_block = sig.tuning_value("decode_mma") != 0;
    if (sig.tuning_value("wgmma") != 0 && !decode_block && sig.options.max_registers == 0 &&
        k.resources.registers >= 0 && share < 232 && k.resources.registers != share) {
      problem = "uses " + std::to_string(k.resources.registers) +
                " registers, not the launch bound's share " + std::to_string(share);
    }
    if (k.resources.dynamic_smem > smem_limit(sig.options.target)) {
      problem = "dynamic shared memory " + std::to_string(k.resources.dynamic_smem) +
                " B exceeds the target's " + std::to_string(smem_limit(sig.options.target));
    }
    return problem;
  });
  std::printf("compiled %zu variants for sm_80 and sm_90a\n", work.size());
  for (const auto& f : failures) ADD_FAILURE() << f;
}

// The decode block (tuning param decode_mma; the fp8 split rules take it; 2:
// swapped): every
// flag it serves, over e4m3 and 16-bit K/V, compiles for sm_90a at the
// ring depths and key tiles tests/gpu/decode_block_test.cpp runs, as the
// 160-thread block it is meant to be, with no spills (the launch bound
// gives two blocks per SM 168 registers: ten warps over the four
// schedulers), and with no warpgroup MMA in it. A config whose ring does
// not fit a block's shared memory is a compile error that says so.
TEST(AttentionCompile, DecodeBlockCompilesWithoutSpills) {
  const Spec spec = load_embedded_spec("attention");
  const CompileOptions options = CompileOptions::from_environment(parse_target("sm_90a"));
  const char* flag_sets[] = {
      "causal=true",
      "causal=true,window=true,sinks=null_logit",
      "causal=true,window=true,mm_prefix=true,mm_clamp=true,sinks=bias_key0",
      "causal=true,window=true,mm_prefix=true,return_lse=true",
      "dtype=fp16,softcap=true,return_lse=true,sinks=null_logit",
  };
  std::vector<Signature> work;
  for (const char* kv : {"fp8_e4m3", "same"}) {
    for (const char* layout : {"contiguous", "paged"}) {
      for (const int d : {64, 128}) {
        for (const char* flags : flag_sets) {
          // (D 128 fp8 at 64 keys spills 36-68 B; 16-bit K/V at two blocks
          // per SM spill 12-76 B with spans or a window: one block then.)
          const int block_n = d == 64 ? 64 : 32;
          const std::string text = fmt::format(
              "{},head_dim={},kv_dtype={},split_kv=true,kv_layout={}", flags, d, kv, layout);
          const FlagSet set = resolve_flags(spec, parse_flag_assignments(spec, text));
          const int blocks = kv == std::string("same") ? 1 : 2;
          for (const int stages : {8, 3}) {
            work.push_back(make_signature(spec, set, options,
                                          {{"decode_mma", 1},
                                           {"block_m", 64},
                                           {"block_n", block_n},
                                           {"stages", stages},
                                           {"min_blocks", blocks}}));
          }
          // fp8: the spec's own rule (the swapped block in groups of 8
          // rows, 32 to a tile, its ring by layout).
          if (kv == std::string("fp8_e4m3")) work.push_back(make_signature(spec, set, options, {}));
          // Swapped (decode_mma 2, block_m 8), at the ring
          // tests/gpu/decode_block_test.cpp runs it with.
          work.push_back(make_signature(spec, set, options,
                                        {{"decode_mma", 2},
                                         {"block_m", 8},
                                         {"block_n", block_n},
                                         {"stages", 8},
                                         {"min_blocks", blocks}}));
          // fp8, swapped in one group of 8 rows, at the rules' ring.
          if (kv == std::string("fp8_e4m3")) {
            work.push_back(make_signature(spec, set, options, {{"block_m", 8}}));
          }
        }
      }
    }
  }
  const auto failures = compile_all(spec, work, [](const Signature& sig, const CompiledKernel& k) {
    if (k.resources.threads != 160) {
      return "launches " + std::to_string(k.resources.threads) + " threads, not 160";
    }
    if (k.resources.spill_stores != 0 || k.resources.spill_loads != 0) {
      return "spills " + std::to_string(k.resources.spill_stores) + " B stores, " +
             std::to_string(k.resources.spill_loads) + " B loads";
    }
    if (k.ptx.find("wgmma.mma_async") != std::string::npos) {
      return std::string("has a warpgroup MMA");
    }
    const bool swapped = sig.tuning_value("decode_mma") == 2;
    if (swapped != (k.ptx.find("movmatrix") != std::string::npos)) {
      return std::string(swapped ? "swapped, without movmatrix" : "movmatrix, not swapped");
    }
    return std::string();
  });
  EXPECT_EQ(work.size(), 160u);
  for (const auto& f : failures) ADD_FAILURE() << f;
  // 16-bit K/V at D 128, 64-key tiles, 8 stages: 279 KB of ring.
  const Signature too_big = make_signature(
      spec,
      resolve_flags(spec, parse_flag_assignments(spec, "head_dim=128,split_kv=true,causal=true")),
      options, {{"decode_mma", 1}, {"block_m", 64}, {"block_n", 64}, {"stages", 8}});
  try {
    compile_source(generate_source(spec, too_big), too_big.options);
    ADD_FAILURE() << "a decode block over 227 KiB compiled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("decode block: the ring, the Q tiles and the barriers"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace attnjit

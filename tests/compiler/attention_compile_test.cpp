// A spread sample of the attention spec's matrix and presets (every variant
// is compiled by the main job, `attnjit build-cache`, not here) compiles with
// NVRTC, carries its launch info, asks for no more shared memory per block
// than the target has, and (warpgroup kernels that rebalance registers)
// starts with the registers of the blocks per SM its shared memory allows;
// every rule of the tuning table is among what compiles.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

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

// "" for a kernel without spills, else what it spills.
std::string spills(const CompiledKernel& k) {
  if (k.resources.spill_stores == 0 && k.resources.spill_loads == 0) return "";
  return "spills " + std::to_string(k.resources.spill_stores) + " B stores, " +
         std::to_string(k.resources.spill_loads) + " B loads";
}

// The variants compiled by MatrixSampleCompilesAndCoversEveryTuningRule,
// chosen without compiling anything, the same on every run:
//  - every kStride-th of the matrix-and-presets variants for sm_80 and
//    sm_90a in turn (the spec's order, sm_80's then sm_90a's);
//  - the first variant of each (target, head_dim, kv_layout, kv_dtype) the
//    above missed;
//  - for each tuning rule no variant above resolves to, the first variant
//    that does, on sm_80, sm_90a, sm_86, sm_89 or sm_90 (the portable
//    Hopper target: the rules without `targets`), or else (a rule for
//    flags outside the matrix) the variant made of the rule's own `when`.
// Variants a rule says are `unsupported` on a target are not compiled
// there; such a rule counts as reached when some variant meets it.
// `unreached` gets the rules none of these resolves to: shadowed ones.
std::vector<Signature> matrix_sample(const Spec& spec, std::vector<std::string>* unreached) {
  constexpr size_t kStride = 17;
  const std::vector<FlagSet> variants = matrix_and_presets(spec);
  const auto signature = [&](const FlagSet& flags, const char* target) {
    return make_signature(spec, flags, CompileOptions::from_environment(parse_target(target)));
  };
  std::vector<Signature> sample;
  std::set<std::string> taken;  // canonical signatures (they name the target)
  const auto take = [&](Signature sig) {
    if (taken.insert(sig.canonical()).second) sample.push_back(std::move(sig));
  };
  std::set<std::string> covered;  // the rules reached (tuning_from, or an unsupported one's)
  const auto supported = [&](const FlagSet& flags, const char* target) {
    const std::string why = unsupported_reason(spec, flags, parse_target(target));
    for (const TuningRule& rule : spec.tuning.rules) {
      if (!why.empty() && why.find("the tuning rule at " + rule.loc.str() + ")") != std::string::npos) {
        covered.insert("the tuning rule at " + rule.loc.str());
      }
    }
    return why.empty();
  };
  std::vector<Signature> main;  // sm_80's variants, then sm_90a's
  for (const char* target : {"sm_80", "sm_90a"}) {
    for (const FlagSet& f : variants) {
      if (supported(f, target)) main.push_back(signature(f, target));
    }
  }
  for (size_t i = 0; i < main.size(); i += kStride) take(main[i]);
  using Storage = std::tuple<std::string, int64_t, std::string, std::string>;
  const auto storage_of = [](const Signature& sig) {
    return Storage{sig.options.target.name(), std::get<int64_t>(sig.flags.at("head_dim")),
                   std::get<std::string>(sig.flags.at("kv_layout")),
                   std::get<std::string>(sig.flags.at("kv_dtype"))};
  };
  std::set<Storage> storages;
  for (const Signature& sig : sample) storages.insert(storage_of(sig));
  for (const Signature& sig : main) {
    if (storages.insert(storage_of(sig)).second) take(sig);
  }
  // A signature made without overrides names the rule it resolved to.
  for (const Signature& sig : sample) covered.insert(sig.tuning_from);
  for (const TuningRule& rule : spec.tuning.rules) {
    const std::string from = "the tuning rule at " + rule.loc.str();
    if (covered.count(from) != 0) continue;
    bool found = false;
    for (const char* target : {"sm_80", "sm_90a", "sm_86", "sm_89", "sm_90"}) {
      for (size_t i = 0; i < variants.size() && !found; ++i) {
        if (!supported(variants[i], target)) continue;
        Signature sig = signature(variants[i], target);
        if (sig.tuning_from == from) {
          take(std::move(sig));
          found = true;
        }
      }
      if (found) break;
    }
    // A rule for flags the matrix lacks (an engine may still ask for
    // them): the variant of its own `when` (the first value of each, the
    // other flags at their defaults) on its first target.
    if (!found) {
      std::map<std::string, FlagValue> given;
      for (const auto& [flag, values] : rule.when) given[flag] = values.front();
      const std::string target = rule.targets.empty() ? "sm_80" : rule.targets.front();
      try {
        Signature sig = make_signature(
            spec, resolve_flags(spec, given),
            CompileOptions::from_environment(parse_target(target)));
        if (sig.tuning_from == from) {
          take(std::move(sig));
          found = true;
        }
      } catch (const Error&) {
        // Flags that break a constraint: the rule stays unreached.
      }
    }
    // An `unsupported` rule for flags the matrix leaves out (no variant
    // has them, as none could be built): reached when a matrix variant
    // with the rule's `when` laid over it is legal and answered by it.
    if (!found && !rule.unsupported.empty()) {
      const std::string mark = "(the tuning rule at " + rule.loc.str() + ")";
      for (size_t i = 0; i < variants.size() && !found; ++i) {
        std::map<std::string, FlagValue> given(variants[i].values.begin(),
                                               variants[i].values.end());
        for (const auto& [flag, values] : rule.when) given[flag] = values.front();
        const std::string target = rule.targets.empty() ? "sm_90a" : rule.targets.front();
        try {
          const std::string why =
              unsupported_reason(spec, resolve_flags(spec, given), parse_target(target));
          found = why.find(mark) != std::string::npos;
        } catch (const Error&) {
          // illegal together: try the next variant
        }
      }
    }
    if (found) {
      covered.insert(from);
    } else {
      unreached->push_back(rule.loc.str());
    }
  }
  return sample;
}

TEST(AttentionCompile, MatrixSampleCompilesAndCoversEveryTuningRule) {
  const Spec spec = load_embedded_spec("attention");
  std::vector<std::string> unreached;
  const std::vector<Signature> work = matrix_sample(spec, &unreached);
  // Every rule of the table is reached: one that neither a variant of the
  // matrix nor its own `when` resolves to is shadowed by a rule above it.
  for (const std::string& loc : unreached) {
    ADD_FAILURE() << "no variant resolves to the tuning rule at " << loc
                  << " (a rule above it takes its flags)";
  }
  EXPECT_GE(work.size(), 60u);
  EXPECT_LE(work.size(), 90u);
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
  std::map<std::string, int> per_target;
  for (const Signature& sig : work) ++per_target[sig.options.target.name()];
  std::string counts;
  for (const auto& [target, n] : per_target) {
    counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + target;
  }
  std::printf("compiled a sample of %zu variants (%s) covering %zu tuning rules\n", work.size(),
              counts.c_str(), spec.tuning.rules.size() - unreached.size());
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
// Heads wider than 256: on sm_90a, two warpgroups split D (384 threads,
// block_m 64) with no spills, in every storage and schedule but fp8 split
// (the decode block, below); on every other target the spec answers that
// they need sm_90a.
TEST(AttentionCompile, WideHeadsRunOnTheWarpgroupPathOnly) {
  const Spec spec = load_embedded_spec("attention");
  const auto flags = [&](const std::string& text) {
    return resolve_flags(spec, parse_flag_assignments(spec, text));
  };
  for (const char* target : {"sm_80", "sm_86", "sm_89", "sm_90"}) {
    const CompileOptions options = CompileOptions::from_environment(parse_target(target));
    try {
      make_signature(spec, flags("head_dim=512,causal=true"), options);
      ADD_FAILURE() << "head_dim 512 resolved on " << target;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kFlags);
      EXPECT_NE(std::string(e.what()).find("sm_90a's warpgroup path only"), std::string::npos)
          << e.what();
    }
    EXPECT_FALSE(unsupported_reason(spec, flags("head_dim=384"), parse_target(target)).empty());
  }
  const CompileOptions options = CompileOptions::from_environment(parse_target("sm_90a"));
  std::vector<Signature> work;
  for (const char* text :
       {"head_dim=512,causal=true,mm_prefix=true", "head_dim=384,return_lse=true,softcap=true",
        "head_dim=512,causal=true,kv_layout=paged,small_pages=true,split_kv=true",
        "head_dim=512,dtype=fp16,window=true,sinks=bias_key0,kv_dtype=fp8_e4m3"}) {
    EXPECT_TRUE(unsupported_reason(spec, flags(text), options.target).empty()) << text;
    work.push_back(make_signature(spec, flags(text), options));
  }
  const auto failures = compile_all(spec, work, [](const Signature&, const CompiledKernel& k) {
    if (k.resources.threads != 384) {
      return "launches " + std::to_string(k.resources.threads) + " threads, not 384";
    }
    if (const std::string spilled = spills(k); !spilled.empty()) return spilled;
    return std::string();
  });
  for (const auto& f : failures) ADD_FAILURE() << f;
  // Their fp8 split variants take the swapped decode block (the rules at D
  // 384 and 512): 160 threads. At 255 registers its O^T (D / 4 floats per
  // thread at D 512) leaves ptxas a few scalars to spill, refilled a few
  // times per key tile of about 1900 instructions; more than that is a
  // regression.
  std::vector<Signature> decode;
  for (const char* text :
       {"head_dim=512,causal=true,kv_layout=paged,kv_dtype=fp8_e4m3,split_kv=true,sinks=null_logit",
        "head_dim=384,causal=true,kv_dtype=fp8_e4m3,split_kv=true,mm_prefix=true"}) {
    decode.push_back(make_signature(spec, flags(text), options));
  }
  const auto decode_failures =
      compile_all(spec, decode, [](const Signature&, const CompiledKernel& k) {
        if (k.resources.threads != 160) {
          return "launches " + std::to_string(k.resources.threads) + " threads, not 160";
        }
        if (k.resources.spill_stores > 96) return spills(k);
        return std::string();
      });
  for (const auto& f : decode_failures) ADD_FAILURE() << f;
}

// Value heads narrower than the key heads (head_dim_v 128 under 192): the
// warpgroup path on sm_90a with 16-bit K/V, contiguous, paged, split and
// small pages, no spills, V's ring and the staged output smaller than at
// D 192; fp8 K/V and other targets answer that they have no kernel.
TEST(AttentionCompile, NarrowValueHeadsRunOnTheWarpgroupPath) {
  const Spec spec = load_embedded_spec("attention");
  const auto flags = [&](const std::string& text) {
    return resolve_flags(spec, parse_flag_assignments(spec, text));
  };
  const Target sm90a = parse_target("sm_90a");
  EXPECT_FALSE(unsupported_reason(spec, flags("head_dim=192,head_dim_v=128"),
                                  parse_target("sm_80"))
                   .empty());
  EXPECT_NE(unsupported_reason(spec, flags("head_dim=192,head_dim_v=128,kv_dtype=fp8_e4m3"), sm90a)
                .find("fp8 K/V"),
            std::string::npos);
  EXPECT_THROW(flags("head_dim=128,head_dim_v=128"), Error);  // the pair is 192 / 128
  const CompileOptions options = CompileOptions::from_environment(sm90a);
  std::vector<Signature> work;
  for (const char* text :
       {"head_dim=192,head_dim_v=128,causal=true,return_lse=true",
        "head_dim=192,head_dim_v=128,causal=true,kv_layout=paged,split_kv=true",
        "head_dim=192,head_dim_v=128,dtype=fp16,kv_layout=paged,small_pages=true,softcap=true"}) {
    work.push_back(make_signature(spec, flags(text), options));
  }
  const auto failures = compile_all(spec, work, [](const Signature&, const CompiledKernel& k) {
    if (const std::string spilled = spills(k); !spilled.empty()) return spilled;
    return std::string();
  });
  for (const auto& f : failures) ADD_FAILURE() << f;
  // Shared memory: V's tiles at 128 columns, K's at 192, which leaves room
  // for 128-key tiles where D 192 alone takes 64 (the pair's rule).
  const Signature& narrow = work[0];
  const Signature wide = make_signature(spec, flags("head_dim=192,causal=true,return_lse=true"),
                                        options);
  EXPECT_EQ(narrow.tuning_value("block_n"), 128);
  EXPECT_EQ(wide.tuning_value("block_n"), 64);
}

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
    if (const std::string spilled = spills(k); !spilled.empty()) return spilled;
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

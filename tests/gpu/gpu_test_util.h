// Shared by the GPU tests: skip with a clear message where there is no GPU,
// fresh seeds, readable test names for flag combinations.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "attnjit/attention.h"
#include "attnjit/driver.h"
#include "attnjit/selfcheck.h"

namespace attnjit {

// The flags that differ from AttentionFlags' defaults, as `--flags` takes
// them ("head_dim=80,causal=true"), "defaults" for none: gtest's
// "GetParam() = ..." for a test over AttentionFlags, instead of the
// struct's bytes. (Every GPU test includes this header, so every one that
// prints AttentionFlags prints them so.)
inline void PrintTo(const AttentionFlags& flags, std::ostream* os,
                    const Schedule& schedule = Schedule{}) {
  const FlagSet mine = flags.to_flag_set(schedule);
  const FlagSet base = AttentionFlags{}.to_flag_set();
  std::string text;
  for (size_t i = 0; i < mine.values.size(); ++i) {
    if (i < base.values.size() && mine.values[i].second == base.values[i].second) continue;
    text += (text.empty() ? "" : ",") + mine.values[i].first + "=" + to_string(mine.values[i].second);
  }
  *os << (text.empty() ? "defaults" : text);
}

}  // namespace attnjit

namespace attnjit::testing {

#define ATTNJIT_REQUIRE_GPU()                                                             \
  do {                                                                                    \
    std::string why;                                                                      \
    if (!::attnjit::Driver::available(&why)) {                                            \
      GTEST_SKIP() << "no GPU here (" << why << "); GPU tests run on the device machine"; \
    }                                                                                     \
  } while (0)

inline uint64_t fresh_seed() {
  std::random_device rd;
  return (uint64_t(rd()) << 32) ^ rd();
}

// A variant of the spec's matrix: its flags and its schedule (the matrix
// names split and small-pages variants, which only a FlagSet asks for; a
// check of one runs that variant on every shape).
struct Variant {
  AttentionFlags flags;
  Schedule schedule;
};

// Every variant of the attention spec's matrix and presets.
inline std::vector<Variant> spec_variants() {
  std::vector<Variant> out;
  for (const FlagSet& set : matrix_and_presets(attention_spec())) {
    out.push_back(Variant{AttentionFlags::from_flag_set(set), Schedule::of(set)});
  }
  return out;
}

// Why the current GPU has no kernel for a variant (heads past 256 off
// sm_90a), or "".
inline std::string no_kernel_here(const Variant& v) {
  return unsupported_reason(attention_spec(), v.flags.to_flag_set(v.schedule),
                            current_device_target());
}

inline std::string flags_name(const AttentionFlags& f, const Schedule& schedule = {}) {
  std::string name = std::string(to_string(f.dtype)) + "_d" + std::to_string(f.head_dim);
  if (f.head_dim_v != 0) name += "_v" + std::to_string(f.head_dim_v);
  if (f.causal) name += "_causal";
  if (f.window) name += "_window";
  if (f.sinks != SinkMode::kNone) name += std::string("_") + to_string(f.sinks);
  if (f.mm_prefix) name += "_mmprefix";
  if (f.mm_clamp) name += "_clamp";
  if (f.softcap) name += "_softcap";
  if (f.return_lse) name += "_lse";
  if (f.kv_layout == KvLayout::kPaged) name += "_paged";
  if (f.kv_dtype == KvDType::kFp8E4M3) name += "_fp8";
  if (schedule.split_kv) name += "_split";
  if (schedule.small_pages) name += "_smallpages";
  return name;
}

inline std::string variant_name(const Variant& v) { return flags_name(v.flags, v.schedule); }

// gtest's "GetParam() = ..." for a test over Variants: the flags (and
// schedule flags) that differ from the defaults.
inline void PrintTo(const Variant& v, std::ostream* os) { attnjit::PrintTo(v.flags, os, v.schedule); }

// check_attention of `flags` through `cache` on every standard shape,
// fresh inputs each, one line per shape (`label` after the flags' name),
// each expected within the dtype's error bound.
inline void expect_matches_reference_on_every_shape(const Variant& v, KernelCache& cache,
                                                    const std::string& label = "",
                                                    CheckTier tier = CheckTier::kSpecialized) {
  const AttentionFlags& flags = v.flags;
  if (const std::string why = no_kernel_here(v); !why.empty()) GTEST_SKIP() << why;
  const double bound = error_bound(flags.dtype);
  for (const CheckShape& shape : standard_check_shapes(flags)) {
    const uint64_t seed = fresh_seed();
    const CheckResult r =
        check_attention(flags, shape, seed, cache, std::nullopt, {}, tier, v.schedule);
    const std::string line = fmt::format(
        "{}{} {:<22} o_err={:.3e} lse_err={:.3e} written={} guard={} seed={}", variant_name(v),
        label, shape.name, r.o_error, r.lse_error, r.output_written, r.guard_intact, seed);
    std::printf("%s\n", line.c_str());
    EXPECT_TRUE(r.passed(bound)) << line;
  }
}

}  // namespace attnjit::testing

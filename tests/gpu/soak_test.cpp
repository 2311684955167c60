// Soak: thousands of launches with random flags (from the spec's matrix and
// presets) and random shapes, windows and spans, every one checked against
// the reference with the output poisoned first; paged variants get random
// page sizes and shuffled, partly shared page pools. ATTNJIT_SOAK_LAUNCHES sets
// the count (default 2000), run as kSoakParts tests of their own so that a
// sharded run (GTEST_TOTAL_SHARDS) spreads them over its processes; a
// failure names its part's seed, which ATTNJIT_SOAK_SEED replays (with
// --gtest_filter naming that part).
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <random>

#include <fmt/format.h>

#include "attnjit/selfcheck.h"
#include "gpu/gpu_test_util.h"

namespace attnjit {
namespace {

// Sorted, disjoint spans inside [0, n_k).
std::vector<std::pair<int, int>> random_spans(int n_k, std::mt19937_64& rng) {
  std::vector<std::pair<int, int>> spans;
  int at = 0;
  while (n_k > 0 && at < n_k && spans.size() < 4) {
    at += int(rng() % 40);
    if (at >= n_k) break;
    const int end = std::min(n_k - 1, at + int(rng() % 90));
    spans.emplace_back(at, end);
    at = end + 1 + int(rng() % 3);  // sometimes adjacent
  }
  return spans;
}


CheckShape random_shape(std::mt19937_64& rng) {
  static const std::pair<int, int> kHeads[] = {{1, 1}, {4, 1}, {8, 2}, {8, 8}, {6, 3}};
  CheckShape s;
  s.name = "soak";
  const int batch = 1 + int(rng() % 4);
  for (int b = 0; b < batch; ++b) {
    const int n_k = int(rng() % 220);
    // q shorter than k (a chunk over a cached prefix), sometimes one query
    // (a decode beside the others).
    const int pick = int(rng() % 6);
    const int n_q = pick < 2 ? int(rng() % (n_k + 1)) : pick == 2 ? std::min(n_k, 1) : n_k;
    s.seqlens_q.push_back(n_q);
    s.seqlens_k.push_back(n_k);
    s.spans.push_back(random_spans(n_k, rng));
  }
  const auto heads = kHeads[rng() % 5];
  s.num_heads_q = heads.first;
  s.num_heads_kv = heads.second;
  static const int kWindows[] = {-1, 0, 1, 5, 31, 64, 127, 300, INT_MAX};
  s.window_left = kWindows[rng() % 9];
  s.window_right = kWindows[rng() % 9];
  s.softcap = 1.f + float(rng() % 30);
  // used by paged variants; 48, 80 and 192 are no divisor or multiple of a key tile
  static const int kPages[] = {16, 32, 48, 64, 80, 128, 192, 256};
  s.page_size = kPages[rng() % 8];
  return s;
}

constexpr int kSoakParts = 8;

class Soak : public ::testing::TestWithParam<int> {};

TEST_P(Soak, RandomFlagsAndShapesNeverFail) {
  ATTNJIT_REQUIRE_GPU();
  const int part = GetParam();
  const char* env = std::getenv("ATTNJIT_SOAK_LAUNCHES");
  const int total = env ? std::atoi(env) : 2000;
  const int launches = total / kSoakParts + (part < total % kSoakParts ? 1 : 0);
  std::vector<testing::Variant> flags;
  for (const testing::Variant& v : testing::spec_variants()) {
    if (testing::no_kernel_here(v).empty()) flags.push_back(v);
  }
  const char* seed_env = std::getenv("ATTNJIT_SOAK_SEED");
  const uint64_t seed = seed_env ? std::strtoull(seed_env, nullptr, 10) : testing::fresh_seed();
  std::mt19937_64 rng(seed);
  int failures = 0;
  double worst = 0;
  for (int i = 0; i < launches; ++i) {
    const testing::Variant& v = flags[rng() % flags.size()];
    const AttentionFlags& f = v.flags;
    const CheckShape shape = random_shape(rng);
    const CheckResult r = check_attention(f, shape, rng(), KernelCache::global(), std::nullopt, {},
                                          CheckTier::kSpecialized, v.schedule);
    worst = std::max(worst, r.o_error);
    if (!r.passed(error_bound(f.dtype))) {
      ++failures;
      ADD_FAILURE() << fmt::format("part {} launch {}: {} o_err={:.3e} lse_err={:.3e} (seed {})",
                                   part, i, testing::variant_name(v), r.o_error, r.lse_error,
                                   seed);
    }
  }
  std::printf("soak part %d: %d launches over %zu variants, %d failures, worst error %.3e, seed %llu\n",
              part, launches, flags.size(), failures, worst, static_cast<unsigned long long>(seed));
}

INSTANTIATE_TEST_SUITE_P(Parts, Soak, ::testing::Range(0, kSoakParts));

}  // namespace
}  // namespace attnjit

// The kernels' mask arithmetic (templates/attention/mask.cuh), compiled for
// the host and checked exhaustively against docs/semantics.md's rule as the CPU
// reference states it (key_visible), without a GPU: per-element visibility
// (visible and the per-row intervals visible_in(row_keys)), the key-tile
// range a query tile visits (every visible key inside it) and the interior
// test (an interior tile really has every pair visible).
#include <gtest/gtest.h>

#include <climits>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "attnjit/reference.h"

// clang-format off
#include "host_device.h"
#include "attention/mask.cuh"
#include "host_device_end.h"
// clang-format on

namespace attnjit {
namespace {

template <bool kCausal, bool kWindow, bool kPrefix, bool kClamp>
struct Config {
  static constexpr bool causal = kCausal;
  static constexpr bool window = kWindow;
  static constexpr bool mm_prefix = kPrefix;
  static constexpr bool mm_clamp = kClamp;
};

template <class C>
void check_config(uint64_t seed) {
  using Mask = attention::Mask<C>;
  std::mt19937_64 rng(seed);
  const int windows[] = {-1, 0, 1, 3, 7, 64, 1000, INT_MAX};
  long long pairs = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int n_k = int(rng() % 70);
    ReferenceProblem rule;
    rule.causal = C::causal;
    rule.mm_prefix = C::mm_prefix;
    rule.mm_clamp = C::mm_clamp;
    rule.window_left = C::window ? windows[rng() % 8] : -1;
    rule.window_right = C::window ? windows[rng() % 8] : -1;
    // Sorted, disjoint spans, some reaching past the keys.
    std::vector<std::pair<int, int>> spans;
    std::vector<int> flat;
    for (int at = int(rng() % 5); C::mm_prefix && at < n_k + 4 && spans.size() < 4;) {
      const int len = 1 + int(rng() % 12);
      spans.emplace_back(at, at + len - 1);
      flat.push_back(at);
      flat.push_back(at + len - 1);
      at += len + int(rng() % 6);
    }
    Mask mask{n_k, rule.window_left, rule.window_right, flat.data(), int(spans.size())};
    const std::string what = fmt::format("n_k={} window=({}, {}) spans={} seed={}", n_k,
                                         rule.window_left, rule.window_right, spans.size(), seed);
    // Query positions may lie before the keys (q longer than k) or past them.
    for (int p = -8; p < n_k + 8; ++p) {
      int span_lo, span_hi;
      mask.span_of(p, span_lo, span_hi);
      const typename Mask::RowKeys keys = mask.row_keys(p, span_lo, span_hi);
      for (int j = 0; j < n_k; ++j) {
        const bool want = key_visible(rule, spans, p, j);
        ASSERT_EQ(mask.visible(p, j, span_lo, span_hi), want) << what << " p=" << p << " j=" << j;
        ASSERT_EQ(Mask::visible_in(keys, j), want) << what << " p=" << p << " j=" << j;
        // The edge tiles' form (to_logits): bounds and key shifted by a
        // lane's first key, and without a window no lower bound tested.
        for (int by : {0, j, j / 2 + 1}) {
          const typename Mask::RowKeys rel = Mask::shifted(keys, by);
          ASSERT_EQ(Mask::visible_in(rel, j - by), want) << what << " p=" << p << " j=" << j;
          if constexpr (!C::window) {
            ASSERT_EQ(Mask::template visible_in<false>(rel, j - by), want)
                << what << " p=" << p << " j=" << j << " (no lower bound)";
          }
        }
        ++pairs;
      }
      for (int j = n_k; j < n_k + 3; ++j) {
        ASSERT_FALSE(mask.visible(p, j, span_lo, span_hi)) << what << " p=" << p << " j=" << j;
        ASSERT_FALSE(Mask::visible_in(keys, j)) << what << " p=" << p << " j=" << j;
        if constexpr (!C::window) {
          ASSERT_FALSE(Mask::template visible_in<false>(Mask::shifted(keys, 5), j - 5))
              << what << " p=" << p << " j=" << j;
        }
      }
    }
    // Query tiles [p0, p1] against key tiles of several widths.
    for (int block_n : {1, 4, 16, 64}) {
      for (int p0 = -8; p0 < n_k + 8; p0 += 1 + int(rng() % 5)) {
        const int p1 = p0 + int(rng() % 20);
        const attention::KeyRange range = mask.key_range(p0, p1, block_n);
        for (int p = p0; p <= p1; ++p) {
          for (int j = 0; j < n_k; ++j) {
            if (!key_visible(rule, spans, p, j)) continue;
            ASSERT_GE(j / block_n, range.first_tile) << what << " p=" << p << " j=" << j;
            ASSERT_LE(j / block_n, range.last_tile) << what << " p=" << p << " j=" << j;
          }
        }
        for (int t = range.first_tile; t <= range.last_tile; ++t) {
          if (!mask.interior(p0, p1, t * block_n, block_n)) continue;
          for (int p = p0; p <= p1; ++p) {
            for (int j = t * block_n; j < (t + 1) * block_n; ++j) {
              ASSERT_LT(j, n_k) << what;
              ASSERT_TRUE(key_visible(rule, spans, p, j))
                  << what << " interior tile " << t << " p=" << p << " j=" << j;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(pairs, 10000);
}

TEST(DeviceMask, MatchesTheReferenceRuleForEveryMode) {
  const uint64_t seed = std::random_device{}();
  check_config<Config<false, false, false, false>>(seed);
  check_config<Config<true, false, false, false>>(seed);
  check_config<Config<false, true, false, false>>(seed);
  check_config<Config<true, true, false, false>>(seed);
  check_config<Config<false, false, true, false>>(seed);
  check_config<Config<true, false, true, false>>(seed);
  check_config<Config<false, true, true, false>>(seed);
  check_config<Config<true, true, true, false>>(seed);
  check_config<Config<false, true, true, true>>(seed);
  check_config<Config<true, true, true, true>>(seed);
}

// Gemma-4's sliding layers as the model defines them, written apart from
// docs/semantics.md: a key is visible when (causal or same image) and
// q - k < sliding_window. Engines pass that window in FlashAttention's
// convention, (sliding_window - 1, 0); (sliding_window - 1, -1) must give
// the same. Images longer than the window, at the sequence's start and end.
bool gemma4_visible(int q, int k, const std::vector<std::pair<int, int>>& images,
                    int sliding_window) {
  bool same_image = false;
  for (const auto& [start, end] : images) {
    same_image |= start <= q && q <= end && start <= k && k <= end;
  }
  return (k <= q || same_image) && q - k < sliding_window;
}

TEST(DeviceMask, Gemma4ClampIsTheModelsRule) {
  using Mask = attention::Mask<Config<true, true, true, true>>;
  const int n = 96;
  const std::vector<std::vector<std::pair<int, int>>> layouts = {
      {{0, 40}},              // an image first, longer than the window
      {{10, 30}, {50, 95}},   // two images, the second to the sequence's end
      {{0, 95}},              // one image, the whole sequence
      {{20, 22}, {60, 61}}};  // images shorter than the window
  long long differs_from_causal = 0;
  for (const auto& images : layouts) {
    std::vector<int> flat;
    for (const auto& [start, end] : images) {
      flat.push_back(start);
      flat.push_back(end);
    }
    for (int sliding_window : {1, 8, 16, 200}) {
      for (int right : {0, -1}) {
        ReferenceProblem rule;
        rule.causal = rule.mm_prefix = rule.mm_clamp = true;
        rule.window_left = sliding_window - 1;
        rule.window_right = right;
        const Mask mask{n, rule.window_left, rule.window_right, flat.data(), int(images.size())};
        for (int q = 0; q < n; ++q) {
          int span_lo, span_hi;
          mask.span_of(q, span_lo, span_hi);
          const Mask::RowKeys keys = mask.row_keys(q, span_lo, span_hi);
          const attention::KeyRange range = mask.key_range(q, q, 1);
          for (int k = 0; k < n; ++k) {
            const bool want = gemma4_visible(q, k, images, sliding_window);
            const std::string at = fmt::format("window ({}, {}) q={} k={}", rule.window_left,
                                               right, q, k);
            ASSERT_EQ(key_visible(rule, images, q, k), want) << at;
            ASSERT_EQ(mask.visible(q, k, span_lo, span_hi), want) << at;
            ASSERT_EQ(Mask::visible_in(keys, k), want) << at;
            if (want) ASSERT_TRUE(range.first_tile <= k && k <= range.last_tile) << at;
            differs_from_causal += want && k > q;
          }
        }
      }
    }
  }
  // The images' later keys are seen: not causal window attention.
  EXPECT_GT(differs_from_causal, 1000);
}

}  // namespace
}  // namespace attnjit

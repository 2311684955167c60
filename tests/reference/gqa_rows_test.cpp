// GQA packing's row arithmetic (templates/attention/gqa_rows.cuh, compiled
// for the host): the multiply-and-shift division (common/int_divisor.cuh)
// a packed tile uses to split a row into (position, head) agrees with
// integer division for every row a launch can have (0 <= row < 2^31) and
// every divisor; and a packed map's rows cover each (position, head) of
// the sequence once. No GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

// clang-format off
#include "host_device.h"
#include "attention/gqa_rows.cuh"
#include "host_device_end.h"
// clang-format on

namespace attnjit {
namespace {

// The rows where a wrong multiplier shows first: around every multiple of
// d near 0 and near the top of the range, and random ones.
std::vector<int64_t> probe_rows(int64_t d, std::mt19937_64& rng) {
  std::vector<int64_t> rows;
  const int64_t top = (int64_t(1) << 31) - 1;
  for (int64_t k = 0; k <= 64; ++k) {
    for (int64_t base : {k * d, top / d * d - k * d}) {
      for (int64_t delta = -1; delta <= 1; ++delta) {
        const int64_t n = base + delta;
        if (n >= 0 && n <= top) rows.push_back(n);
      }
    }
  }
  rows.push_back(top);
  for (int i = 0; i < 2000; ++i) rows.push_back(int64_t(rng() % (uint64_t(top) + 1)));
  return rows;
}

TEST(GqaRows, DivisorMagicIsExactOverTheWholeRowRange) {
  std::mt19937_64 rng(7);
  std::vector<int64_t> divisors;
  for (int64_t d = 1; d <= 300; ++d) divisors.push_back(d);
  for (int64_t d :
       {1021LL, 4096LL, 65535LL, 65537LL, (1LL << 20) + 7, (1LL << 30) + 1, (1LL << 31) - 1}) {
    divisors.push_back(d);
  }
  for (int64_t d : divisors) {
    const long long magic = divisor_magic(int(d));
    ASSERT_GE(uint32_t(magic), 1u << 31) << "d " << d;  // the method's range: [2^31, 2^32)
    for (int64_t n : probe_rows(d, rng)) {
      ASSERT_EQ(int64_t(divide_by_magic(uint32_t(n), magic)), n / d) << "d " << d << " n " << n;
    }
  }
  // Small groups, every row of a large launch.
  for (int d : {3, 5, 6, 7, 12}) {
    const long long magic = divisor_magic(d);
    for (int n = 0; n < (1 << 22); ++n) {
      ASSERT_EQ(int(divide_by_magic(unsigned(n), magic)), n / d) << "d " << d << " n " << n;
    }
  }
}

TEST(GqaRows, PackedRowsCoverEveryPositionAndHeadOnce) {
  for (int group : {1, 2, 3, 4, 6, 8, 16}) {
    const int n_q = 37, head0 = 5 * group;
    attention::PackedRows<true> map{group, head0, n_q * group, divisor_magic(group)};
    std::vector<int> seen(n_q * group, 0);
    for (int row = 0; row < map.rows; ++row) {
      const int p = map.position(row), h = map.head(row);
      ASSERT_EQ(p, row / group) << "group " << group;
      ASSERT_GE(h, head0);
      ASSERT_LT(h, head0 + group);
      ++seen[p * group + (h - head0)];
    }
    for (int count : seen) ASSERT_EQ(count, 1) << "group " << group;
  }
}

}  // namespace
}  // namespace attnjit

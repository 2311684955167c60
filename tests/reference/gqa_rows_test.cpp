// GQA packing's row arithmetic (templates/attention/gqa_rows.cuh, compiled
// for the host): a packed map's rows cover each (position, head) of the
// sequence once, split by the multiply-and-shift division of
// common/int_divisor.cuh (whose exactness over int32 is
// ExprDevice.DivisionByAMultiplierIsFlooredDivision's). No GPU.
#include <gtest/gtest.h>

#include <vector>

// clang-format off
#include "host_device.h"
#include "attention/gqa_rows.cuh"
#include "host_device_end.h"
// clang-format on

namespace attnjit {
namespace {

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

// The kernels' e4m3 conversion without the hardware instruction
// (templates/common/fp8.cuh, the path of targets before sm_89, compiled
// for the host) against the self-check's independent host conversion, on
// all 256 codes; and the host encoder's rounding. No GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>
#include <algorithm>

#include "attnjit/selfcheck.h"

// clang-format off
#include "host_device.h"
#define ATTNJIT_FP8_DECODE_ONLY
#include "common/fp8.cuh"
#include "host_device_end.h"
// clang-format on

namespace attnjit {
namespace {

TEST(Fp8Convert, EveryCodeMatchesTheHostReference) {
  for (int code = 0; code < 256; ++code) {
    const float device = fp8::e4m3_to_float(unsigned(code));
    const float host = e4m3_to_float(uint8_t(code));
    if ((code & 0x7F) == 0x7F) {
      EXPECT_TRUE(std::isnan(device)) << code;
      EXPECT_TRUE(std::isnan(host)) << code;
      continue;
    }
    EXPECT_EQ(device, host) << "code " << code;
    EXPECT_EQ(std::signbit(device), (code & 0x80) != 0) << code;  // -0 for 0x80
  }
  EXPECT_EQ(e4m3_to_float(0x7E), 448.f);         // the largest
  EXPECT_EQ(e4m3_to_float(0x01), std::ldexp(1.f, -9));  // the smallest subnormal
  EXPECT_EQ(e4m3_to_float(0x08), std::ldexp(1.f, -6));  // the smallest normal
}

TEST(Fp8Convert, EncoderRoundsToNearestAndSaturates) {
  for (int code = 0; code < 256; ++code) {
    if ((code & 0x7F) == 0x7F) continue;
    if (code == 0x80) continue;  // -0 encodes as 0x80 too, checked below
    EXPECT_EQ(float_to_e4m3(e4m3_to_float(uint8_t(code))), code) << code;
  }
  EXPECT_EQ(float_to_e4m3(-0.f), 0x80);
  EXPECT_EQ(float_to_e4m3(1000.f), 0x7E);   // saturates at 448
  EXPECT_EQ(float_to_e4m3(-1000.f), 0xFE);
  EXPECT_EQ(float_to_e4m3(1.0625f), 0x38);  // halfway 1 and 1.125: even code (1.0)
  EXPECT_EQ(float_to_e4m3(1.1f), 0x39);     // nearest 1.125
  EXPECT_EQ(float_to_e4m3(NAN), 0x7F);
}

// The encoder against its definition: the nearest of all codes' values by
// exhaustive search, ties to the even code, at every midpoint between
// neighbouring codes, just off each side of it, and at random values.
TEST(Fp8Convert, EncoderIsTheNearestCodeByExhaustiveSearch) {
  const auto nearest = [](float f) {
    const float a = std::min(std::fabs(f), 448.f);
    int best = 0;
    float best_err = a;
    for (int code = 1; code < 0x7F; ++code) {
      const float err = std::fabs(e4m3_to_float(uint8_t(code)) - a);
      if (err < best_err || (err == best_err && code % 2 == 0)) {
        best = code;
        best_err = err;
      }
    }
    return (std::signbit(f) ? 0x80 : 0) | best;
  };
  std::vector<float> probes;
  for (int code = 0; code + 1 < 0x7F; ++code) {
    const float mid = 0.5f * (e4m3_to_float(uint8_t(code)) + e4m3_to_float(uint8_t(code + 1)));
    for (const float f : {mid, std::nextafter(mid, 0.f), std::nextafter(mid, 1000.f)}) {
      probes.push_back(f);
      probes.push_back(-f);
    }
  }
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-500.f, 500.f);
  for (int i = 0; i < 20000; ++i) probes.push_back(uniform(rng) * (i % 2 ? 1.f : 1e-3f));
  for (const float f : probes) EXPECT_EQ(float_to_e4m3(f), nearest(f)) << f;
}

}  // namespace
}  // namespace attnjit

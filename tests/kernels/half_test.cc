// bf16/fp16 conversions: exact widening, round-to-nearest-even narrowing,
// overflow, subnormals, NaN. Exhaustive over all 65,536 patterns where that
// is cheap, and over every tie between neighbouring values.
#include "kernels/cpu/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace fleetsim::kernels {
namespace {

const float kInf = std::numeric_limits<float>::infinity();

TEST(Bf16, EveryPatternRoundTrips) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = Bf16ToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(f)))) << std::hex << h;
    } else {
      EXPECT_EQ(FloatToBf16(f), h) << std::hex << h;
    }
  }
}

TEST(Half, EveryPatternRoundTrips) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = HalfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(f)))) << std::hex << h;
    } else {
      EXPECT_EQ(FloatToHalf(f), h) << std::hex << h;
    }
  }
}

TEST(Half, DecodesKnownValues) {
  EXPECT_EQ(HalfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(HalfToFloat(0xc000), -2.0f);
  EXPECT_EQ(HalfToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(HalfToFloat(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(HalfToFloat(0x03ff), 1023 * std::ldexp(1.0f, -24));
  EXPECT_EQ(HalfToFloat(0x7c00), kInf);
  EXPECT_EQ(HalfToFloat(0xfc00), -kInf);
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7e00)));
  EXPECT_TRUE(std::signbit(HalfToFloat(0x8000)));
  EXPECT_EQ(HalfToFloat(0x3555), 0.333251953125f);
}

TEST(Bf16, DecodesKnownValues) {
  EXPECT_EQ(Bf16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(Bf16ToFloat(0xc040), -3.0f);
  EXPECT_EQ(Bf16ToFloat(0x7f80), kInf);
  EXPECT_EQ(Bf16ToFloat(0x0080), std::numeric_limits<float>::min());
}

// Every value exactly halfway between two neighbouring finite values rounds
// to the one with an even mantissa; one float step either side rounds to the
// nearer one. Midpoints are computed in double, where they are exact.
template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void CheckAllTies(uint32_t largest_finite) {
  for (uint32_t h = 0; h < largest_finite; ++h) {
    const double lo = Widen(static_cast<uint16_t>(h));
    const double hi = Widen(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((lo + hi) / 2);
    ASSERT_EQ(static_cast<double>(mid), (lo + hi) / 2) << "midpoint not exact at " << std::hex << h;
    const uint32_t even = (h & 1u) == 0 ? h : h + 1;
    ASSERT_EQ(Narrow(mid), even) << "tie above " << std::hex << h;
    ASSERT_EQ(Narrow(-mid), even | 0x8000u) << "negative tie above " << std::hex << h;
    ASSERT_EQ(Narrow(std::nextafter(mid, 0.0f)), h) << "just below tie above " << std::hex << h;
    ASSERT_EQ(Narrow(std::nextafter(mid, kInf)), h + 1) << "just above tie above " << std::hex << h;
  }
}

TEST(Half, TiesRoundToEvenEverywhere) { CheckAllTies<HalfToFloat, FloatToHalf>(0x7bff); }

TEST(Bf16, TiesRoundToEvenEverywhere) { CheckAllTies<Bf16ToFloat, FloatToBf16>(0x7f7f); }

TEST(Half, OverflowsToInfinityPastTheLastTie) {
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(65519.996f), 0x7bff);  // below the 65520 tie
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);    // tie: odd 0x7bff loses to "65536" = inf
  EXPECT_EQ(FloatToHalf(1e6f), 0x7c00);
  EXPECT_EQ(FloatToHalf(-1e6f), 0xfc00);
  EXPECT_EQ(FloatToHalf(kInf), 0x7c00);
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::max()), 0x7c00);
}

TEST(Bf16, OverflowsToInfinity) {
  EXPECT_EQ(FloatToBf16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(FloatToBf16(-kInf), 0xff80);
}

TEST(Half, UnderflowsThroughSubnormalsToSignedZero) {
  const float tiny = std::ldexp(1.0f, -24);  // smallest fp16 subnormal
  EXPECT_EQ(FloatToHalf(tiny), 0x0001);
  EXPECT_EQ(FloatToHalf(tiny / 2), 0x0000);                          // tie with 0: even is 0
  EXPECT_EQ(FloatToHalf(std::nextafter(tiny / 2, 1.0f)), 0x0001);    // just above: up
  EXPECT_EQ(FloatToHalf(-tiny / 2), 0x8000);                         // keeps the sign
  EXPECT_EQ(FloatToHalf(1.5f * tiny), 0x0002);                       // tie 1|2: even is 2
  EXPECT_EQ(FloatToHalf(2.5f * tiny), 0x0002);                       // tie 2|3: even is 2
  EXPECT_EQ(FloatToHalf(1023.5f * tiny), 0x0400);                    // carries into the smallest normal
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
}

TEST(Bf16, KeepsFloatSubnormals) {
  // bf16 shares fp32's exponent, so fp32 subnormals with zero low bits are exact.
  const float sub = std::numeric_limits<float>::denorm_min() * 65536.0f;
  EXPECT_EQ(FloatToBf16(sub), 0x0001);
  EXPECT_EQ(Bf16ToFloat(0x0001), sub);
}

TEST(Bf16, NaNStaysNaNEvenWithOnlyLowPayloadBits) {
  // 0x7f800001: a NaN whose payload lies entirely in the 16 bits bf16 drops;
  // truncation would turn it into infinity.
  const float nan_low = BitsToFloat(0x7f800001u);
  ASSERT_TRUE(std::isnan(nan_low));
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(nan_low))));
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(-std::numeric_limits<float>::quiet_NaN()))));
}

TEST(Half, NaNStaysNaNEvenWithOnlyLowPayloadBits) {
  const float nan_low = BitsToFloat(0x7f800001u);
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(nan_low))));
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(Half, RoundsOrdinaryValuesToNearest) {
  EXPECT_EQ(FloatToHalf(1.0f / 3.0f), 0x3555);
  EXPECT_EQ(FloatToHalf(0.1f), 0x2e66);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
}

TEST(Bf16, RoundsOrdinaryValuesToNearest) {
  EXPECT_EQ(FloatToBf16(1.0f / 3.0f), 0x3eab);  // 0x3eaaaaab: dropped half 0xaaab > 0x8000: up
  EXPECT_EQ(FloatToBf16(3.14159265f), 0x4049);
}

}  // namespace
}  // namespace fleetsim::kernels

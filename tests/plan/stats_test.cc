// Replication statistics (sim/plan/stats.h): the Student-t quantile and the
// mean's 95% interval.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "sim/plan/stats.h"

namespace fleetsim {
namespace {

TEST(StudentT975, MatchesTables) {
  // t(0.975, df) from any statistics table.
  const std::pair<int, double> known[] = {{1, 12.706}, {2, 4.303}, {4, 2.776}, {10, 2.228},
                                          {30, 2.042}, {31, 2.040}, {60, 2.000}, {120, 1.980}};
  for (const auto& [df, t] : known) EXPECT_NEAR(StudentT975(df), t, 2e-3) << "df " << df;
  // Beyond the table it approaches the normal quantile from above.
  EXPECT_NEAR(StudentT975(100000), 1.95996, 1e-4);
  EXPECT_GT(StudentT975(1000), 1.95996);
}

TEST(StudentT975, DecreasesWithDegreesOfFreedom) {
  for (int df = 1; df < 300; ++df) EXPECT_GT(StudentT975(df), StudentT975(df + 1)) << "df " << df;
}

TEST(StudentT975, UndefinedBelowOne) {
  EXPECT_TRUE(std::isnan(StudentT975(0)));
  EXPECT_TRUE(std::isnan(StudentT975(-3)));
}

TEST(MeanInterval, Empty) {
  const Interval iv = MeanInterval({});
  EXPECT_EQ(iv.n, 0);
  EXPECT_TRUE(std::isnan(iv.mean));
  EXPECT_TRUE(std::isnan(iv.half_width));
}

TEST(MeanInterval, OnlyNonFiniteValuesIsEmpty) {
  const double nan = std::nan("");
  const Interval iv = MeanInterval({nan, std::numeric_limits<double>::infinity(), nan});
  EXPECT_EQ(iv.n, 0);
  EXPECT_TRUE(std::isnan(iv.mean));
}

TEST(MeanInterval, OneValueHasNoInterval) {
  const Interval iv = MeanInterval({42.5});
  EXPECT_EQ(iv.n, 1);
  EXPECT_DOUBLE_EQ(iv.mean, 42.5);
  EXPECT_TRUE(std::isnan(iv.half_width));
  EXPECT_DOUBLE_EQ(iv.lo, 42.5);
  EXPECT_DOUBLE_EQ(iv.hi, 42.5);
}

TEST(MeanInterval, HandComputed) {
  // 2, 4, 6, 8: mean 5, sample variance (9+1+1+9)/3 = 20/3, s = 2.5820,
  // half width t(0.975, 3) * s / 2 = 3.1824 * 1.2910 = 4.1085.
  const Interval iv = MeanInterval({2, 4, 6, 8});
  EXPECT_EQ(iv.n, 4);
  EXPECT_DOUBLE_EQ(iv.mean, 5);
  const double hw = 3.1824 * std::sqrt(20.0 / 3.0) / 2.0;
  EXPECT_NEAR(iv.half_width, hw, 1e-3);
  EXPECT_NEAR(iv.half_width, 4.1085, 1e-3);
  EXPECT_NEAR(iv.lo, 5 - hw, 1e-3);
  EXPECT_NEAR(iv.hi, 5 + hw, 1e-3);
}

TEST(MeanInterval, TwoValues) {
  // 10, 12: mean 11, s = sqrt(2), half width 12.706 * sqrt(2) / sqrt(2) = 12.706.
  const Interval iv = MeanInterval({10, 12});
  EXPECT_EQ(iv.n, 2);
  EXPECT_DOUBLE_EQ(iv.mean, 11);
  EXPECT_NEAR(iv.half_width, 12.706, 1e-3);
  EXPECT_NEAR(iv.lo, 11 - 12.706, 1e-3);
  EXPECT_NEAR(iv.hi, 11 + 12.706, 1e-3);
}

TEST(MeanInterval, SkipsNonFiniteValues) {
  const double nan = std::nan("");
  const Interval with = MeanInterval({2, nan, 4, std::numeric_limits<double>::infinity(), 6, 8, nan});
  const Interval without = MeanInterval({2, 4, 6, 8});
  EXPECT_EQ(with.n, 4);
  EXPECT_DOUBLE_EQ(with.mean, without.mean);
  EXPECT_DOUBLE_EQ(with.half_width, without.half_width);
  EXPECT_DOUBLE_EQ(with.lo, without.lo);
  EXPECT_DOUBLE_EQ(with.hi, without.hi);
  // One finite value among NaNs: no interval.
  const Interval one = MeanInterval({nan, 7, nan});
  EXPECT_EQ(one.n, 1);
  EXPECT_DOUBLE_EQ(one.mean, 7);
  EXPECT_TRUE(std::isnan(one.half_width));
  EXPECT_DOUBLE_EQ(one.lo, 7);
  EXPECT_DOUBLE_EQ(one.hi, 7);
}

TEST(MeanInterval, EqualValuesHaveZeroWidth) {
  const Interval iv = MeanInterval({3, 3, 3});
  EXPECT_EQ(iv.n, 3);
  EXPECT_DOUBLE_EQ(iv.mean, 3);
  EXPECT_DOUBLE_EQ(iv.half_width, 0);
  EXPECT_DOUBLE_EQ(iv.lo, 3);
  EXPECT_DOUBLE_EQ(iv.hi, 3);
}

}  // namespace
}  // namespace fleetsim

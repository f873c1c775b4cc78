#include "sim/traffic/arrival_times.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace fleetsim {
namespace {

// Mean and coefficient of variation of n gaps, in seconds.
void GapStats(ArrivalTimes& a, int n, double* mean, double* cv) {
  SimTime prev = 0;
  double sum = 0, sum2 = 0;
  for (int i = 0; i < n; ++i) {
    const SimTime t = a.Next();
    ASSERT_GE(t, prev);
    const double g = TimeToSeconds(t - prev);
    sum += g;
    sum2 += g * g;
    prev = t;
  }
  *mean = sum / n;
  *cv = std::sqrt(sum2 / n - *mean * *mean) / *mean;
}

TEST(ArrivalTimes, PoissonGapsHaveMeanOneOverRate) {
  ArrivalTimes a(ArrivalProcess::kPoisson, 50.0, 1.0, Rng(42));
  double mean, cv;
  GapStats(a, 100'000, &mean, &cv);
  // Standard error of the mean: 0.3%; of the CV: about 0.3%.
  EXPECT_NEAR(mean, 0.02, 0.02 * 0.02);
  EXPECT_NEAR(cv, 1.0, 0.02);
}

TEST(ArrivalTimes, GammaGapsHaveRequestedCv) {
  for (double want_cv : {0.5, 2.0}) {
    ArrivalTimes a(ArrivalProcess::kGamma, 10.0, want_cv, Rng(7));
    double mean, cv;
    GapStats(a, 100'000, &mean, &cv);
    EXPECT_NEAR(mean, 0.1, 0.1 * 0.03) << want_cv;
    EXPECT_NEAR(cv, want_cv, want_cv * 0.05) << want_cv;
  }
}

TEST(ArrivalTimes, ConstantRateIsExactWithoutDrift) {
  ArrivalTimes a(ArrivalProcess::kConstant, 3.0, 1.0, Rng(1));
  EXPECT_EQ(a.Next(), 0);
  EXPECT_EQ(a.Next(), 333'333'333);
  EXPECT_EQ(a.Next(), 666'666'667);
  EXPECT_EQ(a.Next(), kSecond);
  for (int i = 4; i < 3'000'000; ++i) a.Next();
  // Arrival 3,000,000 at exactly 1,000,000 s: no accumulated rounding.
  EXPECT_EQ(a.Next(), 1'000'000 * kSecond);
}

TEST(ArrivalTimes, SameSeedSameArrivals) {
  for (ArrivalProcess p : {ArrivalProcess::kPoisson, ArrivalProcess::kGamma}) {
    ArrivalTimes a(p, 5.0, 1.5, Rng(99));
    ArrivalTimes b(p, 5.0, 1.5, Rng(99));
    ArrivalTimes c(p, 5.0, 1.5, Rng(100));
    bool differs = false;
    for (int i = 0; i < 1000; ++i) {
      const SimTime ta = a.Next();
      EXPECT_EQ(ta, b.Next());
      differs |= ta != c.Next();
    }
    EXPECT_TRUE(differs);
  }
}

TEST(ArrivalTimes, ValidateNamesTheField) {
  EXPECT_EQ(ArrivalTimes::Validate(ArrivalProcess::kPoisson, 0, 1, "traffic").message(),
            "traffic.rate_per_s: expected a positive number, got 0");
  EXPECT_EQ(ArrivalTimes::Validate(ArrivalProcess::kGamma, 1, -1, "traffic").message(),
            "traffic.cv: expected a positive number for gamma arrivals, got -1");
  EXPECT_TRUE(ArrivalTimes::Validate(ArrivalProcess::kPoisson, 1, -1, "traffic").ok());
  EXPECT_FALSE(ArrivalTimes::Validate(ArrivalProcess::kConstant, INFINITY, 1, "t").ok());
}

}  // namespace
}  // namespace fleetsim

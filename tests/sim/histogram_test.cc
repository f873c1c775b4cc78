#include "sim/metrics/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "sim/engine/rng.h"

namespace fleetsim {
namespace {

TEST(LogHistogram, BucketsTileTheLineWithoutGaps) {
  for (int b = 0; b < 64 * 50; ++b) {
    ASSERT_EQ(LogHistogram::BucketHigh(b), LogHistogram::BucketLow(b + 1)) << b;
    ASSERT_EQ(LogHistogram::BucketOf(LogHistogram::BucketLow(b)), b);
    ASSERT_EQ(LogHistogram::BucketOf(LogHistogram::BucketHigh(b) - 1), b);
  }
}

TEST(LogHistogram, QuantilesWithinOnePercentOfExact) {
  Rng rng(5);
  std::vector<int64_t> values;
  LogHistogram h;
  for (int i = 0; i < 200000; ++i) {
    int64_t v = static_cast<int64_t>(rng.LogNormal(std::log(20e6), 1.0));  // ~20 ms
    values.push_back(v);
    h.Add(v);
  }
  std::sort(values.begin(), values.end());
  for (double q : {0.5, 0.9, 0.95, 0.99, 0.999}) {
    size_t rank = static_cast<size_t>(std::ceil(q * values.size()));
    double exact = static_cast<double>(values[rank - 1]);
    EXPECT_NEAR(h.Quantile(q), exact, 0.01 * exact) << q;
  }
  EXPECT_EQ(h.max(), values.back());
}

TEST(LogHistogram, WeightedEntriesCountAsRepeats) {
  LogHistogram a, b;
  a.Add(1000, 5);
  a.Add(3000000, 2);
  for (int i = 0; i < 5; ++i) b.Add(1000);
  for (int i = 0; i < 2; ++i) b.Add(3000000);
  EXPECT_EQ(a.count(), b.count());
  EXPECT_DOUBLE_EQ(a.mean(), b.mean());
  EXPECT_DOUBLE_EQ(a.Quantile(0.9), b.Quantile(0.9));
}

}  // namespace
}  // namespace fleetsim

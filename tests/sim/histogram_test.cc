#include "sim/metrics/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <tuple>
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

// AddSteps (a decode span's gaps, given by their ends) against Add of each
// gap: the same buckets, count, sum, min and max, whether the gaps ascend
// (found by bisection) or not (walked).
void ExpectStepsAsAdds(const std::vector<int64_t>& ends, int64_t first, int64_t count, bool ascending) {
  LogHistogram ref, steps;
  ref.Add(3, 2);  // something before, so min and max merge
  steps.Add(3, 2);
  for (size_t i = static_cast<size_t>(first); i < ends.size(); ++i) ref.Add(ends[i] - ends[i - 1], count);
  steps.AddSteps([&ends](int64_t i) { return ends[static_cast<size_t>(i)]; }, first,
                 static_cast<int64_t>(ends.size()), count, ascending);
  std::vector<std::tuple<int64_t, int64_t, int64_t>> a, b;
  ref.ForEachBucket([&](int64_t lo, int64_t hi, int64_t n) { a.emplace_back(lo, hi, n); });
  steps.ForEachBucket([&](int64_t lo, int64_t hi, int64_t n) { b.emplace_back(lo, hi, n); });
  EXPECT_EQ(a, b);
  EXPECT_EQ(ref.count(), steps.count());
  EXPECT_EQ(ref.mean(), steps.mean());
  EXPECT_EQ(ref.min(), steps.min());
  EXPECT_EQ(ref.max(), steps.max());
}

TEST(LogHistogram, AddStepsCountsAsAddOfEachGap) {
  Rng rng(11);
  // Ascending gaps from 1 ns through ~7 ms, crossing many buckets, with
  // runs of equal gaps.
  std::vector<int64_t> ends{1000};
  int64_t gap = 1;
  for (int i = 0; i < 5000; ++i) {
    if (rng.Uniform() < 0.7) gap += static_cast<int64_t>(rng.Uniform() * static_cast<double>(gap) * 0.01) + 1;
    ends.push_back(ends.back() + gap);
  }
  ExpectStepsAsAdds(ends, 1, 3, /*ascending=*/true);
  ExpectStepsAsAdds(ends, 1, 3, /*ascending=*/false);
  ExpectStepsAsAdds(ends, 700, 1, /*ascending=*/true);
  ExpectStepsAsAdds(ends, 4999, 2, /*ascending=*/true);  // one gap
  // Gaps that rise and fall: walked.
  std::vector<int64_t> wavy{0};
  for (int i = 0; i < 3000; ++i) wavy.push_back(wavy.back() + 1 + static_cast<int64_t>(rng.Uniform() * 5e6));
  ExpectStepsAsAdds(wavy, 1, 4, /*ascending=*/false);
  // Nothing to add.
  LogHistogram h;
  h.AddSteps([&ends](int64_t i) { return ends[static_cast<size_t>(i)]; }, 5, 5, 1, true);
  EXPECT_EQ(h.count(), 0);
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

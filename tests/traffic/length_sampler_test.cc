#include "sim/traffic/length_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace fleetsim {
namespace {

LengthSpec LogNormal(double median, double sigma, int32_t min, int32_t max) {
  LengthSpec s;
  s.kind = LengthSpec::Kind::kLogNormal;
  s.median = median;
  s.sigma = sigma;
  s.min = min;
  s.max = max;
  return s;
}

TEST(LengthSampler, FixedAlwaysReturnsValue) {
  LengthSpec s;
  s.value = 128;
  LengthSampler l(s);
  Rng rng(1);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(l.Sample(rng), 128);
}

TEST(LengthSampler, LogNormalHasRequestedMedian) {
  LengthSampler l(LogNormal(1000, 0.8, 1, 1 << 30));
  Rng rng(3);
  std::vector<int32_t> v(100'000);
  for (int32_t& x : v) x = l.Sample(rng);
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  // Standard error of the sample median: about 0.3%.
  EXPECT_NEAR(v[v.size() / 2], 1000, 20);
}

TEST(LengthSampler, LogNormalIsClampedAndRounded) {
  LengthSampler l(LogNormal(100, 3.0, 20, 500));
  Rng rng(5);
  int at_min = 0, at_max = 0;
  for (int i = 0; i < 10'000; ++i) {
    const int32_t x = l.Sample(rng);
    ASSERT_GE(x, 20);
    ASSERT_LE(x, 500);
    at_min += x == 20;
    at_max += x == 500;
  }
  // sigma 3 puts ~30% of the mass below 20 and ~30% above 500.
  EXPECT_GT(at_min, 2000);
  EXPECT_GT(at_max, 2000);
  // A median of 0.4 with no spread rounds to the clamp at 1.
  LengthSampler tiny(LogNormal(0.4, 0, 1, 10));
  EXPECT_EQ(tiny.Sample(rng), 1);
  LengthSampler round(LogNormal(7.6, 0, 1, 10));
  EXPECT_EQ(round.Sample(rng), 8);
}

TEST(LengthSampler, UniformCoversInclusiveRangeEvenly) {
  LengthSpec s;
  s.kind = LengthSpec::Kind::kUniform;
  s.min = 3;
  s.max = 6;
  LengthSampler l(s);
  Rng rng(8);
  int counts[7] = {};
  for (int i = 0; i < 40'000; ++i) {
    const int32_t x = l.Sample(rng);
    ASSERT_GE(x, 3);
    ASSERT_LE(x, 6);
    ++counts[x];
  }
  for (int x = 3; x <= 6; ++x) EXPECT_NEAR(counts[x], 10'000, 400) << x;
}

TEST(LengthSampler, ValidateNamesTheField) {
  LengthSpec s;
  s.value = 0;
  EXPECT_EQ(LengthSampler::Validate(s, "traffic.prompt").message(),
            "traffic.prompt.value: expected a positive token count, got 0");
  EXPECT_EQ(LengthSampler::Validate(LogNormal(-1, 1, 1, 10), "traffic.output").message(),
            "traffic.output.median: expected a positive number, got -1");
  EXPECT_EQ(LengthSampler::Validate(LogNormal(5, -1, 1, 10), "p").message(),
            "p.sigma: expected a non-negative number, got -1");
  EXPECT_EQ(LengthSampler::Validate(LogNormal(5, 1, 10, 9), "p").message(),
            "p.max: expected at least min (10), got 9");
  EXPECT_EQ(LengthSampler::Validate(LogNormal(5, 1, 0, 9), "p").message(),
            "p.min: expected a positive token count, got 0");
}

}  // namespace
}  // namespace fleetsim

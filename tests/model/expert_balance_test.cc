// The expert-parallel balance (model/expert_balance.h) by hand.
#include "model/expert_balance.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace fleetsim {
namespace {

TEST(ExpertBalance, UniformLoadsAreBalancedEitherWay) {
  const std::vector<double> loads(256, 1.0);
  EXPECT_DOUBLE_EQ(BalanceExperts(loads, 32, std::nullopt).skew, 1.0);
  const ExpertBalance b = BalanceExperts(loads, 32, 32);
  EXPECT_EQ(b.slots_per_gpu, 9);
  // 288 copies of 256 equal loads cannot all be equal: 32 experts are split
  // in two; the packing still evens the GPUs to within one half-copy.
  EXPECT_LE(b.skew, 1.0 + 0.5 / 8);
}

// Loads 3, 1, 1, 1 on two GPUs. Static: {3, 1} and {1, 1}: the busiest
// carries 4 of a mean 3. Two redundant copies both go to expert 0 (3, then
// 1.5 per copy, against 1), leaving six copies of 1 packed three a GPU.
TEST(ExpertBalance, RedundantCopiesOfTheHotExpertEvenTheGpus) {
  const std::vector<double> loads = {3, 1, 1, 1};
  EXPECT_DOUBLE_EQ(BalanceExperts(loads, 2, std::nullopt).skew, 4.0 / 3);
  // Rearranging alone: 3 with the lightest, {3, 1} against {1, 1} again.
  EXPECT_DOUBLE_EQ(BalanceExperts(loads, 2, 0).skew, 4.0 / 3);
  const ExpertBalance b = BalanceExperts(loads, 2, 2);
  EXPECT_EQ(b.slots_per_gpu, 3);
  EXPECT_DOUBLE_EQ(b.skew, 1.0);
}

// Static placement of a skewed popularity: the hottest expert's GPU; a
// balancer with one redundant copy per GPU brings it close to the mean.
TEST(ExpertBalance, ZipfPopularityAndEplb) {
  const std::vector<double> uniform = ZipfLoads(256, 0);
  EXPECT_EQ(uniform, std::vector<double>(256, 1.0));
  const std::vector<double> zipf = ZipfLoads(256, 1.0);
  // Every rank once: the sum of 1/(i+1) for i < 256.
  double harmonic = 0;
  for (int i = 1; i <= 256; ++i) harmonic += 1.0 / i;
  EXPECT_NEAR(std::accumulate(zipf.begin(), zipf.end(), 0.0), harmonic, 1e-9);
  const double fixed = BalanceExperts(zipf, 32, std::nullopt).skew;
  const double eplb = BalanceExperts(zipf, 32, 32).skew;
  // The hottest expert alone carries 1 / 6.12 of the load: 5.2x a GPU's
  // mean share of 1/32.
  EXPECT_GT(fixed, 32 / harmonic);
  EXPECT_LT(eplb, 0.5 * fixed);
  EXPECT_GE(eplb, 1.0);
  // Deterministic.
  EXPECT_EQ(BalanceExperts(zipf, 32, 32).skew, eplb);
}

}  // namespace
}  // namespace fleetsim

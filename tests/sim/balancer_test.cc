// Global balancers: one suite over the registry (never a region that is
// down, -1 only when none is up, the same draws for the same seed), then
// each policy's rule on a hand-made set of regions.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/cluster/gateway.h"

namespace fleetsim {
namespace {

const GlobalBalancerRegistry& Balancers() {
  static const GlobalBalancerRegistry* r = [] {
    auto* reg = new GlobalBalancerRegistry();
    RegisterBuiltinGlobalBalancers(reg);
    return reg;
  }();
  return *r;
}

std::unique_ptr<GlobalBalancer> Make(const std::string& name, uint64_t seed = 1, double budget_ms = 0) {
  GlobalBalancerOptions o;
  o.latency_budget_ms = budget_ms;
  return Balancers().Find(name)->factory(o, Rng(seed));
}

RegionState Region(double rtt, bool up, double load = 0, bool saturated = false, double weight = 1) {
  RegionState r;
  r.rtt_ms = rtt;
  r.up = up;
  r.load = load;
  r.saturated = saturated;
  r.weight = weight;
  return r;
}

class EveryBalancer : public testing::TestWithParam<std::string> {};

TEST_P(EveryBalancer, NeverPicksARegionThatIsDown) {
  auto b = Make(GetParam());
  Rng draw(9);
  for (int k = 0; k < 2000; ++k) {
    std::vector<RegionState> regions;
    for (int r = 0; r < 4; ++r)
      regions.push_back(Region(1 + static_cast<double>(draw.Below(200)), draw.Below(3) != 0,
                               static_cast<double>(draw.Below(50)), draw.Below(4) == 0, 1 + static_cast<double>(draw.Below(3))));
    bool any = false;
    for (const RegionState& r : regions) any = any || r.up;
    const int pick = b->Pick(regions);
    if (!any) {
      EXPECT_EQ(pick, -1);
      continue;
    }
    ASSERT_GE(pick, 0);
    ASSERT_LT(pick, 4);
    EXPECT_TRUE(regions[pick].up) << "case " << k;
  }
}

TEST_P(EveryBalancer, SameSeedSameChoices) {
  auto a = Make(GetParam(), 3), b = Make(GetParam(), 3);
  const std::vector<RegionState> regions = {Region(10, true, 5), Region(40, true, 1), Region(80, true, 0)};
  for (int k = 0; k < 200; ++k) EXPECT_EQ(a->Pick(regions), b->Pick(regions));
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryBalancer, testing::ValuesIn(Balancers().Names()),
                         [](const testing::TestParamInfo<std::string>& i) { return i.param; });

TEST(NearestBalancer, SpillsToTheNextNearestWhenSaturatedAndFallsBackWhenAllAre) {
  auto b = Make("nearest");
  EXPECT_EQ(b->Pick({Region(50, true), Region(10, true), Region(30, true)}), 1);
  EXPECT_EQ(b->Pick({Region(50, true), Region(10, true, 0, true), Region(30, true)}), 2);
  EXPECT_EQ(b->Pick({Region(50, true), Region(10, false), Region(30, true, 0, true)}), 0);
  // Every region up is saturated: the nearest up still takes it.
  EXPECT_EQ(b->Pick({Region(50, true, 0, true), Region(10, false), Region(30, true, 0, true)}), 2);
}

TEST(LeastLoadedBalancer, LeastLoadWithinTheBudget) {
  // Budget 0: the nearest's round trip (30 ms), so only regions that near.
  auto tight = Make("least_loaded");
  EXPECT_EQ(tight->Pick({Region(30, true, 9), Region(30, true, 4), Region(60, true, 0)}), 1);
  auto wide = Make("least_loaded", 1, 100);
  EXPECT_EQ(wide->Pick({Region(30, true, 9), Region(30, true, 4), Region(60, true, 0)}), 2);
  // Equal loads: the nearer.
  EXPECT_EQ(wide->Pick({Region(60, true, 2), Region(30, true, 2)}), 1);
}

TEST(WeightedBalancer, DrawsByWeightAmongRegionsUpAndNotSaturated) {
  auto b = Make("weighted", 5);
  const std::vector<RegionState> regions = {Region(10, true, 0, false, 3), Region(20, true, 0, false, 1),
                                            Region(5, false, 0, false, 4), Region(1, true, 0, true, 4)};
  std::map<int, int> picks;
  const int n = 20000;
  for (int k = 0; k < n; ++k) picks[b->Pick(regions)]++;
  EXPECT_NEAR(picks[0] / static_cast<double>(n), 0.75, 0.015);
  EXPECT_NEAR(picks[1] / static_cast<double>(n), 0.25, 0.015);
  EXPECT_EQ(picks[2] + picks[3], 0);
}

}  // namespace
}  // namespace fleetsim

// The planner's search (sim/plan/planner.h), at the library level, on tiny
// plans: Llama-3.1-8B, 300 generated requests, 2 or 3 replications.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/catalog.h"
#include "sim/plan/plan_spec.h"
#include "sim/plan/planner.h"
#include "sim/runner/run.h"

namespace fleetsim {
namespace {

using nlohmann::json;

const char kPlanFile[] = "plans/planner-test.json";

// 60 requests/s of fixed-length requests: one H100 meets the targets, A100
// and L40S need a few replicas (more than the range's minimum).
json BasePlan() {
  return json::parse(R"({
    "format": "fleetsim-plan",
    "version": 1,
    "name": "planner-test",
    "scenario": {
      "name": "planner-test-base", "seed": 7, "model": "Llama-3.1-8B", "warmup_s": 1,
      "fleet": { "router": "least_outstanding",
                 "pools": [{ "name": "pool", "gpu": "H100-SXM", "replicas": 1, "tp": 1 }] },
      "traffic": { "generator": { "arrival": "poisson", "rate_per_s": 60, "prompt_tokens": 200, "output_tokens": 50 },
                   "max_requests": 300 },
      "slo": { "ttft_ms": 1000, "tpot_ms": 50 }
    },
    "dimensions": [
      { "key": "fleet.pools[0].gpu", "values": ["H100-SXM", "A100-80G", "L40S"] },
      { "key": "fleet.pools[0].replicas", "search": "bisect", "min": 1, "max": 8 }
    ],
    "targets": {
      "ttft_ms": { "p99": 500 },
      "tpot_ms": { "p99": 30 },
      "attainment": 0.9,
      "max_reject_rate": 0.01
    },
    "load": { "rate_scales": [0.5, 1, 2], "max_rate_scale": 3 },
    "replications": 2,
    "seed": 3,
    "shortlist": 3
  })");
}

class PlannerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    catalog_ = new Catalog;
    ASSERT_TRUE(Catalog::LoadBuiltin(catalog_).ok());
    policies_ = new Policies;
    RegisterBuiltins(policies_);
  }
  static void TearDownTestSuite() {
    delete catalog_;
    delete policies_;
    catalog_ = nullptr;
    policies_ = nullptr;
  }

  // Parses and runs `plan`; the planner (and its result) or a failed Status.
  static Status RunPlan(const json& plan, int threads, std::unique_ptr<Planner>* out) {
    PlanSpec spec;
    FLEETSIM_RETURN_IF_ERROR(ParsePlan(plan.dump(2), kPlanFile, &spec));
    *out = std::make_unique<Planner>(spec, *catalog_, *policies_);
    PlanOptions o;
    o.threads = threads;
    return (*out)->Run(o);
  }
  static std::unique_ptr<Planner> MustRun(const json& plan, int threads = 2) {
    std::unique_ptr<Planner> p;
    const Status s = RunPlan(plan, threads, &p);
    EXPECT_TRUE(s.ok()) << s.message();
    return s.ok() ? std::move(p) : nullptr;
  }

  static Catalog* catalog_;
  static Policies* policies_;
};
Catalog* PlannerTest::catalog_ = nullptr;
Policies* PlannerTest::policies_ = nullptr;

int FindConfig(const PlanResult& r, int family, int64_t replicas) {
  for (size_t i = 0; i < r.configs.size(); ++i)
    if (r.configs[i].family == family && r.configs[i].replicas == replicas) return static_cast<int>(i);
  return -1;
}

const PlanPoint* FindPoint(const PlanResult& r, int config, double scale) {
  for (const PlanPoint& p : r.points)
    if (p.config == config && p.rate_scale == scale) return &p;
  return nullptr;
}

const PlanPoint* FindPoint(const PlanResult& r, int family, int64_t replicas, double scale) {
  const int c = FindConfig(r, family, replicas);
  return c < 0 ? nullptr : FindPoint(r, c, scale);
}

bool FamilyRan(const PlanResult& r, int family) {
  for (const PlanPoint& p : r.points)
    if (r.configs[p.config].family == family) return true;
  return false;
}

// Whether every target's pessimistic bound is within its limit, checked here
// from the intervals rather than taken from the point's verdict.
void ExpectBoundsWithinTargets(const PlanResult& r, const PlanPoint& p) {
  for (const PlanTarget& t : r.plan.targets) {
    const int m = PlanMetricIndex(t.metric);
    ASSERT_GE(m, 0) << t.metric;
    const Interval& iv = p.metrics[m];
    EXPECT_EQ(iv.n, r.plan.replications) << t.id;
    if (t.is_max) {
      EXPECT_LE(iv.hi, t.limit) << t.id << " upper bound";
    } else {
      EXPECT_GE(iv.lo, t.limit) << t.id << " lower bound";
    }
  }
}

TEST_F(PlannerTest, BisectionFindsTheFewestReplicas) {
  auto planner = MustRun(BasePlan());
  ASSERT_TRUE(planner);
  const PlanResult& r = planner->result();
  ASSERT_EQ(r.families.size(), 3u);
  int above_min = 0;
  for (const PlanFamily& f : r.families) {
    SCOPED_TRACE(f.label);
    ASSERT_EQ(f.status, PlanFamily::Status::kMeets) << f.reason;
    ASSERT_TRUE(f.min_replicas.has_value());
    ASSERT_TRUE(f.replica_range.has_value());
    EXPECT_EQ(*f.replica_range, std::make_pair(int64_t{1}, int64_t{8}));
    ASSERT_GE(f.config, 0);
    EXPECT_EQ(r.configs[f.config].replicas, *f.min_replicas);
    EXPECT_EQ(r.configs[f.config].id, "f" + std::to_string(f.id) + "-r" + std::to_string(*f.min_replicas));
    const PlanPoint* at = FindPoint(r, f.id, *f.min_replicas, 1.0);
    ASSERT_NE(at, nullptr);
    EXPECT_TRUE(at->meets_all);
    if (*f.min_replicas > f.replica_range->first) {
      ++above_min;
      // Bisection must have seen the failure just below its answer.
      const PlanPoint* below = FindPoint(r, f.id, *f.min_replicas - 1, 1.0);
      ASSERT_NE(below, nullptr) << "min_replicas-1 was not run";
      EXPECT_FALSE(below->meets_all);
    }
    // Nothing run at the stated load with fewer replicas meets the targets.
    for (const PlanPoint& p : r.points) {
      const PlanConfig& c = r.configs[p.config];
      if (c.family == f.id && p.rate_scale == 1.0 && c.replicas < *f.min_replicas) {
        EXPECT_FALSE(p.meets_all) << c.id;
      }
    }
  }
  // The plan is built so that some family needs more than one replica;
  // otherwise the checks above would prove nothing about bisection.
  EXPECT_GE(above_min, 1);
}

// A prefill:decode ratio searched with the fleet's scale: each ratio a
// family, config m running m a prefill and m b decode replicas, priced and
// launched as such.
TEST_F(PlannerTest, PrefillDecodeRatiosAreFamiliesAndBisectTheirScale) {
  json plan = BasePlan();
  plan["scenario"]["fleet"]["pools"] = json::parse(R"([
    { "name": "prefill", "gpu": "H100-SXM", "replicas": 1, "tp": 1, "role": "prefill" },
    { "name": "decode", "gpu": "H100-SXM", "replicas": 1, "tp": 1, "role": "decode" }])");
  // Six times the base load: one pair is not enough.
  plan["scenario"]["traffic"]["generator"]["rate_per_s"] = 360;
  plan["scenario"]["traffic"]["max_requests"] = 1800;
  plan["dimensions"] = json::parse(R"([
    { "keys": ["fleet.pools[0].replicas", "fleet.pools[1].replicas"], "search": "bisect", "min": 1, "max": 8,
      "ratios": [[1, 1], [1, 2]] }])");
  plan["replications"] = 1;
  auto planner = MustRun(plan);
  ASSERT_TRUE(planner);
  const PlanResult& r = planner->result();
  ASSERT_EQ(r.families.size(), 2u);
  EXPECT_EQ(r.families[0].label, "ratio(pools[0]:pools[1])=1:1");
  EXPECT_EQ(r.families[1].label, "ratio(pools[0]:pools[1])=1:2");
  for (const PlanConfig& c : r.configs) {
    SCOPED_TRACE(c.id);
    ASSERT_TRUE(c.run);
    const std::vector<int64_t>& ratio = r.families[c.family].ratio;
    ASSERT_EQ(c.run->pools().size(), 2u);
    EXPECT_EQ(c.run->pools()[0].spec->replicas, c.replicas * ratio[0]);
    EXPECT_EQ(c.run->pools()[1].spec->replicas, c.replicas * ratio[1]);
    EXPECT_EQ(c.gpus, c.replicas * (ratio[0] + ratio[1]));
    EXPECT_EQ(c.launch.replicas, c.replicas * (ratio[0] + ratio[1]));
    EXPECT_NE(c.launch.command.find("NixlConnector"), std::string::npos) << c.launch.command;
  }
  int above_min = 0;
  for (const PlanFamily& f : r.families) {
    SCOPED_TRACE(f.label);
    ASSERT_EQ(f.status, PlanFamily::Status::kMeets) << f.reason;
    ASSERT_TRUE(f.min_replicas.has_value());
    if (*f.min_replicas > 1) {
      ++above_min;
      const PlanPoint* below = FindPoint(r, f.id, *f.min_replicas - 1, 1.0);
      ASSERT_NE(below, nullptr);
      EXPECT_FALSE(below->meets_all);
    }
  }
  EXPECT_GE(above_min, 1) << "the load must need more than one unit, or the bisection is not tested";
}

// GPUs of an expert-parallel replica with data-parallel attention are tp x
// dp, and the launch command says how vLLM runs it.
TEST_F(PlannerTest, ExpertParallelConfigurationsCountEveryGpu) {
  json plan = BasePlan();
  plan["scenario"]["model"] = "Mixtral-8x7B";
  plan["scenario"]["fleet"]["pools"][0]["ep"] = 2;
  plan["scenario"]["fleet"]["pools"][0]["dp_attention"] = true;
  plan["dimensions"] = json::parse(R"([
    { "key": "fleet.placement", "values": ["topology_aware", "spread"] },
    { "key": "fleet.pools[0].replicas", "search": "bisect", "min": 1, "max": 2 }])");
  plan["replications"] = 1;
  auto planner = MustRun(plan);
  ASSERT_TRUE(planner);
  const PlanResult& r = planner->result();
  ASSERT_EQ(r.families.size(), 2u);
  ASSERT_FALSE(r.configs.empty());
  for (const PlanConfig& c : r.configs) {
    SCOPED_TRACE(c.id);
    EXPECT_EQ(c.gpus, 2 * c.replicas);
    EXPECT_NE(c.launch.command.find("--enable-expert-parallel --data-parallel-size 2"), std::string::npos)
        << c.launch.command;
  }
}

TEST_F(PlannerTest, FixedRangeAgreesWithBisection) {
  auto planner = MustRun(BasePlan());
  ASSERT_TRUE(planner);
  const PlanResult& r = planner->result();
  // The family needing the most replicas.
  int fam = -1;
  for (const PlanFamily& f : r.families)
    if (f.min_replicas && (fam < 0 || *f.min_replicas > *r.families[fam].min_replicas)) fam = f.id;
  ASSERT_GE(fam, 0);
  const int64_t n = *r.families[fam].min_replicas;
  ASSERT_GT(n, 1) << "the base plan should need more than one replica somewhere";
  const PlanPoint* at = FindPoint(r, fam, n, 1.0);
  const PlanPoint* below = FindPoint(r, fam, n - 1, 1.0);
  ASSERT_NE(at, nullptr);
  ASSERT_NE(below, nullptr);

  // The same family alone, its range fixed at n-1, then at n.
  for (const int64_t fixed : {n - 1, n}) {
    SCOPED_TRACE("fixed at " + std::to_string(fixed));
    json j = BasePlan();
    j["dimensions"][0]["values"] = json::array({j["dimensions"][0]["values"][fam]});
    j["dimensions"][1]["min"] = fixed;
    j["dimensions"][1]["max"] = fixed;
    auto one = MustRun(j);
    ASSERT_TRUE(one);
    const PlanResult& o = one->result();
    ASSERT_EQ(o.families.size(), 1u);
    const PlanFamily& f = o.families[0];
    EXPECT_EQ(f.label, r.families[fam].label);
    const PlanPoint* p = FindPoint(o, 0, fixed, 1.0);
    ASSERT_NE(p, nullptr);
    // A simulation depends only on its configuration, load and replication:
    // the same figures as in the bisecting plan.
    const PlanPoint* same = fixed == n ? at : below;
    EXPECT_EQ(p->values, same->values);
    if (fixed == n) {
      EXPECT_EQ(f.status, PlanFamily::Status::kMeets) << f.reason;
      EXPECT_EQ(f.min_replicas, n);
      EXPECT_TRUE(p->meets_all);
    } else {
      EXPECT_EQ(f.status, PlanFamily::Status::kMisses);
      EXPECT_FALSE(f.min_replicas.has_value());
      EXPECT_NE(f.reason.find("misses"), std::string::npos) << f.reason;
      ASSERT_TRUE(f.binding.has_value());
      EXPECT_FALSE(p->meets[f.binding->target]);
      EXPECT_FALSE(p->meets_all);
      EXPECT_TRUE(o.recommendations.empty());
      EXPECT_EQ(o.chosen, -1);
    }
  }
}

TEST_F(PlannerTest, HeadroomAndCostCurveAreConsistentWithThePointsRun) {
  auto planner = MustRun(BasePlan());
  ASSERT_TRUE(planner);
  const PlanResult& r = planner->result();
  int checked = 0;
  for (int fid : r.recommendations) {
    const PlanFamily& f = r.families[fid];
    SCOPED_TRACE(f.label);
    EXPECT_TRUE(f.shortlisted);
    ASSERT_TRUE(f.headroom_scale.has_value());
    const double h = *f.headroom_scale;
    EXPECT_GE(h, 1.0);
    EXPECT_LE(h, r.plan.max_rate_scale);
    const PlanPoint* ph = FindPoint(r, f.config, h);
    ASSERT_NE(ph, nullptr) << "headroom " << h << " was not run";
    EXPECT_TRUE(ph->meets_all);
    if (f.headroom_capped) {
      EXPECT_DOUBLE_EQ(h, r.plan.max_rate_scale);
    } else {
      ASSERT_TRUE(f.binding.has_value());
      EXPECT_GT(f.binding->rate_scale, h);
      const PlanPoint* pb = FindPoint(r, f.config, f.binding->rate_scale);
      ASSERT_NE(pb, nullptr);
      EXPECT_FALSE(pb->meets_all);
      EXPECT_FALSE(pb->meets[f.binding->target]);
    }
    // Every curve point was run.
    for (double s : r.plan.rate_scales) EXPECT_NE(FindPoint(r, f.config, s), nullptr) << "scale " << s;
    ASSERT_EQ(f.cost_curve.size(), r.plan.rate_scales.size());
    for (const PlanFamily::CostPoint& cp : f.cost_curve) {
      if (!cp.replicas) continue;
      ++checked;
      const PlanPoint* p = FindPoint(r, f.id, *cp.replicas, cp.rate_scale);
      ASSERT_NE(p, nullptr) << "scale " << cp.rate_scale;
      EXPECT_TRUE(p->meets_all) << "scale " << cp.rate_scale;
      EXPECT_EQ(cp.config, FindConfig(r, f.id, *cp.replicas));
      // More load never needs fewer replicas than the stated load, and less never more.
      if (cp.rate_scale < 1) {
        EXPECT_LE(*cp.replicas, *f.min_replicas);
      }
      if (cp.rate_scale > 1) {
        EXPECT_GE(*cp.replicas, *f.min_replicas);
      }
      const int64_t search_lo = cp.rate_scale <= 1 ? f.replica_range->first : *f.min_replicas;
      if (*cp.replicas > search_lo) {
        const PlanPoint* below = FindPoint(r, f.id, *cp.replicas - 1, cp.rate_scale);
        ASSERT_NE(below, nullptr) << "scale " << cp.rate_scale;
        EXPECT_FALSE(below->meets_all) << "scale " << cp.rate_scale;
      }
    }
  }
  EXPECT_GT(checked, 0);
}

TEST_F(PlannerTest, ConfigurationsThatCannotRunAreDropped) {
  json j = BasePlan();
  j["dimensions"][0] = json::parse(R"({
    "keys": ["model", "fleet.pools[0].gpu", "fleet.pools[0].tp"],
    "values": [["Llama-3.1-70B", "A100-40G", 1], ["Llama-3.1-8B", "H100-SXM", 3], ["Llama-3.1-8B", "H100-SXM", 1]]
  })");
  auto planner = MustRun(j);
  ASSERT_TRUE(planner);
  const PlanResult& r = planner->result();
  ASSERT_EQ(r.families.size(), 3u);
  const PlanFamily& big = r.families[0];
  EXPECT_EQ(big.status, PlanFamily::Status::kDropped);
  EXPECT_NE(big.reason.find("does not fit"), std::string::npos) << big.reason;
  EXPECT_NE(big.reason.find("A100-40G"), std::string::npos) << big.reason;
  const PlanFamily& tp3 = r.families[1];
  EXPECT_EQ(tp3.status, PlanFamily::Status::kDropped);
  EXPECT_NE(tp3.reason.find("does not divide"), std::string::npos) << tp3.reason;
  EXPECT_EQ(r.families[2].status, PlanFamily::Status::kMeets) << r.families[2].reason;
  for (int f : {0, 1}) {
    EXPECT_FALSE(FamilyRan(r, f)) << f;
    EXPECT_FALSE(r.families[f].min_replicas.has_value());
    EXPECT_EQ(r.families[f].config, -1);
    EXPECT_FALSE(r.families[f].shortlisted);
    for (int rec : r.recommendations) EXPECT_NE(rec, f);
  }
  EXPECT_EQ(r.recommendations, std::vector<int>{2});
  ASSERT_GE(r.chosen, 0);
  EXPECT_EQ(r.configs[r.chosen].family, 2);
  for (int c : r.frontier) EXPECT_EQ(r.configs[c].family, 2);
}

TEST_F(PlannerTest, AllDroppedGivesNoRecommendation) {
  json j = BasePlan();
  j["scenario"]["model"] = "Llama-3.1-70B";
  j["dimensions"][0]["values"] = {"A100-40G", "L40S"};
  auto planner = MustRun(j);
  ASSERT_TRUE(planner);
  const PlanResult& r = planner->result();
  for (const PlanFamily& f : r.families) {
    EXPECT_EQ(f.status, PlanFamily::Status::kDropped);
    EXPECT_NE(f.reason.find("does not fit"), std::string::npos) << f.reason;
  }
  EXPECT_TRUE(r.points.empty());
  EXPECT_TRUE(r.recommendations.empty());
  EXPECT_EQ(r.chosen, -1);
  EXPECT_EQ(r.simulations, 0);
  RunReport report;
  EXPECT_FALSE(planner->RunChosen(MetricsOptions(), &report).ok());
}

TEST_F(PlannerTest, ScenarioErrorFailsThePlan) {
  json j = BasePlan();
  j["dimensions"][0]["values"] = {"H100-SXM", "H999-Imaginary"};
  std::unique_ptr<Planner> planner;
  const Status s = RunPlan(j, 2, &planner);
  ASSERT_FALSE(s.ok());
  const std::string& m = s.message();
  EXPECT_FALSE(s.infeasible());
  EXPECT_EQ(m.rfind(std::string(kPlanFile) + ": ", 0), 0u) << m;
  EXPECT_NE(m.find("family 1"), std::string::npos) << m;
  EXPECT_NE(m.find("gpu=H999-Imaginary"), std::string::npos) << m;
  EXPECT_NE(m.find("fleet.pools[0].gpu"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

TEST_F(PlannerTest, BadDimensionKeyFailsThePlan) {
  json j = BasePlan();
  j["dimensions"].push_back({{"key", "fleet.pools[0].no_such_key"}, {"values", {1}}});
  std::unique_ptr<Planner> planner;
  const Status s = RunPlan(j, 1, &planner);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(kPlanFile), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("no_such_key"), std::string::npos) << s.message();
}

TEST_F(PlannerTest, AttainmentNeedsAnSloSection) {
  json j = BasePlan();
  j["scenario"].erase("slo");
  std::unique_ptr<Planner> planner;
  const Status s = RunPlan(j, 1, &planner);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("targets.attainment"), std::string::npos) << s.message();
}

TEST_F(PlannerTest, QuotaBelowTheFewestReplicasDropsTheFamily) {
  json j = BasePlan();
  j["dimensions"][0] = json::parse(R"({ "keys": ["fleet.pools[0].gpu", "fleet.pools[0].tp"],
                                        "values": [["H100-SXM", 2], ["L40S", 1]] })");
  j["dimensions"][1]["min"] = 2;
  j["quotas"] = {{"H100-SXM", 3}};
  auto planner = MustRun(j);
  ASSERT_TRUE(planner);
  const PlanResult& r = planner->result();
  ASSERT_EQ(r.families.size(), 2u);
  const PlanFamily& f = r.families[0];
  EXPECT_EQ(f.status, PlanFamily::Status::kDropped);
  EXPECT_NE(f.reason.find("quota is 3"), std::string::npos) << f.reason;
  EXPECT_NE(f.reason.find("H100-SXM"), std::string::npos) << f.reason;
  EXPECT_NE(f.reason.find("4"), std::string::npos) << f.reason;  // 2 replicas x tp 2
  EXPECT_FALSE(FamilyRan(r, 0));
  for (int rec : r.recommendations) EXPECT_NE(rec, 0);
  // The quota names no L40S: that family is not bounded by it.
  EXPECT_EQ(r.families[1].replica_range, std::make_pair(int64_t{2}, int64_t{8}));
}

TEST_F(PlannerTest, QuotaInsideTheRangeCapsIt) {
  json j = BasePlan();
  j["dimensions"][0]["values"] = {"A100-80G", "L40S"};
  j["quotas"] = {{"A100-80G", 5}, {"H100-SXM", 0}};
  auto planner = MustRun(j);
  ASSERT_TRUE(planner);
  const PlanResult& r = planner->result();
  const PlanFamily& a100 = r.families[0];
  ASSERT_NE(a100.status, PlanFamily::Status::kDropped) << a100.reason;
  EXPECT_EQ(a100.replica_range, std::make_pair(int64_t{1}, int64_t{5}));
  EXPECT_EQ(r.families[1].replica_range, std::make_pair(int64_t{1}, int64_t{8}));
  for (const PlanPoint& p : r.points) {
    const PlanConfig& c = r.configs[p.config];
    if (c.family == 0) {
      EXPECT_LE(c.replicas, 5) << c.id;
      EXPECT_LE(c.gpus_by_type.at("A100-80G"), 5) << c.id;
    }
  }
  for (const PlanFamily::CostPoint& cp : a100.cost_curve)
    if (cp.replicas) {
      EXPECT_LE(*cp.replicas, 5);
    }
}

TEST_F(PlannerTest, QuotaCapThatMissesNamesTheCap) {
  // At 60 requests/s an A100 misses with one replica: capped at 1 by the
  // quota, the family misses, and the reason says the range was capped.
  json j = BasePlan();
  j["dimensions"][0]["values"] = {"A100-80G"};
  j["quotas"] = {{"A100-80G", 1}};
  auto planner = MustRun(j);
  ASSERT_TRUE(planner);
  const PlanFamily& f = planner->result().families[0];
  EXPECT_EQ(f.status, PlanFamily::Status::kMisses);
  EXPECT_EQ(f.replica_range, std::make_pair(int64_t{1}, int64_t{1}));
  EXPECT_NE(f.reason.find("misses"), std::string::npos) << f.reason;
  EXPECT_NE(f.reason.find("quota is 1"), std::string::npos) << f.reason;
}

TEST_F(PlannerTest, BudgetDropsAndCapsFamilies) {
  json j = BasePlan();
  // One H100 costs more than $3/h; one L40S less, two more.
  j["targets"]["budget_usd_per_hour"] = 3;
  auto planner = MustRun(j);
  ASSERT_TRUE(planner);
  const PlanResult& r = planner->result();
  ASSERT_EQ(r.families.size(), 3u);
  const PlanFamily& h100 = r.families[0];
  EXPECT_EQ(h100.status, PlanFamily::Status::kDropped);
  EXPECT_NE(h100.reason.find("budget"), std::string::npos) << h100.reason;
  EXPECT_FALSE(FamilyRan(r, 0));
  for (const PlanPoint& p : r.points) {
    const PlanConfig& c = r.configs[p.config];
    ASSERT_TRUE(c.usd_per_hour.has_value()) << c.id;
    EXPECT_LE(*c.usd_per_hour, 3.0) << c.id;
  }
  for (int f : r.recommendations) {
    const PlanConfig& c = r.configs[r.families[f].config];
    EXPECT_LE(*c.usd_per_hour, 3.0) << c.id;
  }
  const PlanFamily& l40s = r.families[2];
  ASSERT_TRUE(l40s.replica_range.has_value()) << l40s.reason;
  EXPECT_EQ(l40s.replica_range->second, 1);
}

TEST_F(PlannerTest, RecommendationsAreCheapestFirstAndMeetEveryTarget) {
  json j = BasePlan();
  j["dimensions"][0] = json::parse(R"({ "keys": ["fleet.pools[0].gpu", "fleet.pools[0].tp"],
    "values": [["H100-SXM", 1], ["H100-SXM", 2], ["A100-80G", 1], ["L40S", 1]] })");
  j["shortlist"] = 3;
  auto planner = MustRun(j);
  ASSERT_TRUE(planner);
  const PlanResult& r = planner->result();
  ASSERT_EQ(r.recommendations.size(), 3u);
  std::optional<double> last;
  for (int fid : r.recommendations) {
    const PlanFamily& f = r.families[fid];
    SCOPED_TRACE(f.label);
    EXPECT_EQ(f.status, PlanFamily::Status::kMeets);
    EXPECT_TRUE(f.shortlisted);
    const PlanConfig& c = r.configs[f.config];
    ASSERT_TRUE(c.usd_per_hour.has_value());
    if (last) {
      EXPECT_LE(*last, *c.usd_per_hour);
    }
    last = c.usd_per_hour;
    const PlanPoint* p = FindPoint(r, f.config, 1.0);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(p->meets_all);
    for (bool m : p->meets) EXPECT_TRUE(m);
    ExpectBoundsWithinTargets(r, *p);
  }
  // No passing family left out is cheaper than the last recommended.
  for (const PlanFamily& f : r.families) {
    if (f.status != PlanFamily::Status::kMeets) continue;
    if (std::find(r.recommendations.begin(), r.recommendations.end(), f.id) != r.recommendations.end()) {
      continue;
    }
    EXPECT_FALSE(f.shortlisted);
    EXPECT_GE(*r.configs[f.config].usd_per_hour, *last) << f.label;
  }
  ASSERT_GE(r.chosen, 0);
  EXPECT_EQ(r.chosen, r.families[r.recommendations[0]].config);
  // The frontier is at the stated load, cheapest first.
  ASSERT_FALSE(r.frontier.empty());
  for (size_t i = 1; i < r.frontier.size(); ++i)
    EXPECT_LE(*r.configs[r.frontier[i - 1]].usd_per_hour, *r.configs[r.frontier[i]].usd_per_hour);
  // Points that meet every target: exactly those whose bounds are within.
  for (const PlanPoint& p : r.points) {
    bool within = true;
    for (const PlanTarget& t : r.plan.targets) {
      const Interval& iv = p.metrics[PlanMetricIndex(t.metric)];
      within = within && iv.n == r.plan.replications && (t.is_max ? iv.hi <= t.limit : iv.lo >= t.limit);
    }
    EXPECT_EQ(p.meets_all, within) << r.configs[p.config].id << " at " << p.rate_scale;
  }
}

TEST_F(PlannerTest, OneReplicationHasNoInterval) {
  json j = BasePlan();
  j["replications"] = 1;
  j["dimensions"][0]["values"] = {"A100-80G"};
  auto planner = MustRun(j);
  ASSERT_TRUE(planner);
  const PlanResult& r = planner->result();
  ASSERT_FALSE(r.points.empty());
  for (const PlanPoint& p : r.points) {
    for (int m = 0; m < kNumPlanMetrics; ++m) {
      SCOPED_TRACE(PlanMetricName(m));
      const Interval& iv = p.metrics[m];
      ASSERT_EQ(p.values[m].size(), 1u);
      if (!std::isfinite(p.values[m][0])) continue;
      EXPECT_EQ(iv.n, 1);
      EXPECT_TRUE(std::isnan(iv.half_width));
      EXPECT_EQ(iv.mean, p.values[m][0]);
      EXPECT_EQ(iv.lo, iv.mean);
      EXPECT_EQ(iv.hi, iv.mean);
    }
  }
  EXPECT_EQ(r.families[0].status, PlanFamily::Status::kMeets);
}

TEST_F(PlannerTest, SameResultOnOneOrThreeThreads) {
  json j = BasePlan();
  j["dimensions"][0] = json::parse(R"({ "keys": ["fleet.pools[0].gpu", "fleet.pools[0].tp"],
    "values": [["H100-SXM", 1], ["A100-80G", 1], ["L40S", 1], ["A100-80G", 2]] })");
  auto one = MustRun(j, 1);
  auto three = MustRun(j, 3);
  ASSERT_TRUE(one && three);
  const PlanResult& a = one->result();
  const PlanResult& b = three->result();
  EXPECT_EQ(a.simulations, b.simulations);
  EXPECT_EQ(PlanResultToJson(a, "test"), PlanResultToJson(b, "test"));
  EXPECT_EQ(PlanCurvesCsv(a), PlanCurvesCsv(b));
  EXPECT_EQ(PlanFrontierCsv(a), PlanFrontierCsv(b));
  EXPECT_EQ(FormatPlanSummary(a), FormatPlanSummary(b));
  // And the outputs say what the result holds.
  const json out = json::parse(PlanResultToJson(a, "test"));
  EXPECT_EQ(out["format"], "fleetsim-plan-result");
  EXPECT_EQ(out["version"], 1);
  EXPECT_EQ(out["families"].size(), a.families.size());
  EXPECT_EQ(out["points"].size(), a.points.size());
  EXPECT_EQ(out["counts"]["simulations"], a.simulations);
  EXPECT_EQ(a.simulations, static_cast<int64_t>(a.points.size()) * a.plan.replications);
  ASSERT_GE(a.chosen, 0);
  EXPECT_EQ(out["chosen"]["config"], a.configs[a.chosen].id);
}

TEST_F(PlannerTest, ChosenRunIsReplicationZero) {
  json j = BasePlan();
  j["dimensions"][0]["values"] = {"L40S"};
  auto planner = MustRun(j);
  ASSERT_TRUE(planner);
  const PlanResult& r = planner->result();
  ASSERT_GE(r.chosen, 0);
  const PlanPoint* p = FindPoint(r, r.chosen, 1.0);
  ASSERT_NE(p, nullptr);
  RunReport report;
  const Status s = planner->RunChosen(MetricsOptions(), &report);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(report.summary.ttft.p99.has_value());
  EXPECT_EQ(*report.summary.ttft.p99, p->values[PlanMetricIndex("ttft_p99_ms")][0]);
  ASSERT_TRUE(report.summary.tpot.p99.has_value());
  EXPECT_EQ(*report.summary.tpot.p99, p->values[PlanMetricIndex("tpot_p99_ms")][0]);
}

// Disabled: crashes (std::out_of_range from Planner::Impl::Point) — see the
// report. A rate scale above max_rate_scale that misses the targets makes the
// headroom search take max_rate_scale as a known failure without running it.
TEST_F(PlannerTest, RateScaleAboveMaxRateScale) {
  json j = BasePlan();
  j["dimensions"][0]["values"] = {"H100-SXM"};
  j["load"] = {{"rate_scales", {0.5, 1, 8}}, {"max_rate_scale", 2}};
  auto planner = MustRun(j);
  ASSERT_TRUE(planner);
  const PlanFamily& f = planner->result().families[0];
  ASSERT_TRUE(f.headroom_scale.has_value());
  EXPECT_LE(*f.headroom_scale, 2.0);
  const PlanPoint* p = FindPoint(planner->result(), f.config, *f.headroom_scale);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(p->meets_all);
}

// N+k: with every replica on a node of its own (gpus_per_node 1) and the
// worst node crashed from the start, a pool needs one replica more than
// without the failure; redundancy searches spares, which serve like
// replicas, so the family with a spare meets the targets with one required
// replica fewer, for the same total.
TEST_F(PlannerTest, NodeFailureTargetNeedsOneMoreReplicaAndRedundancyProvidesIt) {
  json plan = BasePlan();
  plan["scenario"]["fleet"]["gpus_per_node"] = 1;
  plan["dimensions"] = json::array({{{"key", "fleet.pools[0].replicas"}, {"search", "bisect"}, {"min", 1}, {"max", 8}}});
  plan["scenario"]["fleet"]["pools"][0]["gpu"] = "A100-80G";
  plan["load"] = {{"rate_scales", {1}}, {"max_rate_scale", 1}};
  auto plain = MustRun(plan);
  ASSERT_TRUE(plain);
  ASSERT_EQ(plain->result().families.size(), 1u);
  const PlanFamily& f0 = plain->result().families[0];
  ASSERT_EQ(f0.status, PlanFamily::Status::kMeets) << f0.reason;
  const int64_t n = *f0.min_replicas;
  ASSERT_GE(n, 2) << "the test needs a pool of several replicas";

  plan["redundancy"] = {0, 1};
  plan["targets"]["node_failure"] = json::object();
  auto failing = MustRun(plan);
  ASSERT_TRUE(failing);
  const PlanResult& r = failing->result();
  ASSERT_EQ(r.families.size(), 2u);
  ASSERT_TRUE(r.plan.node_failure_at_s.has_value());
  EXPECT_EQ(*r.plan.node_failure_at_s, 0.0);
  EXPECT_EQ(r.plan.node_failure_kind, "crash");
  for (const PlanFamily& f : r.families) {
    SCOPED_TRACE(f.label);
    ASSERT_EQ(f.status, PlanFamily::Status::kMeets) << f.reason;
    const bool spare = f.label.find("spares=1") != std::string::npos;
    // One node out of n + 1 replicas leaves the n the plain plan needed.
    EXPECT_EQ(*f.min_replicas, spare ? n : n + 1);
    const PlanConfig& c = r.configs[f.config];
    EXPECT_EQ(c.launch.replicas, n + 1) << "spares are deployed too";
    EXPECT_EQ(c.gpus, n + 1);
    EXPECT_EQ(c.drill_node, 0) << "every node holds one replica: the first is as bad as any";
    // The config below the answer ran with its node failed and missed.
    const PlanPoint* below = FindPoint(r, f.id, *f.min_replicas - 1, 1.0);
    ASSERT_NE(below, nullptr);
    EXPECT_FALSE(below->meets_all);
  }
}

TEST_F(PlannerTest, RedundancyAndNodeFailureAreChecked) {
  json plan = BasePlan();
  plan["redundancy"] = {0, 0};
  PlanSpec spec;
  Status s = ParsePlan(plan.dump(), kPlanFile, &spec);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("redundancy[1]"), std::string::npos) << s.message();
  plan["redundancy"] = {-1};
  s = ParsePlan(plan.dump(), kPlanFile, &spec);
  EXPECT_NE(s.message().find("redundancy[0]"), std::string::npos) << s.message();
  plan["redundancy"] = {1};
  plan["targets"]["node_failure"] = {{"kind", "explode"}};
  s = ParsePlan(plan.dump(), kPlanFile, &spec);
  EXPECT_NE(s.message().find("node_failure"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("explode"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace fleetsim

namespace fleetsim {
namespace {

// Autoscaler, bounds and warm pool as dimensions: the replica search
// bisects max_replicas, and an autoscaled configuration is priced by what
// its runs at the stated load paid (a 5 s run starts no replica beyond the
// first, whatever max_replicas allows), its peak kept apart.
TEST_F(PlannerTest, AutoscaledConfigurationsArePricedByWhatTheirRunsPaid) {
  json plan = BasePlan();
  plan["scenario"]["fleet"]["pools"][0]["autoscaler"] = {{"policy", "hpa"}, {"min_replicas", 1}, {"max_replicas", 1}};
  plan["dimensions"] = json::parse(R"([
    { "key": "fleet.pools[0].autoscaler.policy", "values": ["hpa", "target_ongoing"] },
    { "key": "fleet.pools[0].autoscaler.warm_pool", "values": [0, 1] },
    { "key": "fleet.pools[0].autoscaler.max_replicas", "search": "bisect", "min": 1, "max": 4 }
  ])");
  plan["load"] = json::parse(R"({ "rate_scales": [1], "max_rate_scale": 1 })");
  auto planner = MustRun(plan);
  ASSERT_TRUE(planner);
  const PlanResult& r = planner->result();
  ASSERT_EQ(r.families.size(), 4u);
  const double price = catalog_->FindGpu("H100-SXM")->prices.at("on_demand")->usd_per_gpu_hour;
  int checked = 0;
  for (size_t c = 0; c < r.configs.size(); ++c) {
    const PlanConfig& pc = r.configs[c];
    SCOPED_TRACE(pc.id);
    EXPECT_TRUE(pc.autoscaled);
    const PlanPoint* p = FindPoint(r, static_cast<int>(c), 1.0);
    if (!p) continue;
    int64_t warm = 0;
    for (const auto& [k, v] : pc.settings)
      if (k == "fleet.pools[0].autoscaler.warm_pool") warm = std::stoll(v);
    // The peak: every slot (max_replicas + warm pool) at the price.
    ASSERT_TRUE(pc.peak_usd_per_hour.has_value());
    EXPECT_NEAR(*pc.peak_usd_per_hour, static_cast<double>(pc.replicas + warm) * price, 1e-9);
    EXPECT_EQ(pc.gpus, pc.replicas + warm);
    // What the runs paid: one replica and the warm pool, the whole time.
    ASSERT_TRUE(pc.usd_per_hour.has_value());
    EXPECT_DOUBLE_EQ(*pc.usd_per_hour, p->metrics[PlanMetricIndex("usd_per_hour")].mean);
    EXPECT_NEAR(*pc.usd_per_hour, static_cast<double>(1 + warm) * price, 1e-3);
    ++checked;
  }
  EXPECT_GE(checked, 4);
  for (const PlanFamily& f : r.families) EXPECT_EQ(f.status, PlanFamily::Status::kMeets) << f.label << ": " << f.reason;
}

// A point whose every replication meets a target still misses it when the
// interval's upper bound does not: the verdict is the bound's, and
// met_fraction says how many replications met on their own.
TEST_F(PlannerTest, EveryReplicationMeetingIsNotEnoughWhenTheBoundMisses) {
  json plan = BasePlan();
  plan["dimensions"] = json::parse(R"([{ "key": "fleet.pools[0].gpu", "values": ["H100-SXM"] }])");
  plan["load"] = json::parse(R"({ "rate_scales": [1] })");
  plan["replications"] = 3;
  plan["targets"] = json::parse(R"({ "ttft_ms": { "p99": 10000 } })");
  auto first = MustRun(plan);
  ASSERT_TRUE(first);
  ASSERT_EQ(first->result().configs.size(), 1u);
  const PlanPoint* p = FindPoint(first->result(), 0, 1.0);
  ASSERT_NE(p, nullptr);
  const int m = PlanMetricIndex("ttft_p99_ms");
  ASSERT_GE(m, 0);
  const double highest = *std::max_element(p->values[m].begin(), p->values[m].end());
  const double hi = p->metrics[m].hi;
  ASSERT_GT(hi, highest * 1.001) << "the replications must differ for the bound to lie above them";
  // A limit between the highest replication and the upper bound.
  plan["targets"]["ttft_ms"]["p99"] = (highest + hi) / 2;
  auto second = MustRun(plan);
  ASSERT_TRUE(second);
  const PlanResult& r = second->result();
  const PlanPoint* q = FindPoint(r, 0, 1.0);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->values[m], p->values[m]);  // same seeds, same figures
  ASSERT_EQ(q->met_fraction.size(), 1u);
  EXPECT_EQ(q->met_fraction[0], 1.0);
  EXPECT_FALSE(q->meets[0]);
  EXPECT_FALSE(q->meets_all);
  EXPECT_TRUE(r.recommendations.empty());
}

}  // namespace
}  // namespace fleetsim

// Autoscalers, decision by decision: a fake pool whose metrics the test
// sets, and each answer worked out by hand from the production rules the
// autoscaler follows (Kubernetes' horizontal.go / replica_calculator.go,
// Knative's scaling/autoscaler.go and kpa/scaler.go, Ray Serve's
// autoscaling_policy.py), plus the factories' answers to bad specs.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/cluster/autoscaler.h"

namespace fleetsim {
namespace {

SimTime S(double seconds) { return SecondsToTime(seconds); }

// A pool whose counts and metrics the test sets. A metric set for one
// window answers that window only; one set for any window answers the rest.
class FakeSignals final : public PoolSignals {
 public:
  SimTime t = 0;
  int ready_count = 1;
  int starting_count = 0;
  int desired_count = 1;

  void SetTotal(ScalingMetric m, double v) { total_[{m, -1}] = v; }
  void SetTotal(ScalingMetric m, SimTime window, double v) { total_[{m, window}] = v; }
  void SetPerReplica(ScalingMetric m, double v) { per_replica_[{m, -1}] = v; }
  void Clear() {
    total_.clear();
    per_replica_.clear();
  }
  // The windows asked for, in order.
  std::vector<std::pair<ScalingMetric, SimTime>> asked;

  SimTime now() const override { return t; }
  int ready() const override { return ready_count; }
  int starting() const override { return starting_count; }
  int desired() const override { return desired_count; }
  std::optional<double> Total(ScalingMetric m, SimTime window) const override {
    return Find(total_, m, window);
  }
  std::optional<double> PerReplica(ScalingMetric m, SimTime window) const override {
    return Find(per_replica_, m, window);
  }
  std::optional<double> Percentile(ScalingMetric, double, SimTime) const override { return std::nullopt; }
  WindowLoad Load(SimTime window) const override { return WindowLoad{TimeToSeconds(window)}; }

 private:
  using Table = std::map<std::pair<ScalingMetric, SimTime>, double>;
  std::optional<double> Find(const Table& table, ScalingMetric m, SimTime window) const {
    const_cast<FakeSignals*>(this)->asked.emplace_back(m, window);
    if (auto it = table.find({m, window}); it != table.end()) return it->second;
    if (auto it = table.find({m, -1}); it != table.end()) return it->second;
    return std::nullopt;
  }
  Table total_, per_replica_;
};

AutoscalerSpec Spec(const std::string& policy, int min_replicas, int max_replicas, int initial_replicas) {
  AutoscalerSpec spec;
  spec.path = "fleet.pools[0].autoscaler";
  spec.policy = policy;
  spec.min_replicas = min_replicas;
  spec.max_replicas = max_replicas;
  spec.initial_replicas = initial_replicas;
  return spec;
}

Status Build(const AutoscalerSpec& spec, std::unique_ptr<Autoscaler>* out) {
  AutoscalerRegistry registry;
  RegisterBuiltinAutoscalers(&registry);
  const AutoscalerRegistry::Entry* e = registry.Find(spec.policy);
  if (e == nullptr) return Status::Invalid("no autoscaler " + spec.policy);
  return e->factory(spec, AutoscalerContext{}, out);
}

std::unique_ptr<Autoscaler> Make(const AutoscalerSpec& spec) {
  std::unique_ptr<Autoscaler> a;
  const Status st = Build(spec, &a);
  EXPECT_TRUE(st.ok()) << st.message();
  return a;
}

// One period later: the autoscaler decides, and the pool takes the answer
// as its desired count (readiness is the test's business).
int Tick(Autoscaler& a, FakeSignals& s) {
  s.t += a.period();
  s.desired_count = a.Decide(s);
  return s.desired_count;
}

// ---------------------------------------------------------------------------
// Names and the registry.

TEST(ScalingMetric, NamesRoundTrip) {
  for (const char* name : {"concurrency", "queue_depth", "kv_utilization", "tokens_per_s", "ttft_ms", "tpot_ms"}) {
    const std::optional<ScalingMetric> m = ParseScalingMetric(name);
    ASSERT_TRUE(m.has_value()) << name;
    EXPECT_STREQ(ScalingMetricName(*m), name);
  }
  EXPECT_FALSE(ParseScalingMetric("qps").has_value());
}

TEST(AutoscalerRegistry, HoldsTheFourBuiltinsWithDescriptions) {
  AutoscalerRegistry registry;
  RegisterBuiltinAutoscalers(&registry);
  EXPECT_EQ(registry.Names(), (std::vector<std::string>{"hpa", "kpa", "target_ongoing", "scheduled"}));
  for (const auto& e : registry.entries()) EXPECT_FALSE(e.description.empty()) << e.name;
}

// ---------------------------------------------------------------------------
// hpa

TEST(Hpa, DefaultsAreKubernetesSyncAndMetricsServerResolution) {
  auto a = Make(Spec("hpa", 1, 100, 4));
  EXPECT_EQ(a->period(), S(15));
  EXPECT_EQ(a->metric_delay(), S(15));
  FakeSignals s;
  s.ready_count = s.desired_count = 4;
  s.SetPerReplica(ScalingMetric::kConcurrency, 16);
  Tick(*a, s);
  // Per-replica concurrency over one sync period.
  ASSERT_FALSE(s.asked.empty());
  EXPECT_EQ(s.asked.back(), std::make_pair(ScalingMetric::kConcurrency, S(15)));
}

TEST(Hpa, NoChangeWithinTheTolerance) {
  auto a = Make(Spec("hpa", 1, 100, 4));
  FakeSignals s;
  s.ready_count = s.desired_count = 4;
  // 17.5 / 16 = 1.09375: |1 - ratio| <= 0.1, keep 4.
  s.SetPerReplica(ScalingMetric::kConcurrency, 17.5);
  EXPECT_EQ(Tick(*a, s), 4);
  // 14.5 / 16 = 0.90625: keep 4.
  s.SetPerReplica(ScalingMetric::kConcurrency, 14.5);
  EXPECT_EQ(Tick(*a, s), 4);
  // 18 / 16 = 1.125: ceil(4 * 1.125) = ceil(4.5) = 5.
  s.SetPerReplica(ScalingMetric::kConcurrency, 18);
  EXPECT_EQ(Tick(*a, s), 5);
}

TEST(Hpa, ScaleUpLimitedToMaxOfDoubleAndPlusFourPerPeriod) {
  auto a = Make(Spec("hpa", 1, 100, 2));
  FakeSignals s;
  s.ready_count = s.desired_count = 2;
  // ratio 10: wants ceil(2 * 10) = 20; limit max(2 + 4, 2 * 2) = 6.
  s.SetPerReplica(ScalingMetric::kConcurrency, 160);
  EXPECT_EQ(Tick(*a, s), 6);
  // The previous scale-up is exactly one period old: it no longer counts.
  // ready 6, ratio 4: wants 24; limit max(6 + 4, 12) = 12.
  s.ready_count = 6;
  s.SetPerReplica(ScalingMetric::kConcurrency, 64);
  EXPECT_EQ(Tick(*a, s), 12);
  // ready 12, ratio 2: wants 24; limit max(16, 24) = 24.
  s.ready_count = 12;
  s.SetPerReplica(ScalingMetric::kConcurrency, 32);
  EXPECT_EQ(Tick(*a, s), 24);
}

TEST(Hpa, ScaleUpLimitCountsTheChangesOfTheLastFifteenSeconds) {
  AutoscalerSpec spec = Spec("hpa", 1, 100, 2);
  spec.options["sync_period_s"] = 5;
  auto a = Make(spec);
  FakeSignals s;
  s.ready_count = s.desired_count = 2;
  s.SetPerReplica(ScalingMetric::kConcurrency, 160);
  EXPECT_EQ(Tick(*a, s), 6);  // t = 5: limit max(2 + 4, 4)
  s.ready_count = 6;
  s.SetPerReplica(ScalingMetric::kConcurrency, 64);  // wants 24
  // t = 10 and 15: the +4 of t = 5 is inside the period, which started at 2:
  // limit max(2 + 4, 4) = 6.
  EXPECT_EQ(Tick(*a, s), 6);
  EXPECT_EQ(Tick(*a, s), 6);
  // t = 20: the event at t = 5 is 15 s old, out: limit max(6 + 4, 12) = 12.
  EXPECT_EQ(Tick(*a, s), 12);
}

TEST(Hpa, ScaleUpClampedToMaxReplicas) {
  auto a = Make(Spec("hpa", 1, 5, 2));
  FakeSignals s;
  s.ready_count = s.desired_count = 2;
  s.SetPerReplica(ScalingMetric::kConcurrency, 160);
  EXPECT_EQ(Tick(*a, s), 5);
}

TEST(Hpa, StabilisationWindowHoldsScaleDownForThreeHundredSeconds) {
  auto a = Make(Spec("hpa", 1, 100, 10));
  FakeSignals s;
  s.ready_count = s.desired_count = 10;
  s.SetPerReplica(ScalingMetric::kConcurrency, 16);
  EXPECT_EQ(Tick(*a, s), 10);  // t = 15: recommends 10
  // The load drops to a quarter: ceil(10 * 0.25) = 3 recommended from t = 30
  // on, but the highest recommendation of the last 300 s is 10 ...
  s.SetPerReplica(ScalingMetric::kConcurrency, 4);
  for (int t = 30; t <= 300; t += 15) EXPECT_EQ(Tick(*a, s), 10) << "t = " << t;
  // ... until t = 315, when the recommendation of t = 15 is 300 s old.
  EXPECT_EQ(Tick(*a, s), 3);
}

TEST(Hpa, StabilisationKeepsTheHighestRecentRecommendation) {
  auto a = Make(Spec("hpa", 1, 100, 10));
  FakeSignals s;
  s.ready_count = s.desired_count = 10;
  s.SetPerReplica(ScalingMetric::kConcurrency, 16);  // t = 15: recommends 10
  EXPECT_EQ(Tick(*a, s), 10);
  s.SetPerReplica(ScalingMetric::kConcurrency, 12);  // t = 30: recommends ceil(7.5) = 8
  EXPECT_EQ(Tick(*a, s), 10);
  s.SetPerReplica(ScalingMetric::kConcurrency, 4);  // recommends ceil(2.5) = 3 from t = 45
  for (int t = 45; t <= 300; t += 15) EXPECT_EQ(Tick(*a, s), 10) << "t = " << t;
  // t = 315: the 10 of t = 15 is out; the highest left is the 8 of t = 30.
  EXPECT_EQ(Tick(*a, s), 8);
  s.ready_count = 8;  // recommends ceil(8 * 0.25) = 2
  // t = 330: the 8 is out too; the highest left is a 3.
  EXPECT_EQ(Tick(*a, s), 3);
}

TEST(Hpa, AFreshControllerHasNoHistoryToHoldAScaleDown) {
  // As after a kube-controller-manager restart: no recommendation recorded.
  auto a = Make(Spec("hpa", 1, 100, 10));
  FakeSignals s;
  s.ready_count = s.desired_count = 10;
  s.SetPerReplica(ScalingMetric::kConcurrency, 8);  // ratio 0.5: 5
  EXPECT_EQ(Tick(*a, s), 5);
}

TEST(Hpa, StartingReplicasCountAsIdleOnScaleUp) {
  auto a = Make(Spec("hpa", 1, 100, 4));
  FakeSignals s;
  s.ready_count = 4;
  s.starting_count = 4;
  s.desired_count = 8;
  // ratio 1.25 over the ready ones; with the starting ones at 0 it is
  // 1.25 * 4 / 8 = 0.625, below 1: keep 8.
  s.SetPerReplica(ScalingMetric::kConcurrency, 20);
  EXPECT_EQ(Tick(*a, s), 8);
  // ratio 2.5 -> 1.25 with them: ceil(2.5 * 4) = 10.
  s.SetPerReplica(ScalingMetric::kConcurrency, 40);
  EXPECT_EQ(Tick(*a, s), 10);
}

TEST(Hpa, FromZeroReadyReplicasSizesByTheTotal) {
  auto a = Make(Spec("hpa", 0, 100, 0));
  FakeSignals s;
  s.ready_count = s.desired_count = 0;
  EXPECT_EQ(Tick(*a, s), 0);  // no metric at all: stay
  s.SetTotal(ScalingMetric::kConcurrency, 0);
  EXPECT_EQ(Tick(*a, s), 0);  // no load: stay at zero
  s.SetTotal(ScalingMetric::kConcurrency, 40);
  EXPECT_EQ(Tick(*a, s), 3);  // max(1, ceil(40 / 16))
  // Still starting: never fewer than asked for.
  s.starting_count = 3;
  s.SetTotal(ScalingMetric::kConcurrency, 5);
  EXPECT_EQ(Tick(*a, s), 3);
}

TEST(Hpa, LatencyMetricUsesTheWindowMean) {
  AutoscalerSpec spec = Spec("hpa", 1, 100, 4);
  spec.metric = ScalingMetric::kTtftMs;
  spec.target = 500;
  auto a = Make(spec);
  FakeSignals s;
  s.ready_count = s.desired_count = 4;
  s.SetTotal(ScalingMetric::kTtftMs, 750);  // ratio 1.5: ceil(6)
  EXPECT_EQ(Tick(*a, s), 6);
}

TEST(Hpa, OutOfBoundsCurrentIsClamped) {
  auto a = Make(Spec("hpa", 2, 6, 4));
  FakeSignals s;
  s.ready_count = s.desired_count = 9;
  s.SetPerReplica(ScalingMetric::kConcurrency, 16);
  EXPECT_EQ(Tick(*a, s), 6);
}

// ---------------------------------------------------------------------------
// kpa: target 0.7 * 100 = 70 requests per replica; stable window 60 s,
// panic window 6 s.

constexpr ScalingMetric kC = ScalingMetric::kConcurrency;

TEST(Kpa, DefaultsAreKnatives) {
  auto a = Make(Spec("kpa", 0, 100, 1));
  EXPECT_EQ(a->period(), S(2));
  EXPECT_EQ(a->metric_delay(), S(1));
  FakeSignals s;
  s.ready_count = s.desired_count = 2;
  s.SetTotal(kC, 210);
  // ceil(210 / 70) = 3; 3 / 2 < 2: no panic.
  EXPECT_EQ(Tick(*a, s), 3);
  EXPECT_EQ(s.asked, (std::vector<std::pair<ScalingMetric, SimTime>>{{kC, S(60)}, {kC, S(6)}}));
}

TEST(Kpa, PanicScalesUpAndNeverDownUntilAStableWindowPasses) {
  auto a = Make(Spec("kpa", 0, 100, 1));
  FakeSignals s;
  s.ready_count = s.desired_count = 2;
  s.SetTotal(kC, S(60), 140);  // desired stable 2
  s.SetTotal(kC, S(6), 420);   // desired panic 6: 6 / 2 = 3 >= 2, panic
  EXPECT_EQ(Tick(*a, s), 6);   // t = 2: panic clock starts
  s.ready_count = 6;
  s.SetTotal(kC, S(6), 70);  // panic 1, stable 2: under the threshold
  // In panic: keep the highest count (6) while t <= 2 + 60.
  for (int t = 4; t <= 62; t += 2) EXPECT_EQ(Tick(*a, s), 6) << "t = " << t;
  // t = 64 > 62: panic ends; stable 2, but at most halve: floor(6 / 2) = 3.
  EXPECT_EQ(Tick(*a, s), 3);
  s.ready_count = 3;
  EXPECT_EQ(Tick(*a, s), 2);  // t = 66: max(2, floor(3 / 2))
}

TEST(Kpa, EachTickOverTheThresholdExtendsThePanic) {
  auto a = Make(Spec("kpa", 0, 100, 1));
  FakeSignals s;
  s.ready_count = s.desired_count = 2;
  s.SetTotal(kC, S(60), 140);
  s.SetTotal(kC, S(6), 420);
  EXPECT_EQ(Tick(*a, s), 6);  // t = 2
  s.ready_count = 6;
  s.SetTotal(kC, S(6), 70);
  for (int t = 4; t <= 30; t += 2) EXPECT_EQ(Tick(*a, s), 6);
  // t = 32: a new burst, 12 / 6 = 2 >= 2: the clock restarts at 32.
  s.SetTotal(kC, S(6), 840);
  EXPECT_EQ(Tick(*a, s), 12);
  s.ready_count = 12;
  s.SetTotal(kC, S(6), 70);
  for (int t = 34; t <= 92; t += 2) EXPECT_EQ(Tick(*a, s), 12) << "t = " << t;
  EXPECT_EQ(Tick(*a, s), 6);  // t = 94: out of panic, halve 12
}

TEST(Kpa, StartsInPanicWithMoreThanOneReplicaThenHalvesToZero) {
  auto a = Make(Spec("kpa", 0, 100, 16));
  FakeSignals s;
  s.ready_count = s.desired_count = 16;
  s.SetTotal(kC, 0);  // no traffic at all
  // A new autoscaler over more than one pod starts panicking at 0: no
  // scale-down while t <= 60.
  for (int t = 2; t <= 60; t += 2) EXPECT_EQ(Tick(*a, s), 16) << "t = " << t;
  // Then at most halving per tick: 8, 4, 2, 1.
  for (int want : {8, 4, 2, 1}) {
    EXPECT_EQ(Tick(*a, s), want);
    s.ready_count = want;
  }
  // t = 70: floor(1 / 2) = 0 allowed, min 0: zero is wanted; the last
  // replica stays for the 30 s grace period ...
  for (int t = 70; t < 100; t += 2) EXPECT_EQ(Tick(*a, s), 1) << "t = " << t;
  // ... and goes at t = 100, 30 s after zero was first wanted.
  EXPECT_EQ(Tick(*a, s), 0);
  s.ready_count = 0;
  EXPECT_EQ(Tick(*a, s), 0);
}

TEST(Kpa, TrafficDuringTheGracePeriodKeepsTheReplica) {
  auto a = Make(Spec("kpa", 0, 100, 1));
  FakeSignals s;
  s.ready_count = s.desired_count = 1;
  s.SetTotal(kC, 0);
  EXPECT_EQ(Tick(*a, s), 1);  // t = 2: zero wanted, grace starts
  for (int t = 4; t <= 20; t += 2) EXPECT_EQ(Tick(*a, s), 1);
  s.SetTotal(kC, 10);
  EXPECT_EQ(Tick(*a, s), 1);  // t = 22: ceil(10 / 70) = 1, the clock resets
  s.SetTotal(kC, 0);
  for (int t = 24; t < 54; t += 2) EXPECT_EQ(Tick(*a, s), 1) << "t = " << t;
  EXPECT_EQ(Tick(*a, s), 0);  // t = 54 = 24 + 30
}

TEST(Kpa, MinReplicasOneNeverScalesToZero) {
  auto a = Make(Spec("kpa", 1, 100, 1));
  FakeSignals s;
  s.ready_count = s.desired_count = 1;
  s.SetTotal(kC, 0);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(Tick(*a, s), 1);
}

TEST(Kpa, ScaleFromZeroCountsOneReadyPod) {
  auto a = Make(Spec("kpa", 0, 100, 0));
  FakeSignals s;
  s.ready_count = s.desired_count = 0;
  // Requests buffered for the pool: readyPodsCount = max(1, 0) = 1.
  s.SetTotal(kC, 35);  // ceil(35 / 70) = 1; 1 / 1 < 2
  EXPECT_EQ(Tick(*a, s), 1);
  s.desired_count = 0;
  s.SetTotal(kC, 210);  // 3 / 1 >= 2: panic, 3
  EXPECT_EQ(Tick(*a, s), 3);
}

TEST(Kpa, ScaleUpRateCapsEachTick) {
  AutoscalerSpec spec = Spec("kpa", 0, 100, 1);
  spec.options["max_scale_up_rate"] = 2;
  auto a = Make(spec);
  FakeSignals s;
  s.ready_count = s.desired_count = 2;
  s.SetTotal(kC, 700);  // wants ceil(700 / 70) = 10; at most ceil(2 * 2) = 4
  EXPECT_EQ(Tick(*a, s), 4);
  s.ready_count = 4;
  EXPECT_EQ(Tick(*a, s), 8);
  s.ready_count = 8;
  EXPECT_EQ(Tick(*a, s), 10);
}

TEST(Kpa, NoDataKeepsTheDesiredCount) {
  auto a = Make(Spec("kpa", 0, 100, 1));
  FakeSignals s;
  s.ready_count = s.desired_count = 4;
  EXPECT_EQ(Tick(*a, s), 4);
}

TEST(Kpa, TargetAndScaleDownDelayFromTheSpec) {
  AutoscalerSpec spec = Spec("kpa", 1, 100, 1);
  spec.target = 10;
  spec.options["scale_down_delay_s"] = 10;
  auto a = Make(spec);
  FakeSignals s;
  s.ready_count = s.desired_count = 4;
  s.SetTotal(kC, 40);
  EXPECT_EQ(Tick(*a, s), 4);  // t = 2: ceil(40 / 10)
  s.SetTotal(kC, 30);         // wants 3
  // The 4 of t = 2 holds while it is inside the 10 s delay window.
  for (int t = 4; t <= 10; t += 2) EXPECT_EQ(Tick(*a, s), 4) << "t = " << t;
  EXPECT_EQ(Tick(*a, s), 3);  // t = 12
}

// ---------------------------------------------------------------------------
// target_ongoing: 2 ongoing requests per replica over 30 s; delays counted
// in 1 s steps.

TEST(TargetOngoing, DefaultsAreRayServes) {
  auto a = Make(Spec("target_ongoing", 1, 10, 2));
  EXPECT_EQ(a->period(), S(1));
  EXPECT_EQ(a->metric_delay(), S(10));
  FakeSignals s;
  s.ready_count = s.desired_count = 2;
  s.SetTotal(kC, 4);
  EXPECT_EQ(Tick(*a, s), 2);
  EXPECT_EQ(s.asked.back(), std::make_pair(kC, S(30)));
}

TEST(TargetOngoing, UpscaleAfterThirtySecondsOfTheSameDecision) {
  auto a = Make(Spec("target_ongoing", 1, 10, 2));
  FakeSignals s;
  s.ready_count = s.desired_count = 2;
  s.SetTotal(kC, 8);  // 4 per replica: desired 2 * 8 / (2 * 2) = 4
  // Decisions 1..30 only count; the 31st (counter 31 > 30 / 1) applies.
  for (int t = 1; t <= 30; ++t) EXPECT_EQ(Tick(*a, s), 2) << "t = " << t;
  EXPECT_EQ(Tick(*a, s), 4);
}

TEST(TargetOngoing, AStepWithoutChangeRestartsTheCount) {
  auto a = Make(Spec("target_ongoing", 1, 10, 2));
  FakeSignals s;
  s.ready_count = s.desired_count = 2;
  s.SetTotal(kC, 8);
  for (int t = 1; t <= 20; ++t) EXPECT_EQ(Tick(*a, s), 2);
  s.SetTotal(kC, 4);  // on target: the count resets
  EXPECT_EQ(Tick(*a, s), 2);
  s.SetTotal(kC, 8);
  for (int t = 22; t <= 51; ++t) EXPECT_EQ(Tick(*a, s), 2) << "t = " << t;
  EXPECT_EQ(Tick(*a, s), 4);  // t = 52: 31 in a row again
}

TEST(TargetOngoing, DownscaleAfterSixHundredSeconds) {
  auto a = Make(Spec("target_ongoing", 1, 10, 4));
  FakeSignals s;
  s.ready_count = s.desired_count = 4;
  s.SetTotal(kC, 2);  // desired 1
  for (int t = 1; t <= 600; ++t) ASSERT_EQ(Tick(*a, s), 4) << "t = " << t;
  EXPECT_EQ(Tick(*a, s), 1);
}

TEST(TargetOngoing, ToZeroUsesItsOwnDelay) {
  AutoscalerSpec spec = Spec("target_ongoing", 0, 10, 1);
  spec.options["downscale_to_zero_delay_s"] = 60;
  auto a = Make(spec);
  FakeSignals s;
  s.ready_count = s.desired_count = 1;
  s.SetTotal(kC, 0);  // ceil(1 + (0 - 1)) = 0
  for (int t = 1; t <= 60; ++t) EXPECT_EQ(Tick(*a, s), 1) << "t = " << t;
  EXPECT_EQ(Tick(*a, s), 0);
  // Cold start: any request held brings one replica back at once.
  s.ready_count = 0;
  s.SetTotal(kC, 3);
  EXPECT_EQ(Tick(*a, s), 1);
}

TEST(TargetOngoing, ToZeroWithoutItsOwnDelayWaitsTheDownscaleDelay) {
  auto a = Make(Spec("target_ongoing", 0, 10, 1));
  FakeSignals s;
  s.ready_count = s.desired_count = 1;
  s.SetTotal(kC, 0);
  for (int t = 1; t <= 600; ++t) ASSERT_EQ(Tick(*a, s), 1) << "t = " << t;
  EXPECT_EQ(Tick(*a, s), 0);
}

TEST(TargetOngoing, ScalingFactorsDampTheStep) {
  AutoscalerSpec spec = Spec("target_ongoing", 1, 10, 2);
  spec.options["upscaling_factor"] = 0.5;
  spec.options["downscaling_factor"] = 0.1;
  spec.options["upscale_delay_s"] = 0;
  spec.options["downscale_delay_s"] = 0;
  auto a = Make(spec);
  FakeSignals s;
  s.ready_count = s.desired_count = 2;
  s.SetTotal(kC, 16);  // desired 8: ceil(2 + 0.5 * 6) = 5
  EXPECT_EQ(Tick(*a, s), 5);
  s.ready_count = s.desired_count = 4;
  s.SetTotal(kC, 6);  // desired 3: ceil(4 - 0.1) = 4 is stuck, so 3
  EXPECT_EQ(Tick(*a, s), 3);
}

// ---------------------------------------------------------------------------
// scheduled

TEST(Scheduled, FollowsTheProfileAndWrapsAroundMidnight) {
  AutoscalerSpec spec = Spec("scheduled", 0, 10, 2);
  spec.schedule = {{6, 4}, {9.5, 12}, {18, 2}};
  auto a = Make(spec);
  EXPECT_EQ(a->period(), S(60));
  FakeSignals s;
  auto at = [&](double hours) {
    s.t = S(hours * 3600);
    return a->Decide(s);
  };
  EXPECT_EQ(at(0), 2);       // before 06:00: the 18:00 entry of the day before
  EXPECT_EQ(at(5.99), 2);
  EXPECT_EQ(at(6), 4);
  EXPECT_EQ(at(9.49), 4);
  EXPECT_EQ(at(9.5), 10);    // 12, clamped to max 10
  EXPECT_EQ(at(17.99), 10);
  EXPECT_EQ(at(18), 2);
  EXPECT_EQ(at(23.99), 2);
  EXPECT_EQ(at(24 + 3), 2);  // the next day
  EXPECT_EQ(at(24 + 7), 4);
  EXPECT_EQ(at(72 + 10), 10);
}

TEST(Scheduled, RefusesEmptyUnsortedOrOutOfRangeSchedules) {
  std::unique_ptr<Autoscaler> a;
  AutoscalerSpec spec = Spec("scheduled", 0, 10, 2);
  Status st = Build(spec, &a);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("fleet.pools[0].autoscaler.schedule"), std::string::npos) << st.message();
  spec.schedule = {{18, 2}, {6, 4}};
  st = Build(spec, &a);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("fleet.pools[0].autoscaler.schedule"), std::string::npos) << st.message();
  spec.schedule = {{6, 4}, {24, 2}};
  st = Build(spec, &a);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("fleet.pools[0].autoscaler.schedule[1]"), std::string::npos) << st.message();
  spec.schedule = {{6, 4}};
  spec.options["period"] = 30;
  st = Build(spec, &a);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("fleet.pools[0].autoscaler.options.period"), std::string::npos) << st.message();
}

// ---------------------------------------------------------------------------
// Factory errors.

TEST(AutoscalerFactories, RefuseUnknownOptionKeysNamingThePath) {
  for (const char* policy : {"hpa", "kpa", "target_ongoing"}) {
    AutoscalerSpec spec = Spec(policy, 1, 10, 1);
    spec.options["sync_period"] = 10;
    std::unique_ptr<Autoscaler> a;
    const Status st = Build(spec, &a);
    EXPECT_FALSE(st.ok()) << policy;
    EXPECT_EQ(st.message().rfind("fleet.pools[0].autoscaler.options.sync_period: not an option of autoscaler", 0), 0u)
        << st.message();
  }
}

TEST(AutoscalerFactories, RefuseABadTarget) {
  for (const char* policy : {"hpa", "kpa", "target_ongoing"}) {
    for (double target : {0.0, -1.0}) {
      AutoscalerSpec spec = Spec(policy, 1, 10, 1);
      spec.target = target;
      std::unique_ptr<Autoscaler> a;
      const Status st = Build(spec, &a);
      EXPECT_FALSE(st.ok()) << policy;
      EXPECT_EQ(st.message().rfind("fleet.pools[0].autoscaler.target:", 0), 0u) << st.message();
    }
  }
}

TEST(AutoscalerFactories, RefuseOptionsOutOfRangeAndMetricsThePolicyCannotUse) {
  std::unique_ptr<Autoscaler> a;
  AutoscalerSpec spec = Spec("hpa", 1, 10, 1);
  spec.options["tolerance"] = 1.5;
  Status st = Build(spec, &a);
  EXPECT_EQ(st.message().rfind("fleet.pools[0].autoscaler.options.tolerance: expected", 0), 0u) << st.message();

  spec = Spec("kpa", 1, 10, 1);
  spec.options["max_scale_down_rate"] = 1;
  st = Build(spec, &a);
  EXPECT_EQ(st.message().rfind("fleet.pools[0].autoscaler.options.max_scale_down_rate:", 0), 0u) << st.message();

  spec = Spec("kpa", 1, 10, 1);
  spec.metric = ScalingMetric::kTtftMs;
  st = Build(spec, &a);
  EXPECT_EQ(st.message().rfind("fleet.pools[0].autoscaler.metric:", 0), 0u) << st.message();

  spec = Spec("kpa", 1, 10, 1);
  spec.target = 10;
  spec.options["container_concurrency"] = 50;
  st = Build(spec, &a);
  EXPECT_EQ(st.message().rfind("fleet.pools[0].autoscaler.target:", 0), 0u) << st.message();

  // A metric with no default target needs one.
  spec = Spec("hpa", 1, 10, 1);
  spec.metric = ScalingMetric::kTokensPerS;
  st = Build(spec, &a);
  EXPECT_EQ(st.message().rfind("fleet.pools[0].autoscaler.target: required", 0), 0u) << st.message();

  spec = Spec("hpa", 1, 10, 1);
  spec.metric_delay_s = -1;
  st = Build(spec, &a);
  EXPECT_EQ(st.message().rfind("fleet.pools[0].autoscaler.metric_delay_s:", 0), 0u) << st.message();

  spec = Spec("hpa", 1, 10, 1);
  spec.schedule = {{6, 4}};
  st = Build(spec, &a);
  EXPECT_EQ(st.message().rfind("fleet.pools[0].autoscaler.schedule:", 0), 0u) << st.message();
}

// The scenario parser maps a metric's name to the enum by its index in
// this order, without linking the policies.
TEST(ScalingMetric, EnumOrderIsTheParsersNameOrder) {
  const char* names[] = {"concurrency", "queue_depth", "kv_utilization", "tokens_per_s", "ttft_ms", "tpot_ms"};
  for (int i = 0; i < 6; ++i) EXPECT_STREQ(ScalingMetricName(static_cast<ScalingMetric>(i)), names[i]);
}

// A period that rounds to no time would never let the clock move.
TEST(AutoscalerFactories, RefusePeriodsBelowAMillisecond) {
  const std::pair<const char*, const char*> cases[] = {
      {"hpa", "sync_period_s"}, {"kpa", "tick_s"}, {"target_ongoing", "period_s"}, {"scheduled", "period_s"}};
  for (const auto& [policy, key] : cases) {
    AutoscalerSpec spec = Spec(policy, 1, 10, 1);
    if (std::string(policy) == "scheduled") spec.schedule = {{0, 2}};
    spec.options[key] = 1e-12;
    std::unique_ptr<Autoscaler> a;
    const Status st = Build(spec, &a);
    EXPECT_FALSE(st.ok()) << policy;
    EXPECT_NE(st.message().find(std::string("options.") + key), std::string::npos) << st.message();
  }
}

// The monitor keeps what the longest window needs.
TEST(AutoscalerFactories, LongestWindowCoversTheAveragingWindow) {
  std::unique_ptr<Autoscaler> a;
  AutoscalerSpec spec = Spec("kpa", 1, 10, 1);
  spec.options["stable_window_s"] = 3600;
  ASSERT_TRUE(Build(spec, &a).ok());
  EXPECT_EQ(a->longest_window(), 3600 * kSecond);
  spec = Spec("target_ongoing", 1, 10, 1);
  spec.options["look_back_period_s"] = 1800;
  ASSERT_TRUE(Build(spec, &a).ok());
  EXPECT_EQ(a->longest_window(), 1800 * kSecond);
}

TEST(AutoscalerFactories, OptionsOverrideTheDefaults) {
  AutoscalerSpec spec = Spec("kpa", 1, 10, 1);
  spec.options["tick_s"] = 4;
  spec.metric_delay_s = 3;
  auto a = Make(spec);
  EXPECT_EQ(a->period(), S(4));
  EXPECT_EQ(a->metric_delay(), S(3));
}

}  // namespace
}  // namespace fleetsim

// Cluster pool scaling (docs/autoscaling.md, sim/cluster/cluster.h): cold
// starts (provisioning + start), warm pools, drains, cancelling replicas
// still coming, reserved pricing, scale to zero with the activator queue,
// spot reclaims with capacity limits and on-demand fallback, and the
// scaling and cost accounting. A scripted autoscaler answers a programmed
// desired count at each call, so every timeline below is computed by hand
// from the documented rules; a registered policy (hpa) checks conservation
// and determinism under real decisions.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/cluster/autoscaler.h"
#include "sim/cluster/cluster.h"
#include "sim/cluster/reliability.h"
#include "sim/cluster/router.h"
#include "tests/sim/replica_rig.h"

namespace fleetsim {
namespace {

using testing_rig::LinearPerf;
using testing_rig::Schedulers;

SimTime S(double seconds) { return SecondsToTime(seconds); }
constexpr double kNsPerHour = 3600e9;

// Records everything the cluster reports (as reliability_test's observer),
// and hands each request's end to the cluster's pool monitors, as the
// runner does.
struct FleetObserver final : RunObserver {
  std::map<uint64_t, int> arrivals;  // id -> OnArrival calls
  std::vector<RequestRecord> finished;
  struct Event {
    int replica;
    SimTime at;
    std::string what;
  };
  std::vector<Event> events;
  Cluster* cluster = nullptr;
  void OnArrival(const Request& r, int) override { arrivals[r.id]++; }
  void OnFinished(const RequestRecord& r) override {
    finished.push_back(r);
    if (cluster) cluster->OnRequestEnded(r);
  }
  void OnTokenGaps(SimTime, SimTime, int64_t) override {}
  void OnIteration(int, SimTime, SimTime, const BatchShape&) override {}
  void OnSample(const ReplicaSample&) override {}
  void OnReplicaEvent(int replica, SimTime at, std::string_view what) override {
    events.push_back({replica, at, std::string(what)});
  }

  std::map<uint64_t, RequestRecord> ById() const {
    std::map<uint64_t, RequestRecord> out;
    for (const RequestRecord& r : finished) EXPECT_TRUE(out.emplace(r.id, r).second) << "request " << r.id << " ended twice";
    return out;
  }
  std::vector<std::pair<std::string, SimTime>> EventsOf(int replica) const {
    std::vector<std::pair<std::string, SimTime>> out;
    for (const Event& e : events)
      if (e.replica == replica) out.emplace_back(e.what, e.at);
    return out;
  }
  std::vector<Event> Named(const std::string& what) const {
    std::vector<Event> out;
    for (const Event& e : events)
      if (e.what == what) out.push_back(e);
    return out;
  }
  bool Has(int replica, const std::string& what, SimTime at) const {
    for (const Event& e : events)
      if (e.replica == replica && e.what == what && e.at == at) return true;
    return false;
  }
};

// Round robin that remembers every request it routed (id, attempt).
class SpyRouter final : public Router {
 public:
  explicit SpyRouter(std::vector<std::pair<uint64_t, int>>* seen) : seen_(seen) {}
  size_t Route(const Request& req, std::span<const ReplicaView* const> candidates) override {
    seen_->emplace_back(req.id, req.attempt);
    return next_++ % candidates.size();
  }

 private:
  std::vector<std::pair<uint64_t, int>>* seen_;
  uint64_t next_ = 0;
};

// What a scripted autoscaler saw at one call.
struct Call {
  SimTime at;
  int ready, starting, desired;
  int64_t arrivals;                  // Load(period).arrivals
  std::optional<double> concurrency;  // Total(concurrency, 1 s)
};

// Answers script[k] at its k-th call (the last entry from then on).
class Scripted final : public Autoscaler {
 public:
  Scripted(SimTime period, SimTime delay, std::vector<int> script, std::vector<Call>* calls)
      : period_(period), delay_(delay), script_(std::move(script)), calls_(calls) {}
  SimTime period() const override { return period_; }
  SimTime metric_delay() const override { return delay_; }
  int Decide(const PoolSignals& s) override {
    if (calls_)
      calls_->push_back({s.now(), s.ready(), s.starting(), s.desired(), s.Load(period_).arrivals,
                         s.Total(ScalingMetric::kConcurrency, kSecond)});
    return script_[std::min(n_++, script_.size() - 1)];
  }

 private:
  SimTime period_, delay_;
  std::vector<int> script_;
  std::vector<Call>* calls_;
  size_t n_ = 0;
};

struct RigOptions {
  int gpus = 1;
  SimTime start = 0;             // Placement.start
  int64_t kv_blocks = 10000;
  int64_t max_num_seqs = 1024;
  uint64_t seed = 1;
};

// One pool (0) of model "m" on LinearPerf, one replica per slot in the
// phase given, routed round robin. Placement.provision is a sentinel
// (999 s): scaling takes its provisioning delay from the pricing class.
struct ScaleRig {
  ScaleRig(const std::vector<ReplicaPhase>& phases, const RigOptions& ro = {})
      : opts(ro), sim(ro.seed), cluster(sim, obs, "m", 0) {
    obs.cluster = &cluster;
    cluster.SetRouter(std::make_unique<SpyRouter>(&routed));
    for (size_t i = 0; i < phases.size(); ++i) {
      ReplicaOptions o;
      o.index = static_cast<int>(i);
      o.pool = 0;
      o.model = "m";
      o.max_model_len = 8192;
      o.kv_blocks = ro.kv_blocks;
      SchedulerLimits limits;
      limits.max_model_len = 8192;
      limits.max_num_seqs = ro.max_num_seqs;
      std::unique_ptr<BatchScheduler> sched;
      EXPECT_TRUE(Schedulers().Find("vllm")->factory(limits, {}, &sched).ok());
      cluster.Add(std::make_unique<Replica>(sim, o, std::move(sched), perf, obs), ro.gpus, 1.0, phases[i]);
      Cluster::Placement pl;
      pl.nodes = {static_cast<int>(i)};
      pl.provision = S(999);
      pl.start = ro.start;
      cluster.Place(static_cast<int>(i), pl);
    }
    std::vector<int> rack_of(phases.size(), 0), zone_of(phases.size(), 0);
    cluster.SetNodes(rack_of, zone_of, {"z0"});
  }

  // A pool config: `cls` at `usd` $/GPU-hour, provisioning `provision`.
  Cluster::PoolConfig Config(const std::string& cls, double usd, SimTime provision, int desired) const {
    Cluster::PoolConfig pc;
    pc.name = "p0";
    pc.gpu = "h100";
    pc.gpus_per_replica = opts.gpus;
    pc.price.name = cls;
    pc.price.usd_per_gpu_hour = usd;
    pc.price.provision = provision;
    pc.desired = desired;
    return pc;
  }
  // The same with a scripted autoscaler within [lo, hi].
  Cluster::PoolConfig Scaled(const std::string& cls, double usd, SimTime provision, int desired, SimTime period,
                             std::vector<int> script, int lo, int hi, SimTime delay = kSecond) {
    Cluster::PoolConfig pc = Config(cls, usd, provision, desired);
    pc.autoscaler = std::make_unique<Scripted>(period, delay, std::move(script), &calls);
    pc.autoscaling.policy = "scripted";
    pc.autoscaling.min_replicas = lo;
    pc.autoscaling.max_replicas = hi;
    pc.autoscaling.initial_replicas = desired;
    return pc;
  }
  void Start(Cluster::PoolConfig pc) {
    cluster.ConfigurePool(0, std::move(pc));
    cluster.StartScaling();
  }

  void Send(SimTime t, uint64_t id, int32_t output = 10, int32_t prompt = 100) {
    sim.At(t, [this, t, id, output, prompt] {
      Request r;
      r.id = id;
      r.arrival = t;
      r.prompt_tokens = prompt;
      r.output_tokens = output;
      cluster.Route(std::move(r));
      ++sent;
    });
  }
  void At(SimTime t, std::function<void()> fn) { sim.At(t, std::move(fn)); }
  void RunTo(SimTime end) {
    sim.Run(end);
    cluster.ReportUnfinished(end, "run_ended");
  }
  // Requests by status.
  std::map<RequestStatus, int64_t> ByStatus() const {
    std::map<RequestStatus, int64_t> out;
    for (const RequestRecord& r : obs.finished) out[r.status]++;
    return out;
  }
  // Every request sent ended exactly once and was counted as arriving once.
  void ExpectConservation() const {
    const auto by_id = obs.ById();
    EXPECT_EQ(static_cast<int64_t>(by_id.size()), sent);
    EXPECT_EQ(static_cast<int64_t>(obs.finished.size()), sent);
    EXPECT_EQ(static_cast<int64_t>(obs.arrivals.size()), sent);
    for (const auto& [id, n] : obs.arrivals) EXPECT_EQ(n, 1) << "request " << id;
  }

  RigOptions opts;
  Simulation sim;
  LinearPerf perf;
  FleetObserver obs;
  std::vector<std::pair<uint64_t, int>> routed;
  std::vector<Call> calls;
  Cluster cluster;
  int64_t sent = 0;
};

using Ev = std::vector<std::pair<std::string, SimTime>>;
constexpr ReplicaPhase kReady = ReplicaPhase::kReady;
constexpr ReplicaPhase kStopped = ReplicaPhase::kStopped;
constexpr ReplicaPhase kWarm = ReplicaPhase::kWarm;

double Dollars(const Cluster::Usage& u) { return static_cast<double>(*u.usd_gpu_ns / kNsPerHour); }
double GpuSeconds(const Cluster::Usage& u) { return static_cast<double>(u.gpu_ns) / 1e9; }

// ---------------------------------------------------------------------------
// 1. A cold start is the class's provisioning plus the placement's start.

TEST(ColdStart, ReadyAtDecisionPlusProvisionPlusStart) {
  RigOptions ro;
  ro.start = S(45);
  ScaleRig rig({kReady, kStopped}, ro);
  // Called at 10 s, 20 s, ...: 2 from the first call.
  rig.Start(rig.Scaled("on_demand", 2.0, S(30), 1, S(10), {2}, 1, 2));
  rig.At(S(84), [&] { EXPECT_STREQ(rig.cluster.StateName(1), "starting"); });
  rig.At(S(86), [&] { EXPECT_STREQ(rig.cluster.StateName(1), "ready"); });
  rig.RunTo(S(100));
  EXPECT_EQ(rig.obs.EventsOf(1), (Ev{{"provisioning", S(10)}, {"starting", S(40)}, {"ready", S(85)}}));
  EXPECT_TRUE(rig.obs.EventsOf(0).empty());
  // The controller counts the replica coming as starting until it is ready.
  ASSERT_GE(rig.calls.size(), 9u);
  EXPECT_EQ(rig.calls[0].at, S(10));
  EXPECT_EQ(rig.calls[1].starting, 1);
  EXPECT_EQ(rig.calls[1].ready, 1);
  EXPECT_EQ(rig.calls[1].desired, 2);
  EXPECT_EQ(rig.calls[8].at, S(90));
  EXPECT_EQ(rig.calls[8].starting, 0);
  EXPECT_EQ(rig.calls[8].ready, 2);
  const Cluster::Scaling s = rig.cluster.ScalingUntil(S(100));
  EXPECT_EQ(s.scale_ups, 1);
  EXPECT_EQ(s.scale_downs, 0);
  EXPECT_EQ(s.refused, 0);
  EXPECT_EQ(s.replicas_min, 1);
  EXPECT_EQ(s.replicas_max, 2);
  EXPECT_DOUBLE_EQ(s.replica_seconds, 100 + 90);
  // Paid from the moment it is provisioned.
  const Cluster::Usage u = rig.cluster.UsageUntil(S(100));
  EXPECT_EQ(u.gpu_ns, static_cast<__int128>(S(190)));
  EXPECT_NEAR(Dollars(u), 190 * 2.0 / 3600, 1e-12);
  ASSERT_EQ(u.parts.size(), 1u);
  EXPECT_EQ(u.parts[0].pricing_class, "on_demand");
}

TEST(ColdStart, AReservedClassAddsNoProvisioning) {
  RigOptions ro;
  ro.start = S(45);
  ScaleRig rig({kReady, kStopped}, ro);
  rig.Start(rig.Scaled("reserved", 2.0, 0, 1, S(10), {2}, 1, 2));
  rig.RunTo(S(100));
  EXPECT_EQ(rig.obs.EventsOf(1), (Ev{{"provisioning", S(10)}, {"starting", S(10)}, {"ready", S(55)}}));
  EXPECT_EQ(rig.cluster.ScalingUntil(S(100)).scale_ups, 1);
}

// ---------------------------------------------------------------------------
// 2. A warm pool: a scale-up takes the warm worker, and a replacement warm
// worker is provisioned and cold-started; warm time costs a fraction.

TEST(WarmPool, ScaleUpTakesTheWarmWorkerAndAReplacementWarmsUp) {
  RigOptions ro;
  ro.start = S(45);
  ro.gpus = 2;
  ScaleRig rig({kReady, kWarm, kStopped}, ro);
  Cluster::PoolConfig pc = rig.Scaled("on_demand", 3.0, S(30), 1, S(10), {2}, 1, 2);
  pc.autoscaling.warm_pool = 1;
  pc.warm_start = S(5);
  pc.warm_cost_fraction = 0.25;
  rig.Start(std::move(pc));
  std::optional<double> rate_warm, rate_coming, rate_warm_again;
  rig.At(S(5), [&] { rate_warm = rig.cluster.UsdPerHour(1); });
  rig.At(S(50), [&] { rate_coming = rig.cluster.UsdPerHour(2); });
  rig.At(S(90), [&] { rate_warm_again = rig.cluster.UsdPerHour(2); });
  rig.RunTo(S(100));
  // The warm worker is ready warm_start after the decision.
  EXPECT_EQ(rig.obs.EventsOf(1), (Ev{{"starting", S(10)}, {"ready", S(15)}}));
  // Its replacement: provisioning + cold start, into the warm pool (never ready).
  EXPECT_EQ(rig.obs.EventsOf(2), (Ev{{"provisioning", S(10)}, {"starting", S(40)}, {"warm", S(85)}}));
  EXPECT_STREQ(rig.cluster.StateName(2), "warm");
  // A replica warming up is not one the controller waits for.
  ASSERT_GE(rig.calls.size(), 2u);
  EXPECT_EQ(rig.calls[1].ready, 2);
  EXPECT_EQ(rig.calls[1].starting, 0);
  const Cluster::Scaling s = rig.cluster.ScalingUntil(S(100));
  EXPECT_EQ(s.scale_ups, 1);  // the replacement is not a scale-up
  EXPECT_EQ(s.refused, 0);
  EXPECT_DOUBLE_EQ(s.replica_seconds, 100 + 100 + 90);
  // 2 GPUs at $3: full price except while warm (a quarter).
  EXPECT_DOUBLE_EQ(*rate_warm, 3.0 * 2 * 0.25);
  EXPECT_DOUBLE_EQ(*rate_coming, 3.0 * 2);
  EXPECT_DOUBLE_EQ(*rate_warm_again, 3.0 * 2 * 0.25);
  const Cluster::Usage u = rig.cluster.UsageUntil(S(100));
  EXPECT_EQ(u.gpu_ns, static_cast<__int128>(S(290)) * 2);
  const double paid_s = 100 + (10 * 0.25 + 90) + (75 + 15 * 0.25);
  EXPECT_NEAR(Dollars(u), paid_s * 2 * 3.0 / 3600, 1e-12);
}

// ---------------------------------------------------------------------------
// 3. A drain loses no request, stops once empty, then costs nothing.

TEST(Drain, EveryHeldRequestCompletesThenTheReplicaStopsAndCostsNothing) {
  ScaleRig rig({kReady, kReady});
  rig.Start(rig.Scaled("on_demand", 1.0, 0, 2, S(20), {1}, 1, 2));
  // 40 long requests at 19 s (20 each, round robin), held at 20 s.
  for (uint64_t id = 0; id < 40; ++id) rig.Send(S(19), id, 2000);
  // Short ones after the drain began: replica 0 only.
  for (uint64_t k = 0; k < 40; ++k) rig.Send(S(20.25) + static_cast<SimTime>(k) * S(0.5), 100 + k);
  int64_t held_at_drain[2] = {-1, -1};
  rig.At(S(20), [&] {
    held_at_drain[0] = rig.cluster.view(0).outstanding();
    held_at_drain[1] = rig.cluster.view(1).outstanding();
  });
  std::optional<double> rate_after;
  rig.At(S(50), [&] { rate_after = rig.cluster.UsdPerHour(1); });
  rig.RunTo(S(60));
  // (Read before the decision at 20 s.)
  EXPECT_EQ(held_at_drain[0], 20);
  EXPECT_EQ(held_at_drain[1], 20);
  // Equal loads: the newest drains.
  const Ev ev = rig.obs.EventsOf(1);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0], std::make_pair(std::string("draining"), S(20)));
  EXPECT_EQ(ev[1].first, "stopped");
  const SimTime stopped = ev[1].second;
  EXPECT_TRUE(rig.obs.EventsOf(0).empty());
  // Every request completed; replica 1 finished its 20 and took no other.
  rig.ExpectConservation();
  SimTime last_on_1 = -1;
  int on_1 = 0;
  for (const RequestRecord& r : rig.obs.finished) {
    EXPECT_EQ(r.status, RequestStatus::kCompleted) << r.id;
    EXPECT_EQ(r.generated_tokens, r.output_tokens) << r.id;
    if (r.replica == 1) {
      ++on_1;
      EXPECT_LT(r.id, 40u);
      last_on_1 = std::max(last_on_1, r.finish);
    }
  }
  EXPECT_EQ(on_1, 20);
  // Stopped at the first 100 ms check after its last request ended.
  EXPECT_GE(stopped, last_on_1);
  EXPECT_LT(stopped - last_on_1, S(0.1));
  EXPECT_EQ((stopped - S(20)) % S(0.1), 0);
  EXPECT_GT(stopped, S(20));
  // Its caches went with it.
  EXPECT_EQ(rig.cluster.view(1).kv_utilization(), 0.0);
  EXPECT_EQ(rig.cluster.replica(1).outstanding(), 0);
  // GPU time: replica 0 the whole minute, replica 1 until it stopped.
  const Cluster::Usage u = rig.cluster.UsageUntil(S(60));
  EXPECT_EQ(u.gpu_ns, static_cast<__int128>(S(60) + stopped));
  EXPECT_EQ(u.gpu_ns - rig.cluster.UsageUntil(stopped).gpu_ns, static_cast<__int128>(S(60) - stopped));
  EXPECT_LE(u.busy_gpu_ns, u.gpu_ns);
  EXPECT_DOUBLE_EQ(*rate_after, 0.0);
  const Cluster::Scaling s = rig.cluster.ScalingUntil(S(60));
  EXPECT_EQ(s.scale_downs, 1);
  EXPECT_EQ(s.scale_ups, 0);
  EXPECT_EQ(s.replicas_min, 1);
  EXPECT_EQ(s.replicas_max, 2);
  EXPECT_NEAR(s.replica_seconds, TimeToSeconds(S(60) + stopped), 1e-9);
}

// ---------------------------------------------------------------------------
// 4. A scale-down cancels a replica still coming before draining one.

struct CancelCase {
  std::string name;
  std::vector<int> script;  // calls every 10 s
  Ev events;                // of the replica started at 10 s
  SimTime cancelled;
};

class Cancel : public ::testing::TestWithParam<CancelCase> {};

TEST_P(Cancel, TheReplicaComingIsStoppedAndNeverReady) {
  const CancelCase& c = GetParam();
  RigOptions ro;
  ro.start = S(45);
  ScaleRig rig({kReady, kStopped}, ro);
  rig.Start(rig.Scaled("on_demand", 1.0, S(30), 1, S(10), c.script, 1, 2));
  for (uint64_t k = 0; k < 100; ++k) rig.Send(S(0.5) + static_cast<SimTime>(k) * S(2), k);
  rig.RunTo(S(200));
  EXPECT_EQ(rig.obs.EventsOf(1), c.events);
  EXPECT_TRUE(rig.obs.EventsOf(0).empty());  // the ready one serves on, undrained
  EXPECT_STREQ(rig.cluster.StateName(1), "stopped");
  rig.ExpectConservation();
  for (const RequestRecord& r : rig.obs.finished) {
    EXPECT_EQ(r.status, RequestStatus::kCompleted);
    EXPECT_EQ(r.replica, 0);
  }
  const Cluster::Scaling s = rig.cluster.ScalingUntil(S(200));
  EXPECT_EQ(s.scale_ups, 1);
  EXPECT_EQ(s.scale_downs, 1);
  EXPECT_EQ(s.replicas_min, 1);
  EXPECT_EQ(s.replicas_max, 1);
  // The machine was paid while it came.
  EXPECT_EQ(rig.cluster.UsageUntil(S(200)).gpu_ns, static_cast<__int128>(S(200) + c.cancelled - S(10)));
  EXPECT_DOUBLE_EQ(s.replica_seconds, TimeToSeconds(S(200) + c.cancelled - S(10)));
}

INSTANTIATE_TEST_SUITE_P(
    Scaling, Cancel,
    ::testing::Values(CancelCase{"WhileProvisioning", {2, 1}, {{"provisioning", S(10)}, {"stopped", S(20)}}, S(20)},
                      CancelCase{"WhileStarting",
                                 {2, 2, 2, 2, 1},
                                 {{"provisioning", S(10)}, {"starting", S(40)}, {"stopped", S(50)}},
                                 S(50)}),
    [](const auto& info) { return info.param.name; });

TEST(Cancel, AReplicaRecoveringFromACrashIsCancelledAndItsDowntimeEnds) {
  // Replica 1 crashes at 5 s and restarts (ready at 50 s); the decision at
  // 30 s wants one replica: the one coming back is called off. Its downtime
  // is 5..30 s, not to the end of the run.
  RigOptions ro;
  ro.start = S(45);
  ScaleRig rig({kReady, kReady}, ro);
  FailureModelRegistry reg;
  RegisterBuiltinFailureModels(&reg);
  ReliabilitySpec spec;
  FailureSpec drill;
  drill.path = "failures[0]";
  drill.model = "drill";
  drill.at_s = 5;
  drill.replica = 1;
  drill.kind = "crash";
  spec.failures.push_back(drill);
  std::vector<std::unique_ptr<FailureModel>> models(1);
  ASSERT_TRUE(reg.Find("drill")->factory(drill, rig.sim.Stream("failures/0"), &models[0]).ok());
  rig.cluster.SetReliability(spec, std::move(models), {});
  rig.Start(rig.Scaled("on_demand", 1.0, 0, 2, S(10), {2, 2, 1}, 1, 2));
  rig.RunTo(S(100));
  EXPECT_EQ(rig.obs.EventsOf(1), (Ev{{"crash", S(5)}, {"failed", S(5)}, {"starting", S(5)}, {"stopped", S(30)}}));
  const Cluster::Scaling s = rig.cluster.ScalingUntil(S(100));
  EXPECT_EQ(s.scale_downs, 1);
  const Cluster::Reliability rel = rig.cluster.ReliabilityUntil(S(100));
  EXPECT_EQ(rel.replica_failures, 1);
  EXPECT_DOUBLE_EQ(rel.downtime_s, 25);
  EXPECT_EQ(rig.cluster.failure_windows().CoveredBetween(0, S(100)), S(25));
  EXPECT_FALSE(rig.cluster.failure_windows().Inside(S(60)));
}

// ---------------------------------------------------------------------------
// 5. A reserved pool costs the same busy or idle, scaled or not.

struct ReservedCase {
  std::string name;
  bool traffic;
  std::vector<int> script;
  int lo;
};

class Reserved : public ::testing::TestWithParam<ReservedCase> {};

TEST_P(Reserved, PaidForEverySlotTheWholeWindow) {
  const ReservedCase& c = GetParam();
  RigOptions ro;
  ro.gpus = 4;
  ro.start = S(10);
  ScaleRig rig({kReady, kReady, kStopped}, ro);
  rig.Start(rig.Scaled("reserved", 5.0, 0, 2, S(10), c.script, c.lo, 3));
  if (c.traffic)
    for (uint64_t k = 0; k < 400; ++k) rig.Send(S(0.1) + static_cast<SimTime>(k) * S(0.25), k, 200);
  std::vector<double> stopped_rates;
  rig.At(S(95), [&] {
    for (int i = 0; i < 3; ++i)
      if (rig.cluster.view(i).phase() == kStopped) stopped_rates.push_back(*rig.cluster.UsdPerHour(i));
  });
  rig.RunTo(S(100));
  const Cluster::Usage u = rig.cluster.UsageUntil(S(100));
  EXPECT_EQ(u.gpu_ns, static_cast<__int128>(S(100)) * 3 * 4);
  EXPECT_NEAR(Dollars(u), 100.0 * 3 * 4 * 5.0 / 3600, 1e-12);
  ASSERT_EQ(u.parts.size(), 1u);
  EXPECT_EQ(u.parts[0].pricing_class, "reserved");
  EXPECT_EQ(u.parts[0].gpu_ns, u.gpu_ns);
  if (c.traffic) {
    EXPECT_GT(u.busy_gpu_ns, 0);
  } else {
    EXPECT_EQ(u.busy_gpu_ns, 0);
  }
  for (double r : stopped_rates) EXPECT_DOUBLE_EQ(r, 5.0 * 4);
  if (c.script.back() == 0) {
    EXPECT_EQ(stopped_rates.size(), 3u);
  }
  rig.ExpectConservation();
}

INSTANTIATE_TEST_SUITE_P(Scaling, Reserved,
                         ::testing::Values(ReservedCase{"Idle", false, {2}, 1}, ReservedCase{"Busy", true, {2}, 1},
                                           ReservedCase{"IdleScaledToZero", false, {3, 0}, 0},
                                           ReservedCase{"BusyScaledUpAndDown", true, {3, 1, 3, 1}, 1}),
                         [](const auto& info) { return info.param.name; });

// ---------------------------------------------------------------------------
// 6. Scale to zero: a request for a pool at zero waits in the activator
// queue, one replica starts at once, and the request is served after the
// cold start.

TEST(ScaleToZero, TheActivatorHoldsTheRequestAndStartsOneReplicaAtOnce) {
  RigOptions ro;
  ro.start = S(42);
  ScaleRig rig({kStopped, kStopped}, ro);
  rig.Start(rig.Scaled("on_demand", 1.0, S(30), 0, S(10), {0}, 0, 2));
  rig.Send(S(5), 1);
  rig.Send(S(50), 2);  // while the first replica is still coming
  int64_t buffered_at_60 = -1;
  rig.At(S(60), [&] { buffered_at_60 = rig.cluster.Idle() ? 0 : 1; });
  rig.RunTo(S(100));
  EXPECT_EQ(buffered_at_60, 1);
  // One replica, started at the first arrival: ready at 5 + 30 + 42; the
  // decision at 80 s (still 0) drains it, empty, at once.
  EXPECT_EQ(rig.obs.EventsOf(0),
            (Ev{{"provisioning", S(5)}, {"starting", S(35)}, {"ready", S(77)}, {"draining", S(80)}, {"stopped", S(80)}}));
  EXPECT_TRUE(rig.obs.EventsOf(1).empty());
  rig.ExpectConservation();
  const auto by_id = rig.obs.ById();
  for (uint64_t id : {1, 2}) {
    const RequestRecord& r = by_id.at(id);
    EXPECT_EQ(r.status, RequestStatus::kCompleted) << id;
    EXPECT_EQ(r.replica, 0);
    EXPECT_GE(r.first_scheduled, S(77));
    EXPECT_LT(r.finish, S(78));
  }
  EXPECT_EQ(by_id.at(1).arrival, S(5));  // the client's arrival, not the routing
  // The controller saw the held request as the pool's load, and each
  // arrival once: the windows (t - 11, t - 1] of its calls tile the run.
  ASSERT_EQ(rig.calls.size(), 10u);
  EXPECT_EQ(rig.calls[0].concurrency, 1.0);  // at 9 s: one request held
  EXPECT_EQ(rig.calls[0].ready, 0);
  EXPECT_EQ(rig.calls[0].starting, 1);
  int64_t arrivals = 0;
  for (const Call& c : rig.calls) arrivals += c.arrivals;
  EXPECT_EQ(arrivals, 2);
  const Cluster::Scaling s = rig.cluster.ScalingUntil(S(100));
  EXPECT_EQ(s.scale_ups, 1);
  EXPECT_EQ(s.scale_downs, 1);
  EXPECT_EQ(s.replicas_min, 0);
  EXPECT_EQ(s.replicas_max, 1);
  EXPECT_DOUBLE_EQ(s.replica_seconds, 75);
  EXPECT_EQ(rig.cluster.UsageUntil(S(100)).gpu_ns, static_cast<__int128>(S(75)));
}

TEST(ScaleToZero, AFixedPoolAtZeroTurnsRequestsAway) {
  ScaleRig rig({kStopped});
  rig.Start(rig.Config("on_demand", 1.0, 0, 0));
  rig.Send(S(1), 1);
  rig.RunTo(S(10));
  rig.ExpectConservation();
  ASSERT_EQ(rig.obs.finished.size(), 1u);
  EXPECT_EQ(rig.obs.finished[0].status, RequestStatus::kRejected);
  EXPECT_EQ(rig.obs.finished[0].reason, "no_ready_replica");
}

TEST(ScaleToZero, ARequestStillHeldAtTheEndIsUnfinishedOnce) {
  RigOptions ro;
  ro.start = S(42);
  ScaleRig rig({kStopped}, ro);
  rig.Start(rig.Scaled("on_demand", 1.0, S(30), 0, S(10), {0}, 0, 1));
  rig.Send(S(5), 1);
  rig.RunTo(S(50));
  rig.ExpectConservation();
  ASSERT_EQ(rig.obs.finished.size(), 1u);
  EXPECT_EQ(rig.obs.finished[0].status, RequestStatus::kUnfinished);
  EXPECT_EQ(rig.obs.finished[0].reason, "run_ended");
}

// ---------------------------------------------------------------------------
// 7. Spot: reclaims, replacements, capacity limits and the fallback.

struct SpotRun {
  std::unique_ptr<ScaleRig> rig;
  Cluster::Scaling s;
  Cluster::Usage u;
};

// Two spot replicas of four slots, reclaimed 30 times an hour each with a
// 2 s notice (shorter than a request); a request a second, each ~3 s long. `fallback`: on-demand
// at $4; `spot_limit`: GPUs of spot for h100.
constexpr SimTime kNotice = 2 * kSecond;

SpotRun RunSpot(bool autoscaled, std::optional<double> fallback, std::optional<int64_t> spot_limit,
                std::optional<RetrySpec> retries = std::nullopt, uint64_t seed = 7, int64_t max_num_seqs = 1024,
                std::function<void(ScaleRig&)> before_run = nullptr) {
  RigOptions ro;
  ro.start = S(45);
  ro.seed = seed;
  ro.max_num_seqs = max_num_seqs;
  SpotRun out;
  out.rig = std::make_unique<ScaleRig>(std::vector<ReplicaPhase>{kReady, kReady, kStopped, kStopped}, ro);
  ScaleRig& rig = *out.rig;
  Cluster::PoolConfig pc = autoscaled ? rig.Scaled("spot", 1.0, S(30), 2, S(10), {2}, 1, 4) : rig.Config("spot", 1.0, S(30), 2);
  pc.reclaims_per_hour = 30;
  pc.reclaim_notice = kNotice;
  if (fallback) {
    Cluster::PriceClass od;
    od.name = "on_demand";
    od.usd_per_gpu_hour = *fallback;
    od.provision = S(30);
    pc.fallback = od;
  }
  if (spot_limit) rig.cluster.SetCapacityLimits({{"h100", "spot", *spot_limit}});
  if (retries) {
    ReliabilitySpec spec;
    spec.retries = retries;
    rig.cluster.SetReliability(spec, {}, {});
  }
  rig.Start(std::move(pc));
  for (uint64_t k = 0; k < 1200; ++k) rig.Send(S(0.5) + static_cast<SimTime>(k) * kSecond, k, 3000);
  if (before_run) before_run(rig);
  rig.RunTo(S(1200));
  out.s = rig.cluster.ScalingUntil(S(1200));
  out.u = rig.cluster.UsageUntil(S(1200));
  return out;
}

// Replicas provisioning, starting or ready after every event at or before
// `t` (the first `initial_ready` ready at first).
int ServingOrComing(const FleetObserver& obs, int initial_ready, int n, SimTime t) {
  std::vector<std::string> phase(n, "stopped");
  for (int i = 0; i < initial_ready; ++i) phase[i] = "ready";
  for (const auto& e : obs.events) {
    if (e.at > t) break;
    if (e.what == "spot_notice" || e.what == "spot_reclaimed") continue;
    phase[e.replica] = e.what;
  }
  int count = 0;
  for (const std::string& p : phase) count += p == "provisioning" || p == "starting" || p == "ready" ? 1 : 0;
  return count;
}

// The notice precedes each reclaim by reclaim_notice, on the same replica,
// which drains meanwhile.
void ExpectNoticeBeforeEachReclaim(const FleetObserver& obs, const Cluster::Scaling& s) {
  const auto reclaims = obs.Named("spot_reclaimed");
  EXPECT_EQ(static_cast<int64_t>(reclaims.size()), s.spot_reclaims);
  for (const auto& e : reclaims) {
    EXPECT_TRUE(obs.Has(e.replica, "spot_notice", e.at - kNotice)) << e.replica << " at " << e.at;
    EXPECT_TRUE(obs.Has(e.replica, "draining", e.at - kNotice)) << e.replica << " at " << e.at;
    EXPECT_TRUE(obs.Has(e.replica, "stopped", e.at)) << e.replica << " at " << e.at;
  }
}

TEST(Spot, AReclaimedReplicasRequestsFailAndAReplacementStarts) {
  SpotRun run = RunSpot(false, std::nullopt, std::nullopt);
  ScaleRig& rig = *run.rig;
  const FleetObserver& obs = rig.obs;
  ASSERT_GT(run.s.spot_reclaims, 2);
  ExpectNoticeBeforeEachReclaim(obs, run.s);
  // A fixed pool starts replacements when a machine is gone, counting one
  // under notice as gone too: right after each reclaim, two replicas are
  // serving or coming again. Each replacement is ready a cold start later.
  for (const auto& e : obs.Named("spot_reclaimed"))
    EXPECT_EQ(ServingOrComing(obs, 2, 4, e.at), 2) << "after the reclaim at " << e.at;
  for (const auto& e : obs.Named("provisioning")) {
    bool at_a_reclaim = false;
    for (const auto& r : obs.Named("spot_reclaimed")) at_a_reclaim = at_a_reclaim || r.at == e.at;
    EXPECT_TRUE(at_a_reclaim) << e.replica << " at " << e.at;
    if (e.at + S(75) <= S(1200)) {
      EXPECT_TRUE(obs.Has(e.replica, "ready", e.at + S(75))) << e.replica;
    }
  }
  EXPECT_EQ(run.s.scale_ups, static_cast<int64_t>(obs.Named("provisioning").size()));
  EXPECT_EQ(run.s.fallbacks, 0);
  EXPECT_EQ(run.s.refused, 0);
  // What the reclaimed replicas held failed with the reason, when they went.
  rig.ExpectConservation();
  int reclaimed = 0;
  for (const RequestRecord& r : obs.finished) {
    if (r.reason != "spot_reclaimed") continue;
    ++reclaimed;
    EXPECT_EQ(r.status, RequestStatus::kFailed);
    EXPECT_TRUE(obs.Has(r.replica, "spot_reclaimed", r.finish)) << r.id;
  }
  EXPECT_GT(reclaimed, 0);
  // Everything is spot.
  ASSERT_EQ(run.u.parts.size(), 1u);
  EXPECT_EQ(run.u.parts[0].pricing_class, "spot");
}

TEST(Spot, AnAutoscaledPoolStartsTheReplacementAtTheNotice) {
  SpotRun run = RunSpot(true, std::nullopt, std::nullopt);
  const FleetObserver& obs = run.rig->obs;
  ASSERT_GT(run.s.spot_reclaims, 2);
  ExpectNoticeBeforeEachReclaim(obs, run.s);
  for (const auto& e : obs.Named("spot_notice")) {
    int replacements = 0;
    for (int j = 0; j < 4; ++j) replacements += obs.Has(j, "provisioning", e.at) ? 1 : 0;
    EXPECT_EQ(replacements, 1) << "at the notice at " << e.at;
  }
  run.rig->ExpectConservation();
}

TEST(Spot, ReclaimedRequestsNotYetStreamedAreRetried) {
  // One running request per replica: the others wait unstreamed.
  RetrySpec rs;
  rs.max_retries = 2;
  rs.min_retry_concurrency = 100;
  SpotRun run = RunSpot(true, std::nullopt, std::nullopt, rs, 7, /*max_num_seqs=*/1);
  ScaleRig& rig = *run.rig;
  ASSERT_GT(run.s.spot_reclaims, 0);
  rig.ExpectConservation();
  const Cluster::Reliability rel = rig.cluster.ReliabilityUntil(S(1200));
  EXPECT_GT(rel.requests_retried, 0);
  std::map<uint64_t, int> attempts;
  for (const auto& [id, attempt] : rig.routed) attempts[id] = std::max(attempts[id], attempt);
  int retried_completed = 0;
  for (const RequestRecord& r : rig.obs.finished) {
    if (r.reason == "spot_reclaimed") {
      // Failed: it had streamed, or used its retries.
      EXPECT_TRUE(r.first_token >= 0 || attempts[r.id] >= rs.max_retries) << r.id;
    }
    if (attempts[r.id] > 0 && r.status == RequestStatus::kCompleted) ++retried_completed;
  }
  EXPECT_GT(retried_completed, 0);
}

TEST(Spot, NoSpotCapacityFallsBackToOnDemand) {
  SpotRun run = RunSpot(false, 4.0, 0);
  const FleetObserver& obs = run.rig->obs;
  // Once both are on demand, none is reclaimed again.
  ASSERT_GT(run.s.spot_reclaims, 0);
  EXPECT_LE(run.s.spot_reclaims, 2);
  EXPECT_EQ(run.s.fallbacks, run.s.spot_reclaims);
  EXPECT_EQ(run.s.refused, 0);
  ExpectNoticeBeforeEachReclaim(obs, run.s);
  // The replacements' time is the on-demand part, at its price.
  __int128 on_demand_ns = 0;
  for (const auto& e : obs.Named("provisioning")) {
    on_demand_ns += S(1200) - e.at;
    EXPECT_DOUBLE_EQ(*run.rig->cluster.UsdPerHour(e.replica), 4.0);
  }
  ASSERT_EQ(run.u.parts.size(), 2u);
  const Cluster::Usage::Part& spot = run.u.parts[0];
  const Cluster::Usage::Part& od = run.u.parts[1];
  EXPECT_EQ(spot.pricing_class, "spot");
  EXPECT_EQ(od.pricing_class, "on_demand");
  EXPECT_EQ(od.gpu_ns, on_demand_ns);
  EXPECT_NEAR(static_cast<double>(*od.usd_gpu_ns / kNsPerHour), static_cast<double>(on_demand_ns) / 1e9 * 4.0 / 3600,
              1e-9);
  EXPECT_NEAR(static_cast<double>(*spot.usd_gpu_ns / kNsPerHour), static_cast<double>(spot.gpu_ns) / 1e9 * 1.0 / 3600,
              1e-9);
  EXPECT_EQ(spot.gpu_ns + od.gpu_ns, run.u.gpu_ns);
  run.rig->ExpectConservation();
}

TEST(Spot, NoSpotCapacityAndNoFallbackIsRefused) {
  SpotRun run = RunSpot(false, std::nullopt, 0);
  const FleetObserver& obs = run.rig->obs;
  ASSERT_GT(run.s.spot_reclaims, 0);
  EXPECT_EQ(run.s.refused, run.s.spot_reclaims);  // one refused start per reclaim
  EXPECT_EQ(run.s.fallbacks, 0);
  EXPECT_EQ(run.s.scale_ups, 0);
  EXPECT_TRUE(obs.Named("provisioning").empty());
  ASSERT_EQ(run.u.parts.size(), 1u);
  EXPECT_EQ(run.u.parts[0].pricing_class, "spot");
  run.rig->ExpectConservation();
  if (run.s.spot_reclaims == 2) {
    // No replica left: the last requests are turned away.
    EXPECT_EQ(run.rig->obs.finished.back().reason, "no_ready_replica");
  }
}

// GPUs held (not stopped) at the spot price, probed every 100 ms.
// Every 0.1 s: the spot GPUs held (priced at spot's $1), and the replicas
// provisioned since the last probe on spot. It reschedules a copy of
// itself, so nothing owns it in a cycle.
struct SpotProbe {
  ScaleRig* rig;
  int64_t* most;
  int64_t* spot_starts;
  std::shared_ptr<std::set<std::pair<int, SimTime>>> seen;
  void operator()() const {
    int64_t used = 0;
    for (int i = 0; i < rig->cluster.size(); ++i) {
      const std::optional<double> rate = rig->cluster.UsdPerHour(i);
      if (rig->cluster.view(i).phase() != kStopped && rate && *rate == 1.0) used += 1;
    }
    *most = std::max(*most, used);
    for (const auto& e : rig->obs.Named("provisioning"))
      if (seen->insert({e.replica, e.at}).second && *rig->cluster.UsdPerHour(e.replica) == 1.0) ++*spot_starts;
    if (rig->sim.now() + S(0.1) <= S(1200)) rig->sim.After(S(0.1), *this);
  }
};

std::function<void(ScaleRig&)> ProbeSpotGpus(int64_t* most, int64_t* spot_starts) {
  return [most, spot_starts](ScaleRig& rig) {
    rig.At(0, SpotProbe{&rig, most, spot_starts, std::make_shared<std::set<std::pair<int, SimTime>>>()});
  };
}

TEST(Spot, ALimitCountsTheGpusOfTheClassStillHeld) {
  // Room for two spot GPUs: a replacement is spot when the machine it
  // replaces is gone, on demand when a replica under notice (still held)
  // fills the class.
  int64_t most = 0, spot_starts = 0;
  SpotRun run = RunSpot(false, 4.0, 2, std::nullopt, 7, 1024, ProbeSpotGpus(&most, &spot_starts));
  ASSERT_GT(run.s.spot_reclaims, 0);
  EXPECT_EQ(most, 2);
  EXPECT_GT(spot_starts, 0);
  EXPECT_EQ(run.s.refused, 0);
  EXPECT_EQ(spot_starts + run.s.fallbacks, run.s.scale_ups);
  // Autoscaled: the replacement starts at the notice, while the reclaimed
  // machine still holds its GPUs: on demand.
  SpotRun early = RunSpot(true, 4.0, 2);
  ASSERT_GT(early.s.spot_reclaims, 0);
  EXPECT_GT(early.s.fallbacks, 0);
  EXPECT_EQ(early.s.refused, 0);
}

// ---------------------------------------------------------------------------
// 8. Conservation and determinism under scaling.

// Ready replicas over time, from the lifecycle events: (fewest, most).
std::pair<int, int> ReadyRange(const FleetObserver& obs, int initial_ready, int n) {
  std::vector<bool> ready(n, false);
  for (int i = 0; i < initial_ready; ++i) ready[i] = true;
  int cur = initial_ready, lo = cur, hi = cur;
  for (size_t k = 0; k < obs.events.size();) {
    const SimTime at = obs.events[k].at;
    for (; k < obs.events.size() && obs.events[k].at == at; ++k) {
      const auto& e = obs.events[k];
      if (e.what == "spot_notice" || e.what == "spot_reclaimed") continue;
      const bool now_ready = e.what == "ready";
      cur += static_cast<int>(now_ready) - static_cast<int>(ready[e.replica]);
      ready[e.replica] = now_ready;
    }
    lo = std::min(lo, cur);
    hi = std::max(hi, cur);
  }
  return {lo, hi};
}

TEST(Conservation, AScriptedTimelineMatchesTheScalingFigures) {
  RigOptions ro;
  ro.start = S(10);
  ScaleRig rig({kReady, kStopped, kStopped, kStopped}, ro);
  // Calls at 10, 20, ..., 120 s; provisioning 5 s + start 10 s.
  rig.Start(rig.Scaled("on_demand", 2.0, S(5), 1, S(10), {3, 3, 3, 1, 1, 4, 4, 2}, 1, 4));
  // Short requests at .25 and .75 s: every replica is empty at the calls.
  for (uint64_t k = 0; k < 240; ++k) rig.Send(S(0.25) + static_cast<SimTime>(k) * S(0.5), k);
  rig.RunTo(S(120));
  EXPECT_EQ(rig.obs.EventsOf(0), Ev{});
  EXPECT_EQ(rig.obs.EventsOf(1), (Ev{{"provisioning", S(10)}, {"starting", S(15)}, {"ready", S(25)},
                                     {"draining", S(40)}, {"stopped", S(40)},
                                     {"provisioning", S(60)}, {"starting", S(65)}, {"ready", S(75)}}));
  EXPECT_EQ(rig.obs.EventsOf(2), (Ev{{"provisioning", S(10)}, {"starting", S(15)}, {"ready", S(25)},
                                     {"draining", S(40)}, {"stopped", S(40)},
                                     {"provisioning", S(60)}, {"starting", S(65)}, {"ready", S(75)},
                                     {"draining", S(80)}, {"stopped", S(80)}}));
  EXPECT_EQ(rig.obs.EventsOf(3), (Ev{{"provisioning", S(60)}, {"starting", S(65)}, {"ready", S(75)},
                                     {"draining", S(80)}, {"stopped", S(80)}}));
  rig.ExpectConservation();
  EXPECT_EQ(rig.ByStatus()[RequestStatus::kCompleted], 240);
  const Cluster::Scaling s = rig.cluster.ScalingUntil(S(120));
  EXPECT_EQ(s.scale_ups, 2 + 3);
  EXPECT_EQ(s.scale_downs, 2 + 2);
  EXPECT_EQ(s.replicas_min, 1);
  EXPECT_EQ(s.replicas_max, 4);
  // r0 120 + r1 (30 + 60) + r2 (30 + 20) + r3 20.
  EXPECT_DOUBLE_EQ(s.replica_seconds, 280);
  EXPECT_EQ(rig.cluster.UsageUntil(S(120)).gpu_ns, static_cast<__int128>(S(280)));
  EXPECT_NEAR(Dollars(rig.cluster.UsageUntil(S(120))), 280 * 2.0 / 3600, 1e-12);
  // Up to 60 s: ready 1 until 25, 3 until 40, then 1.
  const Cluster::Scaling early = rig.cluster.ScalingUntil(S(60));
  EXPECT_EQ(early.replicas_min, 1);
  EXPECT_EQ(early.replicas_max, 3);
  EXPECT_DOUBLE_EQ(early.replica_seconds, 60 + 30 + 30 + 0);
}

// A registered policy (hpa, target 2 requests per replica) under bursty
// Poisson traffic on spot replicas with an on-demand fallback, a spot
// capacity limit and retries: everything is exercised at once.
struct HpaRun {
  std::unique_ptr<ScaleRig> rig;
  Cluster::Scaling s;
  Cluster::Usage u;
  Cluster::Reliability rel;
};

HpaRun RunHpa(uint64_t seed) {
  RigOptions ro;
  ro.start = S(20);
  ro.seed = seed;
  HpaRun out;
  out.rig = std::make_unique<ScaleRig>(std::vector<ReplicaPhase>{kReady, kStopped, kStopped, kStopped, kStopped, kStopped}, ro);
  ScaleRig& rig = *out.rig;
  AutoscalerRegistry registry;
  RegisterBuiltinAutoscalers(&registry);
  AutoscalerSpec spec;
  spec.path = "fleet.pools[0].autoscaler";
  spec.policy = "hpa";
  spec.min_replicas = 1;
  spec.max_replicas = 5;
  spec.initial_replicas = 1;
  spec.target = 2;
  spec.options["downscale_stabilization_s"] = 60;
  Cluster::PoolConfig pc = rig.Config("spot", 1.0, S(10), 1);
  EXPECT_TRUE(registry.Find("hpa")->factory(spec, AutoscalerContext{}, &pc.autoscaler).ok());
  pc.autoscaling = spec;
  pc.reclaims_per_hour = 20;
  pc.reclaim_notice = S(10);
  Cluster::PriceClass od;
  od.name = "on_demand";
  od.usd_per_gpu_hour = 3.0;
  od.provision = S(10);
  pc.fallback = od;
  rig.cluster.SetCapacityLimits({{"h100", "spot", 3}});
  ReliabilitySpec rel;
  rel.retries = RetrySpec{};
  rig.cluster.SetReliability(rel, {}, {});
  rig.Start(std::move(pc));
  // Bursts: 8/s for 120 s of every 300 s, 0.5/s otherwise, for 1200 s.
  Rng rng = rig.sim.Stream("traffic");
  SimTime t = 0;
  for (uint64_t id = 0;; ++id) {
    const bool burst = (t % S(300)) < S(120);
    t += SecondsToTime(rng.Exponential(burst ? 0.125 : 2.0));
    if (t >= S(1200)) break;
    rig.Send(t, id, static_cast<int32_t>(200 + rng.Below(800)), static_cast<int32_t>(50 + rng.Below(500)));
  }
  rig.RunTo(S(1300));
  out.s = rig.cluster.ScalingUntil(S(1300));
  out.u = rig.cluster.UsageUntil(S(1300));
  out.rel = rig.cluster.ReliabilityUntil(S(1300));
  return out;
}

TEST(Conservation, EveryRequestEndsOnceUnderARealPolicy) {
  HpaRun run = RunHpa(11);
  ScaleRig& rig = *run.rig;
  rig.ExpectConservation();
  auto by = rig.ByStatus();
  EXPECT_EQ(by[RequestStatus::kCompleted] + by[RequestStatus::kRejected] + by[RequestStatus::kFailed] +
                by[RequestStatus::kUnfinished],
            rig.sent);
  EXPECT_GT(by[RequestStatus::kCompleted], rig.sent / 2);
  // It scaled both ways, within its bounds.
  EXPECT_GT(run.s.scale_ups, 0);
  EXPECT_GT(run.s.scale_downs, 0);
  EXPECT_GE(run.s.replicas_min, 0);
  EXPECT_LE(run.s.replicas_max, 5);
  EXPECT_GT(run.s.replicas_max, 1);
  // The figures agree with the lifecycle events.
  const auto [lo, hi] = ReadyRange(rig.obs, 1, 6);
  EXPECT_EQ(run.s.replicas_min, lo);
  EXPECT_EQ(run.s.replicas_max, hi);
  EXPECT_EQ(run.s.scale_ups, static_cast<int64_t>(rig.obs.Named("provisioning").size()));
  EXPECT_EQ(run.s.spot_reclaims, static_cast<int64_t>(rig.obs.Named("spot_reclaimed").size()));
  // No warm pool, nothing reserved: the paid GPU time is the replica time.
  EXPECT_NEAR(GpuSeconds(run.u), run.s.replica_seconds, 1e-6);
  __int128 parts = 0;
  for (const auto& p : run.u.parts) parts += p.gpu_ns;
  EXPECT_EQ(parts, run.u.gpu_ns);
}

bool SameRecord(const RequestRecord& a, const RequestRecord& b) {
  return a.id == b.id && a.arrival == b.arrival && a.first_scheduled == b.first_scheduled &&
         a.first_token == b.first_token && a.finish == b.finish && a.prompt_tokens == b.prompt_tokens &&
         a.generated_tokens == b.generated_tokens && a.replica == b.replica && a.preemptions == b.preemptions &&
         a.status == b.status && a.reason == b.reason;
}

TEST(Determinism, SameSeedSameRunAndFigures) {
  HpaRun a = RunHpa(11), b = RunHpa(11);
  const auto& fa = a.rig->obs.finished;
  const auto& fb = b.rig->obs.finished;
  ASSERT_EQ(fa.size(), fb.size());
  for (size_t k = 0; k < fa.size(); ++k) EXPECT_TRUE(SameRecord(fa[k], fb[k])) << "record " << k;
  ASSERT_EQ(a.rig->obs.events.size(), b.rig->obs.events.size());
  for (size_t k = 0; k < a.rig->obs.events.size(); ++k) {
    EXPECT_EQ(a.rig->obs.events[k].replica, b.rig->obs.events[k].replica);
    EXPECT_EQ(a.rig->obs.events[k].at, b.rig->obs.events[k].at);
    EXPECT_EQ(a.rig->obs.events[k].what, b.rig->obs.events[k].what);
  }
  EXPECT_EQ(a.s.scale_ups, b.s.scale_ups);
  EXPECT_EQ(a.s.scale_downs, b.s.scale_downs);
  EXPECT_EQ(a.s.refused, b.s.refused);
  EXPECT_EQ(a.s.fallbacks, b.s.fallbacks);
  EXPECT_EQ(a.s.spot_reclaims, b.s.spot_reclaims);
  EXPECT_EQ(a.s.replicas_min, b.s.replicas_min);
  EXPECT_EQ(a.s.replicas_max, b.s.replicas_max);
  EXPECT_EQ(a.s.replica_seconds, b.s.replica_seconds);
  EXPECT_EQ(a.u.gpu_ns, b.u.gpu_ns);
  EXPECT_EQ(a.u.busy_gpu_ns, b.u.busy_gpu_ns);
  EXPECT_EQ(*a.u.usd_gpu_ns, *b.u.usd_gpu_ns);
  ASSERT_EQ(a.u.parts.size(), b.u.parts.size());
  for (size_t k = 0; k < a.u.parts.size(); ++k) {
    EXPECT_EQ(a.u.parts[k].pricing_class, b.u.parts[k].pricing_class);
    EXPECT_EQ(a.u.parts[k].gpu_ns, b.u.parts[k].gpu_ns);
    EXPECT_EQ(*a.u.parts[k].usd_gpu_ns, *b.u.parts[k].usd_gpu_ns);
  }
  EXPECT_EQ(a.rel.requests_retried, b.rel.requests_retried);
  // A different seed is a different run.
  HpaRun c = RunHpa(12);
  EXPECT_TRUE(c.rig->obs.finished.size() != fa.size() || c.u.gpu_ns != a.u.gpu_ns);
}

// ---------------------------------------------------------------------------
// What review found: the activator's timeout, hung replicas a scale-down
// must not take, and failures while draining to stop.

// A drill (hang or crash) of `replica` at `at_s`, on the rig's cluster.
void Drill(ScaleRig& rig, int replica, double at_s, const char* kind, const ReliabilitySpec& base = {}) {
  FailureModelRegistry reg;
  RegisterBuiltinFailureModels(&reg);
  ReliabilitySpec spec = base;
  FailureSpec drill;
  drill.path = "failures[0]";
  drill.model = "drill";
  drill.at_s = at_s;
  drill.replica = replica;
  drill.kind = kind;
  spec.failures.push_back(drill);
  std::vector<std::unique_ptr<FailureModel>> models(1);
  ASSERT_TRUE(reg.Find("drill")->factory(drill, rig.sim.Stream("failures/0"), &models[0]).ok());
  rig.cluster.SetReliability(spec, std::move(models), {});
}

TEST(Activator, ARequestNoReplicaCanTakeFailsAtTheTimeout) {
  // The pool is at zero and its class has no capacity left: nothing can
  // start, and the request fails when the activator gives up on it.
  ScaleRig rig({kStopped});
  rig.cluster.SetCapacityLimits({{"h100", "on_demand", 0}});
  rig.cluster.SetActivatorTimeout(S(20));
  rig.Start(rig.Scaled("on_demand", 1.0, S(5), 0, S(10), {0}, 0, 1));
  rig.Send(S(3), 1);
  rig.RunTo(S(100));
  rig.ExpectConservation();
  const auto by_id = rig.obs.ById();
  EXPECT_EQ(by_id.at(1).status, RequestStatus::kFailed);
  EXPECT_EQ(by_id.at(1).reason, "activator_timeout");
  EXPECT_EQ(by_id.at(1).finish, S(23));
  EXPECT_TRUE(rig.cluster.Idle());
  EXPECT_GT(rig.cluster.ScalingUntil(S(100)).refused, 0);
}

TEST(Activator, ARequestServedBeforeTheTimeoutDoesNotFail) {
  ScaleRig rig({kStopped});
  rig.cluster.SetActivatorTimeout(S(20));
  rig.Start(rig.Scaled("on_demand", 1.0, S(5), 0, S(10), {0}, 0, 1));
  rig.Send(S(3), 1);
  rig.RunTo(S(100));
  EXPECT_EQ(rig.obs.ById().at(1).status, RequestStatus::kCompleted);
}

TEST(ScaleDown, AHungReplicaNotYetNoticedIsNotTakenAndItsRequestsEnd) {
  // Replica 0 hangs at 5 s; health checks every 600 s will not notice it
  // in this run. At 10 s the pool wants none: replica 1 drains and stops,
  // replica 0 stays (the controller does not know it is down), and the
  // requests it holds time out (15 s) rather than wait for ever.
  ScaleRig rig({kReady, kReady});
  ReliabilitySpec base;
  base.health_check.interval_s = 600;
  Drill(rig, 0, 5, "hang", base);
  rig.Start(rig.Scaled("on_demand", 1.0, S(5), 2, S(10), {0}, 0, 2));
  for (uint64_t id = 0; id < 6; ++id) rig.Send(S(6), id, 200);
  rig.RunTo(S(100));
  rig.ExpectConservation();
  EXPECT_TRUE(rig.cluster.Idle());
  int timed_out = 0, completed = 0;
  for (const auto& [id, r] : rig.obs.ById()) {
    EXPECT_NE(r.status, RequestStatus::kUnfinished) << id;
    timed_out += r.reason == "timeout";
    completed += r.status == RequestStatus::kCompleted;
  }
  EXPECT_EQ(timed_out, 3);
  EXPECT_EQ(completed, 3);
  EXPECT_STREQ(rig.cluster.StateName(1), "stopped");
  EXPECT_STREQ(rig.cluster.StateName(0), "failed");  // hung, still in routing's view
}

TEST(ScaleDown, AReplicaFailingWhileItDrainsStopsInsteadOfComingBack) {
  // Two busy replicas; at 10 s the pool wants one and replica 1 drains; it
  // crashes at 12 s: it stops (no recovery), its request fails.
  ScaleRig rig({kReady, kReady});
  Drill(rig, 1, 12, "crash");
  rig.Start(rig.Scaled("on_demand", 1.0, S(5), 2, S(10), {1}, 1, 2));
  // About 8 s of decode each (1 ms an iteration): busy from 5 s to 13 s.
  rig.Send(S(5), 0, 8000);
  rig.Send(S(5), 1, 8000);
  rig.RunTo(S(200));
  EXPECT_EQ(rig.obs.EventsOf(1), (Ev{{"draining", S(10)}, {"crash", S(12)}, {"failed", S(12)}, {"stopped", S(12)}}));
  const auto by_id = rig.obs.ById();
  EXPECT_EQ(by_id.at(1).status, RequestStatus::kFailed);
  EXPECT_EQ(by_id.at(1).reason, "replica_failed");
  const Cluster::Scaling s = rig.cluster.ScalingUntil(S(200));
  EXPECT_EQ(s.scale_downs, 1);
  EXPECT_EQ(s.scale_ups, 0);
  EXPECT_DOUBLE_EQ(rig.cluster.ReliabilityUntil(S(200)).downtime_s, 0);
}

}  // namespace
}  // namespace fleetsim

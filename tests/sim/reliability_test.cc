// Cluster reliability (docs/reliability.md): failures and how they are
// noticed (health checks, outlier ejection, crashes), the requests a failed
// replica lets go of (retries within a budget, partial outputs), recovery
// (replace, repair, none), rolling restarts, the circuit breaker, and the
// accounting (GPU time and cost, downtime, capacity availability). Timelines
// are computed by hand from the documented rules; the failure models are
// checked against their Poisson rates and, all of them, for conservation and
// determinism.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

#include "sim/cluster/cluster.h"
#include "sim/cluster/reliability.h"
#include "sim/cluster/router.h"
#include "tests/sim/replica_rig.h"

namespace fleetsim {
namespace {

using testing_rig::LinearPerf;
using testing_rig::Schedulers;

// Seconds as the scenario reader converts them (rounded to the nanosecond).
SimTime S(double seconds) { return SecondsToTime(seconds); }

// Records everything the cluster reports: arrivals per request id, every
// end, the iterations and the lifecycle events of each replica.
struct FleetObserver final : RunObserver {
  std::map<uint64_t, int> arrivals;  // id -> OnArrival calls
  std::vector<RequestRecord> finished;
  std::vector<std::tuple<int, SimTime, SimTime>> iterations;  // replica, start, end
  struct Event {
    int replica;
    SimTime at;
    std::string what;
  };
  std::vector<Event> events;
  void OnArrival(const Request& r, int) override { arrivals[r.id]++; }
  void OnFinished(const RequestRecord& r) override { finished.push_back(r); }
  void OnTokenGaps(SimTime, SimTime, int64_t) override {}
  void OnIteration(int replica, SimTime start, SimTime end, const BatchShape&) override {
    iterations.emplace_back(replica, start, end);
  }
  void OnSample(const ReplicaSample&) override {}
  void OnReplicaEvent(int replica, SimTime at, std::string_view what) override {
    events.push_back({replica, at, std::string(what)});
  }

  // The records by id; each id must have exactly one.
  std::map<uint64_t, RequestRecord> ById() const {
    std::map<uint64_t, RequestRecord> out;
    for (const RequestRecord& r : finished) EXPECT_TRUE(out.emplace(r.id, r).second) << "request " << r.id << " ended twice";
    return out;
  }
  // Lifecycle events of one replica, as (what, when).
  std::vector<std::pair<std::string, SimTime>> EventsOf(int replica) const {
    std::vector<std::pair<std::string, SimTime>> out;
    for (const Event& e : events)
      if (e.replica == replica) out.emplace_back(e.what, e.at);
    return out;
  }
};

// Round robin that remembers every request it routed (id, attempt), so the
// retries the cluster sends are visible.
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

struct ReplicaSpec {
  int gpus = 1;
  std::optional<double> usd_per_gpu_hour = 1.0;
  int pool = 0;
  std::string model = "m";
  int node = -1;  // -1: a node of its own (its index)
  SimTime provision = 0;
  SimTime start = 0;
};

// A fleet of replicas on LinearPerf (1 ms per iteration plus 1 us a token),
// routed round robin, placed one per node unless told otherwise.
struct FleetRig {
  explicit FleetRig(const std::vector<ReplicaSpec>& specs, SimTime measure_from = 0, uint64_t seed = 1)
      : sim(seed), cluster(sim, obs, "m", measure_from) {
    cluster.SetRouter(std::make_unique<SpyRouter>(&routed));
    int nodes = 0;
    for (size_t i = 0; i < specs.size(); ++i) {
      const ReplicaSpec& rs = specs[i];
      ReplicaOptions o;
      o.index = static_cast<int>(i);
      o.pool = rs.pool;
      o.model = rs.model;
      o.max_model_len = 8192;
      o.kv_blocks = 2000;
      o.busy_from = measure_from;
      SchedulerLimits limits;
      limits.max_model_len = 8192;
      std::unique_ptr<BatchScheduler> sched;
      EXPECT_TRUE(Schedulers().Find("vllm")->factory(limits, {}, &sched).ok());
      cluster.Add(std::make_unique<Replica>(sim, o, std::move(sched), perf, obs), rs.gpus, rs.usd_per_gpu_hour);
      Cluster::Placement pl;
      pl.nodes = {rs.node >= 0 ? rs.node : static_cast<int>(i)};
      pl.provision = rs.provision;
      pl.start = rs.start;
      nodes = std::max(nodes, pl.nodes[0] + 1);
      cluster.Place(static_cast<int>(i), pl);
    }
    // Two nodes a rack, racks alternating between two zones.
    std::vector<int> rack_of, zone_of;
    for (int n = 0; n < nodes; ++n) {
      rack_of.push_back(n / 2);
      zone_of.push_back((n / 2) % 2);
    }
    cluster.SetNodes(rack_of, zone_of, {"z0", "z1"});
  }

  // Builds each failure's model from the registry, on its own stream, and
  // hands everything to the cluster.
  void Start(ReliabilitySpec spec, std::vector<int> restart_pools = {}) {
    FailureModelRegistry reg;
    RegisterBuiltinFailureModels(&reg);
    std::vector<std::unique_ptr<FailureModel>> models;
    for (size_t f = 0; f < spec.failures.size(); ++f) {
      FailureSpec& fs = spec.failures[f];
      fs.path = "failures[" + std::to_string(f) + "]";
      const FailureModelRegistry::Entry* e = reg.Find(fs.model);
      ASSERT_NE(e, nullptr) << fs.model;
      models.emplace_back();
      const Status st = e->factory(fs, sim.Stream("failures/" + std::to_string(f)), &models.back());
      ASSERT_TRUE(st.ok()) << st.message();
    }
    if (restart_pools.empty()) restart_pools.assign(spec.rolling_restarts.size(), 0);
    cluster.SetReliability(spec, std::move(models), restart_pools);
  }

  void Send(SimTime t, uint64_t id, int32_t output = 10, int32_t prompt = 100, std::string model = "") {
    sim.At(t, [this, t, id, output, prompt, model] {
      Request r;
      r.id = id;
      r.arrival = t;
      r.prompt_tokens = prompt;
      r.output_tokens = output;
      r.model = model;
      cluster.Route(std::move(r));
    });
  }
  // Runs `fn` at `t` (to look at the fleet then).
  void At(SimTime t, std::function<void()> fn) { sim.At(t, std::move(fn)); }

  // Runs to `end` and reports what is still held there.
  void RunTo(SimTime end) {
    sim.Run(end);
    cluster.ReportUnfinished(end, "run_ended");
  }

  Simulation sim;
  LinearPerf perf;
  FleetObserver obs;
  std::vector<std::pair<uint64_t, int>> routed;
  Cluster cluster;
};

std::vector<ReplicaSpec> Replicas(int n, ReplicaSpec each = {}) { return std::vector<ReplicaSpec>(n, each); }

FailureSpec Drill(double at_s, int64_t replica, std::string kind = "hang", std::optional<double> mttr_s = {}) {
  FailureSpec f;
  f.model = "drill";
  f.at_s = at_s;
  f.replica = replica;
  f.kind = std::move(kind);
  f.mttr_s = mttr_s;
  return f;
}

// ---------------------------------------------------------------------------
// Noticing a hang: health checks.

struct HealthCase {
  std::string name;
  HealthCheckSpec hc;
  double hang_s;
  double crash_s;       // < 0: none; else a crash before the hang (restart start 6 s)
  double removed_s;     // by hand
};

void PrintTo(const HealthCase& c, std::ostream* os) { *os << c.name; }

class HealthChecks : public ::testing::TestWithParam<HealthCase> {};

// The replica stays routable, requests sent to it waiting, until exactly
// the health checks' verdict; then it leaves routing and the requests it
// held fail.
TEST_P(HealthChecks, RemoveAHungReplicaAtTheHandComputedTime) {
  const HealthCase& c = GetParam();
  FleetRig rig(Replicas(2, {.provision = S(600), .start = S(6)}));
  ReliabilitySpec spec;
  spec.health_check = c.hc;
  if (c.crash_s >= 0) spec.failures.push_back(Drill(c.crash_s, 0, "crash"));
  spec.failures.push_back(Drill(c.hang_s, 0));
  rig.Start(spec);
  const SimTime removed = S(c.removed_s);
  // Pairs of requests: round robin sends one of each pair to replica 0.
  rig.Send(removed - S(5), 0);
  rig.Send(removed - S(5), 1);
  rig.Send(removed - 1, 2);
  rig.Send(removed - 1, 3);
  rig.Send(removed + 1, 4);
  rig.Send(removed + 1, 5);
  std::optional<Cluster::Reliability> before;
  std::string state_before;
  ReplicaPhase phase_before = ReplicaPhase::kStopped;
  rig.At(removed - 1, [&] {
    before = rig.cluster.ReliabilityUntil(rig.sim.now());
    state_before = rig.cluster.StateName(0);
    phase_before = rig.cluster.view(0).phase();
  });
  rig.RunTo(removed + S(10));

  ASSERT_TRUE(before);
  EXPECT_EQ(before->detected, c.crash_s >= 0 ? 1 : 0);
  EXPECT_EQ(state_before, "failed");                 // what it is
  EXPECT_EQ(phase_before, ReplicaPhase::kReady);     // what routers see
  const auto by_id = rig.obs.ById();
  ASSERT_EQ(by_id.size(), 6u);
  // Sent 5 s before the verdict (less than the 15 s timeout): waited on
  // replica 0, failed at the verdict.
  int on_zero = 0;
  for (uint64_t id : {0, 1, 2, 3}) {
    const RequestRecord& r = by_id.at(id);
    if (r.replica != 0) {
      EXPECT_EQ(r.status, RequestStatus::kCompleted) << id;
      continue;
    }
    ++on_zero;
    EXPECT_EQ(r.status, RequestStatus::kFailed) << id;
    EXPECT_EQ(r.reason, "replica_failed") << id;
    EXPECT_EQ(r.finish, removed) << id;
    EXPECT_EQ(r.first_token, -1) << id;
  }
  EXPECT_EQ(on_zero, 2);
  // After the verdict, nothing goes to replica 0.
  for (uint64_t id : {4, 5}) {
    EXPECT_EQ(by_id.at(id).replica, 1) << id;
    EXPECT_EQ(by_id.at(id).status, RequestStatus::kCompleted) << id;
  }
  const Cluster::Reliability r = rig.cluster.ReliabilityUntil(rig.sim.now());
  const int crashes = c.crash_s >= 0 ? 1 : 0;
  EXPECT_EQ(r.detected, 1 + crashes);
  EXPECT_DOUBLE_EQ(r.detection_delay_s_sum, c.removed_s - c.hang_s);  // a crash adds 0
  EXPECT_EQ(r.events, 1 + crashes);
  EXPECT_EQ(r.requests_failed, 2);
  // The lifecycle: "failed" (out of routing) at the verdict.
  bool failed_seen = false;
  for (const auto& [what, at] : rig.obs.EventsOf(0))
    if (what == "failed" && at > S(c.hang_s)) {
      EXPECT_EQ(at, removed);
      failed_seen = true;
    }
  EXPECT_TRUE(failed_seen);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, HealthChecks,
    ::testing::Values(
        // First check at 110; fails at 140, 170, 200.
        HealthCase{"RayDefaults", {10, 30, 3}, 100.5, -1, 200},
        // Timeout shorter than the interval: checks 110, 120, 130 fail at
        // 115, 125, 135.
        HealthCase{"TimeoutBelowInterval", {10, 5, 3}, 100.5, -1, 135},
        HealthCase{"OneCheck", {10, 30, 1}, 100.5, -1, 140},
        // A hang at a check's start: that check finds it.
        HealthCase{"HangAtACheck", {10, 30, 3}, 100, -1, 190},
        // Ready again at 7 s after a crash at 1 s (start 6 s): checks at 7 +
        // 10k, the first after the hang at 107, removed at 197.
        HealthCase{"ChecksCountFromReady", {10, 30, 3}, 100.5, 1, 197}),
    [](const ::testing::TestParamInfo<HealthCase>& i) { return i.param.name; });

// ---------------------------------------------------------------------------
// Conservation, for every registered failure model.

// A spec of each registered model that makes it fail often in 60 s.
FailureSpec BusySpec(const std::string& model) {
  FailureSpec f;
  f.model = model;
  if (model == "drill") {
    f.at_s = 20;
    f.node = 1;
    return f;
  }
  if (model == "gpu") f.mtbf_hours = 60.0 / 3600;  // 8 GPUs: ~8 failures in 60 s
  if (model == "node") f.mtbf_hours = 40.0 / 3600;
  if (model == "rack") f.mtbf_hours = 20.0 / 3600;
  if (model == "zone") f.mtbf_hours = 30.0 / 3600;
  if (model == "engine_crash") f.mtbf_hours = 20.0 / 3600;
  return f;
}

class EveryFailureModel : public ::testing::TestWithParam<std::string> {};

struct ConservationRun {
  std::vector<RequestRecord> finished;
  std::map<uint64_t, int> arrivals;
  std::vector<std::pair<uint64_t, int>> routed;
  Cluster::Reliability rel;
  std::vector<FleetObserver::Event> events;
  std::map<uint64_t, SimTime> sent;
};

ConservationRun RunWithFailures(const std::string& model, uint64_t seed, int requests) {
  // Four replicas of 2 GPUs, one per node; short detection and recovery so
  // replicas fail several times in the run.
  FleetRig rig(Replicas(4, {.gpus = 2, .provision = S(2), .start = S(3)}), 0, seed);
  ReliabilitySpec spec;
  spec.health_check = {1, 2, 2};
  spec.request_timeout_s = 1.5;
  spec.outlier_ejection = OutlierEjectionSpec{.consecutive_failures = 2, .interval_s = 1, .base_ejection_s = 3};
  spec.retries = RetrySpec{.max_retries = 2};
  spec.failures.push_back(BusySpec(model));
  // Crashes too, so hangs and crashes meet.
  spec.failures.push_back(Drill(30, 2, "crash"));
  rig.Start(spec);
  // Poisson-ish arrivals over 60 s, outputs long enough that failures catch
  // requests mid-stream.
  Rng rng = rig.sim.Stream("test-arrivals");
  SimTime t = 0;
  std::map<uint64_t, SimTime> sent;
  for (int id = 0; id < requests; ++id) {
    t += SecondsToTime(rng.Exponential(60.0 / requests));
    sent[id] = t;
    rig.Send(t, id, 20 + static_cast<int32_t>(rng.Uniform() * 200), 50 + static_cast<int32_t>(rng.Uniform() * 300));
  }
  rig.RunTo(S(70));
  return {rig.obs.finished, rig.obs.arrivals, rig.routed, rig.cluster.ReliabilityUntil(S(70)), rig.obs.events,
          sent};
}

TEST_P(EveryFailureModel, EveryRequestEndsOnceAndRetriesAreCounted) {
  constexpr int kRequests = 1500;
  const ConservationRun run = RunWithFailures(GetParam(), 7, kRequests);
  EXPECT_GE(run.rel.events, 1 + 1);  // the model's and the crash drill's
  // Every request arrived once and ended once.
  ASSERT_EQ(run.arrivals.size(), static_cast<size_t>(kRequests));
  for (const auto& [id, n] : run.arrivals) EXPECT_EQ(n, 1) << "request " << id << " arrived " << n << " times";
  std::map<uint64_t, const RequestRecord*> by_id;
  for (const RequestRecord& r : run.finished) EXPECT_TRUE(by_id.emplace(r.id, &r).second) << "request " << r.id << " ended twice";
  EXPECT_EQ(by_id.size(), static_cast<size_t>(kRequests));
  // Failed records: what failures let go of; partial outputs add up.
  int64_t failed = 0, partial = 0, completed = 0;
  for (const RequestRecord& r : run.finished) {
    if (r.status == RequestStatus::kCompleted) {
      ++completed;
      EXPECT_EQ(r.generated_tokens, r.output_tokens);
    }
    if (r.status != RequestStatus::kFailed) continue;
    ++failed;
    partial += r.generated_tokens;
    EXPECT_FALSE(r.reason.empty()) << r.id;
    if (r.first_token >= 0) {
      EXPECT_GT(r.generated_tokens, 0) << r.id;
      EXPECT_TRUE(r.reason == "replica_failed" || r.reason == "timeout") << r.id << " " << r.reason;
    } else {
      EXPECT_EQ(r.generated_tokens, 0) << r.id;
    }
  }
  EXPECT_GT(failed, 0);
  EXPECT_GT(completed, kRequests / 2);
  EXPECT_EQ(run.rel.requests_failed, failed);
  EXPECT_EQ(run.rel.partial_output_tokens, partial);
  // Retries: what the router saw of them agrees with the counts, and each
  // retry followed a first try that reached a replica.
  std::map<uint64_t, int> first_routed_at, max_attempt;
  int64_t retries_routed = 0;
  for (size_t k = 0; k < run.routed.size(); ++k) {
    const auto [id, attempt] = run.routed[k];
    if (attempt == 0) {
      EXPECT_FALSE(first_routed_at.count(id)) << "request " << id << " routed twice as a first try";
      first_routed_at[id] = static_cast<int>(k);
      continue;
    }
    ++retries_routed;
    EXPECT_LE(attempt, 2) << id;
    ASSERT_TRUE(first_routed_at.count(id)) << "retry of request " << id << " before its first try";
    max_attempt[id] = std::max(max_attempt[id], attempt);
  }
  // Hangs keep requests waiting without a token, to be retried; a crash
  // catches requests mid-stream (a prefill waits a millisecond at most).
  if (GetParam() != "engine_crash") {
    EXPECT_GT(run.rel.requests_retried, 0);
  }
  EXPECT_GE(run.rel.retries, run.rel.requests_retried);
  EXPECT_LE(static_cast<int64_t>(max_attempt.size()), run.rel.requests_retried);
  EXPECT_LE(retries_routed, run.rel.retries);
  // A request keeps its arrival time, retried or not.
  for (const auto& [id, r] : by_id) EXPECT_EQ(r->arrival, run.sent.at(id)) << id;
  // The failure counts add up: one "failure" or "crash" per replica failure.
  int64_t downs = 0;
  for (const FleetObserver::Event& e : run.events) downs += e.what == "failure" || e.what == "crash";
  EXPECT_EQ(downs, run.rel.replica_failures);
  EXPECT_GE(run.rel.replica_failures, run.rel.events);
}

TEST_P(EveryFailureModel, SameSeedSameRun) {
  const ConservationRun a = RunWithFailures(GetParam(), 11, 300);
  const ConservationRun b = RunWithFailures(GetParam(), 11, 300);
  ASSERT_EQ(a.finished.size(), b.finished.size());
  for (size_t k = 0; k < a.finished.size(); ++k) {
    const RequestRecord &x = a.finished[k], &y = b.finished[k];
    EXPECT_EQ(std::tie(x.id, x.status, x.finish, x.replica, x.generated_tokens, x.first_token),
              std::tie(y.id, y.status, y.finish, y.replica, y.generated_tokens, y.first_token))
        << k;
    EXPECT_EQ(x.reason, y.reason) << k;
  }
  EXPECT_EQ(a.routed, b.routed);
  EXPECT_EQ(a.rel.events, b.rel.events);
  EXPECT_EQ(a.rel.detection_delay_s_sum, b.rel.detection_delay_s_sum);
}

std::vector<std::string> RegisteredFailureModels() {
  FailureModelRegistry reg;
  RegisterBuiltinFailureModels(&reg);
  return reg.Names();
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryFailureModel, ::testing::ValuesIn(RegisteredFailureModels()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// ---------------------------------------------------------------------------
// The Poisson models' rates.

// 10 replicas of 8 GPUs and 10 of 1 GPU, one failure per 4e5 s per GPU:
// 90 GPUs x 2e6 s / 4e5 s = 450 failures expected over 2e6 s, 8 in 9 of
// them on the large replicas. Replacement is immediate and the health checks
// short, so the time down is small; the expectation uses the time each
// replica was up anyway.
TEST(FailureModels, GpuFailuresFollowTheirRatePerGpu) {
  std::vector<ReplicaSpec> specs = Replicas(10, {.gpus = 8});
  for (int i = 0; i < 10; ++i) specs.push_back({.gpus = 1});
  FleetRig rig(specs);
  ReliabilitySpec spec;
  spec.health_check = {1, 1, 1};
  FailureSpec f;
  f.model = "gpu";
  const double mtbf_s = 90 * 2e6 / 450;  // 4e5 s per GPU
  f.mtbf_hours = mtbf_s / 3600;
  spec.failures.push_back(f);
  rig.Start(spec);
  const SimTime end = S(2e6);
  rig.RunTo(end);
  const Cluster::Reliability r = rig.cluster.ReliabilityUntil(end);
  // GPU-seconds up: every replica's time minus its downtime, split by size
  // from the lifecycle events.
  std::map<int, double> down_s;
  std::map<int, SimTime> since;
  int64_t on_large = 0, on_small = 0;
  for (const FleetObserver::Event& e : rig.obs.events) {
    if (e.what == "failure") {
      since[e.replica] = e.at;
      (e.replica < 10 ? on_large : on_small)++;
    }
    if (e.what == "ready") down_s[e.replica] += TimeToSeconds(e.at - since[e.replica]);
  }
  double gpu_s_up = 0;
  for (int i = 0; i < 20; ++i) gpu_s_up += (i < 10 ? 8 : 1) * (2e6 - down_s[i]);
  const double mean = gpu_s_up / mtbf_s;
  EXPECT_NEAR(mean, 450, 1);  // downtime is negligible
  EXPECT_EQ(r.events, on_large + on_small);
  EXPECT_EQ(r.replica_failures, r.events);
  ASSERT_EQ(r.by_cause.size(), 1u);
  EXPECT_EQ(r.by_cause[0].first, "gpu");
  // Poisson 99.9%: mean +- 3.3 sqrt(mean).
  EXPECT_NEAR(static_cast<double>(r.events), mean, 3.3 * std::sqrt(mean));
  // Binomial split by GPUs, p = 80/90.
  const double n = static_cast<double>(r.events), p = 80.0 / 90;
  EXPECT_NEAR(static_cast<double>(on_large), n * p, 3.3 * std::sqrt(n * p * (1 - p)));
  EXPECT_EQ(r.detected, r.replica_failures);
  // Health checks 1/1/1: each hang noticed 1 to 2 s after it.
  EXPECT_GE(r.detection_delay_s_sum, 1.0 * r.detected);
  EXPECT_LE(r.detection_delay_s_sum, 2.0 * r.detected);
}

// Node failures: every replica on the node, one event.
TEST(FailureModels, NodeFailureIsOneEventForAllItsReplicas) {
  FleetRig rig({{.node = 0}, {.node = 0}, {.node = 1}});
  ReliabilitySpec spec;
  spec.recovery = Recovery::kNone;
  FailureSpec f;
  f.model = "drill";
  f.at_s = 5;
  f.node = 0;
  spec.failures.push_back(f);
  rig.Start(spec);
  rig.RunTo(S(200));
  const Cluster::Reliability r = rig.cluster.ReliabilityUntil(S(200));
  EXPECT_EQ(r.events, 1);
  EXPECT_EQ(r.replica_failures, 2);
  EXPECT_EQ(rig.cluster.view(0).phase(), ReplicaPhase::kStopped);
  EXPECT_EQ(rig.cluster.view(1).phase(), ReplicaPhase::kStopped);
  EXPECT_EQ(rig.cluster.view(2).phase(), ReplicaPhase::kReady);
}

// ---------------------------------------------------------------------------
// Cost.

// Replica 0 (2 GPUs at $1.5) hangs at 100.5 s and, with no recovery, is
// stopped when the health checks notice it at 200 s; replica 1 (4 GPUs at
// $2.25) runs throughout. Measured from 50 s.
TEST(ReliabilityCost, GpuTimeOfAStoppedReplicaEndsWhenItIsNoticed) {
  FleetRig rig({{.gpus = 2, .usd_per_gpu_hour = 1.5}, {.gpus = 4, .usd_per_gpu_hour = 2.25}}, S(50));
  ReliabilitySpec spec;
  spec.recovery = Recovery::kNone;
  spec.failures.push_back(Drill(100.5, 0));
  spec.failures.push_back(Drill(250, 0));  // already stopped: not an event
  rig.Start(spec);
  rig.RunTo(S(300));
  const auto expect_usage = [&](SimTime to, __int128 gpu_ns0, __int128 gpu_ns1) {
    const Cluster::Usage u = rig.cluster.UsageUntil(to);
    EXPECT_TRUE(u.gpu_ns == gpu_ns0 + gpu_ns1) << TimeToSeconds(to);
    ASSERT_TRUE(u.usd_gpu_ns.has_value());
    EXPECT_EQ(*u.usd_gpu_ns, static_cast<long double>(gpu_ns0) * 1.5L + static_cast<long double>(gpu_ns1) * 2.25L)
        << TimeToSeconds(to);
  };
  // Paid while hung (100.5 .. 200 s), not after.
  expect_usage(S(150), (__int128)2 * S(100), (__int128)4 * S(100));
  expect_usage(S(200), (__int128)2 * S(150), (__int128)4 * S(150));
  expect_usage(S(300), (__int128)2 * S(150), (__int128)4 * S(250));
  EXPECT_EQ(rig.cluster.view(0).phase(), ReplicaPhase::kStopped);
  EXPECT_STREQ(rig.cluster.StateName(0), "stopped");
  const Cluster::Reliability r = rig.cluster.ReliabilityUntil(S(300));
  EXPECT_EQ(r.events, 1);
  EXPECT_DOUBLE_EQ(r.downtime_s, 300 - 100.5);  // never back
}

// ---------------------------------------------------------------------------
// Crashes.

struct CrashRun {
  std::map<uint64_t, RequestRecord> by_id;
  Cluster::Reliability rel;
  int64_t iterations_before_crash = 0;  // replica 0's, ended by the crash
  std::vector<std::pair<std::string, SimTime>> events0;
};

// Two replicas; requests 0 and 1 (long) start at 0, requests 2 and 3 arrive
// at 0.9995 s, before any iteration could give them a token; replica 0
// crashes at 1 s holding requests 0 (streaming) and 2 (not yet).
CrashRun RunCrash(std::optional<RetrySpec> retries) {
  FleetRig rig(Replicas(2, {.provision = S(600), .start = S(20)}));
  ReliabilitySpec spec;
  spec.retries = retries;
  spec.failures.push_back(Drill(1.0, 0, "crash"));
  rig.Start(spec);
  rig.Send(0, 0, 3000);
  rig.Send(0, 1, 3000);
  rig.Send(S(0.9995), 2, 10);
  rig.Send(S(0.9995), 3, 10);
  rig.RunTo(S(100));
  CrashRun out;
  out.by_id = rig.obs.ById();
  out.rel = rig.cluster.ReliabilityUntil(S(100));
  for (const auto& [replica, start, end] : rig.obs.iterations)
    if (replica == 0 && end <= S(1)) ++out.iterations_before_crash;
  out.events0 = rig.obs.EventsOf(0);
  return out;
}

TEST(Crash, NoticedAtOnceStreamedFailUnstreamedRetried) {
  const CrashRun run = RunCrash(RetrySpec{});
  ASSERT_EQ(run.by_id.size(), 4u);
  const RequestRecord& streamed = run.by_id.at(0);
  EXPECT_EQ(streamed.replica, 0);
  EXPECT_EQ(streamed.status, RequestStatus::kFailed);
  EXPECT_EQ(streamed.reason, "replica_failed");
  EXPECT_EQ(streamed.finish, S(1));
  EXPECT_GE(streamed.first_token, 0);
  // One token per iteration of replica 0 before the crash (the prefill's
  // included).
  EXPECT_GT(streamed.generated_tokens, 0);
  EXPECT_EQ(streamed.generated_tokens, run.iterations_before_crash);
  EXPECT_EQ(run.rel.partial_output_tokens, streamed.generated_tokens);
  // Request 2 had no token: retried on replica 1, completed there, arrival
  // kept.
  const RequestRecord& retried = run.by_id.at(2);
  EXPECT_EQ(retried.status, RequestStatus::kCompleted);
  EXPECT_EQ(retried.replica, 1);
  EXPECT_EQ(retried.arrival, S(0.9995));
  EXPECT_EQ(run.by_id.at(1).status, RequestStatus::kCompleted);
  EXPECT_EQ(run.by_id.at(3).status, RequestStatus::kCompleted);
  EXPECT_EQ(run.rel.requests_failed, 1);
  EXPECT_EQ(run.rel.requests_retried, 1);
  EXPECT_EQ(run.rel.retries, 1);
  EXPECT_EQ(run.rel.detected, 1);
  EXPECT_EQ(run.rel.detection_delay_s_sum, 0);
  // Restarted on its GPUs: no provisioning, back after its start (20 s).
  const std::vector<std::pair<std::string, SimTime>> want = {
      {"crash", S(1)}, {"failed", S(1)}, {"starting", S(1)}, {"ready", S(21)}};
  EXPECT_EQ(run.events0, want);
  EXPECT_DOUBLE_EQ(run.rel.downtime_s, 20);
}

TEST(Crash, WithoutRetriesEveryHeldRequestFails) {
  const CrashRun run = RunCrash(std::nullopt);
  const RequestRecord& unstreamed = run.by_id.at(2);
  EXPECT_EQ(unstreamed.status, RequestStatus::kFailed);
  EXPECT_EQ(unstreamed.reason, "replica_failed");
  EXPECT_EQ(unstreamed.replica, 0);
  EXPECT_EQ(unstreamed.first_token, -1);
  EXPECT_EQ(unstreamed.generated_tokens, 0);
  EXPECT_EQ(run.by_id.at(0).status, RequestStatus::kFailed);
  EXPECT_EQ(run.rel.requests_failed, 2);
  EXPECT_EQ(run.rel.requests_retried, 0);
  EXPECT_EQ(run.rel.retries, 0);
}

// ---------------------------------------------------------------------------
// The retry budget.

// `queued` requests wait on replica 0 (sent in one instant, so none has a
// token) when it crashes at 0.2 ms, while replica 2 (of another model)
// holds `others`; the budget is max(min_retry_concurrency, budget_percent x
// active requests), and the retries go to replica 1.
void ExpectBudget(int queued, int others, int expect_retried) {
  // Replica 1 comes into routing only after the `queued` requests.
  FleetRig rig({{.start = S(30)}, {.start = S(30)}, {.model = "other"}});
  rig.cluster.SetPhase(1, ReplicaPhase::kStarting);
  ReliabilitySpec spec;
  spec.retries = RetrySpec{.budget_percent = 20, .min_retry_concurrency = 3};
  spec.failures.push_back(Drill(0.0002, 0, "crash"));
  rig.Start(spec);
  for (int id = 0; id < queued; ++id) rig.Send(0, id);
  for (int k = 0; k < others; ++k) rig.Send(0, 1000 + k, 2000, 100, "other");
  rig.At(S(0.0001), [&] { rig.cluster.SetPhase(1, ReplicaPhase::kReady); });
  rig.RunTo(S(100));
  const auto by_id = rig.obs.ById();
  int retried = 0, exhausted = 0;
  for (int id = 0; id < queued; ++id) {
    const RequestRecord& r = by_id.at(id);
    if (r.status == RequestStatus::kCompleted) {
      EXPECT_EQ(r.replica, 1);
      ++retried;
    } else {
      EXPECT_EQ(r.status, RequestStatus::kFailed);
      EXPECT_EQ(r.reason, "retry_budget_exhausted") << id;
      ++exhausted;
    }
  }
  EXPECT_EQ(retried, expect_retried);
  EXPECT_EQ(exhausted, queued - expect_retried);
  const Cluster::Reliability r = rig.cluster.ReliabilityUntil(S(100));
  EXPECT_EQ(r.requests_retried, expect_retried);
  EXPECT_EQ(r.retries, expect_retried);
  EXPECT_EQ(r.requests_failed, queued - expect_retried);
}

TEST(RetryBudget, AtLeastMinRetryConcurrency) {
  // 10 active: 20% is 2, below the floor of 3.
  ExpectBudget(10, 0, 3);
}

TEST(RetryBudget, TwentyPercentOfActiveRequests) {
  // 40 released + 20 held elsewhere = 60 active: 12 retries.
  ExpectBudget(40, 20, 12);
}

// ---------------------------------------------------------------------------
// Outlier ejection.

// Ten replicas, round robin, a request every 100 ms from 50 ms (so replica
// k gets those at k/10 + 0.05 s + whole seconds); health checks too slow to
// matter. `hung` replicas hang at 9.96 s.
struct EjectionRun {
  std::map<uint64_t, RequestRecord> by_id;
  std::vector<FleetObserver::Event> events;
  Cluster::Reliability rel;
};

EjectionRun RunEjection(const std::vector<int>& hung, double end_s) {
  FleetRig rig(Replicas(10));
  ReliabilitySpec spec;
  spec.health_check = {10000, 10000, 3};
  spec.outlier_ejection = OutlierEjectionSpec{};
  for (int i : hung) spec.failures.push_back(Drill(9.96, i));
  rig.Start(spec);
  for (int k = 0; k < static_cast<int>(end_s * 10) - 1; ++k) rig.Send(k * 100 * kMillisecond + 50 * kMillisecond, k);
  rig.RunTo(S(end_s));
  return {rig.obs.ById(), rig.obs.events, rig.cluster.ReliabilityUntil(S(end_s))};
}

TEST(OutlierEjection, FiveTimeOutsEjectForThirtySecondsUntilTheNextSweep) {
  const EjectionRun run = RunEjection({0}, 90);
  // Requests sent to replica 0 at 10.05, 11.05, ... time out 15 s later;
  // the fifth (sent at 14.05) ejects it at 29.05 s, for 30 s: back at the
  // sweep at 60 s.
  std::vector<std::pair<std::string, SimTime>> ejections;
  for (const FleetObserver::Event& e : run.events)
    if (e.replica == 0 && (e.what == "ejected" || e.what == "unejected")) ejections.emplace_back(e.what, e.at);
  ASSERT_GE(ejections.size(), 2u);
  EXPECT_EQ(ejections[0], std::make_pair(std::string("ejected"), S(29.05)));
  EXPECT_EQ(ejections[1], std::make_pair(std::string("unejected"), S(60)));
  int on_zero = 0;
  for (const auto& [id, r] : run.by_id) {
    if (r.replica != 0 || r.arrival < S(9.96) || r.arrival + S(15) > S(90)) continue;
    ++on_zero;
    // Waited its 15 s, then failed.
    EXPECT_EQ(r.status, RequestStatus::kFailed) << id;
    EXPECT_EQ(r.reason, "timeout") << id;
    EXPECT_EQ(r.finish, r.arrival + S(15)) << id;
    // Not routed to while ejected.
    EXPECT_FALSE(r.arrival > S(29.05) && r.arrival < S(60)) << id << " sent at " << TimeToSeconds(r.arrival);
  }
  // 10.05 .. 29.05 s, then again from 60 s.
  EXPECT_GE(on_zero, 20 + 5);
  // Back in routing at 60 s, still hung: five more time-outs eject it again,
  // now for 2 x 30 s.
  ASSERT_GE(ejections.size(), 3u);
  EXPECT_EQ(ejections[2].first, "ejected");
  EXPECT_GT(ejections[2].second, S(75));
  // The ejection noticed the hang.
  EXPECT_EQ(run.rel.detected, 1);
  EXPECT_NEAR(run.rel.detection_delay_s_sum, 29.05 - 9.96, 1e-9);
  // Nobody else was touched.
  for (const auto& [id, r] : run.by_id)
    if (r.replica != 0) {
      EXPECT_EQ(r.status, RequestStatus::kCompleted) << id;
    }
}

TEST(OutlierEjection, AtMostTenPercentButAlwaysOne) {
  // Three hung of ten: 10% of ten is one at a time.
  const EjectionRun run = RunEjection({0, 4, 7}, 150);
  int out = 0, most = 0, ejections = 0;
  std::set<int> ejected_ever;
  for (const FleetObserver::Event& e : run.events) {
    if (e.what == "ejected") {
      ++ejections;
      ejected_ever.insert(e.replica);
      most = std::max(most, ++out);
    }
    if (e.what == "unejected") --out;
  }
  EXPECT_EQ(most, 1);
  EXPECT_GE(ejections, 2);
  for (int i : ejected_ever) EXPECT_TRUE(i == 0 || i == 4 || i == 7) << i;
  // Only the hung replicas fail requests.
  for (const auto& [id, r] : run.by_id)
    if (r.status != RequestStatus::kCompleted && r.status != RequestStatus::kUnfinished) {
      EXPECT_TRUE(r.replica == 0 || r.replica == 4 || r.replica == 7) << id;
    }
}

// ---------------------------------------------------------------------------
// Recovery.

// Replica 0 of two hangs at 100.5 s and is noticed at 200 s (Ray Serve's
// checks); provisioning 600 s, start 200 s.
struct RecoveryRun {
  std::vector<std::pair<std::string, SimTime>> events0;
  Cluster::Reliability rel;
  std::vector<std::pair<SimTime, SimTime>> windows;
  std::vector<ReplicaPhase> phases;  // replica 0 at 150, 300, 850, 1100 s
};

RecoveryRun RunRecovery(Recovery recovery, std::optional<double> mttr_s, int required) {
  FleetRig rig(Replicas(2, {.provision = S(600), .start = S(200)}));
  rig.cluster.SetRequired(0, required);
  ReliabilitySpec spec;
  spec.recovery = recovery;
  spec.failures.push_back(Drill(100.5, 0, "hang", mttr_s));
  rig.Start(spec);
  RecoveryRun out;
  for (double t : {150.0, 300.0, 850.0, 1100.0})
    rig.At(S(t), [&rig, &out] { out.phases.push_back(rig.cluster.view(0).phase()); });
  rig.RunTo(S(2000));
  out.events0 = rig.obs.EventsOf(0);
  out.rel = rig.cluster.ReliabilityUntil(S(2000));
  out.windows = rig.cluster.failure_windows().windows();
  return out;
}

TEST(Recovery, ReplaceProvisionsThenStarts) {
  const RecoveryRun run = RunRecovery(Recovery::kReplace, std::nullopt, 2);
  const std::vector<std::pair<std::string, SimTime>> want = {{"failure", S(100.5)},
                                                             {"failed", S(200)},
                                                             {"provisioning", S(200)},
                                                             {"starting", S(800)},
                                                             {"ready", S(1000)}};
  EXPECT_EQ(run.events0, want);
  const std::vector<ReplicaPhase> phases = {ReplicaPhase::kReady, ReplicaPhase::kProvisioning,
                                            ReplicaPhase::kStarting, ReplicaPhase::kReady};
  EXPECT_EQ(run.phases, phases);
  // The failure window: from the failure to ready again.
  const std::vector<std::pair<SimTime, SimTime>> windows = {{S(100.5), S(1000)}};
  EXPECT_EQ(run.windows, windows);
  EXPECT_DOUBLE_EQ(run.rel.downtime_s, 899.5);
  // Both replicas required: short from the hang (not from its notice) to
  // ready again.
  EXPECT_DOUBLE_EQ(run.rel.capacity_availability, (2000 - 899.5) / 2000);
}

TEST(Recovery, ASpareKeepsCapacity) {
  const RecoveryRun run = RunRecovery(Recovery::kReplace, std::nullopt, 1);
  EXPECT_EQ(run.rel.capacity_availability, 1.0);
  EXPECT_DOUBLE_EQ(run.rel.downtime_s, 899.5);
}

TEST(Recovery, RepairWaitsMttrFromTheFailure) {
  // Repaired at 100.5 + 500 s, then started (200 s).
  const RecoveryRun run = RunRecovery(Recovery::kRepair, 500, 2);
  const std::vector<std::pair<std::string, SimTime>> want = {{"failure", S(100.5)},
                                                             {"failed", S(200)},
                                                             {"repairing", S(200)},
                                                             {"starting", S(600.5)},
                                                             {"ready", S(800.5)}};
  EXPECT_EQ(run.events0, want);
  const std::vector<ReplicaPhase> phases = {ReplicaPhase::kReady, ReplicaPhase::kRepairing, ReplicaPhase::kReady,
                                            ReplicaPhase::kReady};
  EXPECT_EQ(run.phases, phases);
  const std::vector<std::pair<SimTime, SimTime>> windows = {{S(100.5), S(800.5)}};
  EXPECT_EQ(run.windows, windows);
  EXPECT_DOUBLE_EQ(run.rel.capacity_availability, (2000 - 700) / 2000.0);
}

TEST(Recovery, RepairShorterThanDetectionStartsWhenNoticed) {
  const RecoveryRun run = RunRecovery(Recovery::kRepair, 50, 2);
  ASSERT_EQ(run.events0.size(), 5u);
  EXPECT_EQ(run.events0[3], std::make_pair(std::string("starting"), S(200)));
  EXPECT_EQ(run.events0[4], std::make_pair(std::string("ready"), S(400)));
}

TEST(Recovery, NoneStopsForGood) {
  const RecoveryRun run = RunRecovery(Recovery::kNone, std::nullopt, 2);
  const std::vector<std::pair<std::string, SimTime>> want = {
      {"failure", S(100.5)}, {"failed", S(200)}, {"stopped", S(200)}};
  EXPECT_EQ(run.events0, want);
  // Still open at the end of the run.
  ASSERT_EQ(run.windows.size(), 1u);
  EXPECT_EQ(run.windows[0].first, S(100.5));
  EXPECT_EQ(run.windows[0].second, kTimeNever);
  EXPECT_DOUBLE_EQ(run.rel.capacity_availability, 100.5 / 2000);
}

// Two failures that overlap make one window, closed when the last is back.
TEST(Recovery, OverlappingFailuresMakeOneWindow) {
  FleetRig rig(Replicas(3, {.provision = S(100), .start = S(50)}));
  ReliabilitySpec spec;
  spec.failures.push_back(Drill(10, 0, "crash"));  // back at 60 s
  spec.failures.push_back(Drill(30, 1, "crash"));  // back at 80 s
  spec.failures.push_back(Drill(200, 2, "crash"));  // back at 250 s
  rig.Start(spec);
  rig.RunTo(S(300));
  const std::vector<std::pair<SimTime, SimTime>> windows = {{S(10), S(80)}, {S(200), S(250)}};
  EXPECT_EQ(rig.cluster.failure_windows().windows(), windows);
  EXPECT_DOUBLE_EQ(rig.cluster.ReliabilityUntil(S(300)).downtime_s, 150);
}

// A replica that hangs while a rolling restart has it starting is known at
// once (it is out of routing) and, with recovery "repair", still waits for
// its repair.
TEST(Recovery, RepairWaitsMttrForAReplicaOutOfRouting) {
  FleetRig rig(Replicas(2, {.provision = S(600), .start = S(20)}));
  ReliabilitySpec spec;
  spec.recovery = Recovery::kRepair;
  spec.rolling_restarts.push_back({.path = "r", .pool = "p", .at_s = 10, .batch = 1});
  spec.failures.push_back(Drill(15, 0, "hang", 300));
  rig.Start(spec);
  rig.RunTo(S(1000));
  const std::vector<std::pair<std::string, SimTime>> want = {{"draining", S(10)},
                                                             {"starting", S(10)},
                                                             {"failure", S(15)},
                                                             {"failed", S(15)},
                                                             {"repairing", S(15)},
                                                             {"starting", S(315)},
                                                             {"ready", S(335)}};
  EXPECT_EQ(rig.obs.EventsOf(0), want);
  const Cluster::Reliability r = rig.cluster.ReliabilityUntil(S(1000));
  EXPECT_EQ(r.detection_delay_s_sum, 0);
  EXPECT_DOUBLE_EQ(r.downtime_s, 320);
}

// ---------------------------------------------------------------------------
// Rolling restarts.

TEST(RollingRestart, BatchesOfTwoComeBackBeforeTheNextStarts) {
  // Four replicas, start 20 s; restart at 10 s in batches of 2. Replica 0
  // holds a long request (sent at 9.9 s) when the restart begins.
  FleetRig rig(Replicas(4, {.start = S(20)}));
  ReliabilitySpec spec;
  spec.rolling_restarts.push_back({.path = "r", .pool = "p", .at_s = 10, .batch = 2, .drain_timeout_s = 60});
  rig.Start(spec);
  rig.Send(S(9.9), 0, 1500);
  // Then steady traffic through the restart.
  // (Off the 100 ms grid of the drain polls, so a batch that drains finds
  // its replicas empty.)
  for (int k = 1; k <= 600; ++k) rig.Send(S(9.95) + k * 100 * kMillisecond, k);
  std::vector<std::pair<SimTime, std::vector<ReplicaPhase>>> phases;
  for (double t : {10.5, 25.0, 40.0, 60.0})
    rig.At(S(t), [&, t] {
      std::vector<ReplicaPhase> p;
      for (int i = 0; i < 4; ++i) p.push_back(rig.cluster.view(i).phase());
      phases.emplace_back(S(t), p);
    });
  rig.RunTo(S(100));
  const auto by_id = rig.obs.ById();
  // The long request ran to its end on replica 0 while it drained.
  const RequestRecord& longest = by_id.at(0);
  ASSERT_EQ(longest.status, RequestStatus::kCompleted);
  EXPECT_EQ(longest.replica, 0);
  EXPECT_GT(longest.finish, S(10));
  // Replica 0 restarts at the first 100 ms poll after it emptied.
  const SimTime drained = S(10) + (longest.finish - S(10) + 100 * kMillisecond - 1) / (100 * kMillisecond) * (100 * kMillisecond);
  const SimTime back0 = drained + S(20);
  const std::vector<std::pair<std::string, SimTime>> want0 = {
      {"draining", S(10)}, {"starting", drained}, {"ready", back0}};
  EXPECT_EQ(rig.obs.EventsOf(0), want0);
  const std::vector<std::pair<std::string, SimTime>> want1 = {
      {"draining", S(10)}, {"starting", S(10)}, {"ready", S(30)}};
  EXPECT_EQ(rig.obs.EventsOf(1), want1);
  // The second batch waits for the first.
  for (int i : {2, 3}) {
    const std::vector<std::pair<std::string, SimTime>> want = {
        {"draining", back0}, {"starting", back0}, {"ready", back0 + S(20)}};
    EXPECT_EQ(rig.obs.EventsOf(i), want) << i;
  }
  // Every request completed, none on a replica out of routing.
  for (const auto& [id, r] : by_id) {
    EXPECT_EQ(r.status, RequestStatus::kCompleted) << id;
    if (id == 0) continue;
    if (r.arrival >= S(10) && r.arrival < S(30)) {
      EXPECT_TRUE(r.replica == 2 || r.replica == 3) << id;
    }
    if (r.arrival >= S(30) && r.arrival < back0) {
      EXPECT_NE(r.replica, 0) << id;
    }
    if (r.arrival >= back0 && r.arrival < back0 + S(20)) {
      EXPECT_TRUE(r.replica == 0 || r.replica == 1) << id;
    }
  }
  const Cluster::Reliability rel = rig.cluster.ReliabilityUntil(S(100));
  EXPECT_EQ(rel.min_ready_during_restart, 2);
  EXPECT_EQ(rel.restarts_done, 4);
  EXPECT_DOUBLE_EQ(rel.restart_s, TimeToSeconds(back0 + S(20) - S(10)));
  const std::vector<std::pair<SimTime, SimTime>> windows = {{S(10), back0 + S(20)}};
  EXPECT_EQ(rig.cluster.restart_windows().windows(), windows);
  EXPECT_EQ(rel.events, 0);
  EXPECT_EQ(rel.requests_failed, 0);
}

TEST(RollingRestart, DrainTimeoutLetsGoOfWhatIsLeft) {
  // Replica 0 holds a request of 3,000 output tokens (3 s and more) when it
  // drains at 10 s with 1 s to drain: at 11 s it is let go of, with the
  // tokens it streamed, and replica 0 restarts.
  FleetRig rig(Replicas(2, {.start = S(5)}));
  ReliabilitySpec spec;
  spec.rolling_restarts.push_back({.path = "r", .pool = "p", .at_s = 10, .batch = 1, .drain_timeout_s = 1});
  rig.Start(spec);
  rig.Send(S(9.5), 0, 3000);
  rig.Send(S(9.5), 1, 3000);
  rig.RunTo(S(60));
  const auto by_id = rig.obs.ById();
  const RequestRecord& cut = by_id.at(0);
  EXPECT_EQ(cut.replica, 0);
  EXPECT_EQ(cut.status, RequestStatus::kFailed);
  EXPECT_EQ(cut.reason, "drain_timeout");
  EXPECT_EQ(cut.finish, S(11));
  EXPECT_GT(cut.generated_tokens, 0);
  EXPECT_LT(cut.generated_tokens, 3000);
  // Replica 1 restarts only after replica 0 is back (11 + 5 s), and by then
  // its request is done.
  EXPECT_EQ(by_id.at(1).status, RequestStatus::kCompleted);
  const std::vector<std::pair<std::string, SimTime>> want0 = {
      {"draining", S(10)}, {"starting", S(11)}, {"ready", S(16)}};
  EXPECT_EQ(rig.obs.EventsOf(0), want0);
  const Cluster::Reliability rel = rig.cluster.ReliabilityUntil(S(60));
  EXPECT_EQ(rel.requests_failed, 1);
  EXPECT_EQ(rel.partial_output_tokens, cut.generated_tokens);
  EXPECT_EQ(rel.restarts_done, 2);
  EXPECT_EQ(rel.min_ready_during_restart, 1);
}

// ---------------------------------------------------------------------------
// The circuit breaker.

TEST(CircuitBreaker, PassesToTheNextReplicaWithRoomThenTurnsAway) {
  // One request at a time per replica. At 0 s: request 0 (long) to replica
  // 0, 1 and 2 (short) to replicas 1 and 2. At 1 s round robin picks
  // replica 0 for request 3: full, so replica 1; request 4: replica 1, now
  // full, so replica 2; request 5: all full, turned away.
  FleetRig rig(Replicas(3));
  ReliabilitySpec spec;
  spec.max_requests_per_replica = 1;
  rig.Start(spec);
  rig.Send(0, 0, 5000);
  rig.Send(0, 1, 10);
  rig.Send(0, 2, 10);
  rig.Send(S(1), 3, 5000);
  rig.Send(S(1), 4, 5000);
  rig.Send(S(1), 5, 10);
  rig.RunTo(S(60));
  const auto by_id = rig.obs.ById();
  ASSERT_EQ(by_id.size(), 6u);
  EXPECT_EQ(by_id.at(0).replica, 0);
  EXPECT_EQ(by_id.at(3).replica, 1);
  EXPECT_EQ(by_id.at(4).replica, 2);
  for (uint64_t id : {0, 1, 2, 3, 4}) EXPECT_EQ(by_id.at(id).status, RequestStatus::kCompleted) << id;
  EXPECT_EQ(by_id.at(5).status, RequestStatus::kRejected);
  EXPECT_EQ(by_id.at(5).reason, "circuit_open");
  EXPECT_EQ(by_id.at(5).replica, -1);
  for (const auto& [id, n] : rig.obs.arrivals) EXPECT_EQ(n, 1) << id;
  EXPECT_EQ(rig.obs.arrivals.size(), 6u);
}

}  // namespace
}  // namespace fleetsim

// Gateway: the fleet's front door, between the clients and the cluster's
// router. For each arriving request, in order:
//
//   1. its tenant and priority class: the class's queue timeout becomes the
//      request's queue deadline;
//   2. the tenant's token bucket (Envoy's local rate limit: a bucket of
//      `burst` tokens refilled at rate_per_s; a request takes one or is
//      rejected "rate_limited");
//   3. graceful degradation, under overload (a queue-depth or predicted-TTFT
//      trigger): shed the class ("shed"), cap its output length (served,
//      flagged "output_capped"), or send it to a smaller fallback model's
//      pool (served, flagged "fallback_model");
//   4. the fleet-wide queue limit (requests waiting across the model's
//      replicas; "fleet_queue_full");
//   5. a canary rollout: the share of the model's traffic the new version
//      takes at this step of its schedule;
//   6. regions: the global balancer picks a region for the client's
//      location (nearest, least loaded within a latency budget, weighted),
//      spilling to another when the first is saturated or down; the
//      request reaches the cluster after the path's round trip, which TTFT
//      and end-to-end latency pay (the request's leg there and its first
//      token's leg back, folded into one delay before routing).
//
// Then the cluster's router picks a replica among the pools the request may
// use (a route target: its model, region and version). Every request the
// gateway turns away is reported (arrived, then rejected with its reason):
// counted, never lost. Docs: docs/routing.md.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sim/cluster/cluster.h"
#include "sim/cluster/observer.h"
#include "sim/cluster/registry.h"
#include "sim/engine/rng.h"
#include "sim/engine/simulation.h"

namespace fleetsim {

// Why a request was served degraded (Request::degraded).
enum DegradeReason : uint8_t { kNotDegraded = 0, kOutputCapped = 1, kFallbackModel = 2 };
// Names by code, for summary.json's degraded.by_reason (index 0: none).
const std::vector<std::string>& DegradeReasonNames();

// ---- global balancers ----

// A region as the balancer sees it for one request.
struct RegionState {
  double rtt_ms = 0;       // the client's round trip to it
  bool up = false;         // some replica of the request's model ready there
  bool saturated = false;  // its load at or over the saturation threshold
  double load = 0;         // requests outstanding per ready replica
  double weight = 1;       // the balancer's static weight for it
};

// Picks a region for a request. Registered by name (GlobalBalancerRegistry).
class GlobalBalancer {
 public:
  virtual ~GlobalBalancer() = default;
  // Returns an index into `regions`, or -1 when none is up.
  virtual int Pick(const std::vector<RegionState>& regions) = 0;
};
struct GlobalBalancerOptions {
  double latency_budget_ms = 0;  // least_loaded: regions within this RTT (0: the nearest's RTT)
};
using GlobalBalancerFactory = std::function<std::unique_ptr<GlobalBalancer>(const GlobalBalancerOptions&, Rng)>;
using GlobalBalancerRegistry = Registry<GlobalBalancerFactory>;
void RegisterBuiltinGlobalBalancers(GlobalBalancerRegistry* registry);

// ---- graceful degradation policies ----

// What the gateway lends a degradation policy while it applies it.
struct DegradeHooks {
  std::function<int(int pool)> pool_target;              // the route target of one pool alone
  std::function<int(const std::string& model)> model_id;  // Cluster::ModelId
};

// What a fleet does to a request of the policy's class when its trigger
// fires. Registered by name (DegradationRegistry; `fleetsim list`).
class DegradationPolicy {
 public:
  virtual ~DegradationPolicy() = default;
  enum class Verdict {
    kPass,    // does not apply to this request: the next policy may
    kServe,   // served, changed (Request::degraded says how)
    kReject,  // turned away, with reject_reason()
  };
  // May change the request's output length, model, route target and
  // degraded flag; sets *fallback_pool when it sends it to another pool.
  virtual Verdict Apply(Request* req, const DegradeHooks& hooks, int* fallback_pool) const = 0;
  virtual const char* reject_reason() const { return "shed"; }
  // Fires even when no replica of the request's model is ready (a smaller
  // model may serve it); other policies then leave the request alone.
  virtual bool WhenNoneReady() const { return false; }
};
// A policy's settings as the scenario gives them (fleet.degradation[]).
struct DegradationContext {
  std::string path;              // fleet.degradation[i], for messages
  int32_t max_output_tokens = 0;  // 0: not given
  int fallback_pool = -1;         // -1: not given
  std::string fallback_model;     // that pool's model
};
using DegradationFactory =
    std::function<Status(const DegradationContext& ctx, std::unique_ptr<DegradationPolicy>* out)>;
using DegradationRegistry = Registry<DegradationFactory>;
void RegisterBuiltinDegradations(DegradationRegistry* registry);

// ---- configuration ----

struct GatewayConfig {
  struct PriorityClass {
    std::string name;
    int32_t priority = 0;
    SimTime queue_timeout = kTimeNever;
  };
  std::vector<PriorityClass> classes;
  struct Tenant {
    std::string name;
    double rate_per_s = 0;  // 0: no limit
    double burst = 1;
  };
  std::vector<Tenant> tenants;
  int64_t max_queue = 0;  // requests waiting across the model's ready replicas; 0: no limit

  struct Pool {
    std::string name, model;
    int region = -1;
    int replicas = 0;  // slots
    // Predicted prefill time of `tokens` tokens on one of its replicas, ms
    // (the pool's performance model); for the predicted-TTFT trigger.
    std::function<double(int64_t tokens)> prefill_ms;
  };
  std::vector<Pool> pools;

  struct Degradation {
    std::unique_ptr<DegradationPolicy> policy;
    std::string name;        // its registry name, for messages
    int32_t priority = -1;   // the class it applies to (-1: the lowest class, the largest priority)
    double queue_per_replica = 0;   // trigger: requests waiting per ready replica of the model at least this
    double predicted_ttft_ms = 0;   // trigger: predicted TTFT on the best replica at least this
    bool saturated = false;         // trigger: every replica saturated (SaturationDetector)
  };
  // llm-d's saturation detector (gateway-api-inference-extension's
  // saturationdetector defaults): a replica is saturated when its scraped
  // waiting queue is at least queue_depth, its KV utilisation at least
  // kv_utilization, or its metrics are older than metrics_staleness.
  struct SaturationDetector {
    int64_t queue_depth = 5;
    double kv_utilization = 0.8;
    SimTime metrics_staleness = 200 * kMillisecond;
  };
  SaturationDetector saturation;
  std::vector<Degradation> degradation;

  // Regions: names, client locations with their RTT to each region, and
  // the balancer.
  std::vector<std::string> regions;
  struct Location {
    std::string name;
    std::vector<double> rtt_ms;  // by region
  };
  std::vector<Location> locations;
  std::unique_ptr<GlobalBalancer> balancer;
  double saturation_outstanding = 0;  // a region is saturated at this load (0: never)
  std::vector<double> region_weights;

  struct Canary {
    int pool = -1, baseline = -1;
    SimTime start = 0;
    struct Step {
      double share = 0;
      SimTime duration = 0;
    };
    std::vector<Step> steps;
    double ttft_margin = 0.2, tpot_margin = 0.2, error_margin = 0.01;
    int64_t min_requests = 20;
    int max_extensions = 3;
  };
  std::optional<Canary> canary;
};

// A canary step's figures, per version.
struct CanaryStepReport {
  double share = 0;
  double start_s = 0, end_s = 0;
  struct Side {
    int64_t requests = 0, completed = 0, errors = 0;
    std::optional<double> ttft_p99_ms, tpot_p99_ms;
    double error_rate = 0;
  };
  Side canary, baseline;
  std::string decision;  // "continue", "promote", "rollback", "extend"
  std::string reason;    // why rolled back or extended
};
// Which of the canary's figures is worse than the baseline's by more than
// its margin, in this order: TTFT p99 (canary > base x (1 + ttft_margin)),
// TPOT p99 (likewise), error rate (canary > base + error_margin, absolute);
// null when none is: a figure exactly at its margin passes.
const char* CanaryWorse(const CanaryStepReport::Side& canary, const CanaryStepReport::Side& base, double ttft_margin,
                        double tpot_margin, double error_margin);

struct CanaryReport {
  std::string pool, baseline;
  std::string outcome = "in_progress";  // "promoted", "rolled_back", "in_progress"
  std::vector<CanaryStepReport> steps;
};

class Gateway {
 public:
  // `cluster` and `observer` must outlive it; `rng` feeds its draws.
  Gateway(Simulation& sim, Cluster& cluster, RunObserver& observer, GatewayConfig config, Rng rng);

  // A request from a client.
  void Arrive(Request&& req);
  // A request ended (the canary's figures).
  void OnRequestEnded(const RequestRecord& rec);
  // Requests on their way to a region: no request is held here otherwise.
  bool Idle() const { return in_transit_.empty(); }
  // End of run: those still on their way are reported unfinished.
  void ReportUnfinished(SimTime end, std::string_view reason);
  // Events that recur (the canary's steps): the run ends with the traffic.
  bool active() const { return config_.canary.has_value(); }
  const std::optional<CanaryReport>& canary() const { return canary_report_; }

  // Name tables for the per-group figures.
  std::vector<std::pair<int32_t, std::string>> ClassNames() const;
  std::vector<std::string> TenantNames() const;
  const std::vector<std::string>& RegionNames() const { return config_.regions; }

 private:
  void Reject(Request&& req, std::string_view reason);
  // The route target of (model's pools, region, version); cached.
  int Target(const std::string& model, int region, int version);
  // The route target of one pool alone (a fallback model's); cached.
  int PoolTarget(int pool);
  bool Triggered(const GatewayConfig::Degradation& d, const Request& req);
  void Send(Request&& req);
  // Sends it once its round trip `rtt` has passed (held in_transit_ meanwhile).
  void SendAfter(Request&& req, SimTime rtt);
  // Canary.
  void StartStep(size_t step);
  void EndStep();
  void ApplyShare();
  int CanaryReplicas(double share) const;
  void Rollback();

  Simulation& sim_;
  Cluster& cluster_;
  RunObserver& observer_;
  GatewayConfig config_;
  DegradeHooks hooks_;
  Rng rng_;
  Rng canary_rng_;
  int32_t lowest_priority_ = 0;
  std::map<std::string, int, std::less<>> tenant_index_;
  struct Bucket {
    double tokens = 0;
    SimTime at = 0;
  };
  std::vector<Bucket> buckets_;
  std::map<std::tuple<std::string, int, int>, int> targets_;
  std::map<int, int> pool_targets_;
  // Requests on their way to a region, by sequence.
  std::map<uint64_t, Request> in_transit_;
  uint64_t next_transit_ = 0;
  std::vector<RegionState> region_scratch_;
  // Canary.
  double share_ = 0;
  size_t step_ = 0;
  int extensions_ = 0;
  SimTime step_start_ = 0;
  bool canary_done_ = false;
  std::unordered_map<uint64_t, uint8_t> version_of_;  // 1: baseline, 2: canary
  struct SideStats {
    int64_t requests = 0, completed = 0, errors = 0;
    std::vector<double> ttft_ms, tpot_ms;  // this step's, cleared at its end
  };
  SideStats side_[2];
  std::optional<CanaryReport> canary_report_;
  std::optional<CanaryStepReport::Side> last_baseline_;
};

}  // namespace fleetsim

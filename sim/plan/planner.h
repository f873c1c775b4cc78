// Planner: the search behind `fleetsim plan` (docs/plan.md).
//
// A plan's exhaustive dimensions give families; each family's replica count
// (the one bisected dimension, if any) is found by bisection at the stated
// load; the cheapest passing families then get load curves, a fleet cost per
// load and their headroom. Every point is R replications with a t interval,
// and a point meets a target only when the interval's pessimistic bound
// does. The search runs in rounds whose simulations go to a BatchRunner, so
// its outcome is the same on any number of threads or MPI ranks.
//
// Adding a search dimension is a plan entry (a scenario key and values), not
// code: everything a scenario can say, the planner can search.
#pragma once

#include <csignal>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/catalog.h"
#include "sim/plan/batch_runner.h"
#include "sim/plan/plan_spec.h"
#include "sim/plan/stats.h"
#include "sim/runner/run.h"

namespace fleetsim {

// The metrics a point keeps, in SimOutcome order.
const char* PlanMetricName(int i);
int PlanMetricIndex(const std::string& name);  // -1 if unknown
// The latency metrics the Pareto frontier weighs against cost: those of the
// plan's latency targets, else TTFT and TPOT p99.
std::vector<int> FrontierMetrics(const PlanSpec& plan);

struct PlanLaunch {
  std::string engine;   // "vllm" or "sglang"
  int replicas = 0;
  std::string command;  // one line per pool
};

struct PlanConfig {
  std::string id;  // "f3-r6", or "f3" without a bisected dimension
  int family = 0;
  int64_t replicas = -1;  // the bisected key's value; -1 without one
  std::vector<std::pair<std::string, std::string>> settings;  // key -> JSON text, every dimension
  int64_t gpus = 0;
  std::map<std::string, int64_t> gpus_by_type;
  // Unset: a pool's GPU has no price. A fleet with an autoscaled pool: its
  // mean cost over the run at the stated load (measured), once known; its
  // cost with every pool at max_replicas until then.
  std::optional<double> usd_per_hour;
  bool autoscaled = false;
  std::optional<double> peak_usd_per_hour;  // autoscaled: every pool at its max (what the budget checks)
  double gpu_mib = 0, weights_gib_per_gpu = 0, kv_gib_per_gpu = 0;
  int64_t kv_blocks = 0;
  PlanLaunch launch;
  std::shared_ptr<ScenarioRun> run;
  // targets.node_failure: the node whose failure costs the most ready
  // replicas (as a share of its pool's required ones), failed at
  // PlanSpec::node_failure_at_s in every run of this config; -1: none.
  int drill_node = -1;
};

struct PlanPoint {
  int config = 0;
  double rate_scale = 1;
  std::optional<double> rate_per_s;
  std::vector<std::vector<double>> values;  // [metric][replication]
  std::vector<Interval> metrics;            // [metric]
  std::vector<double> met_fraction;         // [target]
  std::vector<bool> meets;                  // [target], by the pessimistic bound
  bool meets_all = false;
  double worst_ratio = 0;  // max over targets of bound / limit (limit / bound for a minimum)
  int worst_target = -1;
};

struct PlanBinding {
  int target = -1;
  double rate_scale = 0;
};

struct PlanFamily {
  int id = 0;
  std::string label;
  std::vector<std::pair<std::string, std::string>> settings;  // exhaustive dimensions only
  // The bisected keys' shares of the multiplier (PlanDimension::ratios):
  // config n sets key i to n * ratio[i].
  std::vector<int64_t> ratio;
  enum class Status { kMeets, kMisses, kDropped } status = Status::kDropped;
  std::string reason;
  std::optional<std::pair<int64_t, int64_t>> replica_range;
  std::optional<int64_t> min_replicas;
  int config = -1;  // the config of min_replicas (or the family's only config) when it meets
  bool shortlisted = false;
  std::optional<double> headroom_scale;
  bool headroom_capped = false;
  std::optional<PlanBinding> binding;
  struct CostPoint {
    double rate_scale = 1;
    std::optional<int64_t> replicas;  // fewest meeting every target at this load (bisected dimension)
    int config = -1;                  // that config; -1: none within the range
  };
  std::vector<CostPoint> cost_curve;
  std::optional<double> base_rate_per_s;  // this family's traffic at scale 1
};

struct PlanResult {
  PlanSpec plan;
  std::string scenario_name;
  std::optional<double> base_rate_per_s;  // the traffic's request rate at scale 1
  bool traffic_replicated = true;         // false: every replication replays the same requests
  std::string load_description;
  std::vector<PlanFamily> families;
  std::vector<PlanConfig> configs;
  std::vector<PlanPoint> points;      // sorted by config, then rate scale
  std::vector<int> recommendations;   // family ids, best first
  std::vector<int> frontier;          // config indices, cheapest first
  bool frontier_cost_is_usd = true;   // false: some configuration has no price, so GPUs
  int chosen = -1;                    // config index
  std::vector<std::string> assumptions;
  std::vector<std::pair<int, std::string>> monotonicity;  // family, what was seen
  int64_t simulations = 0;
};

struct PlanProgress {
  std::string phase;
  int64_t families_done = 0, families = 0;
  int64_t sims_done = 0;
  int64_t sims_round = 0, sims_round_done = 0;
  int64_t sims_expected = 0;  // a guess of the whole search's simulations (this rank's share)
  int round = 0;
};

struct PlanOptions {
  int threads = 1;
  BatchRunner* runner = nullptr;  // null: a thread pool of `threads`
  std::function<void(const PlanProgress&)> progress;
  const volatile std::sig_atomic_t* stop = nullptr;
};

class Planner {
 public:
  Planner(const PlanSpec& plan, const Catalog& catalog, const Policies& policies);
  ~Planner();
  // Expands and builds the families, loads the traffic, and searches.
  Status Run(const PlanOptions& options);
  const PlanResult& result() const { return result_; }
  // Runs the chosen configuration once more (replication 0 at the stated
  // load) with `outputs`, as `fleetsim run` would.
  Status RunChosen(const MetricsOptions& outputs, RunReport* report);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  PlanResult result_;
};

// DIR/plan.json, DIR/curves.csv, DIR/frontier.csv (docs/plan.md).
std::string PlanResultToJson(const PlanResult& r, const std::string& fleetsim_version);
std::string PlanCurvesCsv(const PlanResult& r);
std::string PlanFrontierCsv(const PlanResult& r);
// A few lines for stdout: the recommendation and where the report is.
std::string FormatPlanSummary(const PlanResult& r);

}  // namespace fleetsim

// Running a scenario end to end: resolve its names against the catalogue and
// the registries (errors name the JSON path), build the simulated fleet,
// stream the traffic through it, and summarise.
#pragma once

#include <csignal>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/catalog.h"
#include "model/memory_plan.h"
#include "model/perf_model.h"
#include "model/roofline.h"
#include "sim/cluster/autoscaler.h"
#include "sim/cluster/batch_scheduler.h"
#include "sim/cluster/executor.h"
#include "sim/cluster/gateway.h"
#include "sim/cluster/reliability.h"
#include "sim/cluster/router.h"
#include "sim/cluster/topology.h"
#include "sim/metrics/collector.h"
#include "sim/scenario/scenario_spec.h"

namespace fleetsim {

// Every registered policy, filled by RegisterBuiltins().
struct Policies {
  RouterRegistry routers;
  SchedulerRegistry schedulers;
  FailureModelRegistry failure_models;
  AutoscalerRegistry autoscalers;
  GlobalBalancerRegistry balancers;
  DegradationRegistry degradations;
};
void RegisterBuiltins(Policies* policies);

struct Profile;

// Input files a Build reads (a measured perf.profile, engine profile files),
// kept for the next Build that names them, errors included: the planner
// builds hundreds of scenarios of one plan and reads each file once.
// Thread-safe.
class BuildCache {
 public:
  Status LoadProfile(const std::string& path, std::shared_ptr<const Profile>* out);
  Status LoadEngine(const std::string& path, std::shared_ptr<const EngineProfile>* out);

 private:
  std::mutex mu_;
  std::map<std::string, std::pair<Status, std::shared_ptr<const Profile>>> profiles_;
  std::map<std::string, std::pair<Status, std::shared_ptr<const EngineProfile>>> engines_;
};

// The engine profile a pool runs with: its own (a bundled name or a file),
// else its scheduler's engine's. Errors name the pool's JSON path. A file is
// read through `cache` when one is given.
Status LoadPoolEngineProfile(const PoolSpec& p, const SchedulerRegistry::Entry& scheduler, const Catalog& catalog,
                             EngineProfile* out, BuildCache* cache = nullptr);

// A pool after resolution: everything a replica needs, checked.
struct PoolPlan {
  const PoolSpec* spec = nullptr;
  const ModelSpec* model = nullptr;
  const GpuSpec* gpu = nullptr;
  EngineSpec engine;             // the engine profile's terms for this pool (model/engine_spec.h)
  std::string engine_name;       // the profile's name (a file's: its "name")
  const SchedulerRegistry::Entry* scheduler = nullptr;
  ShardPlan shard;
  // The busiest expert-parallel GPU's routed tokens over the mean: the
  // pool's expert_load_skew, or derived from its expert_balance
  // (model/expert_balance.h); and the balancer's redundant expert copies.
  double expert_load_skew = 1;
  int redundant_experts = 0;
  PipelinePlan pipeline;         // pp > 1: the stages' layers and links
  // Speculative decoding: the draft model (null for an EAGLE head or none),
  // on the target's tensor-parallel GPUs.
  const ModelSpec* draft = nullptr;
  // A tensor-parallel group spanning nodes: its ring on the topology
  // (RooflineOptions::collective_*); 0 within a node.
  double collective_alpha_ns = 0;
  double collective_gbps = 0;
  // Expert parallelism with data-parallel attention: the MoE all-to-all on
  // the topology (RooflineOptions::all_to_all_*).
  double all_to_all_alpha_ns = 0;
  double all_to_all_gbps = 0;
  SchedulerLimits limits;
  StepLimits step;               // what an iteration holds under the pool's scheduler
  MemoryPlan memory;
  int64_t max_model_len = 0;     // the engine's limit: the model's, or the pool's lower override
  PreemptionMode preemption = PreemptionMode::kRecompute;
  int64_t host_kv_blocks = 0;    // swap space, in KV blocks
  std::optional<double> usd_per_gpu_hour;
  std::string price_source;
  std::optional<double> on_demand_usd_per_gpu_hour;  // a spot pool's fallback
  double spot_reclaims_per_hour = 0;                  // spot pools: the pool's, else the catalogue's
  double spot_notice_s = 0;
  std::vector<std::string> warnings;  // figures the run borrowed; the summary lists them
  // Keys of the pool's model config (a Hugging Face config.json) that were
  // ignored; the run's summary lists them under warnings.
  std::vector<std::string> model_warnings;
};

// The roofline options pool `p` runs with: the scenario's perf section,
// the GPU's fitted shapes, the engine profile's kernel terms (except those
// the scenario sets itself), and the tensor-parallel ring as the topology
// prices it when the group spans nodes.
RooflineOptions PoolRooflineOptions(const ScenarioSpec& s, const PoolPlan& p);

struct Progress {
  SimTime now = 0;
  int64_t arrived = 0;
  int64_t finished = 0;
  double wall_s = 0;
};

// How batches run and time passes when not simulated: live mode
// (sim/live) swaps in executors that run real kernels and a wall clock.
// Everything else in a run is the same code either way.
class ExecutionMode {
 public:
  virtual ~ExecutionMode() = default;
  // The run's simulation exists and nothing has run yet.
  virtual void Start(Simulation& sim) = 0;
  // The executor of replica `replica` (its index in the fleet).
  virtual std::unique_ptr<Executor> MakeExecutor(int replica, Executor::Done done) = 0;
  // Advances the clock to `until` or for a short slice of wall time.
  virtual void Advance(Simulation& sim, SimTime until) = 0;
  // Work in flight that no event stands for (a batch on a device).
  virtual bool busy() const = 0;
  // The first error of an executor: the run stops with it.
  virtual Status status() = 0;
  // The run is over (ended, failed or interrupted): stop, drop late work.
  virtual void Finish() = 0;

  // Arrivals from outside (live mode's server): the scenario's traffic is
  // not sent; the mode routes each arriving request with `arrive`
  // (driving thread, inside Advance), which stamps its arrival now.
  virtual bool external_arrivals() const { return false; }
  virtual void AttachArrivals(std::function<void(Request&&)> arrive) { (void)arrive; }
  // More outside arrivals may come: the run does not end while so.
  virtual bool arrivals_open() const { return false; }
  // Every request's end, as the metrics hear it (driving thread).
  virtual void OnRequestEnded(const RequestRecord& rec) { (void)rec; }
};

// How to run, beyond the scenario.
struct RunOptions {
  uint64_t seed = 0;
  // timeseries.csv starts at this interval (0: 1 s, or coarser when the
  // run's span is known to need it) and doubles whenever the rows written
  // reach half of what is left of timeseries_max_rows, so the file never
  // holds more rows than that. Idle stretches (no request in the fleet,
  // nothing arriving) write no rows.
  SimTime timeseries_interval = 0;
  int64_t timeseries_max_rows = 1000000;
  // Set asynchronously (a signal handler); the run stops at the next slice
  // with a Status saying so.
  const volatile std::sig_atomic_t* stop = nullptr;
  // Called with every request's record as it ends (fleetsim fit compares
  // them with observed requests); ids are the traffic's.
  std::function<void(const RequestRecord&)> on_request;
  // Set: this run's traffic instead of the scenario's (the planner's load
  // scales and replications over a trace read once). Must outlive Run.
  const TrafficSpec* traffic = nullptr;
  // False: the summary's inputs_sha256 stays empty, and the input files are
  // not read again to hash them (the planner's many runs of one scenario).
  bool identify_inputs = true;
  // Set: live mode's executors and clock (must outlive Run).
  ExecutionMode* execution = nullptr;
};

struct RunReport {
  Summary summary;
  double wall_s = 0;
  uint64_t events = 0;
  int64_t peak_rss_kb = 0;
  // timeseries.csv's sampling: (from simulated second, interval in seconds),
  // one entry per change of interval.
  std::vector<std::pair<double, double>> timeseries_intervals;
  // Set when the row budget ran out before the run ended (a warning says
  // so): the simulated second of the last sample before the final one.
  std::optional<double> timeseries_stopped_s;
  int64_t timeseries_rows = 0;
  bool trace_sampled = false;  // trace.json holds MetricsOptions::trace_requests requests
};

// Where the replicas run: packed onto nodes of gpus_per_node GPUs in pool
// order, each pool from a node of its own (a replica larger than a node
// spans whole nodes); nodes_per_rack consecutive nodes of a zone make a
// rack. Node, rack and zone ids stay as they are when placement policies
// arrive (the sharding issue).
struct FleetPlacement {
  std::vector<std::vector<int>> replica_nodes;  // by replica index
  // The replica's GPUs (node x gpus_per_node + index in the node), stage
  // by stage (pipeline stage i: [i tp, (i + 1) tp)).
  std::vector<std::vector<int>> replica_gpus;
  std::vector<const GpuSpec*> node_gpu;         // by node
  int gpus_per_node = 8;
  std::vector<int> node_rack, node_zone;        // by node
  std::vector<std::string> zones;               // in order of first pool
  int racks = 0;
  int nodes() const { return static_cast<int>(node_rack.size()); }
};
FleetPlacement PlaceFleet(const ScenarioSpec& spec, const std::vector<PoolPlan>& pools);

class ScenarioRun {
 public:
  // Resolves and checks the scenario without running it (`fleetsim
  // validate` stops here). `catalog` and `policies` must outlive the run.
  // `cache`, if given, serves the input files other Builds read already.
  static Status Build(const ScenarioSpec& spec, const Catalog& catalog, const Policies& policies,
                      std::unique_ptr<ScenarioRun>* out, BuildCache* cache = nullptr);

  const ScenarioSpec& spec() const { return spec_; }
  const std::vector<PoolPlan>& pools() const { return pools_; }
  const FleetPlacement& placement() const { return placement_; }
  // What one replica of pool `pool` carries (its performance model).
  const ReplicaCapacity& capacity(size_t pool) const { return *capacity_[pool]; }
  // Pool `pool`'s performance model (what the simulation times batches with).
  const PerfModel& perf(size_t pool) const { return *perf_[pool]; }
  // A daily schedule for autoscaled pool `pool`, planned from the
  // scenario's traffic as an operator plans one from last week's: for each
  // hour of the day, the replicas that carry that hour's peak 10-minute
  // arrival rate at the scenario's SLO targets (capacity() at the
  // traffic's mean lengths), within the pool's bounds; hours wanting what
  // the hour before wanted are left out. The pool is assumed to carry all
  // of the traffic. `seed` draws the traffic as a run would.
  Status DailySchedule(size_t pool, uint64_t seed, std::vector<std::pair<double, int>>* out) const;

  // Runs it. `seed` overrides the scenario's. Run only reads the object, so
  // several threads may run one ScenarioRun at once (the planner does). `progress`, if set, is
  // called about once a second of wall time. Row errors in a trace stop the
  // run with their file:line Status.
  Status Run(const MetricsOptions& outputs, const RunOptions& options,
             const std::function<void(const Progress&)>& progress, RunReport* report);
  Status Run(const MetricsOptions& outputs, uint64_t seed, const std::function<void(const Progress&)>& progress,
             RunReport* report) {
    RunOptions o;
    o.seed = seed;
    return Run(outputs, o, progress, report);
  }

 private:
  ScenarioRun(const ScenarioSpec& spec, const Catalog& catalog, const Policies& policies)
      : spec_(spec), catalog_(catalog), policies_(policies) {}
  // Rolling restarts name pools, failure models are known and their
  // targets exist (after placement_ is set).
  Status CheckReliability();
  // Autoscalers are known and accept their options; capacity limits name
  // known GPUs and classes. Builds capacity_.
  Status CheckScaling();
  Status MakeAutoscaler(size_t pool, std::unique_ptr<Autoscaler>* out) const;
  // The front door (admission, degradation, regions, canary) resolved
  // against the pools and registries; false in *active when the scenario
  // configures none of it (requests go straight to the router).
  Status MakeGateway(Rng balancer_rng, GatewayConfig* out, bool* active) const;

  ScenarioSpec spec_;
  // The device perf.profile describes when the catalogue lacks it; pools
  // point at it. Heap-allocated so the pointers survive moving the run.
  std::unique_ptr<GpuSpec> profile_gpu_;
  const Catalog& catalog_;
  const Policies& policies_;
  const RouterRegistry::Entry* router_ = nullptr;
  std::vector<PoolPlan> pools_;
  // Models the run owns, which pools point at: those read from a config.json
  // and zoo models given another KV cache dtype by their pool.
  std::vector<std::unique_ptr<ModelSpec>> models_;
  std::vector<std::unique_ptr<PerfModel>> perf_;  // one per pool, built in Build
  FleetPlacement placement_;
  std::unique_ptr<Topology> topology_;
  bool disaggregated_ = false;  // some pool has a prefill or decode role  // of the placed fleet (Build only: its path cache is not shared)
  // Prices what the placement decides (Build): each pool's tensor-parallel
  // ring when it spans nodes (with a warning) and its pipeline stages'
  // links, from the topology of the placed fleet.
  Status PriceLinks();
  std::vector<int> restart_pools_;  // pool index of each rolling restart
  std::vector<std::unique_ptr<ReplicaCapacity>> capacity_;  // per pool, from its perf model
};

// Peak resident set size of this process, in KiB (0 if unknown).
int64_t PeakRssKb();

}  // namespace fleetsim

// Cluster: the fleet's replicas and their lifecycles, and the routing of
// arriving requests to the ready ones.
//
// A replica goes provisioning -> starting -> ready -> draining -> stopped,
// and from any running phase to failed -> repairing (and back to starting).
// Only ready replicas are routable. Routers (and, with the issues to come,
// autoscalers) see a replica through its ReplicaView: what an operator's
// metrics would show, never the Replica itself. Failure models see the
// placement (FailureTarget).
//
// Failures (docs/reliability.md): a failed replica loses its KV cache and
// every request it holds. A crash is known at once; a hang is not: the
// replica stays in routing, its requests waiting, until health checks or
// outlier ejection remove it. The requests it let go of are retried (only
// those that have not streamed a token, within the retry budget) or fail
// to the client. Then it is replaced, repaired or stopped, per the fleet's
// recovery, and comes back after a cold start.
//
// Scaling (docs/autoscaling.md): each pool wants a number of replicas (its
// own, or its autoscaler's, decided every period from the pool's monitor)
// and the cluster starts or drains replicas to match: a start takes a warm
// worker if the pool keeps any (ready in warm_start), else a stopped slot
// through provisioning (its pricing class's delay) and a cold start; a
// drain takes no new request, lets those held finish, then stops. A start
// is refused when the GPU type has no capacity left in the pricing class
// (a limit per type and class); a spot pool then falls back to on-demand
// if allowed. Requests for a model whose pools have no ready replica wait
// in an activator queue while one is coming (a pool at zero gets one at
// once), as Knative's activator holds them.
//
// Spot replicas are reclaimed at the class's rate: a notice (the replica
// drains), then it is gone (its requests retried or failed) and the pool
// starts another to keep its count.
//
// GPU time is integrated over each replica's lifetime: from the moment it is
// provisioned (the GPUs are rented) to the moment it stops, in exact
// nanoseconds, per replica, busy (running an iteration) and idle apart; the
// run's cost is that time x each replica's price.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/cluster/autoscaler.h"
#include "sim/cluster/network.h"
#include "sim/cluster/observer.h"
#include "sim/cluster/reliability.h"
#include "sim/cluster/replica.h"
#include "sim/cluster/pool_monitor.h"
#include "sim/engine/rng.h"
#include "sim/engine/simulation.h"
#include "sim/engine/time_windows.h"

namespace fleetsim {

// kWarm: a warm-pool worker, weights loaded, taking no traffic (cost as
// the pool configures).
enum class ReplicaPhase { kProvisioning, kStarting, kReady, kDraining, kStopped, kFailed, kRepairing, kWarm };
const char* ReplicaPhaseName(ReplicaPhase phase);

// A replica as the cluster shows it: its identity, phase and load.
class ReplicaView {
 public:
  int index() const { return replica_->options().index; }
  int pool() const { return replica_->options().pool; }
  const std::string& model() const { return replica_->options().model; }
  ReplicaPhase phase() const { return phase_; }
  // Requests held (in the API server, waiting, running), or sent to it and
  // unanswered while it hangs: what a proxy counts in flight.
  int64_t outstanding() const { return replica_->outstanding() + stalled_; }
  int64_t waiting() const { return replica_->waiting(); }
  int64_t running() const { return replica_->state().num_running(); }
  double kv_utilization() const { return replica_->state().kv().utilization(); }
  // Prompt tokens of `req` held in the replica's prefix cache now: the
  // engine's true cache, which a real router does not see (oracle routing).
  int64_t CachedPrefixTokens(const Request& req) const { return replica_->CachedPrefixTokens(req); }
  // KV blocks its prefix cache holds now (0 without one): the engine's true
  // "tree size", for oracle routing.
  int64_t CachedBlocks() const {
    const PrefixCache* c = replica_->state().kv().cache();
    return c ? c->cached_blocks() : 0;
  }
  int block_size() const { return replica_->options().block_size; }
  // Its metrics as the router last scraped them (Cluster::SetMetricsScrape;
  // live ones when the interval is 0). A replica that hangs stops answering
  // scrapes: its metrics age.
  const ReplicaMetrics& metrics() const {
    if (live_metrics_) scraped_ = replica_->Metrics();
    return scraped_;
  }

 private:
  friend class Cluster;
  explicit ReplicaView(const Replica* replica) : replica_(replica) {}
  const Replica* replica_;
  mutable ReplicaMetrics scraped_;
  bool live_metrics_ = true;
  ReplicaPhase phase_ = ReplicaPhase::kProvisioning;
  int64_t stalled_ = 0;
};

class Router;

class Cluster final : private FailureTarget {
 public:
  // Requests of no model name go to `default_model`. `observer` hears of
  // requests the cluster turns away or lets go of; it must outlive the
  // cluster. GPU time is measured from `measure_from` (the warm-up's end).
  Cluster(Simulation& sim, RunObserver& observer, std::string default_model, SimTime measure_from);
  ~Cluster() override;
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  void SetRouter(std::unique_ptr<Router> router);
  // Routers that read metrics see them scraped every `interval` (0: live;
  // llm-d scrapes every 50 ms). Call before the run starts.
  void SetMetricsScrape(SimTime interval);
  // Scrape metrics even when the router reads none (the front door's
  // predicted-TTFT trigger does). Call before SetMetricsScrape.
  void RequireMetrics() { metrics_required_ = true; }
  // A route target: a set of pools that alone serve the requests sent to
  // it (Request::target), as the front door picks a region or a model
  // version. Returns its index.
  int AddTarget(std::vector<int> pools);
  // The routable replicas that may serve `req`: its target's, else its
  // model's (empty when none).
  std::span<const ReplicaView* const> Candidates(const Request& req) const;
  // Pool `pool` wants `n` replicas from now (a canary growing or being
  // rolled back): the cluster starts or drains replicas to match.
  void SetDesired(int pool, int n);
  // The index of a model served by the fleet (-1: none); Request::model_id.
  int ModelId(std::string_view model) const;
  const std::vector<std::string>& model_names() const { return model_names_; }
  const std::string& default_model() const { return default_model_; }
  // Adds a replica on `gpus` GPUs at `usd_per_gpu_hour` (unset: unpriced),
  // in `phase` from now. Its index must be the cluster's size.
  void Add(std::unique_ptr<Replica> replica, int gpus, std::optional<double> usd_per_gpu_hour,
           ReplicaPhase phase = ReplicaPhase::kReady);
  // Moves replica `i` to `phase` now.
  void SetPhase(int i, ReplicaPhase phase);

  // ---- pools: prices, scaling, spot (call before the run starts) ----
  struct PriceClass {
    std::string name = "on_demand";           // "on_demand", "reserved" (paid whether used or not), "spot"
    std::optional<double> usd_per_gpu_hour;   // unset: unpriced
    SimTime provision = 0;                    // a machine of this class, before a cold start
  };
  struct PoolConfig {
    std::string name, gpu;
    int gpus_per_replica = 1;
    PriceClass price;                    // the pool's own class
    std::optional<PriceClass> fallback;  // taken when the own class has no capacity (spot -> on_demand)
    int desired = 0;                     // replicas wanted at first
    // Null: a fixed pool (it only replaces what it loses).
    std::unique_ptr<Autoscaler> autoscaler;
    AutoscalerSpec autoscaling;          // bounds and warm pool, with an autoscaler
    SimTime warm_start = 0;              // a warm worker to ready
    double warm_cost_fraction = 1;       // of the price, while warm
    // Spot: reclaims per replica-hour, and the notice before each.
    double reclaims_per_hour = 0;
    SimTime reclaim_notice = 0;
  };
  // Pool `pool`'s replicas (added already) and how it scales; those beyond
  // the ones Add made ready wait stopped (or warm) until wanted.
  void ConfigurePool(int pool, PoolConfig config);
  struct CapacityLimit {
    std::string gpu, pricing_class;
    int64_t gpus = 0;
  };
  void SetCapacityLimits(std::vector<CapacityLimit> limits) { limits_ = std::move(limits); }
  // A request routed to a replica whose engine queue already holds `n`
  // waiting requests is rejected ("replica_queue_full"), as an engine
  // with a bounded queue answers 503 (0: no limit).
  void SetReplicaQueueLimit(int64_t n) { replica_queue_limit_ = n; }
  // A request waiting in the activator queue longer than this fails to its
  // client ("activator_timeout").
  void SetActivatorTimeout(SimTime t) { activator_timeout_ = t; }
  // Starts the autoscalers, monitors and spot reclaims (after ConfigurePool).
  void StartScaling();
  bool scaling() const { return scaling_; }
  // Events that recur for ever (scaling, metric scrapes): the runner ends
  // the run when the traffic is done rather than when no event is left.
  bool periodic() const;
  // A request ended (the pool's monitor counts those completed).
  void OnRequestEnded(const RequestRecord& rec);
  // What scaling did, up to `to`.
  struct Scaling {
    int64_t scale_ups = 0, scale_downs = 0;  // replicas started / drained or cancelled by scaling
    int64_t refused = 0;                     // starts refused: no capacity in the class (nor its fallback)
    int64_t fallbacks = 0;                   // starts that took the fallback class
    int64_t spot_reclaims = 0;
    int replicas_min = 0, replicas_max = 0;  // ready replicas of scaled pools, fewest and most
    double replica_seconds = 0;              // replicas of scaled pools not stopped, integrated
  };
  Scaling ScalingUntil(SimTime to) const;
  // The replica's cost rate now, $/hour (0 stopped; unset: unpriced).
  std::optional<double> UsdPerHour(int i) const;

  // ---- reliability (call before the run starts) ----
  struct Placement {
    std::vector<int> nodes;  // one, or those a replica larger than a node spans
    SimTime provision = 0;  // a replacement's machine, before its start
    SimTime start = 0;      // container start + weight load + warm-up
    // GPU-hours per failure of one of its GPUs, when a failure model gives
    // none (FailureTarget::replica_gpu_hours_per_failure).
    double gpu_hours_per_failure = kLlama3GpuHoursPerInterruption;
  };
  // Where replica `i` runs and how long it takes to come up.
  void Place(int i, const Placement& placement);
  // The nodes' racks and zones: node n is in rack rack_of[n], zone
  // zone_of[n] (an index into `zones`).
  void SetNodes(std::vector<int> rack_of, std::vector<int> zone_of, std::vector<std::string> zones);
  // Pool p needs `required` ready replicas (its replicas without spares):
  // what availability.capacity measures.
  void SetRequired(int pool, int required);
  // Settings, failure models (started now) and rolling restarts.
  void SetReliability(const ReliabilitySpec& spec, std::vector<std::unique_ptr<FailureModel>> models,
                      std::vector<int> restart_pools);

  // An arriving request: to a ready replica of its model (the router picks),
  // or turned away: "unknown_model" when no replica serves its model,
  // "no_ready_replica" when none of those is ready, "circuit_open" when
  // every one holds max_requests_per_replica.
  void Route(Request&& req);

  // Disaggregated serving. Pools of role kPrefill serve the router's
  // requests with one output token; each prefilled request's KV then moves
  // over `network` from its replica's GPUs to a decode replica's (each
  // source GPU sends its share to the GPU of the same rank, modulo the
  // decode replica's), chosen among the ready decode-role replicas of its
  // model by `pick`, which decodes the rest. TTFT convention: with
  // `ttft_from_prefill` the first token reaches the client from the prefill
  // replica (DistServe, Splitwise) and the decode side produces the rest;
  // otherwise (vLLM's disaggregated proxy, the default) the decode replica
  // produces every output token, the first after the transfer, and the
  // prefill replica's token is dropped.
  struct Disaggregation {
    enum class Pick { kLeastOutstanding, kMostFreeKv };
    Pick pick = Pick::kLeastOutstanding;
    bool ttft_from_prefill = false;
    Network* network = nullptr;                    // must outlive the cluster
    std::vector<std::vector<int>> replica_gpus;    // by replica index
    std::vector<double> kv_bytes_per_token;        // by pool: the whole replica's KV of one token
    // Called for each KV transfer when its last byte has arrived: its
    // bytes and its time from start to that byte.
    std::function<void(double bytes, SimTime latency)> on_transfer;
  };
  void SetDisaggregation(Disaggregation d);
  const Network* network() const { return disagg_ ? disagg_->network : nullptr; }

  int size() const { return static_cast<int>(replicas_.size()); }
  Replica& replica(int i) { return *replicas_[i].replica; }
  const ReplicaView& view(int i) const { return replicas_[i].view; }
  // The replica's state as it is (a hung replica is "failed" here while
  // routers still see it ready).
  const char* StateName(int i) const;
  // Requests routed to replica `i` since the previous call.
  int64_t TakeArrivals(int i);
  // No request held anywhere (replicas, hung replicas, retries waiting), no
  // iteration running.
  bool Idle() const;
  // End of run: every request still held is reported unfinished.
  void ReportUnfinished(SimTime end, std::string_view reason);

  // GPU time (GPU-nanoseconds) of the replicas from measure_from to `to`:
  // while not stopped, and of that while running iterations (busy: the
  // iterations that ended by `to`).
  struct Usage {
    __int128 gpu_ns = 0;
    __int128 busy_gpu_ns = 0;
    // Sum of GPU-nanoseconds x $/GPU-hour; unset when an unpriced replica
    // ran in the window.
    std::optional<long double> usd_gpu_ns;
    // The same per pool and pricing class, in order of pool then class.
    struct Part {
      int pool = 0;
      std::string pricing_class;
      __int128 gpu_ns = 0, busy_gpu_ns = 0;
      std::optional<long double> usd_gpu_ns;
    };
    std::vector<Part> parts;
  };
  Usage UsageUntil(SimTime to) const;

  // What failures did, up to `to` (failures after it are not counted).
  struct Reliability {
    int64_t events = 0;            // failure events (a node's failure is one)
    int64_t replica_failures = 0;  // replicas they took down
    std::vector<std::pair<std::string, int64_t>> by_cause;  // cause -> events, in first-seen order
    int64_t requests_failed = 0;   // failed to the client because of a failure or a drain
    int64_t requests_retried = 0;  // retried at least once
    int64_t retries = 0;
    int64_t partial_output_tokens = 0;  // tokens failed requests had streamed
    int64_t detected = 0;          // replica failures noticed (removed from routing)
    double detection_delay_s_sum = 0;
    double downtime_s = 0;         // replica-seconds from failure to ready again (or `to`)
    // Fraction of [measure_from, to) with every pool at its required ready
    // replicas (1 when the window is empty).
    double capacity_availability = 1;
    int64_t restarts_done = 0;     // replicas restarted by rolling restarts
    double restart_s = 0;          // first drain to last replica back (0: none)
    int min_ready_during_restart = -1;  // fewest ready replicas of a restarting pool (-1: none)
  };
  Reliability ReliabilityUntil(SimTime to) const;
  // Failure windows: from a replica's failure until it is ready again.
  const TimeWindows& failure_windows() const { return failure_windows_; }
  const TimeWindows& restart_windows() const { return restart_windows_; }

 private:
  struct Member {
    std::unique_ptr<Replica> replica;
    ReplicaView view{nullptr};
    int gpus = 0;
    std::optional<double> usd_per_gpu_hour;
    // Phases with their start times and pricing class (an index into the
    // pool's classes; -1: the price given to Add), in order.
    struct Segment {
      SimTime at;
      ReplicaPhase phase;
      int cls;
    };
    std::vector<Segment> history;
    int cls = -1;
    // Busy time per class: accrued at each change of class.
    SimTime class_busy[2] = {0, 0};
    SimTime busy_mark = 0;
    bool to_warm = false;        // provisioning or starting into the warm pool
    bool stopping = false;       // draining to stop (scale-down, spot notice): a failure stops it
    int64_t arrivals = 0;
    // Disaggregation: requests whose KV is on its way here, and their
    // tokens; the decode pick counts them as if they had arrived.
    int32_t inbound = 0;
    int64_t inbound_tokens = 0;
    Placement placement;
    // Reliability. `down`: failed (hung or dead) and not yet back; a hung
    // replica stays routable until noticed.
    bool down = false;
    bool noticed = false;
    FailureKind kind = FailureKind::kHang;
    SimTime down_since = 0;
    SimTime ready_since = 0;     // health checks count from here
    uint64_t epoch = 0;          // bumped by every failure and restart: stale events check it
    int downtime = -1;           // its entry in downtimes_ while down
    std::vector<Replica::Evicted> stalled;  // held by a hung replica
    int consecutive_errors = 0;
    int times_ejected = 0;
    bool ejected = false;
    bool restarting = false;     // in a rolling restart
  };
  struct Incident {
    SimTime at = 0;
    std::string cause;
    int replicas = 0;
  };
  struct Downtime {
    SimTime from = 0, to = kTimeNever;
  };

  // FailureTarget.
  int num_replicas() const override { return size(); }
  int replica_gpus(int r) const override { return replicas_[r].gpus; }
  double replica_gpu_hours_per_failure(int r) const override { return replicas_[r].placement.gpu_hours_per_failure; }
  int num_nodes() const override { return static_cast<int>(node_replicas_.size()); }
  const std::vector<int>& node_replicas(int node) const override { return node_replicas_[node]; }
  int num_racks() const override { return static_cast<int>(rack_nodes_.size()); }
  const std::vector<int>& rack_nodes(int rack) const override { return rack_nodes_[rack]; }
  const std::vector<std::string>& zones() const override { return zones_; }
  const std::vector<int>& zone_nodes(int zone) const override { return zone_nodes_[zone]; }
  SimTime now() const override { return sim_.now(); }
  void At(SimTime t, std::function<void()> fn) override;
  void Fail(const std::vector<int>& replicas, FailureKind kind, std::optional<SimTime> repair,
            std::string_view cause) override;

  void RebuildReady();
  // A hung replica holds `e` unanswered, until it is noticed or `e` times out.
  void Stall(int i, Replica::Evicted e);
  bool Routable(const Member& m) const { return m.view.phase_ == ReplicaPhase::kReady && !m.ejected; }
  bool Serving(const Member& m) const { return m.view.phase_ == ReplicaPhase::kReady && !m.down; }
  // Phase change plus the serving count of its pool (availability).
  void Transition(int i, ReplicaPhase phase);
  void AccrueCapacity();
  // Pool `pool` gains `serving` ready-and-serving replicas and needs
  // `required` more (either may be negative); keeps short_pools_.
  void AddServing(int pool, int serving, int required);
  // The health checks' verdict on a replica that hung at `at`.
  SimTime HealthCheckRemoval(const Member& m, SimTime at) const;
  // The fleet knows replica i is down: out of routing, its requests let go.
  void Notice(int i);
  void StartRecovery(int i, std::optional<SimTime> repair);
  void BackUp(int i);
  // Requests a replica let go of: retried or failed to the client.
  void Release(std::vector<Replica::Evicted> held, int from, std::string_view reason);
  void Retry(Replica::Evicted e, int from);
  // Route, never to replica `avoid` while another is ready (a retry skips
  // the replica that failed it, as Envoy's previous_hosts predicate does).
  void RouteAvoiding(Request&& req, int avoid);
  void FailRequest(Replica::Evicted& e, std::string_view reason);
  void OnRequestError(int i);
  void RetriedEnded() { --active_retries_; }
  static void SyncStalled(Member& m) { m.view.stalled_ = static_cast<int64_t>(m.stalled.size()); }
  int64_t ActiveRequests() const;
  // Rolling restarts.
  void RestartNextBatch(size_t r);
  void PollDrain(size_t r, int i, uint64_t epoch, SimTime deadline);

  Simulation& sim_;
  RunObserver& observer_;
  std::string default_model_;
  SimTime measure_from_;
  std::unique_ptr<Router> router_;
  std::vector<Member> replicas_;
  // Model -> its routable replicas, in index order; models_ lists every
  // model served, ready or not, with its replica count.
  std::map<std::string, std::vector<const ReplicaView*>, std::less<>> ready_;
  // Ready decode-role replicas by model (not the router's candidates).
  std::map<std::string, std::vector<const ReplicaView*>, std::less<>> decode_ready_;
  std::optional<Disaggregation> disagg_;
  std::map<std::string, int, std::less<>> decode_models_;  // models with decode-role replicas
  // A prefill replica prefilled `req`: moves its KV to a decode replica.
  void HandOff(int from, const Request& req, const RequestRecord& rec);
  // The ready decode replica `req` goes to (-1: none).
  int PickDecode(const Request& req) const;
  std::map<std::string, int, std::less<>> models_;
  std::vector<std::string> model_names_;  // in order of first replica
  // Route targets: their pools, and their routable replicas in index order.
  std::vector<std::vector<int>> targets_;
  std::vector<std::vector<const ReplicaView*>> target_ready_;
  SimTime scrape_interval_ = 0;
  int64_t replica_queue_limit_ = 0;
  bool metrics_required_ = false;
  bool Scraped() const;  // someone reads the scraped metrics
  void Scrape();
  std::map<std::string, int, std::less<>> ejected_;  // model -> replicas ejected now

  // Placement.
  std::vector<std::vector<int>> node_replicas_, rack_nodes_, zone_nodes_;
  std::vector<std::string> zones_;

  // Reliability.
  ReliabilitySpec spec_;
  bool reliable_ = false;  // SetReliability was called with something to do
  std::vector<std::unique_ptr<FailureModel>> models_run_;
  Rng retry_rng_;
  std::vector<Incident> incidents_;
  std::vector<Downtime> downtimes_;  // one per replica failure
  std::vector<std::pair<SimTime, double>> detections_;  // when, delay (s)
  int64_t requests_failed_ = 0, requests_retried_ = 0, retries_ = 0, partial_tokens_ = 0;
  int64_t active_retries_ = 0;
  // Retries backing off, by sequence number, with the replica they failed on.
  std::map<uint64_t, std::pair<Request, int>> retry_wait_;
  uint64_t next_retry_ = 0;
  TimeWindows failure_windows_, restart_windows_;
  // Availability: pools below their required ready replicas, and the time
  // with none below, accrued up to capacity_at_.
  std::vector<int> required_, serving_;
  int short_pools_ = 0;
  SimTime capacity_ok_ns_ = 0, capacity_at_ = 0;
  // Rolling restarts: per restart, its pool's replicas not yet restarted,
  // and the batch in progress.
  struct Restart {
    RollingRestartSpec spec;
    int pool = 0;
    std::vector<int> todo;
    std::vector<int> batch;
    SimTime began = -1, ended = -1;
    int min_ready = -1;
  };
  std::vector<Restart> restarts_;
  std::vector<SimTime> restart_drains_;  // when each restarted replica began to drain

  // Pools.
  struct PoolRun {
    PoolConfig config;
    std::vector<int> members;
    int desired = 0;
    std::unique_ptr<PoolMonitor> monitor;
    int64_t arrivals = 0;        // since the last sample
    Rng spot_rng{0};
    // Ready replicas over time (scaled pools): (since, count).
    std::vector<std::pair<SimTime, int>> ready_steps;
  };
  const PriceClass* ClassOf(const Member& m, int cls) const;
  void Reconcile(int pool);
  bool StartOne(int pool, bool to_warm);
  bool StopOne(int pool);
  void PollStop(int i, uint64_t epoch);
  void Decide(int pool);
  void SamplePool(int pool);
  void ScheduleReclaim(int i);
  void SetClass(int i, int cls);
  bool HasCapacity(const PoolRun& pr, const PriceClass& c) const;
  // Requests held for a model with no ready replica while one is coming in
  // `pool` (an autoscaled pool of the request's model and target).
  void Buffer(Request&& req, int pool);
  void FlushBuffered(const std::string& model);
  void NoteReady(int pool);
  std::vector<PoolRun> pools_;
  std::vector<CapacityLimit> limits_;
  bool scaling_ = false;
  SimTime activator_timeout_ = 300 * kSecond;
  std::map<std::string, std::vector<Request>, std::less<>> buffered_;
  int64_t buffered_count_ = 0;
  Scaling scaled_;
};

}  // namespace fleetsim

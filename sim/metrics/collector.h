// MetricsCollector: turns what the cluster reports into the run's outputs:
// requests.csv and timeseries.csv streamed as the run goes, trace.json
// (Chrome trace-event format, opened by ui.perfetto.dev) when asked, and at
// the end a Summary (summary.json and the stdout table).
//
// Per-request latencies (TTFT, TPOT, E2E, queue) are kept exactly, 4
// doubles per request in the measurement window, up to
// MetricsOptions::exact_latency_limit measured requests; past that they move
// into LogHistograms (mergeable, within 0.4%), so memory follows the work in
// flight, not the requests seen. Inter-token latencies always go to a
// LogHistogram.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "sim/cluster/gateway.h"
#include "sim/cluster/observer.h"
#include "sim/engine/time_windows.h"
#include "sim/metrics/histogram.h"
#include "sim/metrics/overload.h"
#include "sim/metrics/text_out.h"

namespace fleetsim {

struct MetricsOptions {
  SimTime warmup = 0;  // requests arriving earlier are counted but not measured
  std::optional<double> ttft_slo_ms;
  std::optional<double> tpot_slo_ms;
  std::string requests_csv;    // path; empty: not written
  std::string timeseries_csv;  // path; empty: not written
  std::string trace_json;      // path; empty: no trace
  // path; empty: not written. At Close: the histogram behind the summary's
  // itl figures (token gaps ending at or after warm-up), one row per
  // non-empty bucket: low_ms,high_ms (exclusive),count.
  std::string itl_csv;
  // With a trace: record only requests with id < trace_requests, and the
  // iterations that start before request trace_requests arrives (-1: all).
  int64_t trace_requests = -1;
  std::vector<std::string> replica_names;  // trace track names, by replica index
  // Measured requests whose latencies are kept exactly; beyond, histograms.
  int64_t exact_latency_limit = 1000000;
};

// What identifies a run, for summary.json's "run" section.
struct RunIdentity {
  std::string scenario;        // the scenario's name (or file name)
  std::string scenario_sha256; // of the scenario file's bytes
  std::string inputs_sha256;   // of the scenario, every file it reads and the overrides
  uint64_t seed = 0;
  std::string fleetsim_version;
  std::vector<std::string> overrides;  // --set KEY=VALUE, in order
};

// The groups a request belongs to (RequestRecord::priority, tenant, model,
// region, degraded), named for summary.json's per-group figures: classes,
// tenants, models and regions by name, and degraded.{requests, by_reason}.
// An empty list reports no such section.
struct GroupNames {
  std::vector<std::pair<int32_t, std::string>> classes;  // priority value -> class name
  std::vector<std::string> tenants, models, regions;     // by index
  std::vector<std::string> degrade_reasons;              // by code (index 0: not degraded); empty: no section
};

// What the collector cannot see for itself, given at the end.
struct RunFacts {
  RunIdentity identity;
  SimTime end = 0;          // when the run stopped: the last completion, or duration_s with work left
  uint64_t events = 0;
  bool hit_duration = false;  // stopped by duration_s with work left
  struct Pool {
    std::string name;
    std::string model, gpu, scheduler, engine;
    bool async_scheduling = false;  // the engine overlaps scheduling with the GPU's step
    int tp = 1, pp = 1;
    int ep = 1, dp = 1;  // written when above 1
    double expert_load_skew = 1;  // ep > 1: the busiest GPU's routed tokens over the mean, written when above 1
    int redundant_experts = 0;    // a balancer's expert copies, written when above 0
    std::string speculative;  // the proposer ("Llama-3.1-8B", "eagle"); empty: none
    int replicas = 0;
    int gpus_per_replica = 0;
    std::optional<double> usd_per_gpu_hour;  // nullopt: no price known
    std::string price_source;
  };
  std::vector<Pool> pools;
  std::vector<std::pair<std::string, std::string>> perf_sources;  // kind -> source
  int64_t preemptions = 0;
  bool prefix_caching = false;         // on in some pool
  int64_t prefix_hit_tokens = 0;       // prompt tokens served from the cache
  int64_t prefix_prompt_tokens = 0;    // prompt tokens admitted (first admissions)
  int64_t prefix_evicted_blocks = 0;
  // GPU time integrated over the replicas' lifetimes in the window
  // (Cluster::UsageUntil): GPU-nanoseconds, and GPU-nanoseconds x $/GPU-hour
  // (unset: some replica that ran has no price). Unset: pools x window.
  std::optional<long double> gpu_ns;
  std::optional<long double> usd_gpu_ns;
  // Of gpu_ns, the GPU time spent running iterations (the rest was idle).
  std::optional<long double> busy_gpu_ns;
  // Set when the scenario configures failures or rolling restarts
  // (Cluster::ReliabilityUntil, in the summary's terms).
  struct Reliability {
    int64_t events = 0, replica_failures = 0;
    std::vector<std::pair<std::string, int64_t>> by_cause;
    int64_t requests_failed = 0, requests_retried = 0, retries = 0, partial_output_tokens = 0;
    int64_t detected = 0;
    std::optional<double> detection_delay_s_mean;
    double replica_downtime_s = 0;
    double capacity = 1;
    int64_t restarts = 0;
    double restart_s = 0;
    int min_ready_during_restart = -1;
  };
  std::optional<Reliability> reliability;
  // Paid GPU time per pool and pricing class (Cluster::UsageUntil's parts).
  struct CostPart {
    std::string pool, pricing_class;
    long double gpu_ns = 0, busy_gpu_ns = 0;
    std::optional<long double> usd_gpu_ns;
  };
  std::vector<CostPart> cost_parts;
  // Set when some pool autoscales or runs on spot (Cluster::ScalingUntil).
  struct Autoscaling {
    int64_t scale_ups = 0, scale_downs = 0, refused = 0, fallbacks = 0, spot_reclaims = 0;
    int replicas_min = 0, replicas_max = 0;
    double replica_seconds = 0;
  };
  std::optional<Autoscaling> autoscaling;
  // Set when the scenario rolls out a canary (Gateway::canary).
  std::optional<CanaryReport> canary;
  // Disaggregated fleets: the KV transfers (count, bytes, latency from the
  // first byte sent to the last received, ms).
  struct Transfers {
    int64_t count = 0;
    double bytes = 0;
    double latency_ms_p50 = 0, latency_ms_p99 = 0;
  };
  std::optional<Transfers> transfers;
  // Links that carried transfers or pipeline sends: name and the share of
  // the window they were busy, in the topology's link order.
  std::vector<std::pair<std::string, double>> link_busy_fraction;
  // The router, and each replica's busy fraction over the window (time in
  // iterations / window), for routing.load_imbalance.
  std::string router;
  std::vector<double> replica_busy_fraction;
};

// One group's figures (a class, tenant, model or region).
struct GroupSummary {
  std::string name;
  int64_t arrived = 0, completed = 0, rejected = 0, failed = 0, unfinished = 0, measured = 0;
  struct Latency {
    int64_t count = 0;
    std::optional<double> mean, p50, p90, p99;
  };
  Latency ttft, tpot, e2e;  // ms, of measured completed requests (log histograms)
  std::optional<double> attainment;  // of measured requests, with an SLO
};

// Figures in ms; all unset when count is 0 (undefined, written as null).
struct Distribution {
  int64_t count = 0;
  std::optional<double> mean, p50, p90, p95, p99, max;
};

struct Summary {
  static constexpr int kSchemaVersion = 2;
  RunIdentity identity;
  std::vector<RunFacts::Pool> pools;
  int64_t fleet_replicas = 0, fleet_gpus = 0;
  int64_t arrived = 0, completed = 0, rejected = 0, failed = 0, unfinished = 0;
  int64_t measured = 0;          // arrived at or after warm-up
  int64_t single_token = 0;      // completed with one output token: no TPOT
  int64_t truncated = 0;         // lengths cut to max_model_len (also in reasons)
  Distribution ttft, tpot, itl, e2e, queue;
  bool exact_percentiles = true;  // false: request latencies came from histograms (> exact_latency_limit)
  double window_s = 0;
  // Unset (null) when the window is empty or nothing was measured.
  std::optional<double> requests_per_s, output_tokens_per_s, input_tokens_per_s;
  bool has_slo = false;
  std::optional<double> ttft_slo_ms, tpot_slo_ms;
  std::optional<double> attainment, goodput_rps;
  double gpu_hours = 0;
  std::optional<double> busy_gpu_hours;  // of gpu_hours, running iterations
  std::optional<double> idle_share;      // 1 - busy / paid GPU time
  struct CostPart {
    std::string pool, pricing_class;
    double gpu_hours = 0, busy_gpu_hours = 0;
    std::optional<double> usd;
  };
  std::vector<CostPart> cost_by_pool;
  std::optional<RunFacts::Autoscaling> autoscaling;
  std::optional<CanaryReport> canary;
  std::optional<RunFacts::Transfers> transfers;
  std::vector<std::pair<std::string, double>> link_busy_fraction;
  // Per pool: GPU time and utilisation (busy / paid GPU time).
  struct PoolFigures {
    std::string name;
    int replicas = 0;
    double gpu_hours = 0, busy_gpu_hours = 0;
    std::optional<double> utilisation;
  };
  std::vector<PoolFigures> pool_figures;
  std::string router;
  // max / mean busy fraction over the replicas (unset: none was busy).
  std::optional<double> load_imbalance, busy_fraction_max, busy_fraction_mean;
  std::vector<GroupSummary> classes, tenants, models, regions;
  bool has_degraded = false;
  int64_t degraded = 0;
  std::vector<std::pair<std::string, int64_t>> degraded_by_reason;
  std::optional<double> usd_per_hour, total_usd, usd_per_million_output_tokens, usd_per_million_total_tokens;
  uint64_t events = 0;
  double simulated_s = 0;
  std::optional<double> drain_s;  // last arrival to last completion
  int64_t preemptions = 0;
  bool prefix_caching = false;
  double prefix_hit_rate = 0;
  int64_t prefix_hit_tokens = 0, prefix_evicted_blocks = 0;
  bool overloaded = false;
  OverloadVerdict overload;
  std::vector<std::pair<std::string, std::string>> perf_sources;
  std::vector<std::pair<std::string, int64_t>> reasons;  // non-completed reasons -> count
  std::vector<std::string> warnings;
  // Failures and rolling restarts (summary.json "failures", "availability",
  // "restarts"; slo.attainment_* inside and outside their windows).
  std::optional<RunFacts::Reliability> reliability;
  std::optional<double> availability_requests;  // completed / arrived
  std::optional<double> attainment_in_failures, attainment_outside_failures, attainment_in_restarts;
  int64_t measured_in_failures = 0, measured_in_restarts = 0;
};

class MetricsCollector final : public RunObserver {
 public:
  // Opens the output files named in `options`.
  static Status Open(const MetricsOptions& options, std::unique_ptr<MetricsCollector>* out);
  ~MetricsCollector() override;

  void OnArrival(const Request& r, int replica) override;
  void OnFinished(const RequestRecord& rec) override;
  void OnTokenGaps(SimTime at, SimTime gap, int64_t count) override;
  void OnDecodeSteps(const DecodeStepRun& run) override;
  void OnIteration(int replica, SimTime start, SimTime end, const BatchShape& shape) override;
  // Only the trace records iterations, and none after its cut.
  bool WantsIterations() const override { return trace_.is_open() && trace_cut_ < 0; }
  void OnSample(const ReplicaSample& sample) override;
  void OnReplicaEvent(int replica, SimTime at, std::string_view event) override;
  // Measured requests are also counted by whether they arrived inside a
  // failure window or a rolling restart (the cluster's; they must outlive
  // the collector's use).
  void SetWindows(const TimeWindows* failures, const TimeWindows* restarts) {
    failure_windows_ = failures;
    restart_windows_ = restarts;
  }
  // The per-group figures to keep (before the first request).
  void SetGroups(GroupNames names);

  int64_t arrived() const { return arrived_; }
  int64_t finished() const { return finished_; }
  SimTime last_arrival() const { return last_arrival_; }
  SimTime max_arrival_gap() const { return max_gap_; }
  // The last request to leave (completed, rejected or failed); -1 if none.
  SimTime last_finish() const { return last_finish_; }
  // The trace holds a sample (MetricsOptions::trace_requests cut it).
  bool trace_sampled() const { return trace_cut_ >= 0; }

  // Builds the summary; then Close() flushes the files.
  Summary Summarize(const RunFacts& facts) const;
  Status Close();

 private:
  explicit MetricsCollector(const MetricsOptions& options);

  MetricsOptions options_;
  BufferedFile requests_, timeseries_, trace_;
  int64_t arrived_ = 0, finished_ = 0;
  int64_t completed_ = 0, rejected_ = 0, failed_ = 0, unfinished_ = 0;
  int64_t measured_ = 0, measured_completed_ = 0, single_token_ = 0, met_slo_ = 0, truncated_ = 0;
  int64_t out_tokens_ = 0, in_tokens_ = 0;
  // Exact values (ms) up to exact_latency_limit, then histograms (ns).
  class Latencies {
   public:
    void Add(double ms);
    void ToHistogram();
    bool exact() const { return exact_; }
    Distribution Describe() const;

   private:
    bool exact_ = true;
    std::vector<double> ms_;
    LogHistogram ns_;
  };
  Latencies ttft_, tpot_, e2e_, queue_;
  LogHistogram itl_;
  OverloadMonitor overload_;
  std::vector<std::pair<std::string, int64_t>> reasons_;
  SimTime last_arrival_ = -1, last_finish_ = -1, max_gap_ = 0;
  SimTime trace_cut_ = -1;  // iterations from here on are not traced
  const TimeWindows* failure_windows_ = nullptr;
  const TimeWindows* restart_windows_ = nullptr;
  // Measured requests that arrived in a failure window (and met the SLO),
  // and in a rolling restart.
  int64_t in_fail_ = 0, in_fail_met_ = 0, in_restart_ = 0, in_restart_met_ = 0;
  // Per-group figures: bounded (log histograms), whatever the run's length.
  struct GroupStats {
    int64_t arrived = 0, completed = 0, rejected = 0, failed = 0, unfinished = 0, measured = 0, met = 0;
    LogHistogram ttft, tpot, e2e;  // ns
  };
  void CountGroups(const RequestRecord& rec, bool measured, bool met, SimTime tpot_ns);
  GroupNames groups_;
  std::vector<GroupStats> by_class_, by_tenant_, by_model_, by_region_;
  std::vector<int64_t> degraded_;  // by reason code
};

// The stdout table: a few lines a person reads.
std::string FormatSummaryTable(const Summary& s);
// summary.json: stable keys, byte-identical for a seed.
std::string SummaryToJson(const Summary& s);

}  // namespace fleetsim

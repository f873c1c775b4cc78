// MetricsCollector: turns what the cluster reports into the run's outputs:
// requests.csv and timeseries.csv streamed as the run goes, trace.json
// (Chrome trace-event format, opened by ui.perfetto.dev) when asked, and at
// the end a Summary (summary.json and the stdout table).
//
// Per-request latencies (TTFT, TPOT, E2E, queue) are kept exactly, 4
// doubles per request in the measurement window; inter-token latencies go
// to a LogHistogram (bounded memory, within 1%).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "sim/cluster/observer.h"
#include "sim/metrics/histogram.h"
#include "sim/metrics/text_out.h"

namespace fleetsim {

struct MetricsOptions {
  SimTime warmup = 0;  // requests arriving earlier are counted but not measured
  std::optional<double> ttft_slo_ms;
  std::optional<double> tpot_slo_ms;
  std::string requests_csv;    // path; empty: not written
  std::string timeseries_csv;  // path; empty: not written
  std::string trace_json;      // path; empty: no trace
  std::vector<std::string> replica_names;  // trace track names, by replica index
};

// What the collector cannot see for itself, given at the end.
struct RunFacts {
  SimTime end = 0;          // when the run stopped
  uint64_t events = 0;
  bool hit_duration = false;  // stopped by duration_s with work left
  struct Pool {
    std::string name;
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
};

struct Distribution {
  int64_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, max = 0;  // ms
};

struct Summary {
  int64_t arrived = 0, completed = 0, rejected = 0, failed = 0, unfinished = 0;
  int64_t measured = 0;          // arrived at or after warm-up
  int64_t single_token = 0;      // completed with one output token: no TPOT
  Distribution ttft, tpot, itl, e2e, queue;
  double window_s = 0;
  double requests_per_s = 0, output_tokens_per_s = 0, input_tokens_per_s = 0;
  bool has_slo = false;
  std::optional<double> ttft_slo_ms, tpot_slo_ms;
  double attainment = 0, goodput_rps = 0;
  double gpu_hours = 0;
  std::optional<double> total_usd, usd_per_million_output_tokens;
  uint64_t events = 0;
  double simulated_s = 0;
  int64_t preemptions = 0;
  bool prefix_caching = false;
  double prefix_hit_rate = 0;
  int64_t prefix_hit_tokens = 0, prefix_evicted_blocks = 0;
  bool overloaded = false;
  double queue_growth_per_s = 0;
  std::vector<std::pair<std::string, std::string>> perf_sources;
  std::vector<std::pair<std::string, int64_t>> reasons;  // non-completed reasons -> count
  std::vector<std::string> warnings;
};

class MetricsCollector final : public RunObserver {
 public:
  // Opens the output files named in `options`.
  static Status Open(const MetricsOptions& options, std::unique_ptr<MetricsCollector>* out);
  ~MetricsCollector() override;

  void OnArrival(const Request& r, int replica) override;
  void OnFinished(const RequestRecord& rec) override;
  void OnTokenGaps(SimTime at, SimTime gap, int64_t count) override;
  void OnIteration(int replica, SimTime start, SimTime end, const BatchShape& shape) override;
  void OnSample(const ReplicaSample& sample) override;

  int64_t arrived() const { return arrived_; }
  int64_t finished() const { return finished_; }

  // Builds the summary; then Close() flushes the files.
  Summary Summarize(const RunFacts& facts) const;
  Status Close();

 private:
  explicit MetricsCollector(const MetricsOptions& options);

  MetricsOptions options_;
  BufferedFile requests_, timeseries_, trace_;
  int64_t arrived_ = 0, finished_ = 0;
  int64_t completed_ = 0, rejected_ = 0, failed_ = 0, unfinished_ = 0;
  int64_t measured_ = 0, measured_completed_ = 0, single_token_ = 0, met_slo_ = 0;
  int64_t out_tokens_ = 0, in_tokens_ = 0;
  std::vector<double> ttft_ms_, tpot_ms_, e2e_ms_, queue_ms_;
  LogHistogram itl_;
  std::vector<std::pair<std::string, int64_t>> reasons_;
  std::vector<int64_t> waiting_by_second_;  // summed over replicas
  SimTime last_arrival_ = 0;
  bool trace_first_ = true;
};

// The stdout table: a few lines a person reads.
std::string FormatSummaryTable(const Summary& s);
// summary.json: stable keys, byte-identical for a seed.
std::string SummaryToJson(const Summary& s);

}  // namespace fleetsim

// EngineFit: fits an engine profile's terms to observed runs of a real
// server by replaying each run through the simulator.
//
// Each observed run gives its requests (arrival times and lengths, or the
// order and lengths of a closed-loop benchmark's requests with its
// concurrency) and what the clients measured: TTFT, TPOT and ITL at p50 and
// p90, and output throughput. A replay runs the base scenario's fleet (one
// pool: model, GPU, tp, scheduler) on exactly those requests with candidate
// engine terms, and compares the same figures.
//
// Fitted terms (model/engine_spec.h): step_cpu_us, seq_cpu_us,
// prefill_token_cpu_us, server_request_us and server_prompt_token_us. The GPU kernels stay as the perf model prices them.
// The objective is the sum of squared log ratios simulated / observed,
// each run weighted by 1 / (its number of figures) so that every run counts
// the same; a run with per-request TTFT and end-to-end times adds each as
// one more figure (the mean squared log ratio over its requests); it is minimised by Levenberg-Marquardt (Eigen) with forward
// differences, the terms kept non-negative, from three starts (the
// profile's terms, and each 2.5 and 0.4 times as large: the objective is
// step-wise and has local minima), the best end kept. Deterministic: the
// same runs and seed give the same terms.
//
// Cross-validation: with two runs or more, each run is left out in turn,
// the terms fitted on the others and the left-out run predicted.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/catalog.h"
#include "model/engine_spec.h"
#include "sim/runner/run.h"
#include "sim/scenario/scenario_spec.h"
#include "sim/traffic/request.h"

namespace fleetsim {

// The figures compared, in this order in every table (ms, throughput in
// output tokens per second). Means come after the percentiles because
// published figures are often means only.
inline constexpr const char* kFitMetrics[] = {"ttft_p50",  "ttft_p90",  "tpot_p50", "tpot_p90",
                                              "itl_p50",   "itl_p90",   "output_tokens_per_s",
                                              "ttft_mean", "tpot_mean", "itl_mean", "e2e_p50", "e2e_mean"};
inline constexpr int kNumFitMetrics = 12;
// The index of a metric's name in kFitMetrics, or -1.
int FitMetricIndex(std::string_view name);

struct FitFigures {
  std::optional<double> values[kNumFitMetrics];  // ms, or tokens per second for throughput
};

struct ReplayRun {
  std::string name;               // the observed file, or a measurement's id
  // The run's own scenario (one pool: model, GPU, tp, scheduler, engine), or
  // null for the base scenario given to FitEngine. A measurement set
  // (sim/fit/measurement_set.h) gives each run its own.
  std::shared_ptr<const ScenarioSpec> scenario;
  // Where the run was read, for messages ("set.json: runs[3]"); empty: name.
  std::string origin;
  // False for a run of the engine without its API server (vLLM's offline
  // LLM class, benchmark_latency.py): the server terms do not apply.
  bool server = true;
  std::vector<Request> requests;  // arrival (open loop) and lengths, in order
  std::optional<int64_t> concurrency;  // set: closed loop with this many clients
  FitFigures observed;
  // Per request, in the order of `requests` (empty, or NaN for a request the
  // tool did not time): what each client measured. They pin the terms that
  // depend on a request's own length (the server's per-prompt-token time
  // against its per-request time), which percentiles over mixed lengths
  // cannot tell apart.
  std::vector<double> ttft_ms, e2e_ms;
};

// The fitted terms, in this order.
// decode_token_cpu_us is not fitted: without speculative decoding every
// decoding sequence feeds one token, so it cannot be told from seq_cpu_us
// (it keeps the base profile's value); nor is server_output_token_us, which
// shifts TTFT exactly as server_request_us does.
// tp_step_cpu_us moves only runs at tp > 1; a fit without them keeps it.
inline constexpr const char* kFitTerms[] = {"step_cpu_us",       "seq_cpu_us",        "prefill_token_cpu_us",
                                            "tp_step_cpu_us",    "server_request_us", "server_prompt_token_us"};
inline constexpr int kNumFitTerms = 6;

struct FitOptions {
  uint64_t seed = 1;
  int max_iterations = 20;
  bool cross_validate = true;
};

struct RunErrors {
  std::string run;
  std::string engine;  // the engine profile the run's pool resolved (its name)
  FitFigures simulated;
  // (simulated - observed) / observed per metric, when both exist.
  std::optional<double> error[kNumFitMetrics];
};

struct FitResult {
  double terms[kNumFitTerms] = {};          // fitted
  double initial_terms[kNumFitTerms] = {};  // the first run's profile's: where the fit starts
  // Whether any run's figures move with the term (the server's terms do not
  // for runs without a server, tp_step_cpu_us not at tp 1): a term no run
  // informs keeps its initial value.
  bool informed[kNumFitTerms] = {};
  std::vector<RunErrors> before;  // every run with its own pool's terms as resolved
  std::vector<RunErrors> after;   // the fitted terms, every run (fitted on all)
  std::vector<RunErrors> left_out;  // each run predicted by terms fitted on the others
  int iterations = 0;
  int evaluations = 0;
};

// `base`: the scenario whose single pool is replayed (its traffic is
// replaced), for every run without its own scenario. One set of terms is
// fitted for all runs, starting from the first run's profile. Errors: a
// scenario with more than one pool, no runs, a run without requests or
// without observed figures, a replay that fails.
Status FitEngine(const ScenarioSpec& base, const Catalog& catalog, const Policies& policies,
                 const std::vector<ReplayRun>& runs, const FitOptions& options, FitResult* out);

// Each run simulated with its pool's engine profile as resolved (no fit):
// what the bundled or given profile predicts. Errors as FitEngine's.
Status PredictRuns(const ScenarioSpec& base, const Catalog& catalog, const Policies& policies,
                   const std::vector<ReplayRun>& runs, uint64_t seed, std::vector<RunErrors>* out);

// Median of |error| over runs, per metric (nullopt where no run has it).
std::optional<double> MedianAbsError(const std::vector<RunErrors>& errors, int metric);
// Median of the signed error over runs, per metric: the bias.
std::optional<double> MedianError(const std::vector<RunErrors>& errors, int metric);
// Median of |error| over every figure of every run, all metrics pooled.
std::optional<double> MedianAbsErrorAll(const std::vector<RunErrors>& errors);
// The bias over every figure of every run: the median of simulated /
// observed - 1 for latencies and observed / simulated - 1 for throughput, so
// that a negative value always means the simulator is faster than the
// server (latencies too short, throughput too high).
std::optional<double> MedianBiasAll(const std::vector<RunErrors>& errors);

}  // namespace fleetsim

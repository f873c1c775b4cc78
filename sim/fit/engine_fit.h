// EngineFit: fits an engine profile's terms to observed runs of a real
// server, by replaying each run through the simulator, and to measured
// iterations of its engine, by pricing each step with the pool's
// performance model.
//
// Each observed run gives its requests (arrival times and lengths, or the
// order and lengths of a closed-loop benchmark's requests with its
// concurrency) and what the clients measured: TTFT, TPOT and ITL at p50 and
// p90, and output throughput. A replay runs the base scenario's fleet (one
// pool: model, GPU, tp, scheduler) on exactly those requests with candidate
// engine terms, and compares the same figures. A step run (a static batch,
// as SGLang's bench_one_batch or vLLM's benchmark_latency time one) gives
// the time of one prefill step of its batch and the median decode step
// after it, compared with the performance model's price of the same
// batches.
//
// Fitted terms (kFitTerms): the engine's CPU and server terms
// (model/engine_spec.h) and its GPU side: the kernel terms (kKernelTerms:
// GEMM efficiency by shape, attention efficiency by work, memory-bound
// bandwidth, the launch gap, collective latency and bus bandwidth) and the
// eager launch and custom all-reduce latencies. Each is held to its
// physical range: a fraction by a logistic map of [lo, hi], the others in
// log(term + floor), clamped.
// The objective is the sum of squared log ratios simulated / observed,
// each run weighted by 1 / (its number of figures) so that every run counts
// the same; a run with per-request TTFT and end-to-end times adds each as
// one more figure (the mean squared log ratio over its requests), plus a
// faint pull of each term towards where it started (1% of a unit of its
// transformed scale), so that a direction the runs do not see stays put.
// It is minimised by Levenberg-Marquardt (Eigen) with forward differences
// over the terms some run depends on, from three starts (the profile's
// terms, and each moved up and down: the objective is step-wise and has
// local minima), the best end kept. Deterministic: the same runs and seed
// give the same terms.
//
// What the runs determine: at the fit, the information the figures hold
// about each term (J^T J at a 5% scatter per figure) against a reference
// spread of one unit of its scale (a factor of e for a log term); a term
// whose posterior spread stays above 0.3 units is "not determined" (its
// value is mostly where it started), one within rounding of its range's
// end is "at a bound". Both, and samples too small to fit what they
// inform, are listed in FitResult::warnings.
//
// Cross-validation: with two runs or more, each run is left out in turn,
// the terms fitted on the others and the left-out run predicted.
#pragma once

#include <array>
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
// published figures are often means only. The last two are a step run's:
// one prefill step of its batch, and its median decode step.
inline constexpr const char* kFitMetrics[] = {"ttft_p50",  "ttft_p90",  "tpot_p50", "tpot_p90",
                                              "itl_p50",   "itl_p90",   "output_tokens_per_s",
                                              "ttft_mean", "tpot_mean", "itl_mean", "e2e_p50", "e2e_mean",
                                              "prefill_step_ms", "decode_step_ms"};
inline constexpr int kNumFitMetrics = 14;
inline constexpr int kPrefillStepMetric = 12, kDecodeStepMetric = 13;
// The index of a metric's name in kFitMetrics, or -1.
int FitMetricIndex(std::string_view name);

struct FitFigures {
  std::optional<double> values[kNumFitMetrics];  // ms, or tokens per second for throughput
};

// A static batch timed step by step (SGLang's bench_one_batch, vLLM's
// benchmark_latency): `batch` sequences of `prompt_tokens` prefilled in one
// step, each sampling its first token, then `decode_steps` decode steps
// (step i attends to prompt_tokens + i keys per sequence).
struct StepBatch {
  int64_t batch = 1;
  int64_t prompt_tokens = 1;
  int64_t decode_steps = 1;
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
  // Set: a step run. Its figures are prefill_step_ms and decode_step_ms,
  // priced by the pool's performance model (no scheduler, no server);
  // `requests` is empty.
  std::optional<StepBatch> step;
};

// The fitted terms, in this order: the engine's CPU and server terms, its
// eager launch and custom all-reduce latencies, then every kernel term
// (kKernelTerms order, from index kFirstKernelFitTerm).
// decode_token_cpu_us is not fitted: without speculative decoding every
// decoding sequence feeds one token, so it cannot be told from seq_cpu_us
// (it keeps the base profile's value); nor is server_output_token_us, which
// shifts TTFT exactly as server_request_us does.
// tp_step_cpu_us moves only runs at tp > 1; a fit without them keeps it.
inline constexpr int kFirstKernelFitTerm = 8;
inline constexpr int kNumFitTerms = kFirstKernelFitTerm + kNumKernelTerms;
inline constexpr auto kFitTerms = [] {
  std::array<const char*, kNumFitTerms> names = {"step_cpu_us",       "seq_cpu_us",
                                                 "prefill_token_cpu_us", "tp_step_cpu_us",
                                                 "server_request_us", "server_prompt_token_us",
                                                 "eager_launch_us",   "custom_all_reduce_latency_us"};
  for (int i = 0; i < kNumKernelTerms; ++i) names[static_cast<size_t>(kFirstKernelFitTerm + i)] = kKernelTerms[i].name;
  return names;
}();
// The unit of fitted term i ("us", "fraction of dense peak", ...).
const char* FitTermUnit(int i);
// Whether fitted term i is on the GPU side (a kernel term, the eager
// launch or the custom all-reduce latency).
bool IsGpuFitTerm(int i);

// Which terms a fit may move.
enum class FitScope {
  kAll,       // CPU, server and GPU terms
  kCpuServer, // the CPU and server terms only; the kernels stay as priced
  kGpu,       // the GPU side only
};

struct FitOptions {
  uint64_t seed = 1;
  int max_iterations = 20;
  bool cross_validate = true;
  FitScope scope = FitScope::kAll;
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
  // for runs without a server, tp_step_cpu_us not at tp 1) and the fit's
  // scope includes it: a term no run informs keeps its initial value.
  bool informed[kNumFitTerms] = {};
  // Of the informed terms: whether the runs pin it down (posterior spread
  // below 0.3 units of its scale: see the header comment), the spread
  // itself, and whether it ended at its range's lower (-1) or upper (+1)
  // end.
  bool determined[kNumFitTerms] = {};
  double spread[kNumFitTerms] = {};
  int at_bound[kNumFitTerms] = {};
  int figures = 0;  // observed figures (a per-request block counts as one)
  // Small samples, undetermined terms, terms at a bound and terms that
  // moved far on runs that do not determine them, one line each.
  std::vector<std::string> warnings;
  std::vector<RunErrors> before;  // every run with its own pool's terms as resolved
  std::vector<RunErrors> after;   // the fitted terms, every run (fitted on all)
  std::vector<RunErrors> left_out;  // each run predicted by terms fitted on the others
  int iterations = 0;
  int evaluations = 0;
};

// `base`: the scenario whose single pool is replayed (its traffic is
// replaced), for every run without its own scenario. One set of terms is
// fitted for all runs, starting from the first run's profile. GPU terms
// are fitted only when every run is on the first run's GPU (a kernel's
// efficiency is a GPU's); otherwise they keep their figures and a warning
// says so. Errors: a scenario with more than one pool, no runs, a run
// without requests (or steps) or without observed figures, a replay that
// fails.
Status FitEngine(const ScenarioSpec& base, const Catalog& catalog, const Policies& policies,
                 const std::vector<ReplayRun>& runs, const FitOptions& options, FitResult* out);

// Each run simulated with its pool's engine profile as resolved: what the
// bundled or given profile predicts; with `fitted`, its informed terms
// replace the profile's in every run (a fit's prediction of runs it did
// not see). Errors as FitEngine's.
Status PredictRuns(const ScenarioSpec& base, const Catalog& catalog, const Policies& policies,
                   const std::vector<ReplayRun>& runs, uint64_t seed, std::vector<RunErrors>* out,
                   const FitResult* fitted = nullptr);

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

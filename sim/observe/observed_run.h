// ObservedRun: what a benchmark client saw when it drove a real serving
// engine, in one form whatever client wrote it (vLLM's `bench serve`, AIPerf,
// GenAI-Perf, GuideLLM, or a plain CSV). `fleetsim fit` replays each run's
// requests through the simulator and fits engine terms to the latencies the
// client measured, so the form keeps exactly what that needs: when each
// request was sent, its lengths, what the client timed, and how the load was
// generated. Every time is in seconds.
//
// Definitions (fleetsim's, README "summary.json"; each reader maps its
// tool's figures onto them, see read_observed.h):
//   TTFT  send to first streamed token (chunk).
//   E2E   send to last streamed token.
//   TPOT  (E2E - TTFT) / (output tokens - 1), per request with >= 2 tokens.
//   ITL   every gap between consecutive streamed chunks of a request.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fleetsim {

struct ObservedRequest {
  // When the client sent the request, seconds after the first request of the
  // run was sent (so the earliest is 0). Clients record wall-clock or
  // monotonic times; only differences are kept.
  double start_s = 0;
  // Prompt tokens as the client counted them (or the server reported). 0
  // when the file does not record it: see ObservedRun::input_tokens_recorded.
  int32_t input_tokens = 0;
  // Tokens generated; 0 for a failed request that produced none.
  int32_t output_tokens = 0;
  // Absent for a failed request, and TTFT also for a non-streamed one.
  std::optional<double> ttft_s;
  std::optional<double> e2e_s;
  // Gaps between consecutive streamed chunks; empty when the file keeps no
  // per-chunk times (GuideLLM, the CSV without itl_s). A server that sends
  // several tokens per chunk gives fewer gaps than output_tokens - 1.
  std::vector<double> itl_s;
  // False for a request the client counted as failed (an error, a cancel,
  // GuideLLM's errored and incomplete): it has lengths and a start, no times.
  bool ok = true;
};

// How the client generated load.
enum class LoadMode {
  kUnknown,  // the file does not say (the CSV; AIPerf without its aggregate file)
  kOpen,     // arrivals at a rate regardless of completions (request_rate_per_s;
             // infinity: all sent at once), possibly capped by max_concurrency
  kClosed,   // a fixed number of requests in flight (max_concurrency)
  kTrace,    // arrivals replayed from a trace's own timestamps
};
const char* LoadModeName(LoadMode m);

// Summary figures of one metric as the tool computed them, in seconds.
struct LatencyStats {
  std::optional<double> mean_s, median_s, p90_s, p99_s;
  bool empty() const { return !mean_s && !median_s && !p90_s && !p99_s; }
};

// The aggregates a file states about its own run (never computed by
// fleetsim), mapped onto the definitions above. A tool's figure with another
// definition is left out rather than mislabelled (GuideLLM's
// time_per_output_token_ms counts the first token too).
struct ObservedAggregates {
  LatencyStats ttft, tpot, itl, e2e;
  std::optional<double> request_throughput_per_s;
  std::optional<double> output_throughput_tokens_per_s;
  std::optional<double> duration_s;
  std::optional<int64_t> completed, failed;
  bool empty() const {
    return ttft.empty() && tpot.empty() && itl.empty() && e2e.empty() && !request_throughput_per_s &&
           !output_throughput_tokens_per_s && !duration_s && !completed && !failed;
  }
};

enum class ObservedFormat { kVllm, kAiperf, kGenaiPerf, kGuidellm, kCsv };

struct ObservedRun {
  std::string source_file;  // the path read
  // Which run of the file this is, as a JSON path or line ("benchmarks[2]",
  // "experiments[0]", "line 3"); empty when the file holds one run.
  std::string run_label;
  ObservedFormat format = ObservedFormat::kCsv;
  std::string tool;          // "vllm bench serve", "aiperf", "genai-perf", "guidellm", "csv"
  std::string tool_version;  // when the file records it
  LoadMode mode = LoadMode::kUnknown;
  std::optional<double> request_rate_per_s;  // kOpen: the configured rate
  std::optional<int32_t> max_concurrency;    // kClosed: requests in flight; kOpen: the cap, if any
  std::string model;    // as the client named it; empty when not recorded
  std::string backend;  // the client's backend or endpoint kind ("openai-chat", "v1/completions")
  // Sorted by start_s. Empty when per_request_timing is false.
  std::vector<ObservedRequest> requests;
  ObservedAggregates file_aggregates;
  // True when `requests` holds every request of the run with its timing;
  // false for a file read for its aggregates only (allow_aggregates).
  bool per_request_timing = true;
  // False when the file has no prompt lengths (GenAI-Perf against an OpenAI
  // server that sent no usage): input_tokens are 0.
  bool input_tokens_recorded = true;
  // False when output lengths are counted from streamed chunks rather than
  // tokens (GenAI-Perf without usage): exact only at one token per chunk.
  bool output_tokens_exact = true;
  // What a reader had to assume or skip, one line each, for the summary.
  std::vector<std::string> notes;
};

}  // namespace fleetsim

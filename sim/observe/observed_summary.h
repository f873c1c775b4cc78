// What `fleetsim observe` prints: figures computed from a run's requests
// (fleetsim's definitions, observed_run.h) beside the figures the file
// states about itself, so a reader that maps a tool's metric wrongly, or a
// file that lost requests, shows as a disagreement.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/observe/observed_run.h"

namespace fleetsim {

// Computed from ObservedRun::requests; empty when the run has none. Latency
// percentiles interpolate between order statistics, as numpy (and so vLLM
// and GenAI-Perf) do.
struct ObservedStats {
  int64_t requests = 0, ok = 0, failed = 0;
  double span_s = 0;                      // first send to last send
  std::optional<double> sent_rate_per_s;  // (requests - 1) / span_s
  std::optional<double> window_s;         // first send to last completion
  int64_t max_in_flight = 0;              // most ok requests between send and last token at once
  LatencyStats ttft, tpot, itl, e2e;      // over ok requests (TPOT: those with >= 2 tokens)
  std::optional<double> request_throughput_per_s;        // ok requests / window_s
  std::optional<double> output_throughput_tokens_per_s;  // their output tokens / window_s
  std::optional<double> mean_input_tokens, mean_output_tokens;  // ok requests
  int32_t max_input_tokens = 0, max_output_tokens = 0;
};

ObservedStats ComputeObservedStats(const ObservedRun& run);

// The one-screen summary of one run: what was read, then latency medians and
// tails from the requests and from the file side by side (ms).
std::string FormatObservedRun(const ObservedRun& run);

// One line per run, for a file that holds several (a GuideLLM sweep).
std::string FormatObservedRunTable(const std::vector<ObservedRun>& runs);

}  // namespace fleetsim

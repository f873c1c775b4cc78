// Reading the files benchmark clients write into ObservedRuns.
//
// Formats (ObservedFormat), where each is defined upstream and what is read;
// tests/observe/data/README.md names the files and commits:
//
//   vllm      `vllm bench serve --save-result --save-detailed` (and the older
//             benchmarks/benchmark_serving.py): one JSON object per run;
//             several, one per line, with --append-result. Per request, the
//             parallel arrays input_lens, output_lens, start_times, ttfts,
//             itls, latencies (or ttft + sum(itls)) and errors; aggregates
//             {mean,median,p50,p90,p99}_{ttft,tpot,itl,e2el}_ms, throughputs.
//             request_rate "inf" with max_concurrency is closed loop.
//   aiperf    AIPerf's profile_export.jsonl: one record a line, metadata
//             (request_start_ns, request_end_ns, benchmark_phase), metrics
//             ({value, unit}) and error. Mode, model and aggregates come from
//             profile_export_aiperf.json beside it when present.
//   genaiperf GenAI-Perf's profile_export.json (written by perf_analyzer):
//             experiments[] of {experiment: {mode, value}, requests[]: {
//             timestamp, request_inputs, response_timestamps,
//             response_outputs}} in ns. Aggregates from <stem>_genai_perf.json
//             beside it. Token counts are not in the file: they come from a
//             response's usage (prompt_tokens, completion_tokens) when the
//             server sent one, or input_ids/output_ids (triton_c_api); else
//             output tokens are counted as content chunks and input tokens
//             are unknown (ObservedRun says which).
//   guidellm  GuideLLM's benchmarks.json (0.3 to 0.7): benchmarks[], each
//             with its strategy, metrics and requests.{successful,errored,
//             incomplete}. One run per benchmark.
//   csv       fleetsim's own per-request CSV, for any other client:
//               start_s,input_tokens,output_tokens,ttft_s,e2e_s[,itl_s]
//             header required, columns in that order. start_s seconds >= 0
//             (any origin, need not be sorted); ttft_s empty for a non-streamed
//             request; e2e_s empty marks a failed request (ttft_s must then
//             be empty too); itl_s the chunk gaps in seconds separated by ';'
//             (empty: none recorded). output_tokens may be 0 only when failed.
//
// Per-request timing: a file without it (vLLM saved without --save-detailed,
// GuideLLM with sampled requests, a vLLM file from before start_times were
// saved) is refused with the option that would have kept it, unless
// ReadObservedOptions::allow_aggregates, when it is read with
// per_request_timing false and its aggregates only.
//
// Errors are user-input Statuses naming the file and the JSON path or line:
//   run.json: ttfts[3]: expected a number of seconds >= 0, got -0.5
//   profile_export.jsonl:7: metrics.request_latency.unit: unknown time unit "min" (known: ns, us, ms, sec, s)
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "sim/observe/observed_run.h"

namespace fleetsim {

struct ReadObservedOptions {
  // The file's format; empty guesses it (DetectObservedFormat). Names as
  // ObservedFormatName: vllm, aiperf, genaiperf, guidellm, csv.
  std::string format;
  // Accept a file without per-request timing for its aggregates alone
  // (per_request_timing false, no requests) instead of refusing it.
  bool allow_aggregates = false;
  // Read the aggregate file AIPerf and GenAI-Perf write beside their
  // per-request export (mode, model, aggregates). Off: the export alone.
  bool read_companion = true;
};

// "vllm", "aiperf", "genaiperf", "guidellm", "csv".
const char* ObservedFormatName(ObservedFormat f);
// The format named `name`; an unknown name is answered with the valid ones.
Status ParseObservedFormat(std::string_view name, ObservedFormat* out);

// Guesses the format of the file at `path` from its extension and its
// top-level keys (of the first line, for JSON lines): .csv is csv; an object
// with "experiments" is genaiperf, with "benchmarks" guidellm, with
// "metadata" and "metrics" (a line) aiperf, with vLLM's result keys
// (request_throughput, completed, ...) vllm. The aggregate files of AIPerf and
// GenAI-Perf are refused with the name of the per-request file to pass.
Status DetectObservedFormat(const std::string& path, ObservedFormat* out);

// Reads every run in the file at `path` (a GuideLLM sweep, a vLLM file with
// --append-result and a GenAI-Perf export with several experiments hold
// several) in file order. On error *out is left empty.
Status ReadObservedFile(const std::string& path, const ReadObservedOptions& options,
                        std::vector<ObservedRun>* out);

// The same over the file's text already in memory (tests, fuzzers); `path`
// names it in messages and locates companion files.
Status ReadObservedText(const std::string& path, std::string_view text, const ReadObservedOptions& options,
                        std::vector<ObservedRun>* out);

}  // namespace fleetsim

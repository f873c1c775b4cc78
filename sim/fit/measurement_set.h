// MeasurementSet: published figures of real servers, each with the
// configuration and workload that produced it, read as replays for the fit
// (engine_fit.h) and for checking a profile's predictions.
//
// A benchmark client's own files (sim/observe) carry every request; a paper
// or a blog post states a few aggregates (mean TTFT, median TPOT, output
// throughput) of a workload it describes in words: fixed prompt and output
// lengths, a number of requests, and either a client concurrency, a Poisson
// request rate or a batch sent at once. This file format holds such figures
// with their citations:
//
//   {
//     "format": "fleetsim-measurements", "version": 1,
//     "description": "...",
//     "seed": 1,
//     "scenario": { a scenario without traffic: model, fleet with one pool },
//     "runs": [
//       { "id": "blog-llama8b-h100-c1",
//         "split": "fit",                      // or "held_out", or any label
//         "source": { "url": "...", "title": "...", "date": "2025-01",
//                     "engine_version": "vllm 0.8.4", "quote": "..." },
//         "set": { "fleet.pools[0].gpu": "A100-80GB", "fleet.pools[0].tp": 4 },
//         "workload": { "requests": 100, "prompt_tokens": 1024,
//                       "output_tokens": 128, "concurrency": 1 },
//                       // a length may be {"min": 1, "max": 1024}: drawn
//                       // uniformly, as a client's random dataset with a range;
//                       // or "lengths_csv": "sharegpt.csv" with optional
//                       // min_tokens, max_prompt_tokens, max_total_tokens;
//                       // "rate_per_s": 4 or "all_at_once": true; and
//                       // "server": false for the offline engine
//         "observed": { "ttft_mean": 25.1, "tpot_mean": 6.9 } },
//       { "id": "bench-one-batch-b8-l1024", "split": "fit", "source": {...},
//         "step": { "batch": 8, "prompt_tokens": 1024, "decode_steps": 31 },
//                   // a static batch timed step by step (SGLang's
//                   // bench_one_batch, vLLM's benchmark_latency)
//         "observed": { "prefill_step_ms": 276.2, "decode_step_ms": 8.36 } } ] }
//
// A run gives `workload` or `step`, not both; a step run's figures are
// prefill_step_ms and decode_step_ms only, and a workload's never those.
//
// `set` applies to `scenario` exactly as `fleetsim run --set KEY=VALUE`
// does. `observed` takes the fit's metric names (kFitMetrics: ms, output
// tokens per second). Every error names the file and the JSON path; unknown
// keys are errors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "sim/fit/engine_fit.h"

namespace fleetsim {

struct Measurement {
  std::string id;
  std::string split;
  std::string citation;  // "title (date), url; engine version"
  std::string date, engine_version;  // the source's
  ReplayRun run;         // name = id; its own scenario
};

struct MeasurementSet {
  std::string file;
  std::string description;
  uint64_t seed = 1;
  std::vector<Measurement> runs;
};

// Reads a set. `split` non-empty keeps the runs of that split only (an
// error when none has it).
Status LoadMeasurementSet(const std::string& path, const std::string& split, MeasurementSet* out);
Status ParseMeasurementSet(std::string_view text, const std::string& file, const std::string& split,
                           MeasurementSet* out);

// True when `text` is a JSON object whose "format" is fleetsim-measurements
// or that has "runs" and "scenario", or text that does not parse but names
// the format (how `fleetsim fit` tells a set from a benchmark client's file:
// a broken set is reported as a set).
bool LooksLikeMeasurementSet(std::string_view text);

}  // namespace fleetsim

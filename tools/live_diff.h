// The diff `fleetsim live` writes: the simulation of a scenario against the
// live run of the same scenario, per metric and statistic (diff.json and
// diff.md), with the TTFT and TPOT distributions of both drawn as CDFs.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "sim/metrics/collector.h"

namespace fleetsim {

struct LiveDiffTargets {
  double p50 = 0.05;  // |sim - live| / live of P50 TTFT and TPOT
  double p99 = 0.10;  // and of their P99
};

struct LiveDiff {
  std::string json, markdown;
  std::vector<std::pair<std::string, std::string>> svgs;  // file name -> SVG
  bool within_targets = false;
  std::vector<std::string> misses;  // "ttft p99: sim 12.3 ms, live 15.0 ms (-18.0%)"
  // With the kernels as they ran (as_run given): the targeted statistics'
  // relative errors, "ttft p50 -9.0%, ttft p99 -5.9%, ..." ("" without).
  std::string as_run_line;
};

// The same scenario simulated again with the profile's kernel times
// multiplied by what the live run measured over what the profile predicted
// for the same batches (RooflineOptions::kernel_time_scale): what is left
// of the error once the kernels are priced at the speed they ran is the
// rest of the model's (scheduling, batching, queueing, executor terms).
struct KernelsAsRun {
  double scale = 1;
  const Summary* sim = nullptr;
  std::string sim_requests;  // its requests.csv
};

// `sim_requests` and `live_requests`: the two runs' requests.csv (for the
// distributions). `context`: lines for diff.md's head (what ran where).
// `as_run` (may be null): reported beside the prediction; the targets are
// the prediction's.
Status DiffLiveRun(const Summary& sim, const Summary& live, const std::string& sim_requests,
                   const std::string& live_requests, const std::vector<std::string>& context,
                   const LiveDiffTargets& targets, const KernelsAsRun* as_run, LiveDiff* out);

}  // namespace fleetsim

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
};

// `sim_requests` and `live_requests`: the two runs' requests.csv (for the
// distributions). `context`: lines for diff.md's head (what ran where).
Status DiffLiveRun(const Summary& sim, const Summary& live, const std::string& sim_requests,
                   const std::string& live_requests, const std::vector<std::string>& context,
                   const LiveDiffTargets& targets, LiveDiff* out);

}  // namespace fleetsim

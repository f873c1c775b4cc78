// PlanSpec: the typed form of a plan file (`fleetsim plan PLAN.json`; the
// format is docs/plan.md). Parsing checks the plan's own keys; the base
// scenario and each dimension's values are checked when the planner builds
// the configurations, by the scenario parser, as `run --set` is.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace fleetsim {

// One search dimension: scenario key paths and the values they take
// together (JSON text, as `run --set KEY=VALUE` takes VALUE), or, bisected,
// an integer range on one key.
struct PlanDimension {
  std::string path;                               // "dimensions[2]", for messages
  std::vector<std::string> keys;                  // scenario key paths
  std::vector<std::vector<std::string>> values;   // exhaustive: one JSON text per key, per choice
  bool bisect = false;
  int64_t min = 1, max = 1;                       // bisect: the integer range of the multiplier m
  // Bisect: each key is m times its share of one of these ratios (one
  // entry per key), every ratio a family of its own; a prefill:decode
  // ratio a:b bisects m over xPyD = (m a)P(m b)D. One key without ratios:
  // {{1}}, the key is m.
  std::vector<std::vector<int64_t>> ratios = {{1}};
};

// A target on one of a point's metrics (PlanMetric names).
struct PlanTarget {
  std::string id;      // "ttft_p99", "attainment", "reject_rate"
  std::string metric;  // "ttft_p99_ms", "attainment", "reject_rate"
  bool is_max = true;  // true: the metric must stay at or below limit; false: at or above
  double limit = 0;
  std::string label;   // "TTFT p99 <= 2000 ms"
};

struct PlanSpec {
  std::string file;         // the plan file, for messages
  std::string sha256;       // of the plan's bytes
  std::string name;
  std::string description;
  // The base scenario: its JSON text, the name messages give it, and the
  // folder its relative paths resolve against.
  std::string scenario_text;
  std::string scenario_file;
  std::string scenario_base_dir;
  std::vector<PlanDimension> dimensions;  // at most one with bisect
  std::vector<PlanTarget> targets;        // at least one
  std::optional<double> budget_usd_per_hour;
  std::map<std::string, int64_t> quotas;  // GPU name -> most GPUs of it
  std::vector<double> rate_scales;        // ascending, distinct, includes 1
  double max_rate_scale = 4;
  std::optional<double> trace_window_s;
  int replications = 5;
  uint64_t seed = 1;
  int shortlist = 3;
  // targets.node_failure: every configuration runs with its worst single
  // node failing (a drill) at this time, so every target is met with any
  // one node down. Unset: no drill. By default the node crashes at 0 s, so
  // the run measures the fleet with that node out (its replacement takes
  // provisioning and a cold start); "hang" makes the fleet notice it late.
  std::optional<double> node_failure_at_s;
  std::string node_failure_kind = "crash";
};

inline constexpr int kMaxPlanReplications = 100;
inline constexpr int64_t kMaxPlanFamilies = 100000;

// Parses plan text. `file` names it in messages and locates a scenario
// given as a path. Errors name the file and JSON path.
Status ParsePlan(const std::string& text, const std::string& file, PlanSpec* out);
Status LoadPlanFile(const std::string& path, PlanSpec* out);

}  // namespace fleetsim

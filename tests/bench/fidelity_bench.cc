// Not a timing benchmark: how far the bundled engine profiles' predictions
// are from published measurements of real servers
// (tests/fidelity/data/public_serving.json, each run with its citation).
// Prints every run's figures and the median error per split, and per split,
// engine profile and GPU ("fit_vllm_v0": the runs model/engines/vllm_v0.json's
// fitted terms came from; "held_out": the rest).
//
//   fidelity_bench [--set FILE] [--engine PROFILE.json]
//
// --engine replaces every run's engine profile (a file, e.g. the profile
// before a refit, to print the errors before and after).
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/catalog.h"
#include "sim/fit/engine_fit.h"
#include "sim/fit/measurement_set.h"
#include "sim/runner/run.h"

namespace fleetsim {
namespace {

std::string Pct(const std::optional<double>& v) {
  if (!v) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%+.1f%%", *v * 100);
  return b;
}

int Main(int argc, char** argv) {
  std::string set_path = std::string(FLEETSIM_SOURCE_DIR) + "/tests/fidelity/data/public_serving.json";
  std::string engine;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--set") && i + 1 < argc) {
      set_path = argv[++i];
    } else if (!std::strcmp(argv[i], "--engine") && i + 1 < argc) {
      engine = argv[++i];
    } else {
      std::fprintf(stderr, "usage: fidelity_bench [--set FILE] [--engine PROFILE.json]\n");
      return 2;
    }
  }
  Catalog catalog;
  Status s = Catalog::LoadBuiltin(&catalog);
  Policies policies;
  RegisterBuiltins(&policies);
  MeasurementSet set;
  if (s.ok()) s = LoadMeasurementSet(set_path, "", &set);
  if (!s.ok()) {
    std::fprintf(stderr, "fidelity_bench: %s\n", s.message().c_str());
    return 2;
  }
  std::vector<ReplayRun> runs;
  for (Measurement& m : set.runs) {
    if (!engine.empty()) {
      auto spec = std::make_shared<ScenarioSpec>(*m.run.scenario);
      spec->pools[0].engine = engine;
      m.run.scenario = std::move(spec);
    }
    runs.push_back(m.run);
  }
  std::vector<RunErrors> errors;
  s = PredictRuns(*runs.front().scenario, catalog, policies, runs, set.seed, &errors);
  if (!s.ok()) {
    std::fprintf(stderr, "fidelity_bench: %s\n", s.message().c_str());
    return 2;
  }
  std::printf("fidelity: %zu published runs (%s)%s\n", runs.size(), set_path.c_str(),
              engine.empty() ? "" : (", engine " + engine).c_str());
  std::printf("  %-34s %-9s %-12s %12s %12s %9s\n", "run", "split", "metric", "observed", "simulated", "error");
  // Grouped by split, and by split and engine profile.
  std::map<std::string, std::vector<RunErrors>> by_split;
  for (size_t i = 0; i < runs.size(); ++i) {
    by_split[set.runs[i].split].push_back(errors[i]);
    by_split[set.runs[i].split + " " + errors[i].engine + " " + runs[i].scenario->pools[0].gpu].push_back(errors[i]);
    for (int m = 0; m < kNumFitMetrics; ++m) {
      if (!runs[i].observed.values[m]) continue;
      const std::optional<double>& sim = errors[i].simulated.values[m];
      char simulated[32] = "-";
      if (sim) std::snprintf(simulated, sizeof simulated, "%.1f", *sim);
      std::printf("  %-34s %-9s %-12s %12.1f %12s %9s\n", runs[i].name.c_str(), set.runs[i].split.c_str(),
                  kFitMetrics[m], *runs[i].observed.values[m], simulated, Pct(errors[i].error[m]).c_str());
    }
  }
  std::printf("  %-40s %5s %15s %8s   (over every figure of the runs; bias < 0: the simulator is faster)\n",
              "split [engine gpu]", "runs", "median |error|", "bias");
  for (const auto& [split, e] : by_split) {
    const std::optional<double> bias = MedianBiasAll(e);
    const std::optional<double> abs_err = MedianAbsErrorAll(e);
    char abs_text[32] = "-";
    if (abs_err) std::snprintf(abs_text, sizeof abs_text, "%.1f%%", *abs_err * 100);
    std::printf("  %-40s %5zu %15s %8s\n", split.c_str(), e.size(), abs_text, Pct(bias).c_str());
  }
  return 0;
}

}  // namespace
}  // namespace fleetsim

int main(int argc, char** argv) { return fleetsim::Main(argc, argv); }

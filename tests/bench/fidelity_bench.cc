// Not a timing benchmark: how far the bundled engine profiles' predictions
// are from published measurements of real servers
// (tests/fidelity/data/public_serving.json, each run with its citation).
// Prints every run's figures and the median error per split, and per split,
// engine profile and GPU ("fit_vllm_v0": the runs model/engines/vllm_v0.json's
// fitted terms came from; "held_out": the rest).
//
//   fidelity_bench [--set FILE] [--engine PROFILE.json] [--fit-split NAME]
//
// --engine replaces every run's engine profile (a file, e.g. the profile
// before a refit, to print the errors before and after). --fit-split fits
// the engine's terms (CPU, server and GPU side) on the runs of that split
// first, as fleetsim fit does, and predicts every run with them: how far
// a user's few measurements carry (tests/fidelity/data/
// sglang_a100_qwen3_4b_steps.json: three batches fitted, 91 predicted).
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
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
  std::string engine, fit_split;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--set") && i + 1 < argc) {
      set_path = argv[++i];
    } else if (!std::strcmp(argv[i], "--engine") && i + 1 < argc) {
      engine = argv[++i];
    } else if (!std::strcmp(argv[i], "--fit-split") && i + 1 < argc) {
      fit_split = argv[++i];
    } else {
      std::fprintf(stderr, "usage: fidelity_bench [--set FILE] [--engine PROFILE.json] [--fit-split NAME]\n");
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
  std::optional<FitResult> fit;
  if (!fit_split.empty()) {
    std::vector<ReplayRun> fit_runs;
    for (size_t i = 0; i < runs.size(); ++i)
      if (set.runs[i].split == fit_split) fit_runs.push_back(runs[i]);
    if (fit_runs.empty()) {
      std::fprintf(stderr, "fidelity_bench: no run has split \"%s\"\n", fit_split.c_str());
      return 2;
    }
    FitOptions fo;
    fo.seed = set.seed;
    fo.cross_validate = false;
    fit.emplace();
    s = FitEngine(*fit_runs.front().scenario, catalog, policies, fit_runs, fo, &*fit);
    if (!s.ok()) {
      std::fprintf(stderr, "fidelity_bench: fit: %s\n", s.message().c_str());
      return 2;
    }
    std::printf("fitted on split %s (%zu runs, %d figures); terms it moved:\n", fit_split.c_str(), fit_runs.size(),
                fit->figures);
    for (int i = 0; i < kNumFitTerms; ++i)
      if (fit->informed[i])
        std::printf("  %-32s %10.4g -> %10.4g %s%s\n", kFitTerms[static_cast<size_t>(i)], fit->initial_terms[i],
                    fit->terms[i], FitTermUnit(i), fit->determined[i] ? "" : "  (not determined)");
  }
  std::vector<RunErrors> errors;
  s = PredictRuns(*runs.front().scenario, catalog, policies, runs, set.seed, &errors, fit ? &*fit : nullptr);
  if (!s.ok()) {
    std::fprintf(stderr, "fidelity_bench: %s\n", s.message().c_str());
    return 2;
  }
  std::printf("fidelity: %zu published runs (%s)%s%s\n", runs.size(), set_path.c_str(),
              engine.empty() ? "" : (", engine " + engine).c_str(),
              fit_split.empty() ? "" : (", terms fitted on split " + fit_split).c_str());
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
  // Per split and metric, with how many figures fall on each side: a
  // model that is right on average but always on one side is biased.
  std::printf("  %-22s %-18s %7s %15s %9s %13s\n", "split", "metric", "figures", "median |error|", "bias",
              "too fast/slow");
  for (const auto& [split, e] : by_split) {
    if (split.find(' ') != std::string::npos) continue;
    for (int m = 0; m < kNumFitMetrics; ++m) {
      int fast = 0, slow = 0;
      for (const RunErrors& r : e) {
        if (!r.error[m]) continue;
        // Throughput too high is the fast side, as a latency too short.
        const bool throughput = m == FitMetricIndex("output_tokens_per_s");
        (*r.error[m] < 0) != throughput ? ++fast : ++slow;
      }
      if (fast + slow == 0) continue;
      const std::optional<double> abs_err = MedianAbsError(e, m);
      char abs_text[32];
      std::snprintf(abs_text, sizeof abs_text, "%.1f%%", *abs_err * 100);
      std::printf("  %-22s %-18s %7d %15s %9s %6d/%-6d\n", split.c_str(), kFitMetrics[m], fast + slow, abs_text,
                  Pct(MedianError(e, m)).c_str(), fast, slow);
    }
  }
  return 0;
}

}  // namespace
}  // namespace fleetsim

int main(int argc, char** argv) { return fleetsim::Main(argc, argv); }

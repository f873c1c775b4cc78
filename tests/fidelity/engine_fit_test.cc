// fleetsim fit's core (sim/fit/engine_fit.h) on runs whose truth is known:
// "observed" figures made by replaying three workloads with engine terms
// chosen here, then fitted from the bundled vLLM profile's estimates. The
// fit must find terms that reproduce every figure, and predict a run it
// did not see (leave one out).
#include "sim/fit/engine_fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "sim/fit/fit_report.h"
#include "sim/scenario/scenario_spec.h"
#include "tests/fidelity/world.h"

namespace fleetsim {
namespace {

using fidelity_test::World;

ScenarioSpec Base() {
  ScenarioSpec s;
  s.file = "fit.json";
  s.model = "Llama-3.1-8B";
  PoolSpec p;
  p.path = "fleet.pools[0]";
  p.name = "p";
  p.model = s.model;
  p.gpu = "H100-SXM";
  // An engine that schedules between steps: every step shows its CPU time
  // (with async scheduling the GPU's longer steps hide it, and no run
  // determines the CPU terms).
  p.async_scheduling = false;
  s.pools.push_back(p);
  return s;
}

// `n` requests with lengths cycling through a few prompt and output sizes;
// open loop at `rate` per second (evenly spaced), or closed loop.
ReplayRun Workload(const std::string& name, int n, double rate, std::optional<int64_t> concurrency) {
  ReplayRun r;
  r.name = name;
  r.concurrency = concurrency;
  const int prompts[] = {200, 800, 1500, 400}, outputs[] = {60, 150, 40, 220};
  for (int i = 0; i < n; ++i) {
    Request q;
    q.arrival = concurrency ? 0 : SecondsToTime(i / rate);
    q.prompt_tokens = prompts[i % 4];
    q.output_tokens = outputs[(i / 4) % 4];
    r.requests.push_back(q);
  }
  return r;
}

TEST(EngineFit, RecoversTermsThatReproduceKnownRuns) {
  const World w;
  const ScenarioSpec base = Base();
  std::vector<ReplayRun> runs = {Workload("light", 120, 2, std::nullopt), Workload("c16", 200, 0, 16),
                                 Workload("c64", 300, 0, 64)};
  // The truth: a slower engine than the bundled estimates.
  // tp_step_cpu_us (index 3) does not apply at tp 1: the fit keeps it.
  const double truth[6] = {2500, 20, 0.3, 0, 4000, 1.0};
  {
    // Observed figures = a replay with the true terms (no cross-validation,
    // no iterations: FitEngine's "before" with the truth as the base).
    ScenarioSpec t = base;
    std::unique_ptr<ScenarioRun> check;
    ASSERT_TRUE(ScenarioRun::Build(t, w.catalog, w.policies, &check).ok());
    EngineSpec e = check->pools()[0].engine;
    e.cpu_overhead_fixed_us = truth[0];
    e.cpu_overhead_per_seq_us = truth[1];
    e.cpu_per_prefill_token_us = truth[2];
    e.server_request_us = truth[4];
    e.server_prompt_token_us = truth[5];
    t.pools[0].engine_terms = e;
    for (ReplayRun& r : runs) r.observed.values[0] = 1;  // placeholder: FitEngine needs a figure
    FitOptions o;
    o.max_iterations = 0;
    o.cross_validate = false;
    FitResult truth_result;
    ASSERT_TRUE(FitEngine(t, w.catalog, w.policies, runs, o, &truth_result).ok());
    for (size_t i = 0; i < runs.size(); ++i)
      // The figures a benchmark client's file gives (ReplayFromObserved):
      // percentiles and throughput, the first seven metrics.
      for (int m = 0; m < 7; ++m) runs[i].observed.values[m] = truth_result.before[i].simulated.values[m];
    // Per-request times as a benchmark tool records them (the light run).
    std::unique_ptr<ScenarioRun> light;
    t.traffic.kind = TrafficSpec::Kind::kList;
    t.traffic.requests = std::make_shared<std::vector<Request>>(runs[0].requests);
    ASSERT_TRUE(ScenarioRun::Build(t, w.catalog, w.policies, &light).ok());
    runs[0].ttft_ms.assign(runs[0].requests.size(), NAN);
    runs[0].e2e_ms.assign(runs[0].requests.size(), NAN);
    RunOptions ro;
    ro.seed = 1;
    ro.on_request = [&](const RequestRecord& rec) {
      runs[0].ttft_ms[rec.id] = TimeToSeconds(rec.first_token - rec.arrival) * 1e3;
      runs[0].e2e_ms[rec.id] = TimeToSeconds(rec.finish - rec.arrival) * 1e3;
    };
    RunReport report;
    ASSERT_TRUE(light->Run(MetricsOptions(), ro, nullptr, &report).ok());
  }
  // The truth moves CPU and server terms only: fitted on that side (the
  // GPU side, free as well, trades with seq_cpu_us on three runs).
  FitOptions o;
  o.scope = FitScope::kCpuServer;
  FitResult f;
  const Status s = FitEngine(base, w.catalog, w.policies, runs, o, &f);
  ASSERT_TRUE(s.ok()) << s.message();
  // The bundled estimates miss the slower engine by far; the fit does not.
  for (int m = 0; m < 7; ++m) {
    SCOPED_TRACE(kFitMetrics[m]);
    const auto before = MedianAbsError(f.before, m), after = MedianAbsError(f.after, m);
    ASSERT_TRUE(before && after);
    EXPECT_LT(*after, 0.05);  // the target on fitted runs: 5%
    const auto left_out = MedianAbsError(f.left_out, m);
    ASSERT_TRUE(left_out);
    EXPECT_LT(*left_out, 0.10);  // and on runs left out: 10%
  }
  EXPECT_GT(*MedianAbsError(f.before, 2), 0.15);  // TPOT p50 was far off
  // The per-step terms come back. The server's per-request and per-token
  // times and the engine's per-prefill-token time all lengthen TTFT with
  // the prompt; three runs tell them apart only roughly, so they are not
  // held to the truth here, only to the figures above.
  EXPECT_NEAR(f.terms[0], truth[0], 0.2 * truth[0]);
  EXPECT_NEAR(f.terms[1], truth[1], 0.35 * truth[1]);
  EXPECT_EQ(f.left_out.size(), runs.size());
  // The report: every term and every compared metric (and no other), a
  // table per stage, the chart.
  const std::string md = FitReportMarkdown(f, runs, "vllm-fit");
  for (const char* term : kFitTerms) EXPECT_NE(md.find(term), std::string::npos) << term;
  for (int m = 0; m < kNumFitMetrics; ++m)
    EXPECT_EQ(md.find(kFitMetrics[m]) != std::string::npos, m < 7) << kFitMetrics[m];
  // tp_step_cpu_us does not apply at tp 1: no run informs it, and it is kept.
  EXPECT_FALSE(f.informed[3]);
  EXPECT_TRUE(f.informed[0] && f.informed[1] && f.informed[4]);
  EXPECT_NE(md.find("kept: no run depends on it"), std::string::npos);
  EXPECT_NE(md.find("## Per run, left out of the fit"), std::string::npos);
  const std::string svg = FitErrorsSvg(f);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_EQ(svg, FitErrorsSvg(f));
}

TEST(EngineFit, RefusesWhatItCannotFit) {
  const World w;
  ScenarioSpec two = Base();
  two.pools.push_back(two.pools[0]);
  two.pools[1].name = "q";
  FitResult f;
  std::vector<ReplayRun> runs = {Workload("a", 10, 1, std::nullopt)};
  runs[0].observed.values[0] = 50;
  EXPECT_NE(FitEngine(two, w.catalog, w.policies, runs, FitOptions(), &f).message().find("one pool"),
            std::string::npos);
  EXPECT_NE(FitEngine(Base(), w.catalog, w.policies, {}, FitOptions(), &f).message().find("no observed runs"),
            std::string::npos);
  runs[0].observed = FitFigures();
  EXPECT_NE(FitEngine(Base(), w.catalog, w.policies, runs, FitOptions(), &f).message().find("no observed latency"),
            std::string::npos);
}

}  // namespace
}  // namespace fleetsim

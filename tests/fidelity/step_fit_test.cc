// fleetsim fit on the GPU side: measured iterations of a real engine
// (SGLang's bench_one_batch on Qwen3-4B, one A100, public data in
// tests/fidelity/data/sglang_a100_qwen3_4b_steps.json) fitted on three
// batches and checked on the 91 it did not see; and the fit's mechanics on
// runs whose truth is known (kernel terms moved, undetermined and bounded
// terms reported, small samples warned about).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/roofline.h"
#include "sim/fit/engine_fit.h"
#include "sim/fit/fit_report.h"
#include "sim/fit/measurement_set.h"
#include "tests/fidelity/world.h"

namespace fleetsim {
namespace {

using fidelity_test::World;

const std::string kSteps = std::string(FLEETSIM_SOURCE_DIR) + "/tests/fidelity/data/sglang_a100_qwen3_4b_steps.json";

int KernelFitTerm(const char* name) { return kFirstKernelFitTerm + KernelTermIndex(name); }

// The set's step runs of at least `min_prompt` tokens and at most
// `max_batch` sequences.
std::vector<ReplayRun> LongPromptRuns(int64_t min_prompt, int64_t max_batch) {
  MeasurementSet set;
  const Status s = LoadMeasurementSet(kSteps, "", &set);
  EXPECT_TRUE(s.ok()) << s.message();
  std::vector<ReplayRun> runs;
  for (const Measurement& m : set.runs)
    if (m.run.step->prompt_tokens >= min_prompt && m.run.step->batch <= max_batch) runs.push_back(m.run);
  return runs;
}

bool Warns(const FitResult& f, const std::string& text) {
  for (const std::string& w : f.warnings)
    if (w.find(text) != std::string::npos) return true;
  return false;
}

// The target: fitted on batch 1 with a short prompt, batch 8 with
// a medium one and batch 1 with a long one, the engine's other batch sizes
// (1-64) and prompt lengths (1-16384) within 5% median, prefill and decode.
TEST(StepFit, ThreeBatchesPredictTheOthersWithinFivePercent) {
  const World w;
  MeasurementSet fit_set, all;
  ASSERT_TRUE(LoadMeasurementSet(kSteps, "fit", &fit_set).ok());
  ASSERT_TRUE(LoadMeasurementSet(kSteps, "", &all).ok());
  ASSERT_EQ(fit_set.runs.size(), 3u);
  std::vector<ReplayRun> fit_runs, held_out;
  for (const Measurement& m : fit_set.runs) fit_runs.push_back(m.run);
  for (const Measurement& m : all.runs)
    if (m.split == "held_out") held_out.push_back(m.run);
  ASSERT_EQ(held_out.size(), 91u);

  FitOptions o;
  o.cross_validate = false;
  FitResult f;
  const Status s = FitEngine(*fit_runs.front().scenario, w.catalog, w.policies, fit_runs, o, &f);
  ASSERT_TRUE(s.ok()) << s.message();
  // The GPU side moved: the prefill of a short prompt is launch-bound
  // (SGLang runs prefill outside CUDA graphs), and the kernels' shares of
  // the A100's ceilings are not the catalogue's.
  const int eager = 6;
  ASSERT_STREQ(kFitTerms[eager], "eager_launch_us");
  EXPECT_TRUE(f.informed[eager]);
  EXPECT_GT(f.terms[eager], 2 * f.initial_terms[eager]);
  bool gpu_moved = false;
  for (int i = kFirstKernelFitTerm; i < kNumFitTerms; ++i)
    gpu_moved = gpu_moved || (f.informed[i] && std::fabs(f.terms[i] - f.initial_terms[i]) > 0.02 * f.initial_terms[i]);
  EXPECT_TRUE(gpu_moved);
  // Six figures cannot pin fifteen terms: said, not hidden.
  EXPECT_EQ(f.figures, 6);
  EXPECT_TRUE(Warns(f, "small sample: 6 observed figures"));
  EXPECT_TRUE(Warns(f, "not determined by these runs"));

  std::vector<RunErrors> before, after;
  ASSERT_TRUE(PredictRuns(*held_out.front().scenario, w.catalog, w.policies, held_out, 1, &before).ok());
  ASSERT_TRUE(PredictRuns(*held_out.front().scenario, w.catalog, w.policies, held_out, 1, &after, &f).ok());
  for (int m : {kPrefillStepMetric, kDecodeStepMetric}) {
    SCOPED_TRACE(kFitMetrics[m]);
    const auto e = MedianAbsError(after, m);
    ASSERT_TRUE(e);
    EXPECT_LT(*e, 0.05);
    // And no side taken: the median signed error is small too.
    EXPECT_LT(std::fabs(*MedianError(after, m)), 0.04);
  }
  // The bundled profile alone is too fast on decode (its floor: CPU time
  // per step and weight streaming), which the fit corrects.
  EXPECT_LT(*MedianError(before, kDecodeStepMetric), -0.05);
  EXPECT_GT(*MedianAbsError(before, kDecodeStepMetric), *MedianAbsError(after, kDecodeStepMetric) + 0.015);
}

// A kernel term that the runs pin down comes back from a known truth; the
// report names what the runs do not determine and what ended at a bound.
TEST(StepFit, RecoversAKernelEfficiencyAndReportsWhatItCannotTell) {
  const World w;
  // Long prompts at several batches: compute-bound GEMMs and attention.
  std::vector<ReplayRun> runs = LongPromptRuns(1024, 4);
  ASSERT_GE(runs.size(), 8u);
  // The truth: the bundled profile with GEMMs at 60% of peak.
  const int gemm = KernelFitTerm("gemm_compute_efficiency");
  {
    ScenarioSpec t = *runs.front().scenario;
    std::unique_ptr<ScenarioRun> check;
    ASSERT_TRUE(ScenarioRun::Build(t, w.catalog, w.policies, &check).ok());
    EngineSpec e = check->pools()[0].engine;
    e.kernel[static_cast<size_t>(KernelTermIndex("gemm_compute_efficiency"))] = 0.6;
    t.pools[0].engine_terms = e;
    auto truth = std::make_shared<ScenarioSpec>(t);
    std::vector<ReplayRun> truth_runs = runs;
    for (ReplayRun& r : truth_runs) r.scenario = truth;
    std::vector<RunErrors> made;
    ASSERT_TRUE(PredictRuns(t, w.catalog, w.policies, truth_runs, 1, &made).ok());
    for (size_t i = 0; i < runs.size(); ++i) runs[i].observed = made[i].simulated;
  }
  FitOptions o;
  o.cross_validate = false;
  o.scope = FitScope::kGpu;
  FitResult f;
  const Status s = FitEngine(*runs.front().scenario, w.catalog, w.policies, runs, o, &f);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(f.informed[gemm]);
  EXPECT_TRUE(f.determined[gemm]);
  EXPECT_NEAR(f.terms[gemm], 0.6, 0.03);
  for (int m : {kPrefillStepMetric, kDecodeStepMetric}) EXPECT_LT(*MedianAbsError(f.after, m), 0.01);
  // The CPU side is out of scope: kept.
  EXPECT_FALSE(f.informed[0]);
  EXPECT_EQ(f.terms[0], f.initial_terms[0]);
  // Collectives at tp 1: nothing informs them.
  EXPECT_FALSE(f.informed[KernelFitTerm("collective_latency_us")]);
  const std::string md = FitReportMarkdown(f, runs, "sglang-fit");
  EXPECT_NE(md.find("| gemm_compute_efficiency | fraction of dense peak | GPU |"), std::string::npos);
  EXPECT_NE(md.find("determined"), std::string::npos);
  EXPECT_NE(md.find("kept: no run depends on it"), std::string::npos);
}

// Runs faster than a term's physical range allows push it to the bound,
// and the fit says so.
TEST(StepFit, SaysWhenTheRunsPushATermToItsBound) {
  const World w;
  std::vector<ReplayRun> runs = LongPromptRuns(2048, 2);
  ASSERT_GE(runs.size(), 4u);
  // Prefill three times as fast as the A100 can compute it.
  for (ReplayRun& r : runs) *r.observed.values[kPrefillStepMetric] /= 3;
  FitOptions o;
  o.cross_validate = false;
  o.scope = FitScope::kGpu;
  FitResult f;
  ASSERT_TRUE(FitEngine(*runs.front().scenario, w.catalog, w.policies, runs, o, &f).ok());
  const int gemm = KernelFitTerm("gemm_compute_efficiency");
  EXPECT_EQ(f.at_bound[gemm], 1);
  EXPECT_TRUE(Warns(f, "gemm_compute_efficiency at its upper bound 1"));
}

// An engine profile's kernel terms reach the roofline the pool runs with,
// unless the scenario sets the option itself.
TEST(KernelTerms, ProfileTermsPriceThePoolUnlessTheScenarioSetsThem) {
  const World w;
  MeasurementSet set;
  ASSERT_TRUE(LoadMeasurementSet(kSteps, "fit", &set).ok());
  const ScenarioSpec& base = *set.runs.front().run.scenario;
  std::unique_ptr<ScenarioRun> run;
  ASSERT_TRUE(ScenarioRun::Build(base, w.catalog, w.policies, &run).ok());
  const PoolPlan& pool = run->pools()[0];
  const RooflineOptions plain = PoolRooflineOptions(base, pool);
  EngineSpec e = pool.engine;
  e.kernel[static_cast<size_t>(KernelTermIndex("gemm_compute_efficiency"))] = 0.5;
  e.kernel[static_cast<size_t>(KernelTermIndex("attention_decode_half_work"))] = 1000;
  PoolPlan with = pool;
  with.engine = e;
  const RooflineOptions o = PoolRooflineOptions(base, with);
  EXPECT_EQ(o.gemm_compute_efficiency, 0.5);
  EXPECT_EQ(o.attention_decode_half_work, 1000);
  EXPECT_EQ(o.gemm_memory_efficiency, plain.gemm_memory_efficiency);
  // The identity: every term set to the value it has changes nothing.
  EngineSpec same = pool.engine;
  for (int i = 0; i < kNumKernelTerms; ++i) same.kernel[static_cast<size_t>(i)] = KernelTermValue(plain, *pool.gpu, i);
  PoolPlan p2 = pool;
  p2.engine = same;
  BatchShape b;
  b.prefill_seqs = 2;
  b.prefill_tokens = 1000;
  b.prefill_attn_pairs = 2 * (500 * 501 / 2);
  b.prefill_kv_tokens = 1000;
  b.decode_seqs = 8;
  b.decode_tokens = 8;
  b.decode_kv_tokens = 8000;
  b.sampled_seqs = 10;
  const RooflinePerfModel a(*pool.model, *pool.gpu, pool.shard, pool.engine, plain);
  const RooflinePerfModel c(*pool.model, *pool.gpu, pool.shard, same, PoolRooflineOptions(base, p2));
  EXPECT_EQ(a.IterationNs(b), c.IterationNs(b));
  // A scenario's own GEMM efficiency wins over the profile's.
  ScenarioSpec mine = base;
  mine.perf_keys = {"gemm_compute_efficiency"};
  mine.gemm_efficiency_set = true;
  mine.roofline.gemm_compute_efficiency = 0.7;
  EXPECT_EQ(PoolRooflineOptions(mine, with).gemm_compute_efficiency, 0.7);
  // The sources say which kinds the profile prices.
  const RooflinePerfModel m(*pool.model, *pool.gpu, pool.shard, e, o);
  bool gemm_from_engine = false;
  for (const auto& [kind, source] : m.Sources())
    if (kind == "gemm") gemm_from_engine = source.find("roofline+engine:") == 0;
  EXPECT_TRUE(gemm_from_engine);
}

}  // namespace
}  // namespace fleetsim

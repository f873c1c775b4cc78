// Speculative decoding: the steps a request needs, the replica that runs
// them, and the price of a step (proposer passes plus one verification).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "model/speculative_perf_model.h"
#include "sim/cluster/speculation.h"
#include "tests/sim/replica_rig.h"

namespace fleetsim {
namespace {

using testing_rig::Fixture;
using testing_rig::Rig;

SpeculationOptions Spec(int k, double alpha, double concentration = 0) {
  SpeculationOptions o;
  o.k = k;
  o.acceptance_mean = alpha;
  o.concentration = concentration;
  o.seed = 42;
  return o;
}

TEST(PlanSpeculation, AlphaOneEmitsKPlusOneTokensAStep) {
  // 20 tokens at 5 a step; 21 need a fifth step for the last one.
  EXPECT_EQ(PlanSpeculation(Spec(4, 1.0), 7, 20).steps, 4);
  EXPECT_EQ(PlanSpeculation(Spec(4, 1.0), 7, 21).steps, 5);
  EXPECT_EQ(PlanSpeculation(Spec(1, 1.0), 7, 20).steps, 10);
}

TEST(PlanSpeculation, AlphaZeroEmitsOneTokenAStep) {
  EXPECT_EQ(PlanSpeculation(Spec(4, 0.0), 7, 20).steps, 20);
  EXPECT_EQ(PlanSpeculation(Spec(4, 0.0), 7, 1).steps, 1);
}

TEST(PlanSpeculation, MeanTokensPerStepIsTheTruncatedGeometricMean) {
  // Accepted guesses a step: min(k, Geometric), so tokens a step average
  // (1 - alpha^(k+1)) / (1 - alpha): 1.9375 at alpha 0.5, k 4.
  const SpeculationOptions o = Spec(4, 0.5);
  int64_t tokens = 0, steps = 0;
  for (uint64_t id = 0; id < 4000; ++id) {
    tokens += 500;
    steps += PlanSpeculation(o, id, 500).steps;
  }
  const double per_step = static_cast<double>(tokens) / static_cast<double>(steps);
  EXPECT_NEAR(per_step, (1 - std::pow(0.5, 5)) / 0.5, 0.01);
}

TEST(PlanSpeculation, SameSeedAndIdSameDraws) {
  const SpeculationOptions o = Spec(3, 0.6, 5);
  for (uint64_t id : {0u, 1u, 99u}) {
    const SpeculativePlan a = PlanSpeculation(o, id, 300), b = PlanSpeculation(o, id, 300);
    EXPECT_EQ(a.steps, b.steps);
    EXPECT_EQ(a.alpha, b.alpha);
  }
  SpeculationOptions other = o;
  other.seed = 43;
  int differ = 0;
  for (uint64_t id = 0; id < 50; ++id) differ += PlanSpeculation(o, id, 300).steps != PlanSpeculation(other, id, 300).steps;
  EXPECT_GT(differ, 25);
}

TEST(PlanSpeculation, AlphasFollowTheBetaOfTheGivenMean) {
  // Beta(mean c, (1 - mean) c): mean 0.7, variance m (1 - m) / (c + 1).
  const SpeculationOptions o = Spec(4, 0.7, 9);
  double sum = 0, sq = 0;
  const int n = 20000;
  for (uint64_t id = 0; id < static_cast<uint64_t>(n); ++id) {
    const double a = PlanSpeculation(o, id, 1).alpha;
    ASSERT_GE(a, 0);
    ASSERT_LE(a, 1);
    sum += a;
    sq += a * a;
  }
  const double mean = sum / n, var = sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.7, 0.005);
  EXPECT_NEAR(var, 0.7 * 0.3 / 10, 0.002);
  EXPECT_EQ(PlanSpeculation(Spec(4, 0.7, 0), 5, 1).alpha, 0.7);  // no concentration: fixed
}

// One request of prompt 100, output 21: the prefill gives the first token,
// then 20 more at k + 1 = 5 a step (alpha 1) take 4 decode steps, or 20
// (alpha 0). The record counts the real tokens, and each step is one gap
// (vLLM's ITL counts the tokens that arrive together once).
TEST(SpeculativeReplica, AlphaOneTakesOneStepPerKPlusOneTokens) {
  for (const double alpha : {1.0, 0.0}) {
    Rig rig;
    rig.limits.max_model_len = 4096;
    rig.speculation = Spec(4, alpha);
    Fixture f(rig);
    f.SubmitAt(0, 100, 21, 1);
    f.RunChecked();
    const int64_t steps = alpha == 1.0 ? 4 : 20;
    ASSERT_EQ(f.rec.finished.size(), 1u);
    const RequestRecord& r = f.rec.finished[0];
    EXPECT_EQ(r.status, RequestStatus::kCompleted);
    EXPECT_EQ(r.output_tokens, 21);
    EXPECT_EQ(r.generated_tokens, 21);
    ASSERT_EQ(static_cast<int64_t>(f.rec.shapes.size()), 1 + steps) << alpha;
    EXPECT_EQ(f.rec.gap_total, steps);
    // Step j reads the prompt, the first token and the 5 j tokens (alpha
    // 1) or j tokens (alpha 0) emitted since.
    for (int64_t j = 0; j < steps; ++j) {
      const BatchShape& s = f.rec.shapes[static_cast<size_t>(1 + j)];
      EXPECT_EQ(s.decode_seqs, 1);
      EXPECT_EQ(s.decode_kv_tokens, 101 + (alpha == 1.0 ? 5 : 1) * j) << "step " << j;
    }
    // The last token comes at the end of the last step.
    EXPECT_EQ(r.finish, f.rec.iterations.back().second);
  }
}

TEST(SpeculativeReplica, ManyRequestsKeepTheStateConsistent) {
  Rig rig;
  rig.limits.max_model_len = 4096;
  rig.limits.max_num_seqs = 16;
  rig.kv_blocks = 120;  // tight: preemptions happen
  rig.speculation = Spec(3, 0.7, 6);
  Fixture f(rig);
  for (uint64_t i = 0; i < 60; ++i)
    f.SubmitAt(static_cast<SimTime>(i) * 2 * kMillisecond, 50 + static_cast<int32_t>(i % 7) * 40,
               10 + static_cast<int32_t>(i % 5) * 30, i);
  f.RunChecked();
  ASSERT_EQ(f.rec.finished.size(), 60u);
  for (const RequestRecord& r : f.rec.finished) {
    EXPECT_EQ(r.status, RequestStatus::kCompleted);
    EXPECT_EQ(r.generated_tokens, r.output_tokens);
    EXPECT_EQ(r.output_tokens, 10 + static_cast<int32_t>(r.id % 5) * 30);
  }
}

// Target: 1 ms + 10 us per token, all of it in the layers but 2 us of head
// per sampled row; draft: 1 us per token of layers.
class TargetPerf final : public PerfModel {
 public:
  int64_t IterationNs(const BatchShape& s) const override { return 1000000 + 10000 * s.tokens() + 2000 * s.sampled_seqs; }
  IterationSplit Split(const BatchShape& s) const override {
    return {1000000, 10000 * s.tokens(), 2000 * s.sampled_seqs};
  }
  std::vector<std::pair<std::string, std::string>> Sources() const override { return {{"all", "test"}}; }
};
class DraftPerf final : public PerfModel {
 public:
  int64_t IterationNs(const BatchShape& s) const override { return 500000 + 1000 * s.tokens(); }
  IterationSplit Split(const BatchShape& s) const override { return {500000, 1000 * s.tokens(), 0}; }
  std::vector<std::pair<std::string, std::string>> Sources() const override { return {{"all", "draft"}}; }
};

BatchShape Decodes(int32_t n, int64_t kv) {
  BatchShape s;
  s.decode_seqs = n;
  s.decode_tokens = n;
  s.decode_kv_tokens = kv;
  s.sampled_seqs = n;
  return s;
}

TEST(SpeculativePerfModel, AStepIsKDraftPassesAndOneVerificationOfKPlusOneTokens) {
  TargetPerf target;
  DraftPerf draft;
  SpeculativeCost c;
  c.k = 3;
  c.draft = &draft;
  c.proposer = "d";
  SpeculativePerfModel m(target, c);
  // 2 decoders: the target scores 2 x 4 tokens and samples at all 8
  // (1 ms + 80 us + 16 us); the draft's three passes of 2 tokens cost its
  // GPU time alone (3 x 2 us), not its CPU time.
  EXPECT_EQ(m.IterationNs(Decodes(2, 300)), 1000000 + 80000 + 16000 + 3 * 2000);
  EXPECT_EQ(m.ProposerNs(Decodes(2, 300)), 6000);
  // A prefill-only step: the target's, plus the draft's prefill of the chunk.
  BatchShape p;
  p.prefill_seqs = 1;
  p.prefill_tokens = 100;
  p.prefill_kv_tokens = 100;
  p.sampled_seqs = 1;
  EXPECT_EQ(m.IterationNs(p), 1000000 + 1000000 + 2000 + 100000);
  // Mixed: the chunk rides the draft's first pass only.
  BatchShape mixed = Decodes(2, 300);
  mixed.prefill_seqs = 1;
  mixed.prefill_tokens = 100;
  mixed.sampled_seqs += 1;
  EXPECT_EQ(m.ProposerNs(mixed), 102000 + 2 * 2000);
}

TEST(SpeculativePerfModel, AnEagleHeadCostsItsShareOfTheTargetsLayersPlusTheHead) {
  TargetPerf target;
  SpeculativeCost c;
  c.k = 2;
  c.head_layer_fraction = 0.25;
  c.proposer = "eagle";
  SpeculativePerfModel m(target, c);
  // A pass over 4 decoders: a quarter of 40 us of layers, and the head on
  // 4 rows (8 us): 18 us, twice.
  EXPECT_EQ(m.ProposerNs(Decodes(4, 1000)), 2 * (10000 + 8000));
  EXPECT_EQ(m.Sources().back(), (std::pair<std::string, std::string>{"speculative_proposer", "eagle"}));
}

}  // namespace
}  // namespace fleetsim

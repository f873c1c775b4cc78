// Pipeline parallelism: the executor's stage arithmetic by hand, and
// replicas with several batches in flight (decoder groups) under every
// scheduler.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/engine/rng.h"
#include "sim/cluster/executor.h"
#include "tests/sim/replica_rig.h"

namespace fleetsim {
namespace {

using testing_rig::Fixture;
using testing_rig::Rig;

// Splits every iteration into 1 us of CPU, 4 us of layers and 0.5 us of head.
class SplitPerf final : public PerfModel {
 public:
  int64_t IterationNs(const BatchShape&) const override { return 5500; }
  IterationSplit Split(const BatchShape&) const override { return {1000, 4000, 500}; }
  std::vector<std::pair<std::string, std::string>> Sources() const override { return {{"all", "test"}}; }
};

TEST(DefaultLayerSplit, RemainderGoesToTheStagesBeforeTheLast) {
  EXPECT_EQ(DefaultLayerSplit(32, 4), (std::vector<int>{8, 8, 8, 8}));
  EXPECT_EQ(DefaultLayerSplit(80, 3), (std::vector<int>{27, 27, 26}));
  EXPECT_EQ(DefaultLayerSplit(126, 4), (std::vector<int>{31, 32, 32, 31}));
  EXPECT_EQ(DefaultLayerSplit(7, 1), (std::vector<int>{7}));
}

struct ExecutorRig {
  explicit ExecutorRig(PipelinePlan p) : sim(1), plan(std::move(p)) {
    exec = std::make_unique<SimulatedExecutor>(sim, perf, &plan, [this](uint64_t id) {
      done.push_back({id, sim.now()});
    });
  }
  void LaunchAt(SimTime t, uint64_t id, int64_t tokens) {
    sim.At(t, [this, id, tokens] {
      BatchShape s;
      s.decode_seqs = static_cast<int32_t>(tokens);
      s.decode_tokens = tokens;
      s.decode_kv_tokens = tokens;
      s.sampled_seqs = static_cast<int32_t>(tokens);
      Batch b;
      exec->Launch(LaunchedBatch{id, s, BatchSequences(state, b)});
    });
  }
  Simulation sim;
  SplitPerf perf;
  PipelinePlan plan;
  ReplicaState state{10, 16};
  std::unique_ptr<SimulatedExecutor> exec;
  std::vector<std::pair<uint64_t, SimTime>> done;
};

PipelinePlan Stages(std::vector<int> layers, double alpha_ns, double gbps, double bytes_per_token) {
  PipelinePlan p;
  p.layers = std::move(layers);
  p.links.assign(p.layers.size() - 1, StageLink{alpha_ns, gbps});
  p.send_bytes_per_token = bytes_per_token;
  return p;
}

// PP = 4, one batch of one token: CPU, then the four stages' shares of the
// layers (1 us each), the head on the last, and three sends of
// alpha + bytes / B = 100 + 200 / 2 = 200 ns.
TEST(PipelineExecutor, OneBatchIsTheSumOfItsStagesPlusThreeSends) {
  ExecutorRig r(Stages({8, 8, 8, 8}, 100, 2, 200));
  EXPECT_EQ(r.exec->max_in_flight(), 4);
  EXPECT_FALSE(r.exec->spans());
  r.LaunchAt(0, 7, 1);
  r.sim.Run();
  ASSERT_EQ(r.done.size(), 1u);
  EXPECT_EQ(r.done[0].first, 7u);
  EXPECT_EQ(r.done[0].second, 1000 + 4 * 1000 + 500 + 3 * 200);
}

// At steady load (batches launched faster than a stage runs) the pipeline
// holds pp batches, and after the first each completes one slowest-stage
// time after the one before: here the last stage, 1 us of layers + 0.5 us
// of head.
TEST(PipelineExecutor, SteadyLoadCompletesOneBatchPerSlowestStage) {
  ExecutorRig r(Stages({8, 8, 8, 8}, 100, 2, 200));
  for (uint64_t i = 0; i < 12; ++i) r.LaunchAt(0, i, 1);
  r.sim.Run();
  ASSERT_EQ(r.done.size(), 12u);
  for (size_t i = 0; i < r.done.size(); ++i) EXPECT_EQ(r.done[i].first, i);  // in launch order
  // The CPU (1 us per batch) feeds the first stage no faster than the last
  // stage drains, so the last stage sets the rate.
  for (size_t i = 4; i < r.done.size(); ++i) EXPECT_EQ(r.done[i].second - r.done[i - 1].second, 1500) << i;
  // pp batches complete in pp slowest-stage times.
  EXPECT_EQ(r.done[11].second - r.done[7].second, 4 * 1500);
}

// An unequal split shows: the stage with most layers queues the rest.
TEST(PipelineExecutor, UnequalSplitIsPacedByTheLargestStage) {
  // 32 layers as 4, 4, 20, 4: stage 2 runs 20/32 of 4 us = 2.5 us.
  ExecutorRig r(Stages({4, 4, 20, 4}, 0, 1, 0));
  for (uint64_t i = 0; i < 10; ++i) r.LaunchAt(0, i, 1);
  r.sim.Run();
  ASSERT_EQ(r.done.size(), 10u);
  for (size_t i = 5; i < r.done.size(); ++i) EXPECT_EQ(r.done[i].second - r.done[i - 1].second, 2500) << i;
  const std::vector<SimTime>& busy = r.exec->stage_busy();
  ASSERT_EQ(busy.size(), 4u);
  EXPECT_EQ(busy[2], 10 * 2500);
  EXPECT_EQ(busy[0], 10 * 500);
  EXPECT_EQ(busy[3], 10 * (500 + 500));
}

// Sends scale with the tokens of the batch.
TEST(PipelineExecutor, SendsCarryEveryTokenOfTheBatch) {
  ExecutorRig r(Stages({1, 1}, 50, 4, 100));
  r.LaunchAt(0, 0, 10);  // 10 tokens x 100 bytes / 4 GB/s = 250 ns + 50
  r.sim.Run();
  ASSERT_EQ(r.done.size(), 1u);
  EXPECT_EQ(r.done[0].second, 1000 + 2000 + 2000 + 500 + 300);
}

// A replica at pp = 4 with one request: every decode step is one batch
// through the whole pipeline, so each gap between tokens is the iteration's
// stages plus three sends (LinearPerf's time all in the layers).
TEST(PipelineReplica, ABatchOfOneDecodesAtThePipelinesLatency) {
  const PipelinePlan plan = Stages({8, 8, 8, 8}, 1000, 1, 0);
  Rig rig;
  rig.limits.max_model_len = 4096;
  rig.pipeline = &plan;
  Fixture f(rig);
  f.SubmitAt(0, 16, 6, 1);
  f.RunChecked();
  ASSERT_EQ(f.rec.finished.size(), 1u);
  ASSERT_EQ(f.rec.shapes.size(), 6u);
  for (size_t i = 1; i < f.rec.shapes.size(); ++i) {
    const BatchShape& s = f.rec.shapes[i];
    const int64_t stage = std::llround(static_cast<double>(f.perf.IterationNs(s)) / 4);
    EXPECT_EQ(f.rec.iterations[i].second - f.rec.iterations[i].first, 4 * stage + 3 * 1000) << i;
  }
  // One request never has two batches in flight: its steps run one by one.
  for (size_t i = 1; i < f.rec.iterations.size(); ++i)
    EXPECT_GE(f.rec.iterations[i].first, f.rec.iterations[i - 1].second);
}

// Many requests at pp = 4: up to four batches overlap, each request is in
// at most one of them, and the replica finishes the same work in less time
// than at pp = 1 on the same per-iteration cost.
TEST(PipelineReplica, SeveralBatchesInFlightOverlap) {
  const PipelinePlan plan = Stages({8, 8, 8, 8}, 0, 1, 0);
  auto run = [](const PipelinePlan* p) {
    Rig rig;
    rig.limits.max_model_len = 4096;
    rig.pipeline = p;
    Fixture f(rig);
    for (int i = 0; i < 64; ++i) f.SubmitAt(0, 32, 40, i);
    f.RunChecked();
    EXPECT_EQ(f.rec.finished.size(), 64u);
    int overlap = 0;
    for (size_t i = 0; i < f.rec.iterations.size(); ++i) {
      int live = 0;
      for (size_t j = 0; j < f.rec.iterations.size(); ++j)
        live += f.rec.iterations[j].first <= f.rec.iterations[i].first &&
                f.rec.iterations[j].second > f.rec.iterations[i].first;
      overlap = std::max(overlap, live);
    }
    SimTime end = 0;
    for (const RequestRecord& r : f.rec.finished) {
      EXPECT_EQ(r.status, RequestStatus::kCompleted);
      EXPECT_EQ(r.generated_tokens, r.output_tokens);
      end = std::max(end, r.finish);
    }
    EXPECT_EQ(f.rec.gap_total, 64 * 39);
    return std::make_pair(overlap, end);
  };
  const auto [overlap4, end4] = run(&plan);
  const auto [overlap1, end1] = run(nullptr);
  EXPECT_EQ(overlap1, 1);
  EXPECT_EQ(overlap4, 4);
  EXPECT_LT(end4, end1);
}

// Every scheduler, random load on a small cache (preemption), pp = 3: the
// groups' sums hold after every millisecond and nothing leaks.
class PipelineSchedulers : public ::testing::TestWithParam<const char*> {};

TEST_P(PipelineSchedulers, InvariantsHoldUnderRandomLoad) {
  const PipelinePlan plan = Stages({3, 2, 2}, 500, 1, 1);
  Rig rig;
  rig.scheduler = GetParam();
  rig.limits.max_num_batched_tokens = 1024;
  rig.limits.max_num_seqs = 32;
  rig.limits.max_model_len = 1000;
  rig.kv_blocks = 96;
  rig.pipeline = &plan;
  Fixture f(rig);
  Rng rng(7);
  SimTime t = 0;
  for (int i = 0; i < 300; ++i) {
    t += static_cast<SimTime>(rng.Exponential(2e6));
    f.SubmitAt(t, 1 + static_cast<int32_t>(rng.Below(300)), 1 + static_cast<int32_t>(rng.Below(200)), i);
  }
  f.RunChecked();
  ASSERT_EQ(f.rec.finished.size(), 300u);
  int64_t tokens = 0;
  for (const RequestRecord& r : f.rec.finished) {
    ASSERT_EQ(r.status, RequestStatus::kCompleted) << r.id;
    EXPECT_EQ(r.generated_tokens, r.output_tokens);
    tokens += r.output_tokens - 1;
  }
  EXPECT_EQ(f.rec.gap_total, tokens);
  EXPECT_EQ(f.replica->state().kv().used_blocks(), 0);
  EXPECT_EQ(f.replica->in_flight(), 0);
  // The cache is small enough that memory ran short (Orca reserves whole
  // lengths at admission instead).
  if (std::string(GetParam()) != "orca") EXPECT_GT(f.replica->state().preemptions(), 0);
}

INSTANTIATE_TEST_SUITE_P(All, PipelineSchedulers, ::testing::Values("vllm", "vllm_v0", "sarathi", "orca", "sglang"));

}  // namespace
}  // namespace fleetsim

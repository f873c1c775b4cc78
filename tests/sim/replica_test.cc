// Replica + ReplicaState + VllmScheduler against hand-computed timelines,
// with a PerfModel whose answers are easy to add up by hand.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "sim/cluster/replica.h"
#include "sim/cluster/vllm_scheduler.h"
#include "sim/engine/simulation.h"
#include "tests/sim/replica_rig.h"

namespace fleetsim {
namespace {

using namespace testing_rig;

// A vLLM V1 replica with `kv_blocks` blocks and the given limits.
Fixture Vllm(int64_t kv_blocks, SchedulerLimits limits = {}, int max_model_len = 1 << 20) {
  Rig r;
  r.scheduler = "vllm";
  r.limits = limits;
  r.limits.max_model_len = max_model_len;
  r.kv_blocks = kv_blocks;
  return Fixture(r);
}

TEST(Replica, SingleRequestTimelineMatchesIterationTimes) {
  Fixture f = Vllm(1000);
  f.SubmitAt(0, 100, 5, 0);
  f.sim.Run();
  ASSERT_EQ(f.rec.finished.size(), 1u);
  const RequestRecord& r = f.rec.finished[0];
  // Prefill of 100 tokens reads 100 KV tokens.
  const SimTime prefill = kMillisecond + 100 * kMicrosecond + 100;
  EXPECT_EQ(r.first_token, prefill);
  // Decode step k (k = 0..3) feeds one token with 100 + k in KV, attends 101 + k.
  SimTime t = prefill;
  for (int k = 0; k < 4; ++k) t += kMillisecond + kMicrosecond + 101 + k;
  EXPECT_EQ(r.finish, t);
  EXPECT_EQ(r.generated_tokens, 5);
  EXPECT_EQ(r.status, RequestStatus::kCompleted);
  EXPECT_EQ(f.rec.gap_total, 4);
  EXPECT_EQ(f.replica->state().kv().used_blocks(), 0);
}

// An engine that builds step N+1 while step N runs and takes new requests
// into the step after that (SGLang's overlap scheduler): a request that
// comes during a step joins the step after the next; one that comes to an
// idle engine starts at once, as without it; every request ends.
TEST(Replica, AdmittingAfterTheNextStepDelaysARequestThatComesDuringAStep) {
  for (bool after_next : {false, true}) {
    SCOPED_TRACE(after_next ? "after the next step" : "the next step");
    Rig rig;
    rig.limits.max_model_len = 1 << 20;
    rig.admit_after_next_step = after_next;
    Fixture f(rig);
    f.SubmitAt(0, 100, 20, 0);
    // Step 0 (the prefill of request 0) runs 0 to 1.1 ms: request 1 comes
    // during it.
    f.SubmitAt(500 * kMicrosecond, 50, 5, 1);
    // Long after both ended: an idle engine.
    f.SubmitAt(100 * kMillisecond, 50, 5, 2);
    f.RunChecked();
    ASSERT_EQ(f.rec.finished.size(), 3u);
    std::map<uint64_t, RequestRecord> by_id;
    for (const RequestRecord& r : f.rec.finished) by_id[r.id] = r;
    ASSERT_GE(f.rec.iterations.size(), 3u);
    const SimTime step1 = f.rec.iterations[1].first, step2 = f.rec.iterations[2].first;
    EXPECT_EQ(by_id[0].first_scheduled, 0);
    // Step 1 is built when step 0 ends, or (after_next) was built at 0.
    EXPECT_EQ(by_id[1].first_scheduled, after_next ? step2 : step1);
    EXPECT_EQ(f.rec.shapes[1].prefill_tokens, after_next ? 0 : 50);
    EXPECT_EQ(f.rec.shapes[2].prefill_tokens, after_next ? 50 : 0);
    EXPECT_EQ(by_id[2].first_scheduled, 100 * kMillisecond);
    for (const auto& [id, r] : by_id) EXPECT_EQ(r.status, RequestStatus::kCompleted) << id;
  }
}

TEST(Replica, LongPromptIsChunkedByTheTokenBudget) {
  SchedulerLimits limits;
  limits.max_num_batched_tokens = 512;
  limits.max_num_seqs = 16;
  Fixture f = Vllm(10000, limits);
  f.SubmitAt(0, 8192, 2, 0);
  f.sim.Run();
  ASSERT_EQ(f.rec.finished.size(), 1u);
  // 8192 / 512 = 16 prefill iterations, then one decode.
  ASSERT_EQ(f.rec.shapes.size(), 17u);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(f.rec.shapes[i].prefill_tokens, 512) << i;
    EXPECT_EQ(f.rec.shapes[i].prefill_kv_tokens, 512 * (i + 1)) << i;
  }
  EXPECT_EQ(f.rec.shapes[15].sampled_seqs, 1);
  EXPECT_EQ(f.rec.shapes[16].decode_seqs, 1);
}

TEST(Replica, RunningDecodesComeBeforeNewPrefills) {
  SchedulerLimits limits;
  limits.max_num_batched_tokens = 64;
  limits.max_num_seqs = 16;
  Fixture f = Vllm(10000, limits);
  f.SubmitAt(0, 10, 50, 0);
  f.SubmitAt(5 * kMillisecond, 200, 2, 1);
  f.sim.Run();
  ASSERT_EQ(f.rec.finished.size(), 2u);
  // Once request 1 arrives, every iteration still carries request 0's decode,
  // and the prefill gets the remaining 63 tokens of the budget.
  bool saw_mixed = false;
  for (const BatchShape& s : f.rec.shapes) {
    if (s.prefill_tokens > 0 && s.decode_seqs > 0) {
      saw_mixed = true;
      EXPECT_LE(s.prefill_tokens, 63);
    }
  }
  EXPECT_TRUE(saw_mixed);
}

TEST(Replica, RejectsRequestLongerThanMaxModelLen) {
  Fixture f = Vllm(1000, {}, 128);
  f.SubmitAt(0, 100, 29, 0);
  f.SubmitAt(0, 100, 28, 1);
  f.sim.Run();
  ASSERT_EQ(f.rec.finished.size(), 2u);
  EXPECT_EQ(f.rec.finished[0].status, RequestStatus::kRejected);
  EXPECT_EQ(f.rec.finished[0].reason, "exceeds_max_model_len");
  EXPECT_EQ(f.rec.finished[1].status, RequestStatus::kCompleted);
}

TEST(Replica, PreemptsLatestArrivedWhenBlocksRunOutAndRecomputes) {
  // 8 blocks = 128 tokens. Two requests of 40-token prompts that each grow to
  // 40 + 60 tokens cannot both stay: the later one is preempted.
  Fixture f = Vllm(8);
  f.SubmitAt(0, 40, 60, 0);
  f.SubmitAt(0, 40, 60, 1);
  f.sim.Run();
  ASSERT_EQ(f.rec.finished.size(), 2u);
  for (const RequestRecord& r : f.rec.finished) {
    EXPECT_EQ(r.status, RequestStatus::kCompleted);
    EXPECT_EQ(r.generated_tokens, 60);
  }
  const RequestRecord& first = f.rec.finished[0].id == 0 ? f.rec.finished[0] : f.rec.finished[1];
  const RequestRecord& second = f.rec.finished[0].id == 1 ? f.rec.finished[0] : f.rec.finished[1];
  EXPECT_EQ(first.preemptions, 0);
  EXPECT_GE(second.preemptions, 1);
  EXPECT_EQ(f.replica->state().preemptions(), second.preemptions);
  EXPECT_EQ(f.replica->state().kv().used_blocks(), 0);
  // Every output token but the first has exactly one gap.
  EXPECT_EQ(f.rec.gap_total, 2 * 59);
}

TEST(Replica, SharedGapsAreRecordedOncePerGroup) {
  Fixture f = Vllm(1000);
  for (int i = 0; i < 8; ++i) f.SubmitAt(0, 16, 10, i);
  f.sim.Run();
  ASSERT_EQ(f.rec.finished.size(), 8u);
  EXPECT_EQ(f.rec.gap_total, 8 * 9);
  // The eight decode in lockstep: one gap entry per iteration, not per
  // sequence (request 0 runs one step ahead of the seven that queued behind
  // its first iteration, so a few iterations carry two groups).
  EXPECT_LE(static_cast<int64_t>(f.rec.gaps.size()), static_cast<int64_t>(f.rec.iterations.size()) + 2);
}

// Random load on a small cache: the running sums must match a walk over the
// sequences after every iteration, and nothing may leak.
TEST(Replica, InvariantsHoldUnderRandomLoadWithPreemption) {
  SchedulerLimits limits;
  limits.max_num_batched_tokens = 256;
  limits.max_num_seqs = 32;
  Fixture f = Vllm(64, limits, 1000);
  Rng rng(99);
  SimTime t = 0;
  for (int i = 0; i < 400; ++i) {
    t += static_cast<SimTime>(rng.Exponential(3e6));
    f.SubmitAt(t, 1 + static_cast<int32_t>(rng.Below(300)), 1 + static_cast<int32_t>(rng.Below(200)), i);
  }
  int checks = 0;
  while (f.sim.pending() > 0) {
    f.sim.Run(f.sim.now() + kMillisecond);
    ASSERT_TRUE(f.replica->state().CheckInvariants()) << "at " << f.sim.now();
    ++checks;
  }
  EXPECT_GT(checks, 100);
  EXPECT_EQ(f.rec.finished.size(), 400u);
  int64_t tokens = 0, completed = 0;
  for (const RequestRecord& r : f.rec.finished) {
    if (r.status == RequestStatus::kCompleted) {
      ++completed;
      EXPECT_EQ(r.generated_tokens, r.output_tokens);
      tokens += r.output_tokens - 1;
    }
  }
  EXPECT_EQ(completed, 400);
  EXPECT_EQ(f.rec.gap_total, tokens);
  EXPECT_GT(f.replica->state().preemptions(), 0);
  EXPECT_EQ(f.replica->state().kv().used_blocks(), 0);
}

}  // namespace
}  // namespace fleetsim

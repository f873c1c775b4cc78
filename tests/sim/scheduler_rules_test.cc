// Each engine's defining rules, step by step: small cases whose every
// decision was worked out by hand from the engine's own code (file and
// function named in each test), so that the schedulers are checked against
// the engines rather than against themselves. Block size 16 throughout.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <vector>

#include "sim/cluster/batch_scheduler.h"
#include "sim/cluster/replica_state.h"
#include "sim/cluster/sglang_scheduler.h"
#include "tests/sim/replica_rig.h"

namespace fleetsim {
namespace {

using testing_rig::Schedulers;

// One scheduler over one ReplicaState, an iteration at a time: Step() builds
// a batch and completes it 1 ms later.
struct Stepper {
  Stepper(const char* name, int64_t kv_blocks, bool prefix_caching, SchedulerLimits limits = {},
          const SchedulerParams& params = {})
      : scheduler(Make(name, limits, params)),
        state(kv_blocks, 16, PreemptionMode::kRecompute, 0,
              prefix_caching ? std::optional(scheduler->prefix_cache_policy().eviction) : std::nullopt,
              scheduler->state_rules()) {}
  static std::unique_ptr<BatchScheduler> Make(const char* name, SchedulerLimits limits,
                                              const SchedulerParams& params) {
    if (limits.max_model_len == 0) limits.max_model_len = 1 << 20;
    std::unique_ptr<BatchScheduler> out;
    const Status st = Schedulers().Find(name)->factory(limits, params, &out);
    EXPECT_TRUE(st.ok()) << st.message();
    return out;
  }
  SeqId Add(uint64_t id, int32_t prompt, int32_t output, std::vector<uint64_t> ids = {}, int32_t per_id = 0) {
    Request r;
    r.id = id;
    r.arrival = now;
    r.prompt_tokens = prompt;
    r.output_tokens = output;
    r.prefix_blocks = std::move(ids);
    r.prefix_block_tokens = per_id;
    return state.Enqueue(std::move(r), now);
  }
  Batch Step() {
    Batch b;
    b.start = now;
    const int64_t preemptions = state.preemptions();
    scheduler->Schedule(state, now, &b);
    preempted = state.preemptions() - preemptions;
    now += kMillisecond;
    Batch done = b;
    state.Complete(b, now, [](SimTime, int64_t) {}, [](const Seq&) {});
    EXPECT_TRUE(state.CheckInvariants());
    return done;
  }
  // Tokens of `seq`'s prefill in `b`, or 0.
  static int32_t ChunkOf(const Batch& b, SeqId seq) {
    for (const Chunk& c : b.chunks)
      if (c.seq == seq) return c.tokens;
    return 0;
  }
  std::unique_ptr<BatchScheduler> scheduler;
  ReplicaState state;
  SimTime now = 0;
  int64_t preempted = 0;  // preemptions in the last step
};

SchedulerLimits Limits(int64_t tokens, int64_t seqs = 1024) {
  SchedulerLimits l;
  l.max_num_batched_tokens = tokens;
  l.max_num_seqs = seqs;
  return l;
}

// ---- vLLM V1 -------------------------------------------------------------------

// vllm/v1/core/sched/scheduler.py, Scheduler.schedule: the WAITING requests
// are scheduled only `if not preempted_reqs`.
TEST(VllmV1, AdmitsNoRequestInAStepThatPreempted) {
  // 4 blocks, budget 33, prefix caching off so that only blocks count.
  Stepper e("vllm", 4, /*prefix_caching=*/false, Limits(33));
  const SeqId a = e.Add(0, 16, 100);
  const SeqId b = e.Add(1, 64, 10);
  // Step 1: A's 16 tokens (1 block), B's first 17 (2 blocks): 3 of 4 used.
  Batch s1 = e.Step();
  EXPECT_EQ(e.ChunkOf(s1, a), 16);
  EXPECT_EQ(e.ChunkOf(s1, b), 17);
  EXPECT_EQ(e.state.kv().used_blocks(), 3);
  // Step 2: A decodes (position 16, the last free block). B asks for 32
  // tokens, 2 more blocks, none free: the running list's tail is B itself,
  // preempted (allocate_slots fails, self.running.pop() == request). B,
  // back at the front of the queue, would now fit a 32-token chunk in the 2
  // blocks it freed, but nothing is admitted in this step.
  Batch s2 = e.Step();
  EXPECT_TRUE(s2.decodes);
  EXPECT_EQ(s2.decode_seqs, 1);
  EXPECT_TRUE(s2.chunks.empty());
  EXPECT_EQ(e.preempted, 1);
  EXPECT_EQ(e.state.seq(b).phase, SeqPhase::kWaiting);
  EXPECT_EQ(e.state.waiting().front(), b);
  // Step 3: no preemption; A decodes (position 17, no new block) and B is
  // admitted again from its first token with 32 of the 32 tokens left.
  Batch s3 = e.Step();
  EXPECT_EQ(e.preempted, 0);
  EXPECT_EQ(s3.decode_seqs, 1);
  ASSERT_EQ(s3.chunks.size(), 1u);
  EXPECT_EQ(s3.chunks[0].seq, b);
  EXPECT_EQ(s3.chunks[0].start, 0);
  EXPECT_EQ(s3.chunks[0].tokens, 32);
}

// scheduler.py, Scheduler.schedule under the FCFS policy: the victim is
// `self.running.pop()`, the request admitted (or resumed) last, whatever its
// arrival, id or priority. Two requests arriving at the same instant may be
// queued out of id order (the API server passes the shorter first).
TEST(VllmV1, PreemptsTheTailOfTheRunningQueue) {
  Stepper e("vllm", 4, /*prefix_caching=*/false);
  const SeqId first = e.Add(/*id=*/1, 32, 50);  // queued first, the larger id
  const SeqId second = e.Add(/*id=*/0, 32, 50);
  // Step 1: both prefill, 2 blocks each: all 4 used.
  e.Step();
  // Step 2: both write position 32 and need a block; none is free. The tail
  // of the running list, `second` (id 0), goes; its 2 blocks cover `first`.
  Batch s2 = e.Step();
  EXPECT_EQ(e.preempted, 1);
  EXPECT_EQ(e.state.seq(second).phase, SeqPhase::kWaiting);
  EXPECT_EQ(e.state.seq(first).phase, SeqPhase::kDecode);
  EXPECT_EQ(s2.decode_seqs, 1);
  EXPECT_EQ(e.state.seq(first).preemptions, 0);
}

// kv_cache_manager.py, KVCacheManager.allocate_slots caches every full block
// (cache_blocks up to num_computed_tokens + num_new_tokens, output tokens
// included); get_computed_blocks matches request.block_hashes, prompt and
// output, up to num_tokens - 1; free() releases blocks in reverse order.
TEST(VllmV1, APreemptedRequestResumesFromItsOwnCachedBlocks) {
  Stepper e("vllm", 6, /*prefix_caching=*/true);
  const SeqId x = e.Add(0, 20, 4);   // finishes at step 4
  const SeqId a = e.Add(1, 14, 100);
  const SeqId b = e.Add(2, 30, 100);
  // Step 1: all three prefill: 2 + 1 + 2 = 5 of 6 blocks.
  e.Step();
  EXPECT_EQ(e.state.kv().used_blocks(), 5);
  // Steps 2 and 3: positions 20-21, 14-15 and 30-31: no new block. B's two
  // blocks are now full: 30 prompt tokens and its first two outputs.
  e.Step();
  e.Step();
  // Step 4: A writes position 16 and B position 32, 2 new blocks; 1 is
  // free. B, the tail, is preempted with 3 outputs; its 2 full blocks stay
  // cached, A takes the free block, X decodes its last token and finishes.
  Batch s4 = e.Step();
  EXPECT_EQ(e.preempted, 1);
  EXPECT_EQ(s4.decode_seqs, 2);
  EXPECT_TRUE(s4.chunks.empty());
  EXPECT_EQ(e.state.seq(b).generated, 3);
  EXPECT_EQ(e.state.seq(b).prefill_target, 33);
  // Step 5: B resumes: 32 of its 33 tokens are its own cached blocks (at
  // most num_tokens - 1 may hit), so it computes 1 token, attending to 33.
  Batch s5 = e.Step();
  EXPECT_EQ(s5.decode_seqs, 1);  // A
  ASSERT_EQ(s5.chunks.size(), 1u);
  EXPECT_EQ(s5.chunks[0].seq, b);
  EXPECT_EQ(s5.chunks[0].start, 32);
  EXPECT_EQ(s5.chunks[0].tokens, 1);
  EXPECT_EQ(s5.shape.cached_tokens, 32);
  EXPECT_EQ(s5.shape.prefill_attn_pairs, 1 * 32 + 1);
  EXPECT_EQ(e.state.seq(b).phase, SeqPhase::kDecode);  // its 4th output came
  // Not a prompt hit: the hit rate counts first admissions only.
  EXPECT_EQ(e.state.prefix_hit_tokens(), 0);
  (void)x;
  (void)a;
}

// kv_cache_manager.py, KVCacheManager.free: "We free the blocks in reverse
// order so that the tail blocks are evicted first"; block_pool.py's free
// queue hands out (and evicts) from its head.
TEST(VllmV1, FreesAChainTailFirstSoLruKeepsItsHead) {
  Stepper e("vllm", 5, /*prefix_caching=*/true);
  // R caches three 16-token prompt ids (one block each) and finishes.
  e.Add(0, 48, 1, {1, 2, 3}, 16);
  e.Step();
  const PrefixCache& c = *e.state.kv().cache();
  const auto n1 = c.Child(PrefixCache::kRoot, 1), n2 = c.Child(n1, 2);
  ASSERT_NE(c.Child(n2, 3), 0u);
  EXPECT_EQ(c.evictable_blocks(), 3);
  // Q needs 3 blocks, 2 are free: one cached block is evicted, id 3, the
  // tail R released first (forward release would evict id 1 and orphan 2
  // and 3).
  e.Add(1, 48, 1);
  e.Step();
  EXPECT_EQ(c.Child(n2, 3), 0u);
  EXPECT_EQ(c.Child(n1, 2), n2);
  EXPECT_EQ(c.evicted_blocks(), 1);
  // P shares ids 1-3: ids 1 and 2 are still there.
  e.Add(2, 49, 1, {1, 2, 3}, 16);
  Batch s3 = e.Step();
  EXPECT_EQ(s3.shape.cached_tokens, 32);
  EXPECT_EQ(s3.shape.prefill_tokens, 17);
}

// ---- SGLang -------------------------------------------------------------------

// schedule_policy.py, PrefillAdder: rem_total_tokens is the free and
// evictable KV less, per running request, min(max_new_tokens - outputs,
// CLIP_MAX_NEW_TOKENS) x new_token_ratio; add_one_req charges a newcomer
// extend_input_len + min(max_new_tokens, CLIP_MAX_NEW_TOKENS) in full and
// answers NO_TOKEN when that is >= rem_total_tokens.
TEST(Sglang, ANewcomerReservesItsWholeClippedOutput) {
  for (const int64_t clip : {4096, 400}) {
    SCOPED_TRACE(clip);
    Stepper e("sglang", 40, /*prefix_caching=*/false, Limits(4096),
              {{"clip_max_new_tokens", static_cast<double>(clip)}});
    const SeqId a = e.Add(0, 16, 11);
    e.Step();  // A prefills: 1 block, 10 outputs left
    const SeqId b = e.Add(1, 200, 420);
    // Room: 39 free blocks = 624 tokens, less A's 10 x 0.7 = 7: 617. B asks
    // 200 + min(420, clip): 620 does not fit (B's estimate at the ratio,
    // 200 + 294, would); with clip 400, 600 does.
    Batch s2 = e.Step();
    if (clip == 400) {
      EXPECT_EQ(e.ChunkOf(s2, b), 200);
      continue;
    }
    EXPECT_TRUE(s2.chunks.empty());
    EXPECT_TRUE(s2.decodes);
    // A's last token comes at step 11; B is admitted at step 12.
    for (int step = 3; step <= 11; ++step) EXPECT_TRUE(e.Step().chunks.empty()) << step;
    EXPECT_EQ(e.state.num_decoding(), 0);
    EXPECT_EQ(e.ChunkOf(e.Step(), b), 200);
    (void)a;
  }
}

// schedule_batch.py (v0.4), ScheduleBatch.retract_decode: decoders sorted by
// (len(output_ids), -len(origin_input_ids)) in reverse and popped from the
// end, at least one, until available_size() >= remaining x
// retract_decode_steps (20), keeping the last; new ratio = (decoded +
// 20 x remaining) / their max_new_tokens, at most 1. scheduler.py,
// update_running_batch: the retracted go to the back of the waiting queue.
TEST(Sglang, RetractsFewestOutputsLongestPromptUntilEachDecoderHasHeadroom) {
  // Ratio 0 and a clip of 1, so that admission is about prompts alone.
  Stepper e("sglang", 7, /*prefix_caching=*/false, Limits(8192, /*seqs=*/4),
            {{"init_new_token_ratio", 0}, {"min_new_token_ratio", 0}, {"clip_max_new_tokens", 1}});
  const SeqId a = e.Add(0, 16, 200);
  e.Step();  // A prefills (1 block)
  e.Step();  // A decodes position 16 (2 blocks), its 2nd output
  const SeqId b = e.Add(1, 16, 200);
  const SeqId c = e.Add(2, 32, 200);
  const SeqId d = e.Add(3, 16, 200);
  const SeqId late = e.Add(4, 16, 200);
  // Step 3: B, C, D prefill (1 + 2 + 1 blocks: 1 of 7 left); `late` waits
  // for max_num_seqs 4.
  Batch s3 = e.Step();
  EXPECT_EQ(s3.chunks.size(), 3u);
  EXPECT_EQ(e.state.kv().free_blocks(), 1);
  // Step 4: B, C and D need a block each, 1 is free. B, C, D have 1 output,
  // A 2: C goes first (1 output, the longest prompt): 3 free blocks, 48
  // tokens < 3 x 20. Then D (B's tie, but later in the batch): 64 >= 2 x 20.
  Batch s4 = e.Step();
  EXPECT_EQ(e.preempted, 2);
  EXPECT_EQ(e.state.seq(c).phase, SeqPhase::kWaiting);
  EXPECT_EQ(e.state.seq(d).phase, SeqPhase::kWaiting);
  EXPECT_EQ(s4.decode_seqs, 2);  // A and B
  // (A's 2 + B's 1 outputs + 20 x 2) / (200 + 200).
  EXPECT_DOUBLE_EQ(static_cast<const SglangScheduler&>(*e.scheduler).new_token_ratio(), 43.0 / 400.0);
  // Behind the request that was already waiting, in retraction order.
  EXPECT_EQ(std::vector<SeqId>(e.state.waiting().begin(), e.state.waiting().end()),
            (std::vector<SeqId>{late, c, d}));
  (void)a;
  (void)b;
}

// ---- Sarathi-Serve ---------------------------------------------------------------

// sarathi/core/scheduler/sarathi_scheduler.py, SarathiScheduler._schedule:
// a waiting request is admitted only if block_manager.can_allocate(seq) and
// then _allocate(seq) takes len(seq.logical_token_blocks) blocks, the whole
// prompt (vllm_block_space_manager.py, get_num_initial_blocks); can_allocate
// keeps a watermark of int(0.01 x blocks) free (base_block_space_manager.py).
TEST(Sarathi, TakesTheWholePromptsBlocksAtAdmission) {
  Stepper e("sarathi", 1000, /*prefix_caching=*/false, Limits(8192), {{"chunk_size", 512}});
  e.Add(0, 1000, 5);
  Batch s1 = e.Step();
  EXPECT_EQ(s1.shape.prefill_tokens, 512);
  EXPECT_EQ(e.state.kv().used_blocks(), 63);  // 1000 tokens, not the chunk's 32
  // 100 blocks keep 1 free: a 99-block prompt is admitted, a 100-block one
  // is not.
  Stepper fits("sarathi", 100, false, Limits(8192), {{"chunk_size", 512}});
  fits.Add(0, 99 * 16, 5);
  EXPECT_EQ(fits.Step().chunks.size(), 1u);
  Stepper not_fits("sarathi", 100, false, Limits(8192), {{"chunk_size", 512}});
  not_fits.Add(0, 99 * 16 + 1, 5);
  EXPECT_TRUE(not_fits.Step().chunks.empty());
}

// sarathi_scheduler.py, SarathiScheduler._schedule: self.running is sorted
// first come first served; a decoder that cannot append a slot preempts
// `self.running.pop(-1)`, the latest-arrived of those not yet visited, which
// may still be in prefill (its blocks all go back).
TEST(Sarathi, PreemptsTheLatestArrivedEvenMidPrefill) {
  Stepper e("sarathi", 23, /*prefix_caching=*/false, Limits(8192), {{"chunk_size", 64}});
  const SeqId a = e.Add(0, 31, 100);
  const SeqId b = e.Add(1, 31, 100);
  e.Step();  // A and B prefill: 2 + 2 blocks
  const SeqId c = e.Add(2, 300, 10);
  // Step 2: A and B decode (position 31, no new block); C is admitted with
  // 62 tokens and all 19 blocks of its prompt: 23 of 23 used.
  Batch s2 = e.Step();
  EXPECT_EQ(e.ChunkOf(s2, c), 62);
  EXPECT_EQ(e.state.kv().used_blocks(), 23);
  // Step 3: A and B write position 32: 2 blocks, none free. The running
  // list's tail is C, 62 of 300 tokens in: preempted, its 19 blocks freed,
  // and not admitted again (19 > 23 - 6).
  Batch s3 = e.Step();
  EXPECT_EQ(e.preempted, 1);
  EXPECT_EQ(s3.decode_seqs, 2);
  EXPECT_TRUE(s3.chunks.empty());
  EXPECT_EQ(e.state.seq(c).phase, SeqPhase::kWaiting);
  EXPECT_EQ(e.state.seq(c).prefilled, 0);
  EXPECT_EQ(e.state.waiting().front(), c);
  EXPECT_EQ(e.state.kv().used_blocks(), 6);
  (void)a;
  (void)b;
}

// sarathi_scheduler.py: `len(running) >= self.scheduler_config.max_num_seqs`
// is the only cap on running requests; decoders join the batch without a
// budget check. What `fleetsim validate` prints is the pool's max_num_seqs.
TEST(Sarathi, MaxNumSeqsIsThePoolsNotTheChunkSize) {
  auto s = Stepper::Make("sarathi", Limits(8192, 256), {{"chunk_size", 128}});
  EXPECT_EQ(s->step_limits().seqs, 256);
  EXPECT_EQ(s->step_limits().tokens, 128);
}

}  // namespace
}  // namespace fleetsim

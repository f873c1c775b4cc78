// VllmScheduler: vLLM V1's default scheduler (vllm/v1/core/sched/scheduler.py,
// Scheduler.schedule, v0.8-v0.11, FCFS policy), as the spine's default.
//
// One token budget per step (max_num_batched_tokens). Running requests are
// scheduled first: every decoder gets its one token, then running requests
// still in prefill get chunks (chunked prefill). When a running request
// cannot get KV blocks, the tail of the running queue (the request admitted
// or resumed last) is preempted and later recomputed; if that is the request
// itself, it stops there. Then, only in a step that preempted nobody,
// waiting requests are admitted in order while the budget, max_num_seqs and
// free KV blocks allow; the last one admitted may get a partial chunk. A
// waiting request that does not fit stops admission (no preemption on its
// behalf).
// Prefix caching (kv_cache_manager.py, block_pool.py): every full block is
// cached, generated tokens included, so a preempted request finds its own
// blocks when it resumes; a request's blocks are freed tail first, so LRU
// evicts the tail of a chain first.
// V1 has no swap; with the pool's preemption set to swap, swapped requests
// resume before admission. Options: none beyond the limits.
#pragma once

#include "sim/cluster/batch_scheduler.h"

namespace fleetsim {

class VllmScheduler final : public BatchScheduler {
 public:
  explicit VllmScheduler(const SchedulerLimits& limits) : limits_(limits) {}
  static Status Make(const SchedulerLimits& limits, const SchedulerParams& params,
                     std::unique_ptr<BatchScheduler>* out);
  void Schedule(ReplicaState& state, SimTime now, Batch* batch) override;
  StepLimits step_limits() const override { return {limits_.max_num_batched_tokens, limits_.max_num_seqs}; }
  StateRules state_rules() const override {
    return {.victim_order = VictimOrder::kRunningQueueTail, .cache_every_full_block = true};
  }

 private:
  SchedulerLimits limits_;
};

}  // namespace fleetsim

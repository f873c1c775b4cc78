// VllmScheduler: vLLM V1's default scheduler (vllm/v1/core/sched/scheduler.py,
// v0.8-v0.11, FCFS policy), as the spine's default.
//
// One token budget per step (max_num_batched_tokens). Running requests are
// scheduled first: every decoder gets its one token, then running requests
// still in prefill get chunks (chunked prefill). Then waiting requests are
// admitted in order while the budget, max_num_seqs and free KV blocks allow;
// the last one admitted may get a partial chunk. When a running request
// cannot get KV blocks, the lowest-priority (latest-arrived) running request
// not yet scheduled in this step is preempted and later recomputed; if that
// is the request itself, it stops there. A waiting request that does not fit
// stops admission (no preemption on its behalf). V1 has no swap; with the
// pool's preemption set to swap, swapped requests resume before admission.
// Options: none beyond the limits.
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

 private:
  SchedulerLimits limits_;
};

// The body of VllmScheduler::Schedule with a given budget, shared with
// Sarathi-Serve, whose rule is the same with a small fixed budget.
void ScheduleRunningFirst(ReplicaState& state, SimTime now, int64_t budget, int64_t max_num_seqs,
                          Batch* batch);

}  // namespace fleetsim

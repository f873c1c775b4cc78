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
// stops admission (no preemption on its behalf).
#pragma once

#include "sim/cluster/batch_scheduler.h"

namespace fleetsim {

class VllmScheduler final : public BatchScheduler {
 public:
  explicit VllmScheduler(const SchedulerLimits& limits) : limits_(limits) {}
  void Schedule(ReplicaState& state, SimTime now, Batch* batch) override;

 private:
  SchedulerLimits limits_;
};

}  // namespace fleetsim

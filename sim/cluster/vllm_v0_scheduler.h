// VllmV0Scheduler: vLLM V0's default scheduler without chunked prefill
// (vllm/core/scheduler.py, Scheduler._schedule_default, v0.4-v0.6).
//
// Prefill-first: when nothing is swapped out, waiting requests are admitted
// first come first served with their whole prompt in one step, while the
// token budget, max_num_seqs and free blocks (less a 1% watermark) allow. A
// step that admits any prefill runs prefills only; running decodes wait
// for a step without prefill, so a long prompt stalls every decode for its
// whole duration. Otherwise the step resumes swapped requests and runs the
// decoders, preempting the latest-arrived when blocks run out.
//
// Requires max_num_batched_tokens >= max_model_len, as vLLM V0 did without
// chunked prefill (else a long prompt could never run).
// Options: watermark (fraction of blocks kept free at admission, 0.01).
#pragma once

#include "sim/cluster/batch_scheduler.h"

namespace fleetsim {

class VllmV0Scheduler final : public BatchScheduler {
 public:
  struct Options {
    double watermark = 0.01;  // vLLM's block-manager watermark: fraction of blocks admission leaves free
  };
  VllmV0Scheduler(const SchedulerLimits& limits, const Options& options) : limits_(limits), options_(options) {}
  static Status Make(const SchedulerLimits& limits, const SchedulerParams& params,
                     std::unique_ptr<BatchScheduler>* out);
  void Schedule(ReplicaState& state, SimTime now, Batch* batch) override;
  StepLimits step_limits() const override { return {limits_.max_num_batched_tokens, limits_.max_num_seqs}; }
  PrefixCachePolicy prefix_cache_policy() const override { return {true, false, PrefixCache::Eviction::kLru}; }

 private:
  SchedulerLimits limits_;
  Options options_;
};

}  // namespace fleetsim

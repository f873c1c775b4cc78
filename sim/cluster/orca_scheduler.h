// OrcaScheduler: iteration-level batching with whole prefills and KV
// reserved up front, as Orca (Yu et al., OSDI 2022) and FasterTransformer
// served before paged attention.
//
// A request is admitted only when KV for its full length can be reserved
// (max_model_len, or with reserve_request_length its own prompt + output:
// an oracle no real engine had). The reservation covers its whole life, so
// decodes never need new blocks and nothing is preempted: admission, not
// preemption, limits the batch. Each iteration runs every decoder plus the
// whole prompts of newly admitted requests (at least one, even when it
// alone exceeds max_num_batched_tokens).
// Options: reserve_request_length (0 or 1, default 0).
#pragma once

#include "sim/cluster/batch_scheduler.h"

namespace fleetsim {

class OrcaScheduler final : public BatchScheduler {
 public:
  struct Options {
    bool reserve_request_length = false;  // reserve prompt + output instead of max_model_len
  };
  OrcaScheduler(const SchedulerLimits& limits, const Options& options) : limits_(limits), options_(options) {}
  static Status Make(const SchedulerLimits& limits, const SchedulerParams& params,
                     std::unique_ptr<BatchScheduler>* out);
  void Schedule(ReplicaState& state, SimTime now, Batch* batch) override;
  StepLimits step_limits() const override { return {limits_.max_num_batched_tokens, limits_.max_num_seqs}; }
  PrefixCachePolicy prefix_cache_policy() const override { return {false, false, PrefixCache::Eviction::kLru}; }

 private:
  SchedulerLimits limits_;
  Options options_;
};

}  // namespace fleetsim

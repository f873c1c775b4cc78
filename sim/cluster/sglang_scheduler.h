// SglangScheduler: SGLang's scheduler (sgl-project/sglang v0.4,
// managers/scheduler.py and schedule_policy.py's PrefillAdder), default
// flags: prefill-first, no mixed chunks, FCFS.
//
// A step first tries to build a prefill batch: the request being chunked
// continues, then waiting requests are admitted while the KV left after the
// running requests' *estimated* future use still holds the newcomer's
// prompt and its own estimate. The estimate of a request's future tokens is
// min(output left, clip_max_new_tokens) x new_token_ratio; the ratio starts
// at 0.7 x conservativeness, decays linearly to 0.1 x conservativeness over
// new_token_ratio_decay_steps decode steps, and jumps back to its start when
// a decode step runs out of memory and retracts requests. Prompts are
// chunked at chunked_prefill_size, with at most max_prefill_tokens per
// batch. A step with prefill runs no decodes; otherwise every decoder runs.
// The engine's knowledge of output lengths is the request's output_tokens
// (SGLang sees max_new_tokens).
// The radix-tree prefix cache is not modelled yet.
#pragma once

#include "sim/cluster/batch_scheduler.h"

namespace fleetsim {

class SglangScheduler final : public BatchScheduler {
 public:
  struct Options {
    int64_t chunked_prefill_size = 0;        // tokens per prefill chunk; 0: max_num_batched_tokens
    int64_t max_prefill_tokens = 16384;      // prefill tokens per batch
    double schedule_conservativeness = 1.0;  // scales the new-token ratios
    double init_new_token_ratio = 0.7;       // x conservativeness
    double min_new_token_ratio = 0.1;        // x conservativeness
    int64_t new_token_ratio_decay_steps = 600;
    int64_t clip_max_new_tokens = 4096;      // cap on one request's estimate
  };
  SglangScheduler(const SchedulerLimits& limits, const Options& options);
  static Status Make(const SchedulerLimits& limits, const SchedulerParams& params,
                     std::unique_ptr<BatchScheduler>* out);
  void Schedule(ReplicaState& state, SimTime now, Batch* batch) override;
  StepLimits step_limits() const override { return {options_.chunked_prefill_size, limits_.max_num_seqs, "scheduler_options.chunked_prefill_size (prefill tokens per chunk)"}; }
  PrefixCachePolicy prefix_cache_policy() const override { return {true, true, PrefixCache::Eviction::kLeafLru}; }
  double new_token_ratio() const { return ratio_; }

 private:
  SchedulerLimits limits_;
  Options options_;
  double init_ratio_, min_ratio_, decay_;
  double ratio_;
};

}  // namespace fleetsim

// SglangScheduler: SGLang's scheduler (sgl-project/sglang v0.4,
// managers/scheduler.py, schedule_policy.py's PrefillAdder and
// schedule_batch.py's retract_decode), default flags: prefill-first, no
// mixed chunks, FCFS.
//
// A step first tries to build a prefill batch: the request being chunked
// continues, then waiting requests are admitted while the KV left (free and
// evictable) after the decoders' *estimated* future use still holds the
// newcomer's uncached prompt plus its whole output length clipped at
// clip_max_new_tokens (PrefillAdder.add_one_req); a newcomer cut into chunks
// reserves its chunk only, and its output when its last chunk is scheduled
// (add_chunked_req). The decoders' estimate is min(output left,
// clip_max_new_tokens) x new_token_ratio; the ratio starts at 0.7 x
// conservativeness and decays linearly to 0.1 x conservativeness over
// new_token_ratio_decay_steps decode steps. Prompts are chunked at
// chunked_prefill_size, with at most max_prefill_tokens per batch.
// A step with prefill runs no decodes; otherwise every decoder runs. When
// the decoders' next blocks do not fit, requests are retracted: the decoder
// with the fewest output tokens, then the longest prompt, first, at least
// one, until every decoder left has kRetractDecodeSteps tokens of free KV,
// keeping the last one; they return to the back of the waiting queue and
// the ratio becomes (tokens decoded + kRetractDecodeSteps x decoders) /
// their output lengths, at most 1.
// The engine's knowledge of output lengths is the request's output_tokens
// (SGLang sees max_new_tokens). The clip of the decoders' estimate is
// applied to their total, an upper bound of SGLang's per-request clip.
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
  // Each decode step that fits decays the ratio once.
  void SkipDecodeSteps(int64_t steps) override;
  StepLimits step_limits() const override { return {options_.chunked_prefill_size, limits_.max_num_seqs, "scheduler_options.chunked_prefill_size (prefill tokens per chunk)"}; }
  PrefixCachePolicy prefix_cache_policy() const override { return {true, true, PrefixCache::Eviction::kLeafLru}; }
  StateRules state_rules() const override {
    return {.victim_order = VictimOrder::kFewestOutputsLongestPrompt, .requeue_at_back = true};
  }
  void Reset() override { ratio_ = init_ratio_; }
  double new_token_ratio() const { return ratio_; }
  // Free KV tokens retraction leaves per remaining decoder
  // (global_config.retract_decode_steps); it also enters the new ratio.
  static constexpr int64_t kRetractDecodeSteps = 20;

 private:
  // Retracts decoders until the rest have their headroom, and recomputes
  // the ratio from them.
  void Retract(ReplicaState& state, SimTime now, Batch* batch);

  SchedulerLimits limits_;
  Options options_;
  double init_ratio_, min_ratio_, decay_;
  double ratio_;
};

}  // namespace fleetsim

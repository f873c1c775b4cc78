// SarathiScheduler: Sarathi-Serve's stall-free batching (Agrawal et al.,
// OSDI 2024; microsoft/sarathi-serve, SarathiScheduler).
//
// Each iteration has a fixed token budget, the chunk size: running decodes
// first (one token each), then running prefills, then new requests, each
// prefill taking a chunk of what is left. An 8192-token prompt with chunk
// 512 takes 16 iterations and never stalls the decodes. Preemption as in
// vLLM (latest-arrived, recompute). The decoders must fit in one budget, so
// max_num_seqs is capped at the chunk size.
// Options: chunk_size (tokens per iteration, 512).
#pragma once

#include "sim/cluster/batch_scheduler.h"

namespace fleetsim {

class SarathiScheduler final : public BatchScheduler {
 public:
  struct Options {
    int64_t chunk_size = 512;  // token budget per iteration, decodes included (the paper's common setting)
  };
  SarathiScheduler(const SchedulerLimits& limits, const Options& options);
  static Status Make(const SchedulerLimits& limits, const SchedulerParams& params,
                     std::unique_ptr<BatchScheduler>* out);
  void Schedule(ReplicaState& state, SimTime now, Batch* batch) override;
  StepLimits step_limits() const override { return {options_.chunk_size, max_num_seqs_, "scheduler_options.chunk_size"}; }
  PrefixCachePolicy prefix_cache_policy() const override { return {true, false, PrefixCache::Eviction::kLru}; }

 private:
  Options options_;
  int64_t max_num_seqs_;
};

}  // namespace fleetsim

// SarathiScheduler: Sarathi-Serve's stall-free batching (Agrawal et al.,
// OSDI 2024; microsoft/sarathi-serve, sarathi/core/scheduler/
// sarathi_scheduler.py, SarathiScheduler._schedule).
//
// Each iteration has a fixed token budget, the chunk size: running decodes
// first (one token each), then running prefills, then new requests, each
// prefill taking a chunk of what is left. An 8192-token prompt with chunk
// 512 takes 16 iterations and never stalls the decodes. A new request takes
// the KV blocks of its whole prompt at admission (the block manager's
// allocate), while a watermark of 1% of the blocks stays free
// (can_allocate), so its later chunks never wait for memory. The running
// list is sorted first come first served; when a decoder cannot get a
// block, the tail of the running requests not yet visited is preempted and
// recomputed: the latest-arrived, possibly one still in prefill.
// max_num_seqs is the pool's, as the engine takes it; decoders beyond the
// chunk size still each get their token, as the engine adds them without a
// budget check.
// Options: chunk_size (tokens per iteration, 512).
#pragma once

#include "sim/cluster/batch_scheduler.h"

namespace fleetsim {

class SarathiScheduler final : public BatchScheduler {
 public:
  struct Options {
    int64_t chunk_size = 512;  // token budget per iteration, decodes included (the paper's common setting)
  };
  // Blocks kept free when admitting: BaseBlockSpaceManager's watermark.
  static constexpr double kWatermark = 0.01;

  SarathiScheduler(const SchedulerLimits& limits, const Options& options) : limits_(limits), options_(options) {}
  static Status Make(const SchedulerLimits& limits, const SchedulerParams& params,
                     std::unique_ptr<BatchScheduler>* out);
  void Schedule(ReplicaState& state, SimTime now, Batch* batch) override;
  StepLimits step_limits() const override { return {options_.chunk_size, limits_.max_num_seqs, "scheduler_options.chunk_size"}; }
  PrefixCachePolicy prefix_cache_policy() const override { return {true, false, PrefixCache::Eviction::kLru}; }
  StateRules state_rules() const override { return {.victim_order = VictimOrder::kLatestArrival}; }

 private:
  SchedulerLimits limits_;
  Options options_;
};

}  // namespace fleetsim

// Replica: one copy of one model on tp x pp GPUs, serving requests with
// iteration-level continuous batching.
//
// Owns its state (queues, KV blocks), its batch scheduler and its executor;
// reports to a RunObserver. Iterations run back to back while there is
// work; an idle replica wakes when a request arrives.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "sim/cluster/batch_scheduler.h"
#include "sim/cluster/executor.h"
#include "sim/cluster/observer.h"
#include "sim/cluster/replica_state.h"
#include "sim/engine/simulation.h"

namespace fleetsim {

struct ReplicaOptions {
  int index = 0;               // position in the cluster; names its trace track
  int pool = 0;                // the pool it belongs to
  std::string model;           // model it serves
  int max_model_len = 0;       // prompt + output limit, else rejected (or truncated)
  // A request whose prompt + output exceeds max_model_len is truncated to
  // fit instead of rejected: the prompt keeps max_model_len - output tokens
  // (at least 1), then the output is cut to what is left.
  bool truncate_over_max_model_len = false;
  int64_t kv_blocks = 0;
  int block_size = 16;
  int pipeline_depth = 1;      // pp: batches in flight (1 in the spine)
  PreemptionMode preemption = PreemptionMode::kRecompute;
  int64_t host_kv_blocks = 0;  // host memory for swapped KV, in blocks
  std::optional<bool> prefix_caching;  // unset: the scheduler's engine default
};

class Replica {
 public:
  // `perf` and `observer` must outlive the replica.
  Replica(Simulation& sim, const ReplicaOptions& options, std::unique_ptr<BatchScheduler> scheduler,
          const PerfModel& perf, RunObserver& observer);
  Replica(const Replica&) = delete;
  Replica& operator=(const Replica&) = delete;

  // Takes an arriving request (rejecting or truncating it if it can never
  // fit). The engine steps at the end of the instant, so requests arriving
  // together at an idle replica share its first iteration.
  void Submit(Request req);

  const ReplicaOptions& options() const { return options_; }
  const ReplicaState& state() const { return state_; }
  // Requests held (waiting + running); what least_outstanding compares.
  int64_t outstanding() const { return state_.num_live(); }
  int64_t waiting() const { return static_cast<int64_t>(state_.waiting().size()); }
  // Prompt tokens of `req` this replica holds in its prefix cache now (0
  // without prefix caching): what a cache-aware router scores.
  int64_t CachedPrefixTokens(const Request& req) const;
  bool busy() const { return in_flight_ > 0; }
  // Time spent running iterations since the previous call (or the start),
  // up to `now`; for per-second busy fractions.
  SimTime TakeBusyTime(SimTime now);
  uint64_t iterations() const { return iterations_; }

  // End of run: reports every request still held as unfinished.
  void ReportUnfinished(SimTime end, std::string_view reason);

 private:
  static std::optional<PrefixCache::Eviction> PrefixCacheFor(const BatchScheduler& scheduler,
                                                             const ReplicaOptions& options);
  void MaybeStep();
  // Schedules MaybeStep at the end of the current instant (once).
  void StepAtEndOfInstant();
  void OnBatchDone(uint64_t batch_id);
  RequestRecord RecordOf(const Seq& s, RequestStatus status) const;

  Simulation& sim_;
  ReplicaOptions options_;
  std::unique_ptr<BatchScheduler> scheduler_;
  RunObserver& observer_;
  ReplicaState state_;
  SimulatedExecutor executor_;
  Batch batch_;  // the batch in flight (pp = 1)
  int in_flight_ = 0;
  bool step_pending_ = false;  // a StepAtEndOfInstant event is scheduled
  uint64_t next_batch_id_ = 0;
  uint64_t iterations_ = 0;
  // Busy time of iterations that ended since the last TakeBusyTime call,
  // counted from that call.
  SimTime busy_accum_ = 0;
  SimTime last_take_ = 0;
};

}  // namespace fleetsim

// Replica: one copy of one model on tp x pp GPUs, serving requests with
// iteration-level continuous batching.
//
// Owns its state (queues, KV blocks), its batch scheduler and its executor;
// reports to a RunObserver. Iterations run back to back while there is
// work; an idle replica wakes when a request arrives.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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
  // The API server in front of the engine (model/engine_spec.h): a request
  // reaches the engine server_request + prompt x server_prompt_token_ns
  // after it arrives (parsing, tokenisation), and every token reaches the
  // client server_output_token after the step that made it (detokenising,
  // streaming): TTFT and end-to-end latency grow by it, gaps between tokens
  // do not.
  SimTime server_request = 0;
  double server_prompt_token_ns = 0;
  SimTime server_output_token = 0;
  // Busy time (busy_time()) is counted from here: the measurement window.
  SimTime busy_from = 0;
  // Called when a retried request (attempt > 0) leaves the replica done
  // (completed or rejected): the cluster's retry budget counts retries in
  // flight.
  std::function<void()> on_retried_end;
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
  void SetRetriedEnd(std::function<void()> fn) { options_.on_retried_end = std::move(fn); }
  const ReplicaState& state() const { return state_; }
  // Requests held (in the API server, waiting, running); what
  // least_outstanding compares.
  int64_t outstanding() const { return state_.num_live() + static_cast<int64_t>(in_server_.size()); }
  int64_t waiting() const { return static_cast<int64_t>(state_.waiting().size()); }
  // Prompt tokens of `req` this replica holds in its prefix cache now (0
  // without prefix caching): what a cache-aware router scores.
  int64_t CachedPrefixTokens(const Request& req) const;
  bool busy() const { return in_flight_ > 0; }
  // Time spent running iterations since the previous call (or the start),
  // up to `now`; for per-second busy fractions.
  SimTime TakeBusyTime(SimTime now);
  uint64_t iterations() const { return iterations_; }
  // Time spent in iterations that ended, from options().busy_from on.
  SimTime busy_time() const { return busy_total_; }

  // End of run: reports every request still held as unfinished.
  void ReportUnfinished(SimTime end, std::string_view reason);

  // A request the replica let go of when it failed or was stopped: the
  // request as sent, and what its client had seen (first_token set when a
  // token was streamed; generated_tokens the output it got).
  struct Evicted {
    Request req;
    RequestRecord rec;
  };
  // Takes out every request held (in the API server, waiting, running,
  // swapped) in arrival order, and forgets the KV cache and the iteration in
  // flight (its completion, when it comes, is ignored): the replica is then
  // empty and idle, as freshly started. Busy time counts up to now.
  void Evict(std::vector<Evicted>* out);

 private:
  static std::optional<PrefixCache::Eviction> PrefixCacheFor(const BatchScheduler& scheduler,
                                                             const ReplicaOptions& options);
  void MaybeStep();
  // Hands a request that passed the server to the engine's queue.
  void Enqueue(Request req);
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
  // Requests in the API server (server_request > 0), by arrival order.
  std::map<uint64_t, Request> in_server_;
  uint64_t next_server_slot_ = 0;
  // Busy time of iterations that ended since the last TakeBusyTime call,
  // counted from that call.
  SimTime busy_accum_ = 0;
  SimTime last_take_ = 0;
  SimTime busy_total_ = 0;
};

}  // namespace fleetsim

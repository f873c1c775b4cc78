// Replica: one copy of one model on tp x pp GPUs, serving requests with
// iteration-level continuous batching.
//
// Owns its state (queues, KV blocks), its batch scheduler and its executor;
// reports to a RunObserver. Iterations run back to back while there is
// work; an idle replica wakes when a request arrives.
//
// Decode spans. At low load a replica mostly decodes a few sequences alone,
// one event per iteration. When it holds nothing but decoders (nothing
// waiting, prefilling or swapped), the iterations up to the one where the
// first decoder finishes are all determined: each is every decoder and
// nothing else, for as long as the decoders' next blocks fit. Such a
// stretch, less its last (finishing) iteration, runs as one event: a span.
// The state is brought forward lazily (CatchUp): an iteration counts as
// started (its blocks allocated) once time passes its start, and as
// completed (tokens, gaps, busy time) once time reaches its end, which is
// what any event of that instant saw on the per-iteration path (an event at
// an iteration boundary ran either before the completion, or after it with
// the next step deferred to the end of the instant). Everything that reads
// the state from outside (state(), iterations(), TakeBusyTime,
// ReportUnfinished) catches up first. A request reaching the engine during
// a span cuts it: the iteration in flight becomes an ordinary batch and the
// request joins the next step, as it did before. The finishing iteration
// always runs on the ordinary path, so requests finish at the same events.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
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
#include "sim/cluster/speculation.h"
#include "sim/engine/simulation.h"

namespace fleetsim {

// What a replica's metrics endpoint reports (vLLM's /metrics:
// num_requests_waiting, num_requests_running, kv_cache_usage_perc; Dynamo's
// worker load: prefill tokens queued and decode blocks), as of `at`.
struct ReplicaMetrics {
  SimTime at = -1;  // when read (-1: never)
  int64_t waiting = 0;
  int64_t running = 0;
  double kv_utilization = 0;
  int64_t queued_prefill_tokens = 0;  // prompt tokens waiting or prefilling, not yet in KV
  int64_t kv_blocks_used = 0;         // blocks held by the running requests
  int64_t kv_blocks = 0;              // blocks in all
};

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
  // Pipeline parallelism: the stages' layers and links (executor.h); null
  // or one stage for pp = 1. Must outlive the replica. Up to pp batches
  // are then in flight, one per decoder group (replica_state.h).
  const PipelinePlan* pipeline = nullptr;
  // Disaggregated serving: a prefill replica hands each request it has
  // prefilled (Request::disagg_output > 0) to this instead of reporting it
  // finished: the request as it ran here, and its record (first token,
  // first scheduled). Decode replicas take requests with KV imported.
  enum class Role { kBoth, kPrefill, kDecode };
  Role role = Role::kBoth;
  std::function<void(const Request&, const RequestRecord&)> on_prefilled;
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
  // The engine builds step N+1 while step N runs and takes new requests
  // into the step after that (EngineSpec::admit_after_next_step, SGLang's
  // overlap scheduler): a request that reaches the engine while a step
  // runs waits for the step after the next; one reaching an idle engine
  // starts at once. Applies to one batch in flight (pp = 1).
  bool admit_after_next_step = false;
  // Busy time (busy_time()) is counted from here: the measurement window.
  SimTime busy_from = 0;
  // Called when a retried request (attempt > 0) leaves the replica done
  // (completed or rejected): the cluster's retry budget counts retries in
  // flight.
  std::function<void()> on_retried_end;
  // Run stretches of decode-only iterations as one event (decode spans,
  // below) when the observer wants no per-iteration reports. Results are
  // identical either way; false only in tests that check that against the
  // per-iteration path.
  bool decode_spans = true;
  // Order of the engine's waiting queue (fleet.admission.queue_order):
  //   kFcfs      first come first served (the engines' default);
  //   kStrict    by Request::priority, lower first, FCFS within one (vLLM's
  //              --scheduling-policy priority);
  //   kWeighted  weighted fair queueing over the priority classes: each
  //              request of a class is tagged max(V, the class's last tag)
  //              + 1 / weight, V the tag at the head of the queue (the one
  //              served next; the last tag given when it is empty), and the
  //              queue is kept in tag order, so while several classes wait
  //              each is admitted in proportion to its weight
  //              (self-clocked fair queueing, by request).
  // Requests that were preempted go back where the engine puts them.
  enum class QueueOrder { kFcfs, kStrict, kWeighted };
  QueueOrder queue_order = QueueOrder::kFcfs;
  std::vector<std::pair<int32_t, double>> class_weights;  // priority -> weight (kWeighted; unlisted: 1)
  // The times of decode-only steps, shared by the replicas of a pool (same
  // perf model); must outlive the replica. Null: the replica keeps its own.
  DecodeStepTimes* decode_step_times = nullptr;
  // Makes the replica's executor (live mode's); unset: a SimulatedExecutor
  // over the perf model and `pipeline`.
  std::function<std::unique_ptr<Executor>(Executor::Done)> make_executor;
  // Speculative decoding (speculation.h): each request's steps are drawn as
  // it reaches the engine; the perf model prices the proposer and the
  // verification (model/speculative_perf_model.h). No decode spans then.
  std::optional<SpeculationOptions> speculation;
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
  void SetOnPrefilled(std::function<void(const Request&, const RequestRecord&)> fn) {
    options_.on_prefilled = std::move(fn);
  }
  // As of the last iteration completed by now (a decode span catches up).
  const ReplicaState& state() const {
    Sync();
    return state_;
  }
  // Requests held (in the API server, waiting, running); what
  // least_outstanding compares.
  int64_t outstanding() const {
    return state_.num_live() + static_cast<int64_t>(in_server_.size() + deferred_.size());
  }
  // Waiting in the engine: its queue, and the requests that wait for the
  // step after the next (admit_after_next_step).
  int64_t waiting() const { return state_.num_waiting() + static_cast<int64_t>(deferred_.size()); }
  // Prompt tokens of `req` this replica holds in its prefix cache now (0
  // without prefix caching): what a cache-aware router scores.
  int64_t CachedPrefixTokens(const Request& req) const;
  bool busy() const { return in_flight_ > 0; }
  // Batches in flight now (at most the pipeline depth).
  int in_flight() const { return in_flight_; }
  const Executor& executor() const { return *executor_; }
  // Its metrics now: O(waiting + prefilling).
  ReplicaMetrics Metrics() const;
  // Time spent running iterations since the previous call (or the start),
  // up to `now`; for per-second busy fractions.
  SimTime TakeBusyTime(SimTime now);
  uint64_t iterations() const {
    Sync();
    return iterations_;
  }
  // Time spent in iterations that ended, from options().busy_from on.
  SimTime busy_time() const {
    Sync();
    return busy_total_;
  }

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
  // Hands a request that passed the server to the engine's queue (or turns
  // it away when its queue deadline has passed); with admit_after_next_step
  // and a step running, it waits in deferred_ first.
  void Enqueue(Request req);
  // The engine's queue takes the request (Enqueue's work after the checks).
  void Admit(Request req);
  // Turns `req` away ("queue_timeout") when its queue deadline has passed.
  bool RejectedAtQueueDeadline(const Request& req);
  // The deferred requests that came by the latest batch's start (all of
  // them when `all`) go to the engine's queue, each turned away there if
  // its queue deadline has passed.
  void ReleaseDeferred(bool all);
  // Its place in the waiting queue (ReplicaOptions::queue_order).
  double QueueKey(const Request& req);
  // At a request's queue deadline: dropped ("queue_timeout") if it is still
  // waiting, never scheduled.
  void OnQueueDeadline(SeqId id, uint64_t request_id, int32_t attempt);
  // Schedules MaybeStep at the end of the current instant (once).
  void StepAtEndOfInstant();
  void OnBatchDone(uint64_t batch_id);
  RequestRecord RecordOf(const Seq& s, RequestStatus status) const;
  // Runs the decode-only batch_ (launched, blocks allocated) and the decode
  // steps after it as a span, if the state allows one. Returns false when
  // it does not (the caller launches batch_ as usual).
  bool TryStartSpan();
  // Applies the span's iterations that started before `t` and those that
  // ended by `t`.
  void CatchUp(SimTime t);
  // The span's event, at the end of its last iteration.
  void OnSpanEnd();
  // A request reached the engine during the span: ends it at now.
  void CutSpan();
  // Catches a span up to now. Logically const: those iterations are already
  // determined, only not yet written into the state.
  void Sync() const {
    if (span_.active) const_cast<Replica*>(this)->CatchUp(sim_.now());
  }
  // Busy-time bookkeeping of an iteration that ran over [start, end].
  // Batches in flight together overlap: only time not yet counted counts.
  void CountBusy(SimTime start, SimTime end) {
    const SimTime from = std::max(start, busy_mark_);
    if (end <= from) return;
    busy_accum_ += end - std::max(from, last_take_);
    if (end > options_.busy_from) busy_total_ += end - std::max(from, options_.busy_from);
    busy_mark_ = end;
  }
  // The earliest start of the batches in flight. REQUIRES: in_flight_ > 0.
  SimTime OldestInFlightStart() const;

  Simulation& sim_;
  ReplicaOptions options_;
  std::unique_ptr<BatchScheduler> scheduler_;
  RunObserver& observer_;
  ReplicaState state_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<DecodeStepTimes> own_step_times_;  // without options_.decode_step_times
  DecodeStepTimes* step_times_;
  // The batch built for each decoder group (in flight while its group is);
  // decode spans use group 0's (pp = 1).
  std::vector<Batch> batches_;
  int in_flight_ = 0;
  bool step_pending_ = false;  // a StepAtEndOfInstant event is scheduled
  uint64_t next_batch_id_ = 0;
  uint64_t iterations_ = 0;
  // Weighted fair queueing: the last tag given per class (by index in
  // class_weights; the last slot: priorities no class lists), and overall.
  std::vector<double> class_tag_;
  double last_tag_ = 0;
  // Requests in the API server (server_request > 0), by arrival order.
  std::map<uint64_t, Request> in_server_;
  // admit_after_next_step: requests that reached the engine while a step
  // ran, with when, in that order; each joins the first batch built after
  // a batch started at or after it came (ReleaseDeferred).
  std::deque<std::pair<SimTime, Request>> deferred_;
  SimTime last_launch_ = -1;  // when the latest batch started
  mutable std::vector<PrefixCache::NodeId> match_scratch_;  // CachedPrefixTokens
  uint64_t next_server_slot_ = 0;
  // Busy time of iterations that ended since the last TakeBusyTime call,
  // counted from that call.
  SimTime busy_accum_ = 0;
  SimTime last_take_ = 0;
  SimTime busy_total_ = 0;
  SimTime busy_mark_ = 0;  // busy time is counted up to here

  // The decode span in progress: `steps` iterations of `seqs` decoders,
  // iteration i running from the end of i - 1 (or the span's start) for
  // the step time of its KV tokens (step_times_); the first `completed` are applied to the
  // state, and iteration `completed` has its blocks allocated when
  // `next_started`. While active, batch_ is iteration 0's batch (each
  // iteration's is the same but for decode_kv_tokens, `seqs` more per step)
  // and batch_.start the start of iteration `completed` (batch_ is
  // batches_[0]: spans run only at pp = 1).
  struct DecodeSpan {
    bool active = false;
    int64_t steps = 0;
    int64_t completed = 0;
    bool next_started = false;
    int64_t seqs = 0;
    // The iterations' ends, written down when the step times are not
    // remembered (each would cost an IterationNs again); else empty.
    std::vector<SimTime> ends;
    EventId event;
  };
  DecodeSpan span_;
  // Iterations planned per span at most: doubles while spans run to their
  // end, back to the minimum when an arrival cuts one, so that a busy
  // replica does not plan far ahead for nothing.
  static constexpr int64_t kMinSpanPlan = 16;
  static constexpr int64_t kMaxSpanPlan = int64_t{1} << 16;
  int64_t span_plan_ = kMinSpanPlan;
};

}  // namespace fleetsim

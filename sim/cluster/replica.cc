#include "sim/cluster/replica.h"

#include <algorithm>
#include <cmath>

namespace fleetsim {

std::string_view RequestStatusName(RequestStatus s) {
  switch (s) {
    case RequestStatus::kCompleted: return "completed";
    case RequestStatus::kRejected: return "rejected";
    case RequestStatus::kFailed: return "failed";
    case RequestStatus::kUnfinished: return "unfinished";
  }
  return "?";
}


Replica::Replica(Simulation& sim, const ReplicaOptions& options,
                 std::unique_ptr<BatchScheduler> scheduler, const PerfModel& perf,
                 RunObserver& observer)
    : sim_(sim),
      options_(options),
      scheduler_(std::move(scheduler)),
      observer_(observer),
      state_(options.kv_blocks, options.block_size, options.preemption, options.host_kv_blocks,
             PrefixCacheFor(*scheduler_, options), scheduler_->state_rules(),
             options.pipeline ? std::max(1, options.pipeline->stages()) : 1),
      executor_(options.make_executor
                    ? options.make_executor([this](uint64_t id) { OnBatchDone(id); })
                    : std::make_unique<SimulatedExecutor>(sim, perf, options.pipeline,
                                                          [this](uint64_t id) { OnBatchDone(id); })),
      own_step_times_(options.decode_step_times ? nullptr : std::make_unique<DecodeStepTimes>(perf)),
      step_times_(options.decode_step_times ? options.decode_step_times : own_step_times_.get()),
      batches_(static_cast<size_t>(state_.decode_groups())) {
  FLEETSIM_CHECK(executor_->max_in_flight() == state_.decode_groups());
}

std::optional<PrefixCache::Eviction> Replica::PrefixCacheFor(const BatchScheduler& scheduler,
                                                              const ReplicaOptions& options) {
  const PrefixCachePolicy policy = scheduler.prefix_cache_policy();
  if (!policy.supported || !options.prefix_caching.value_or(policy.by_default)) return std::nullopt;
  return policy.eviction;
}

RequestRecord Replica::RecordOf(const Seq& s, RequestStatus status) const {
  RequestRecord r;
  r.id = s.req.id;
  r.arrival = s.req.arrival;
  r.first_scheduled = s.first_scheduled;
  // Tokens reach the client server_output_token after their step.
  r.first_token = s.first_token >= 0 ? s.first_token + options_.server_output_token : -1;
  if (s.req.streamed_first_token >= 0) r.first_token = s.req.streamed_first_token;
  if (s.req.prefill_scheduled >= 0) r.first_scheduled = s.req.prefill_scheduled;
  r.finish = status == RequestStatus::kCompleted ? s.last_token + options_.server_output_token : s.last_token;
  // Tokens the prefill side produced count as they did for the client.
  r.prompt_tokens = s.req.prompt_tokens - s.req.carried;
  r.output_tokens = s.req.output_tokens + s.req.carried;
  r.generated_tokens = state_.Generated(s) + s.req.carried;
  if (s.req.spec_output > 0) {
    // Steps to tokens: the first from the prefill, then the request's mean
    // per step (its exact count only at the end).
    const int32_t steps = state_.Generated(s);
    r.output_tokens = s.req.spec_output + s.req.carried;
    r.generated_tokens =
        s.req.carried + (status == RequestStatus::kCompleted || steps >= s.req.output_tokens
                             ? s.req.spec_output
                             : std::min<int32_t>(s.req.spec_output,
                                                 steps <= 1 ? steps
                                                            : 1 + static_cast<int32_t>(
                                                                      int64_t{steps - 1} * (s.req.spec_output - 1) /
                                                                      (s.req.output_tokens - 1))));
  }
  r.replica = options_.index;
  r.preemptions = s.preemptions;
  r.cached_tokens = std::max(0, s.cached_tokens);
  r.truncated = s.req.truncated;
  StampGroups(s.req, &r);
  r.status = status;
  return r;
}

void Replica::Submit(Request req) {
  Unspeculate(&req);  // back from a replica that speculated (an eviction)
  if (req.attempt == 0 && !req.arrival_reported) observer_.OnArrival(req, options_.index);
  const int64_t len = options_.max_model_len;
  if (options_.truncate_over_max_model_len && static_cast<int64_t>(req.prompt_tokens) + req.output_tokens > len &&
      len >= 2) {
    req.prompt_tokens = static_cast<int32_t>(std::max<int64_t>(1, std::min<int64_t>(req.prompt_tokens, len - req.output_tokens)));
    req.output_tokens = static_cast<int32_t>(std::min<int64_t>(req.output_tokens, len - req.prompt_tokens));
    req.truncated = true;
    // Prefix ids past the kept prompt name tokens no longer sent.
    if (req.prefix_block_tokens > 0) {
      const size_t keep = static_cast<size_t>((req.prompt_tokens + req.prefix_block_tokens - 1) / req.prefix_block_tokens);
      if (req.prefix_blocks.size() > keep) req.prefix_blocks.resize(keep);
    }
  }
  if (static_cast<int64_t>(req.prompt_tokens) + req.output_tokens > len) {
    observer_.OnFinished(
        UnservedRecord(req, options_.index, sim_.now(), RequestStatus::kRejected, "exceeds_max_model_len"));
    if (req.attempt > 0 && options_.on_retried_end) options_.on_retried_end();
    return;
  }
  const SimTime delay =
      options_.server_request + std::llround(options_.server_prompt_token_ns * static_cast<double>(req.prompt_tokens));
  if (delay <= 0) {
    Enqueue(std::move(req));
    return;
  }
  const uint64_t slot = next_server_slot_++;
  in_server_.emplace(slot, std::move(req));
  sim_.After(delay, [this, slot] {
    auto it = in_server_.find(slot);
    if (it == in_server_.end()) return;  // evicted meanwhile
    Request r = std::move(it->second);
    in_server_.erase(it);
    Enqueue(std::move(r));
  });
}

bool Replica::RejectedAtQueueDeadline(const Request& req) {
  const SimTime now = sim_.now();
  if (req.queue_deadline == kTimeNever || now < req.queue_deadline) return false;
  observer_.OnFinished(UnservedRecord(req, options_.index, now, RequestStatus::kRejected, "queue_timeout"));
  if (req.attempt > 0 && options_.on_retried_end) options_.on_retried_end();
  return true;
}

void Replica::Enqueue(Request req) {
  const SimTime now = sim_.now();
  if (RejectedAtQueueDeadline(req)) return;
  if (span_.active) CutSpan();
  // The next step was built when the running one started: this request
  // waits for the one after it (released by MaybeStep).
  if (options_.admit_after_next_step && in_flight_ > 0 && executor_->max_in_flight() == 1) {
    deferred_.emplace_back(now, std::move(req));
    return;
  }
  Admit(std::move(req));
}

void Replica::ReleaseDeferred(bool all) {
  while (!deferred_.empty() && (all || deferred_.front().first <= last_launch_)) {
    Request req = std::move(deferred_.front().second);
    deferred_.pop_front();
    if (!RejectedAtQueueDeadline(req)) Admit(std::move(req));
  }
}

void Replica::Admit(Request req) {
  const SimTime now = sim_.now();
  if (options_.speculation && req.output_tokens > 1) {
    const SpeculativePlan plan = PlanSpeculation(*options_.speculation, req.id, req.output_tokens - 1);
    req.spec_output = req.output_tokens;
    req.output_tokens = 1 + plan.steps;
  }
  const SimTime deadline = req.queue_deadline;
  const uint64_t request_id = req.id;
  const int32_t attempt = req.attempt;
  const double key = options_.queue_order == ReplicaOptions::QueueOrder::kFcfs ? 0 : QueueKey(req);
  const SeqId id = state_.Enqueue(std::move(req), now, key);
  if (deadline != kTimeNever)
    sim_.At(deadline, [this, id, request_id, attempt] { OnQueueDeadline(id, request_id, attempt); });
  StepAtEndOfInstant();
}

double Replica::QueueKey(const Request& req) {
  if (options_.queue_order == ReplicaOptions::QueueOrder::kStrict) return static_cast<double>(req.priority);
  // Its class (priorities no class lists share one, of weight 1).
  const size_t classes = options_.class_weights.size();
  size_t c = classes;
  for (size_t k = 0; k < classes; ++k)
    if (options_.class_weights[k].first == req.priority) c = k;
  const double weight = c < classes ? options_.class_weights[c].second : 1.0;
  if (class_tag_.size() != classes + 1) class_tag_.assign(classes + 1, 0.0);
  // V: the tag served next (the lowest at a queue's head; one queue but
  // under pipeline parallelism, replica_state.h).
  double v = last_tag_;
  bool any = false;
  for (int g = 0; g < state_.decode_groups(); ++g) {
    const std::deque<SeqId>& q = state_.waiting_in(g);
    if (q.empty()) continue;
    const double head = state_.seq(q.front()).queue_key;
    v = any ? std::min(v, head) : head;
    any = true;
  }
  const double tag = std::max(v, class_tag_[c]) + 1.0 / weight;
  class_tag_[c] = tag;
  last_tag_ = std::max(last_tag_, tag);
  return tag;
}

void Replica::OnQueueDeadline(SeqId id, uint64_t request_id, int32_t attempt) {
  Sync();
  if (id >= state_.num_slots()) return;
  const Seq& s = state_.seq(id);
  // Gone (finished, evicted, its slot reused), or scheduled once: a
  // request the engine started is not timed out of the queue.
  if (s.phase != SeqPhase::kWaiting || s.req.id != request_id || s.req.attempt != attempt || s.first_scheduled >= 0)
    return;
  RequestRecord rec = RecordOf(s, RequestStatus::kRejected);
  rec.finish = sim_.now();
  rec.reason = "queue_timeout";
  state_.RemoveWaiting(id);
  observer_.OnFinished(rec);
  if (attempt > 0 && options_.on_retried_end) options_.on_retried_end();
}

void Replica::StepAtEndOfInstant() {
  if (step_pending_ || in_flight_ >= executor_->max_in_flight()) return;
  step_pending_ = true;
  sim_.AtEndOfInstant([this] {
    step_pending_ = false;
    MaybeStep();
  });
}

void Replica::MaybeStep() {
  // A batch for each group not in flight, lowest first, while one can be
  // built: with pp > 1 the engine schedules ahead while earlier batches are
  // still in the pipeline (vLLM's batch queue).
  const int groups = state_.decode_groups();
  // What came while an earlier step ran joins now (admit_after_next_step).
  if (!deferred_.empty()) ReleaseDeferred(/*all=*/in_flight_ == 0 && state_.num_live() == 0);
  while (in_flight_ < executor_->max_in_flight() && state_.num_live() > 0) {
    bool launched = false;
    for (int g = 0; g < groups && !launched; ++g) {
      if (state_.group_in_flight(g)) continue;
      Batch& batch = batches_[static_cast<size_t>(g)];
      batch = Batch();
      batch.group = g;
      batch.start = sim_.now();
      state_.SelectGroup(g);
      scheduler_->Schedule(state_, sim_.now(), &batch);
      if (batch.empty() && !deferred_.empty() && in_flight_ == 0) {
        // Nothing else to run: the engine, idle, takes them at once.
        ReleaseDeferred(/*all=*/true);
        scheduler_->Schedule(state_, sim_.now(), &batch);
      }
      if (batch.empty()) continue;  // waits for memory, a new request or a batch in flight
      batch.id = next_batch_id_++;
      ++in_flight_;
      last_launch_ = batch.start;
      state_.Launched(batch);
      if (TryStartSpan()) return;
      executor_->Launch(LaunchedBatch{batch.id, batch.shape, BatchSequences(state_, batch)});
      launched = true;
    }
    if (!launched) return;
  }
}

SimTime Replica::OldestInFlightStart() const {
  SimTime oldest = kTimeNever;
  for (int g = 0; g < state_.decode_groups(); ++g)
    if (state_.group_in_flight(g)) oldest = std::min(oldest, batches_[static_cast<size_t>(g)].start);
  return oldest;
}

bool Replica::TryStartSpan() {
  Batch& batch_ = batches_[0];
  if (!options_.decode_spans || options_.speculation || !executor_->spans() || !batch_.decodes || !batch_.chunks.empty() ||
      !deferred_.empty() ||
      batch_.shape.swap_in_tokens + batch_.shape.swap_out_tokens > 0 || !state_.waiting().empty() ||
      !state_.prefilling().empty() || !state_.swapped().empty() || observer_.WantsIterations())
    return false;
  // Iteration i completes decode step D + i + 1 (D: decode_step() now); the
  // first to give a decoder its last token stays out of the span.
  const int64_t interior = state_.DecodeStepsToFirstFinish() - 1;
  if (interior < 2) return false;
  const int64_t n = state_.num_decoding();
  FLEETSIM_CHECK(batch_.shape.decode_seqs == n && batch_.shape.sampled_seqs == n &&
                 batch_.shape.decode_kv_tokens == state_.DecodeKvTokensAhead(0) && batch_.shape.cached_tokens == 0);
  // Iteration i >= 1 allocates its blocks at its start; nothing frees any
  // before the span ends, so it fits (and the scheduler would not preempt)
  // while the blocks taken since the span began fit in what was free then.
  int64_t steps = std::min(interior, 1 + state_.DecodeStepsFitting(1, state_.kv().free_blocks()));
  // Planning costs O(1) when the step times are remembered, else an
  // IterationNs per step; either way the plan is held to span_plan_ (whole
  // spans planned at high load, then cut, cost bench-1m ~10%).
  const bool remembered = step_times_->Remembered(n, state_.DecodeKvTokensAhead(steps - 1));
  steps = std::min(steps, span_plan_);
  if (steps < 2) return false;
  span_.active = true;
  span_.steps = steps;
  span_.completed = 0;
  span_.next_started = true;  // iteration 0 is batch_, its blocks taken by Schedule
  span_.seqs = n;
  span_.ends.clear();
  if (!remembered) step_times_->Ends(n, state_.DecodeKvTokensAhead(0), steps, sim_.now(), &span_.ends);
  const SimTime end =
      remembered ? step_times_->EndOf(n, state_.DecodeKvTokensAhead(0), steps, sim_.now()) : span_.ends.back();
  span_.event = sim_.At(end, [this] { OnSpanEnd(); });
  return true;
}

void Replica::CatchUp(SimTime t) {
  Batch& batch_ = batches_[0];
  DecodeSpan& sp = span_;
  int64_t skipped = 0;  // iterations started without calling Schedule
  if (sp.completed < sp.steps) {
    // The iterations ended by t: those not yet started start (their
    // blocks), then all complete.
    DecodeStepRun& run =
        sp.ends.empty()
            ? step_times_->EndedBy(sp.seqs, state_.DecodeKvTokensAhead(0), sp.steps - sp.completed, batch_.start, t)
            : step_times_->EndedBy(sp.seqs, sp.ends.data() + sp.completed, sp.steps - sp.completed, batch_.start, t);
    if (const int64_t m = run.count; m > 0) {
      const int64_t from = sp.next_started ? 1 : 0;
      if (m > from) state_.TakeDecodeBlocks(from, m);
      skipped += m - from;
      iterations_ += static_cast<uint64_t>(m);
      const SimTime last_end = run.End(m - 1);
      CountBusy(batch_.start, last_end);
      state_.CompleteDecodeSteps(
          run, [this](SimTime at, SimTime gap, int64_t count) { observer_.OnTokenGaps(at, gap, count); },
          [this](const DecodeStepRun& r) { observer_.OnDecodeSteps(r); });
      sp.completed += m;
      sp.next_started = false;
      batch_.start = last_end;
    }
  }
  // The next iteration has started if time passed its start.
  if (sp.completed < sp.steps && !sp.next_started && batch_.start < t) {
    state_.StartDecodeStep(state_.DecodeBlocksNeeded());
    sp.next_started = true;
    ++skipped;
  }
  if (skipped > 0) scheduler_->SkipDecodeSteps(skipped);
}

void Replica::OnSpanEnd() {
  CatchUp(sim_.now());
  FLEETSIM_CHECK(span_.completed == span_.steps);
  span_.active = false;
  --in_flight_;
  state_.SpanLanded();
  span_plan_ = std::min(kMaxSpanPlan, 2 * span_plan_);
  // As OnBatchDone after the span's last iteration.
  if (sim_.MoreNow()) {
    StepAtEndOfInstant();
  } else {
    MaybeStep();
  }
}

void Replica::CutSpan() {
  CatchUp(sim_.now());
  sim_.Cancel(span_.event);
  span_.active = false;
  span_plan_ = kMinSpanPlan;
  if (!span_.next_started) {
    // At an iteration boundary: nothing is in flight, and the next step is
    // built at the end of this instant, with the request.
    --in_flight_;
    state_.SpanLanded();
    return;
  }
  // The iteration in flight completes as an ordinary batch; the request
  // waits for the step after it.
  Batch& batch_ = batches_[0];
  last_launch_ = batch_.start;  // the in-flight iteration's
  const int64_t kv_tokens = state_.DecodeKvTokensAhead(0);
  batch_.shape.decode_kv_tokens = kv_tokens;
  executor_->Resume(batch_.id, span_.ends.empty() ? batch_.start + step_times_->StepNs(span_.seqs, kv_tokens)
                                                 : span_.ends[static_cast<size_t>(span_.completed)]);
}

void Replica::OnBatchDone(uint64_t batch_id) {
  if (in_flight_ == 0) return;  // a batch Evict forgot
  size_t g = 0;
  while (g < batches_.size() && !(batches_[g].id == batch_id && state_.group_in_flight(static_cast<int>(g)))) ++g;
  if (g == batches_.size()) return;  // likewise
  Batch& batch = batches_[g];
  --in_flight_;
  ++iterations_;
  const SimTime end = sim_.now();
  CountBusy(batch.start, end);
  observer_.OnIteration(options_.index, batch.start, end, batch.shape);
  state_.Complete(
      batch, end, [this, end](SimTime gap, int64_t count) { observer_.OnTokenGaps(end, gap, count); },
      [this](const Seq& s) {
        if (s.req.disagg_output > 0 && options_.on_prefilled) {
          options_.on_prefilled(s.req, RecordOf(s, RequestStatus::kCompleted));
        } else {
          observer_.OnFinished(RecordOf(s, RequestStatus::kCompleted));
        }
        if (s.req.attempt > 0 && options_.on_retried_end) options_.on_retried_end();
      });
  // Requests arriving at this very instant join the next step, as a real
  // engine loop drains its input queue before scheduling.
  if (sim_.MoreNow()) {
    StepAtEndOfInstant();
  } else {
    MaybeStep();
  }
}

ReplicaMetrics Replica::Metrics() const {
  Sync();
  ReplicaMetrics m;
  m.at = sim_.now();
  m.waiting = waiting() + static_cast<int64_t>(in_server_.size());
  m.running = state_.num_running();
  m.kv_utilization = state_.kv().utilization();
  m.kv_blocks_used = state_.kv().used_blocks();
  m.kv_blocks = state_.kv().total_blocks();
  int64_t queued = 0;
  for (const auto& [slot, req] : in_server_) queued += req.prompt_tokens;
  for (const auto& [at, req] : deferred_) queued += req.prompt_tokens;
  for (int g = 0; g < state_.decode_groups(); ++g) {
    for (SeqId id : state_.waiting_in(g)) queued += state_.seq(id).req.prompt_tokens;
    for (SeqId id : state_.prefilling_in(g)) {
      const Seq& s = state_.seq(id);
      queued += s.prefill_target - s.prefilled;
    }
  }
  m.queued_prefill_tokens = queued;
  return m;
}

int64_t Replica::CachedPrefixTokens(const Request& req) const {
  Sync();
  const PrefixCache* cache = state_.kv().cache();
  if (!cache || req.prefix_blocks.empty() || req.prefix_block_tokens <= 0) return 0;
  match_scratch_.clear();  // reused: routers ask this for every candidate
  const int64_t ids = static_cast<int64_t>(cache->Match(req.prefix_blocks, &match_scratch_));
  return std::min<int64_t>(ids * req.prefix_block_tokens, req.prompt_tokens);
}

SimTime Replica::TakeBusyTime(SimTime now) {
  if (span_.active) CatchUp(now);
  SimTime busy = busy_accum_;
  if (in_flight_ > 0) busy += std::max<SimTime>(0, now - std::max({OldestInFlightStart(), busy_mark_, last_take_}));
  busy_accum_ = 0;
  last_take_ = now;
  return busy;
}

void Replica::ReportUnfinished(SimTime end, std::string_view reason) {
  if (span_.active) CatchUp(end);
  for (const auto& [slot, req] : in_server_)
    observer_.OnFinished(UnservedRecord(req, options_.index, end, RequestStatus::kUnfinished, reason));
  in_server_.clear();
  for (const auto& [at, req] : deferred_)
    observer_.OnFinished(UnservedRecord(req, options_.index, end, RequestStatus::kUnfinished, reason));
  deferred_.clear();
  state_.ForEachLive([&](const Seq& s) {
    RequestRecord r = RecordOf(s, RequestStatus::kUnfinished);
    r.finish = end;
    r.reason = reason;
    observer_.OnFinished(r);
  });
}

void Replica::Evict(std::vector<Evicted>* out) {
  const SimTime now = sim_.now();
  if (span_.active) {
    // What the span ran by now happened; the rest never will.
    CatchUp(now);
    sim_.Cancel(span_.event);
    span_.active = false;
    span_plan_ = kMinSpanPlan;
  }
  std::vector<Evicted> held;
  for (auto& [slot, req] : in_server_)
    held.push_back({req, UnservedRecord(req, options_.index, now, RequestStatus::kFailed, "")});
  in_server_.clear();
  for (auto& [at, req] : deferred_)
    held.push_back({req, UnservedRecord(req, options_.index, now, RequestStatus::kFailed, "")});
  deferred_.clear();
  state_.ForEachLive([&](const Seq& s) {
    RequestRecord r = RecordOf(s, RequestStatus::kFailed);
    r.finish = now;
    held.push_back({s.req, r});
  });
  std::stable_sort(held.begin(), held.end(),
                   [](const Evicted& a, const Evicted& b) { return a.req.id < b.req.id; });
  for (Evicted& e : held) out->push_back(std::move(e));
  if (in_flight_ > 0) {
    // The iterations in flight are lost; their time so far was spent.
    CountBusy(OldestInFlightStart(), now);
    in_flight_ = 0;
  }
  for (Batch& b : batches_) {
    b = Batch();
    b.id = next_batch_id_++;  // no completion matches it
  }
  state_ = ReplicaState(options_.kv_blocks, options_.block_size, options_.preemption, options_.host_kv_blocks,
                        PrefixCacheFor(*scheduler_, options_), scheduler_->state_rules(), state_.decode_groups());
  scheduler_->Reset();
  executor_->Reset();
}

}  // namespace fleetsim

#include "sim/live/live_executor.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>

namespace fleetsim::live {

ReplicaWorker::ReplicaWorker(std::vector<WorkerRank> ranks, std::unique_ptr<TpGroup> group, WallClock& clock,
                             bool spin, std::string name)
    : ranks_(std::move(ranks)),
      group_(std::move(group)),
      model_(ranks_.front().model.get()),
      clock_(clock),
      spin_(spin),
      name_(std::move(name)) {
  FLEETSIM_CHECK(!ranks_.empty() && (ranks_.size() == 1 || (group_ && group_->ring.ranks() == static_cast<int>(ranks_.size()))));
  free_.reserve(static_cast<size_t>(model_->kv_blocks()));
  for (int64_t b = model_->kv_blocks() - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
  for (size_t r = 1; r < ranks_.size(); ++r) rank_threads_.emplace_back([this, r] { RankLoop(r); });
  thread_ = std::thread([this] { Loop(); });
}

ReplicaWorker::~ReplicaWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    jobs_.clear();
  }
  cv_.notify_one();
  // Rank 0 finishes its step (with the other ranks), then the others are
  // released from their wait for the next.
  thread_.join();
  ranks_stopping_.store(true);
  if (group_) group_->ring.Abort();
  JoinRanks();
  // The models' buffers, then the group's, go before the backends that
  // allocated them.
  for (WorkerRank& r : ranks_) r.model.reset();
  group_.reset();
}

namespace {

void Pin(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);  // best effort: a cgroup may forbid the core
}

}  // namespace

void ReplicaWorker::JoinRanks() {
  for (std::thread& t : rank_threads_)
    if (t.joinable()) t.join();
}

void ReplicaWorker::Fail(const Status& s) {
  // A rank released by another's failure says only that: the group has the
  // failing rank's own error (recorded before it released the others).
  Status why = s;
  if (group_) {
    const Status first = group_->error();  // with the failing rank's number
    if (!first.ok()) why = first;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (status_.ok()) status_ = why.WithPrefix("live " + name_ + ": ");
}

void ReplicaWorker::RankLoop(size_t r) {
  Pin(ranks_[r].cpu);
  std::vector<int32_t> sampled;  // rank 0's alone are the step's
  for (;;) {
    // Rank 0 lines every rank up when a step's sequences are in step_seqs_,
    // and again when every rank has finished with them.
    if (!group_->ring.Arrive() || ranks_stopping_.load()) return;
    const Status s = ranks_[r].model->Forward(step_seqs_, &sampled);  // aborts the group when it fails
    if (!s.ok()) {
      Fail(s);
      return;
    }
    if (!group_->ring.Arrive()) return;
  }
}

void ReplicaWorker::Submit(Job job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
    queued_.store(static_cast<int64_t>(jobs_.size()), std::memory_order_release);
  }
  cv_.notify_one();
}

Status ReplicaWorker::status() {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

WorkerStats ReplicaWorker::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void ReplicaWorker::Loop() {
  Pin(ranks_.front().cpu);
  for (;;) {
    Job job;
    if (spin_) {
      // The next step usually comes within a millisecond of the last.
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
      while (queued_.load(std::memory_order_acquire) == 0 && std::chrono::steady_clock::now() < until)
        std::this_thread::yield();
    }
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      queued_.store(static_cast<int64_t>(jobs_.size()), std::memory_order_release);
    }
    const Status s = RunJob(job);
    if (!s.ok()) Fail(s);
    // The batch ends even when its step failed: the run then stops on the
    // status, with the books balanced.
    if (job.done) {
      const SimTime end = clock_.Now();
      clock_.Post([this, end, done = std::move(job.done), sampled = std::move(job.sampled)] {
        {
          std::lock_guard<std::mutex> lock(mu_);
          stats_.return_ns += static_cast<double>(clock_.Now() - end);
        }
        done(sampled);
      });
    }
  }
}

Status ReplicaWorker::Fit(SeqId slot, uint64_t request, int64_t blocks) {
  if (slot >= tables_.size()) tables_.resize(static_cast<size_t>(slot) + 1);
  Table& t = tables_[slot];
  t.last_step = step_;
  if (t.request != request) {
    free_.insert(free_.end(), t.blocks.begin(), t.blocks.end());
    t.blocks.clear();
    t.request = request;
    t.last_token = 0;
  }
  while (static_cast<int64_t>(t.blocks.size()) > blocks) {
    free_.push_back(t.blocks.back());
    t.blocks.pop_back();
  }
  while (static_cast<int64_t>(t.blocks.size()) < blocks) {
    if (free_.empty()) {
      // Take back the blocks of the slot least recently run, not in this step.
      Table* victim = nullptr;
      for (Table& o : tables_)
        if (!o.blocks.empty() && o.last_step != step_ && (!victim || o.last_step < victim->last_step)) victim = &o;
      if (!victim)
        return Status::Invalid("the KV cache's " + std::to_string(model_->kv_blocks()) +
                               " blocks cannot hold this step's sequences");
      free_.insert(free_.end(), victim->blocks.begin(), victim->blocks.end());
      std::lock_guard<std::mutex> lock(mu_);
      stats_.blocks_taken_back += static_cast<int64_t>(victim->blocks.size());
      victim->blocks.clear();
      victim->request = ~uint64_t{0};
    }
    t.blocks.push_back(free_.back());
    free_.pop_back();
  }
  return Status::Ok();
}

Status ReplicaWorker::RunJob(Job& job) {
  if (job.reset) {
    for (Table& t : tables_) {
      free_.insert(free_.end(), t.blocks.begin(), t.blocks.end());
      t = Table();
    }
    return Status::Ok();
  }
  ++step_;
  step_seqs_.clear();
  int64_t tokens = 0;
  // Fit every sequence before taking pointers into tables_: a later slot can
  // grow the vector and move the tables already fitted.
  for (const BatchSeq& b : job.seqs) FLEETSIM_RETURN_IF_ERROR(Fit(b.id, b.request_id, b.kv_blocks));
  for (size_t i = 0; i < job.seqs.size(); ++i) {
    const BatchSeq& b = job.seqs[i];
    const Table& t = tables_[b.id];
    StepSeq s;
    s.context = b.context_tokens;
    s.tokens = b.new_tokens;
    s.decode = b.decode;
    s.samples = b.samples;
    s.last_token = t.last_token;
    s.blocks = &t.blocks;
    step_seqs_.push_back(s);
    tokens += b.new_tokens;
  }
  const SimTime start = clock_.Now();
  if (group_) {
    // The other ranks run the same step on their shards (a failing rank's
    // Forward aborts the group).
    Status s = group_->ring.Arrive() ? model_->Forward(step_seqs_, &sampled_) : Status::Invalid(kPeerFailed);
    if (s.ok() && !group_->ring.Arrive()) s = Status::Invalid(kPeerFailed);
    if (!s.ok()) {
      // The other ranks leave their Forward at its next barrier and end,
      // once the group is aborted: whoever failed has aborted it already
      // (a failing Forward does, and a barrier fails only when aborted);
      // aborting again is a no-op that keeps the joins from ever waiting
      // on a barrier. Wait for them: until then they read step_seqs_ and
      // the block tables, which the next job would change (the second
      // barrier, which guards them on success, is gone).
      group_->ring.Abort();
      JoinRanks();
      return s;
    }
  } else {
    FLEETSIM_RETURN_IF_ERROR(model_->Forward(step_seqs_, &sampled_));
  }
  const OpTimes& t = model_->last_times();
  size_t k = 0;
  for (size_t i = 0; i < job.seqs.size(); ++i)
    if (job.seqs[i].samples && k < sampled_.size()) tables_[job.seqs[i].id].last_token = sampled_[k++];
  job.sampled.assign(sampled_.begin(), sampled_.begin() + static_cast<std::ptrdiff_t>(k));
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.steps;
  stats_.tokens += tokens;
  stats_.busy_s += t.total * 1e-9;
  stats_.measured.Add(t);
  stats_.predicted.gemm += job.predicted.gemm;
  stats_.predicted.attention_prefill += job.predicted.attention_prefill;
  stats_.predicted.attention_decode += job.predicted.attention_decode;
  stats_.predicted.elementwise += job.predicted.elementwise;
  stats_.predicted.other += job.predicted.other;
  stats_.predicted.collective += job.predicted.collective;
  stats_.predicted_total += job.predicted_total;
  stats_.queue_ns += static_cast<double>(start - job.launched);
  return Status::Ok();
}

void LiveExecutor::Launch(const LaunchedBatch& batch) {
  ReplicaWorker::Job job;
  job.seqs.reserve(batch.seqs.size());
  batch.seqs.ForEach([&](const BatchSeq& s) { job.seqs.push_back(s); });
  if (!batch.shape.empty()) {
    job.predicted = perf_.Parts(batch.shape);
    job.predicted_total = static_cast<double>(perf_.IterationNs(batch.shape));
  }
  job.launched = clock_.Now();
  const uint64_t id = batch.id;
  std::vector<uint64_t> sampling;  // request ids of the sequences that sample, in batch order
  if (tokens_)
    for (const BatchSeq& s : job.seqs)
      if (s.samples) sampling.push_back(s.request_id);
  job.done = [this, id, sampling = std::move(sampling)](const std::vector<int32_t>& sampled) {
    if (tokens_ && !sampled.empty()) {
      std::vector<std::pair<uint64_t, int32_t>> t;
      t.reserve(sampled.size());
      for (size_t i = 0; i < sampled.size() && i < sampling.size(); ++i) t.emplace_back(sampling[i], sampled[i]);
      tokens_(t);
    }
    done_(id);
  };
  clock_.Begin();
  worker_.Submit(std::move(job));
}

void LiveExecutor::Reset() {
  ReplicaWorker::Job job;
  job.reset = true;
  worker_.Submit(std::move(job));
}

}  // namespace fleetsim::live

// LiveExecutor: the Executor live mode swaps in for SimulatedExecutor. A
// replica's batches run for real on a worker thread of its own, which owns
// a kernel backend and the replica's model (live_model.h); the batch's end
// comes back through the wall clock (wall_clock.h) as Done, on the driving
// thread, when the device has finished it.
//
// Block tables: the replica's KV manager counts blocks per sequence and
// names none, so the worker keeps the addresses. Each sequence slot of the
// replica has a table that grows and shrinks to the count the batch lists
// (BatchSeq::kv_blocks); a slot taken by another request starts empty, and
// Reset (the replica failed or restarted) empties them all. Blocks come
// from a free list over the model's cache; when it runs dry, the blocks of
// the slot least recently run (not in this batch) are taken back: such a
// slot holds a request that waits (preempted, or finished and not yet
// reused), and it starts its table again when it next runs.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "kernels/backend.h"
#include "sim/cluster/executor.h"
#include "sim/live/live_model.h"
#include "sim/live/wall_clock.h"

namespace fleetsim::live {

// What a worker measured, for live.json. Times in ns, summed over steps.
struct WorkerStats {
  int64_t steps = 0;
  int64_t tokens = 0;
  double busy_s = 0;        // in Forward, from start to the device's end
  int64_t blocks_taken_back = 0;
  OpTimes measured;         // per kind of op (cpu), or total only
  IterationParts predicted; // the perf model's figures for the same batches
  double predicted_total = 0;
  double queue_ns = 0;      // from Launch to the worker starting the step
  double return_ns = 0;     // from the device's end to Done on the driving thread
};

// One rank of a replica: its backend, its shard of the model (built on
// that backend), and the core its thread is pinned to (-1: not pinned).
struct WorkerRank {
  std::unique_ptr<kernels::Backend> backend;
  std::unique_ptr<LiveModel> model;
  int cpu = -1;
};

// Runs one replica's batches on its own thread; a tensor-parallel replica
// has a thread per further rank, which runs each step's Forward on its
// shard beside the worker's (rank 0's) and meets it at the group's barrier
// before and after the step.
class ReplicaWorker {
 public:
  // Takes the ranks (one, or group->ring.ranks() in rank order) and the
  // tensor-parallel group their models were built with (null for one
  // rank). `clock` must outlive the worker.
  // `spin`: after a step, wait for the next job spinning for a while
  // before sleeping (a thread with a core of its own).
  ReplicaWorker(std::vector<WorkerRank> ranks, std::unique_ptr<TpGroup> group, WallClock& clock, bool spin,
                std::string name);
  // Finishes the step in progress, drops the rest, joins the thread.
  ~ReplicaWorker();
  ReplicaWorker(const ReplicaWorker&) = delete;
  ReplicaWorker& operator=(const ReplicaWorker&) = delete;

  // One batch: its sequences as the replica listed them. `done` runs on the
  // driving thread (through the clock) when it has run; the caller did
  // clock.Begin().
  struct Job {
    bool reset = false;
    std::vector<BatchSeq> seqs;
    SimTime launched = 0;      // clock time of Launch
    IterationParts predicted;  // the perf model's parts for this batch
    double predicted_total = 0;
    // Called with the token ids the step sampled (a sampling sequence's
    // each, in the order of seqs; none when the step failed).
    std::function<void(const std::vector<int32_t>& sampled)> done;
    std::vector<int32_t> sampled;  // the worker's
  };
  void Submit(Job job);

  // The first error a step hit ("" none); the run stops with it. Any thread.
  Status status();
  WorkerStats stats();
  const std::string& name() const { return name_; }

 private:
  void Loop();
  void RankLoop(size_t r);
  Status RunJob(Job& job);
  // Joins the threads of ranks 1.. that have not been joined: after the
  // group was aborted (they end at its next barrier), or from the
  // destructor once the worker thread has ended.
  void JoinRanks();
  // Records a step's error (the first one), prefixed with the worker's name.
  void Fail(const Status& s);
  // Resizes slot `slot`'s table to `blocks` for request `request`.
  Status Fit(SeqId slot, uint64_t request, int64_t blocks);

  struct Table {
    uint64_t request = ~uint64_t{0};
    std::vector<int32_t> blocks;
    int32_t last_token = 0;
    uint64_t last_step = 0;
  };

  std::vector<WorkerRank> ranks_;
  std::unique_ptr<TpGroup> group_;
  LiveModel* model_;  // rank 0's
  WallClock& clock_;
  bool spin_;
  std::string name_;
  // The worker thread's own.
  std::vector<Table> tables_;
  std::vector<int32_t> free_;
  uint64_t step_ = 0;
  std::vector<StepSeq> step_seqs_;
  std::vector<int32_t> sampled_;
  // Shared with the driving thread.
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  std::atomic<int64_t> queued_{0};  // jobs_.size(), read without the lock while spinning
  bool stopping_ = false;
  Status status_;
  WorkerStats stats_;
  std::thread thread_;
  // Ranks 1.. (tensor parallel): their threads, and the flag that ends them.
  std::vector<std::thread> rank_threads_;
  std::atomic<bool> ranks_stopping_{false};
};

class LiveExecutor final : public Executor {
 public:
  // `worker`, `clock` and `perf` (the pool's model, whose predictions the
  // worker keeps beside its measurements) must outlive the executor.
  // Each batch's sampled tokens, (request id, token id) in batch order,
  // just before its Done (live mode's server streams them).
  using Tokens = std::function<void(const std::vector<std::pair<uint64_t, int32_t>>&)>;
  LiveExecutor(ReplicaWorker& worker, WallClock& clock, const PerfModel& perf, Done done, Tokens tokens = nullptr)
      : worker_(worker), clock_(clock), perf_(perf), done_(std::move(done)), tokens_(std::move(tokens)) {}
  int max_in_flight() const override { return 1; }
  void Launch(const LaunchedBatch& batch) override;
  void Reset() override;

 private:
  ReplicaWorker& worker_;
  WallClock& clock_;
  const PerfModel& perf_;
  Done done_;
  Tokens tokens_;
};

}  // namespace fleetsim::live

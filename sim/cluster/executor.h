// Executor: runs a batch and says when it is done. The one seam between
// scheduling and time: SimulatedExecutor asks the PerfModel and schedules a
// completion event; live mode (a later issue) supplies an executor that runs
// real kernels against a wall clock. Nothing else changes between the two.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "model/batch_shape.h"
#include "model/perf_model.h"
#include "sim/cluster/observer.h"
#include "sim/engine/simulation.h"

namespace fleetsim {

class Executor {
 public:
  using Done = std::function<void(uint64_t batch_id)>;
  virtual ~Executor() = default;
  // Batches that may be in flight at once (the pipeline depth, pp).
  virtual int max_in_flight() const = 0;
  // Starts `shape` now; `done(batch_id)` is called when it completes.
  // Batches complete in launch order.
  virtual void Launch(uint64_t batch_id, const BatchShape& shape) = 0;
  // The replica failed or restarted: batches in flight are forgotten (their
  // completions may still come; the replica ignores them) and the next
  // batch may start at once.
  virtual void Reset() = 0;
};

class SimulatedExecutor final : public Executor {
 public:
  // `perf` must outlive the executor.
  SimulatedExecutor(Simulation& sim, const PerfModel& perf, int pipeline_depth, Done done)
      : sim_(sim), perf_(perf), depth_(pipeline_depth), done_(std::move(done)) {}
  int max_in_flight() const override { return depth_; }
  void Launch(uint64_t batch_id, const BatchShape& shape) override;
  void Reset() override { busy_until_ = 0; }
  // Schedules the completion of batch `batch_id`, which began earlier, at
  // `end` (a decode span cut short).
  void Resume(uint64_t batch_id, SimTime end);

 private:
  Simulation& sim_;
  const PerfModel& perf_;
  int depth_;
  Done done_;
  SimTime busy_until_ = 0;
};

// The times of decode-only steps, for decode spans (replica.h), which time
// their iterations themselves: IterationNs of a step of `seqs` sequences
// reading `kv_tokens` (the shape ReplicaState::AddDecodes builds). For one
// to kMemoSeqs sequences, where a replica spends most of its decode steps at
// low load, a table remembers, per kv_tokens, the summed time of the steps
// reading kv_tokens, kv_tokens - seqs, ... down to the first: a stretch of
// steps (each reading `seqs` more than the one before) takes O(1), and the
// steps of it that end by some time are found by bisection. The replicas of
// a pool share one (one perf model).
class DecodeStepTimes {
 public:
  // `perf` must outlive it.
  explicit DecodeStepTimes(const PerfModel& perf) : perf_(perf) {}
  DecodeStepTimes(const DecodeStepTimes&) = delete;
  DecodeStepTimes& operator=(const DecodeStepTimes&) = delete;

  // `steps` steps of `seqs` sequences run back to back from `start`, the
  // first reading `kv_tokens` and each next `seqs` more; End(-1) is start.
  // Valid until the next call that returns one.
  class Steps final : public DecodeStepRun {
   public:
    SimTime End(int64_t i) const override {
      if (i < 0) return start_;
      return sums_ ? start_ + sums_[kv_ + i * seqs] - base_ : ends_[i];
    }

   private:
    friend class DecodeStepTimes;
    SimTime start_ = 0;
    const int64_t* sums_ = nullptr;  // the table's row (else ends_)
    int64_t kv_ = 0;
    int64_t base_ = 0;               // the row's sum before the first step
    const SimTime* ends_ = nullptr;
  };

  int64_t StepNs(int64_t seqs, int64_t kv_tokens);
  // The end of those steps.
  SimTime EndOf(int64_t seqs, int64_t kv_tokens, int64_t steps, SimTime start);
  // Those of the steps that end by `until` (count), at most `steps`.
  Steps& EndedBy(int64_t seqs, int64_t kv_tokens, int64_t steps, SimTime start, SimTime until);
  // The same for steps not remembered, whose ends were written down
  // (ends[0..steps), from Ends): no IterationNs again.
  Steps& EndedBy(int64_t seqs, const SimTime* ends, int64_t steps, SimTime start, SimTime until);
  // Writes the steps' ends to `ends` (replacing what it held).
  void Ends(int64_t seqs, int64_t kv_tokens, int64_t steps, SimTime start, std::vector<SimTime>* ends);
  // Whether the steps up to one reading `last_kv_tokens` come from the
  // table (O(1)); else each costs an IterationNs.
  bool Remembered(int64_t seqs, int64_t last_kv_tokens) const {
    return seqs >= 1 && seqs <= kMemoSeqs && last_kv_tokens < kMemoKvTokens;
  }

 private:
  static constexpr int64_t kMemoSeqs = 2;
  static constexpr int64_t kMemoKvTokens = int64_t{1} << 18;
  int64_t Eval(int64_t seqs, int64_t kv_tokens) const;
  struct Row {
    // sums[kv]: StepNs(kv) + sums[kv - seqs] (0 below 0).
    std::vector<int64_t> sums;
    // The first kv whose step is shorter than the one seqs fewer (the gaps
    // of steps past it may fall).
    int64_t first_drop = kMemoKvTokens;
  };
  // The row of `seqs`, filled up to `last` at least. REQUIRES: Remembered.
  Row& Filled(int64_t seqs, int64_t last);
  int64_t SumBefore(const Row& row, int64_t seqs, int64_t kv) const {
    return kv >= seqs ? row.sums[kv - seqs] : 0;
  }

  const PerfModel& perf_;
  std::vector<Row> rows_;  // [seqs - 1]
  Steps steps_;
  std::vector<SimTime> ends_;  // steps_' ends when not remembered and not written down
};

}  // namespace fleetsim

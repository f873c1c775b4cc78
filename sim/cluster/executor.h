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
  // Decode spans (replica.h), which time their iterations themselves:
  // IterationNs of a decode-only step of `seqs` sequences reading
  // `kv_tokens` (the shape ReplicaState::AddDecodes builds), remembered for
  // one to kMemoSeqs sequences, where a replica spends most of its decode
  // steps at low load.
  int64_t DecodeStepNs(int64_t seqs, int64_t kv_tokens);
  // Schedules the completion of batch `batch_id`, which began earlier, at
  // `end` (a decode span cut short).
  void Resume(uint64_t batch_id, SimTime end);

 private:
  static constexpr int64_t kMemoSeqs = 2;
  static constexpr int64_t kMemoKvTokens = int64_t{1} << 18;
  // [seqs - 1][kv_tokens]: the step's time, 0 while unknown (IterationNs is
  // at least 1).
  std::vector<std::vector<int32_t>> decode_ns_;
  Simulation& sim_;
  const PerfModel& perf_;
  int depth_;
  Done done_;
  SimTime busy_until_ = 0;
};

}  // namespace fleetsim

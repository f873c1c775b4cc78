// Executor: runs batches and says when each is done. The one seam between
// scheduling and time: SimulatedExecutor asks the PerfModel and schedules
// completion events; live mode (a later issue) supplies an executor that
// runs real kernels against a wall clock. Nothing else changes between the
// two.
//
// An executor may hold up to max_in_flight() batches at once (the pipeline
// depth); the replica builds each for a decoder group not in flight
// (replica_state.h). A batch comes as its shape (aggregates, all a
// performance model needs) and, for executors that need the sequences
// themselves (live mode, KV transfer), a BatchSequences that lists them on
// demand: nothing is listed unless asked.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "base/status.h"
#include "model/batch_shape.h"
#include "model/perf_model.h"
#include "sim/cluster/observer.h"
#include "sim/cluster/replica_state.h"
#include "sim/engine/simulation.h"

namespace fleetsim {

// One sequence of a launched batch.
struct BatchSeq {
  SeqId id = kNoSeq;          // its slot in the replica's state
  uint64_t request_id = 0;
  bool decode = false;        // a decode step (else a prefill chunk)
  int64_t context_tokens = 0; // tokens in its KV before this step (cached prefix included)
  int32_t new_tokens = 0;     // tokens this step feeds (1 for a decode)
  // KV blocks it holds once the step has written its tokens. The state
  // counts blocks and does not name them; an executor that needs addresses
  // (live mode) assigns them from these counts.
  int64_t kv_blocks = 0;
  // Samples a token this step: a decode, or the chunk that ends the prompt.
  bool samples = false;
};

// The sequences of a launched batch, listed on demand: O(chunks) for the
// prefill chunks plus O(slots) for the decoders, paid only by an executor
// that calls ForEach. Valid while the batch is in flight (its group's
// decoders do not change until it completes).
class BatchSequences {
 public:
  BatchSequences(const ReplicaState& state, const Batch& batch) : state_(state), batch_(batch) {}
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    const KvCacheManager& kv = state_.kv();
    for (const Chunk& c : batch_.chunks) {
      const Seq& s = state_.seq(c.seq);
      fn(BatchSeq{c.seq, s.req.id, false, c.start, c.tokens, kv.BlocksFor(int64_t{c.start} + c.tokens),
                  c.start + c.tokens >= s.prefill_target});
    }
    if (!batch_.decodes) return;
    state_.ForEachDecoder(batch_.group, [&](SeqId id, int64_t kv_tokens) {
      fn(BatchSeq{id, state_.seq(id).req.id, true, kv_tokens, 1, kv.BlocksFor(kv_tokens + 1), true});
    });
  }
  size_t size() const {
    return batch_.chunks.size() + static_cast<size_t>(batch_.decodes ? state_.num_decoding_in(batch_.group) : 0);
  }

 private:
  const ReplicaState& state_;
  const Batch& batch_;
};

struct LaunchedBatch {
  uint64_t id = 0;
  const BatchShape& shape;
  BatchSequences seqs;
};

class Executor {
 public:
  using Done = std::function<void(uint64_t batch_id)>;
  virtual ~Executor() = default;
  // Batches that may be in flight at once (the pipeline depth, pp).
  virtual int max_in_flight() const = 0;
  // Starts `batch` now; the executor's `done(batch.id)` is called when it
  // completes. Batches complete in launch order.
  virtual void Launch(const LaunchedBatch& batch) = 0;
  // The replica failed or restarted: batches in flight are forgotten (their
  // completions may still come; the replica ignores them) and the next
  // batch may start at once.
  virtual void Reset() = 0;
  // Whether the replica may run decode spans (replica.h) on it: it times
  // steps by the perf model alone, one batch at a time.
  virtual bool spans() const { return false; }
  // Schedules the completion of batch `batch_id`, which began earlier, at
  // `end` (a decode span cut short). REQUIRES: spans().
  virtual void Resume(uint64_t batch_id, SimTime end) {
    (void)batch_id;
    (void)end;
    FLEETSIM_CHECK(false);
  }
};

// The link a pipeline stage sends its activations over to the next one:
// alpha-beta, alpha in ns and bandwidth in GB/s one way.
struct StageLink {
  double alpha_ns = 0;
  double gbps = 0;
};

// How a replica's layers are split over its pipeline stages, and what the
// stages send each other. Stage i runs layers[i] layers; after it, every
// token of the batch sends send_bytes_per_token to stage i + 1 over
// links[i].
struct PipelinePlan {
  std::vector<int> layers;
  std::vector<StageLink> links;
  double send_bytes_per_token = 0;
  int stages() const { return static_cast<int>(layers.size()); }
};

// vLLM's default split (vllm/distributed/utils.py, get_pp_indices): every
// stage gets layers / pp, and the remainder goes one each to the stages
// before the last (which also runs the lm_head). REQUIRES: layers >= pp >= 1.
std::vector<int> DefaultLayerSplit(int layers, int pp);

// Times batches with a PerfModel. With one stage a batch takes
// IterationNs(shape) and batches run back to back. With pp stages (a
// PipelinePlan) a batch is priced from PerfModel::Split: the engine's CPU
// time first (one driver, one batch at a time), then each stage in turn,
// its share of the layers' GPU time (layers[i] / all layers) plus, on the
// last, the per-iteration work (lm_head, sampling), each stage waiting for
// the one before and for its own previous batch, with a send between
// stages. So up to pp batches are in flight, a batch's latency is the sum
// of its stages and sends, and at steady load the slowest stage sets the
// rate; an unequal split shows as that stage's queue.
class SimulatedExecutor final : public Executor {
 public:
  // `perf` (and `pipeline`, when given) must outlive the executor.
  // `pipeline`: null or one stage for pp = 1.
  SimulatedExecutor(Simulation& sim, const PerfModel& perf, const PipelinePlan* pipeline, Done done);
  int max_in_flight() const override { return depth_; }
  void Launch(const LaunchedBatch& batch) override;
  void Reset() override;
  bool spans() const override { return depth_ == 1; }
  void Resume(uint64_t batch_id, SimTime end) override;
  // Time each stage spent running batches, by stage (for per-stage busy
  // fractions and tests).
  const std::vector<SimTime>& stage_busy() const { return stage_busy_; }

 private:
  Simulation& sim_;
  const PerfModel& perf_;
  const PipelinePlan* plan_;
  int depth_;
  Done done_;
  SimTime busy_until_ = 0;          // one stage
  SimTime cpu_free_ = 0;            // stages: when the driver's CPU is free
  std::vector<SimTime> stage_free_; // and each stage
  std::vector<SimTime> stage_busy_;
  double total_layers_ = 0;
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

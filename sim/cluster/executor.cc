#include "sim/cluster/executor.h"

#include <algorithm>
#include <limits>

namespace fleetsim {

std::vector<int> DefaultLayerSplit(int layers, int pp) {
  FLEETSIM_CHECK(pp >= 1 && layers >= pp);
  std::vector<int> split(static_cast<size_t>(pp), layers / pp);
  // The remainder, one layer each, to the stages before the last, from the
  // second-to-last backwards (a single stage keeps them all).
  int rest = layers % pp;
  for (int i = pp - 2; rest > 0 && i >= 0; --i, --rest) ++split[static_cast<size_t>(i)];
  return split;
}

SimulatedExecutor::SimulatedExecutor(Simulation& sim, const PerfModel& perf, const PipelinePlan* pipeline, Done done)
    : sim_(sim),
      perf_(perf),
      plan_(pipeline != nullptr && pipeline->stages() > 1 ? pipeline : nullptr),
      depth_(plan_ ? plan_->stages() : 1),
      done_(std::move(done)),
      stage_free_(static_cast<size_t>(depth_), 0),
      stage_busy_(static_cast<size_t>(depth_), 0) {
  if (plan_) {
    FLEETSIM_CHECK(static_cast<int>(plan_->links.size()) == depth_ - 1);
    for (int l : plan_->layers) {
      FLEETSIM_CHECK(l >= 1);
      total_layers_ += l;
    }
  }
}

void SimulatedExecutor::Launch(const LaunchedBatch& batch) {
  const uint64_t id = batch.id;
  if (!plan_) {
    // One stage: batches run back to back.
    const SimTime start = std::max(sim_.now(), busy_until_);
    const SimTime end = start + perf_.IterationNs(batch.shape);
    busy_until_ = end;
    stage_busy_[0] += end - start;
    sim_.At(end, [this, id] { done_(id); });
    return;
  }
  const IterationSplit split = perf_.Split(batch.shape);
  // The driver prepares the batch, then it passes the stages in turn; a
  // stage takes it once the one before has sent it and its own previous
  // batch is done.
  SimTime t = std::max(sim_.now(), cpu_free_) + split.cpu_ns;
  cpu_free_ = t;
  const double tokens = static_cast<double>(batch.shape.tokens());
  const double layers_ns = static_cast<double>(split.layers_ns);
  for (int i = 0; i < depth_; ++i) {
    const size_t k = static_cast<size_t>(i);
    SimTime ns = std::llround(layers_ns * plan_->layers[k] / total_layers_);
    if (i == depth_ - 1) ns += split.head_ns;
    const SimTime start = std::max(t, stage_free_[k]);
    t = start + std::max<SimTime>(ns, 1);
    stage_free_[k] = t;
    stage_busy_[k] += t - start;
    if (i + 1 < depth_ && tokens > 0) {
      const StageLink& link = plan_->links[k];
      t += std::llround(link.alpha_ns + tokens * plan_->send_bytes_per_token / link.gbps);
    }
  }
  sim_.At(t, [this, id] { done_(id); });
}

void SimulatedExecutor::Reset() {
  busy_until_ = 0;
  cpu_free_ = 0;
  std::fill(stage_free_.begin(), stage_free_.end(), 0);
}

void SimulatedExecutor::Resume(uint64_t batch_id, SimTime end) {
  FLEETSIM_CHECK(spans());
  sim_.At(end, [this, batch_id] { done_(batch_id); });
}

int64_t DecodeStepTimes::Eval(int64_t seqs, int64_t kv_tokens) const {
  BatchShape shape;
  shape.decode_seqs = static_cast<int32_t>(seqs);
  shape.decode_tokens = seqs;
  shape.decode_kv_tokens = kv_tokens;
  shape.sampled_seqs = static_cast<int32_t>(seqs);
  return perf_.IterationNs(shape);
}

DecodeStepTimes::Row& DecodeStepTimes::Filled(int64_t seqs, int64_t last) {
  if (rows_.empty()) rows_.resize(kMemoSeqs);
  Row& row = rows_[seqs - 1];
  int64_t kv = static_cast<int64_t>(row.sums.size());
  if (kv > last) return row;
  // Every kv up to `last` is timed (the sums run along them): no further.
  row.sums.resize(static_cast<size_t>(last + 1));
  for (; kv < static_cast<int64_t>(row.sums.size()); ++kv) {
    const int64_t ns = Eval(seqs, kv);
    const int64_t before = SumBefore(row, seqs, kv);
    if (kv >= seqs && ns < before - SumBefore(row, seqs, kv - seqs)) row.first_drop = std::min(row.first_drop, kv);
    row.sums[kv] = before + ns;
  }
  return row;
}

int64_t DecodeStepTimes::StepNs(int64_t seqs, int64_t kv_tokens) {
  if (!Remembered(seqs, kv_tokens)) return Eval(seqs, kv_tokens);
  const Row& row = Filled(seqs, kv_tokens);
  return row.sums[kv_tokens] - SumBefore(row, seqs, kv_tokens);
}

SimTime DecodeStepTimes::EndOf(int64_t seqs, int64_t kv_tokens, int64_t steps, SimTime start) {
  if (steps <= 0) return start;
  const int64_t last = kv_tokens + (steps - 1) * seqs;
  if (!Remembered(seqs, last)) {
    for (int64_t i = 0; i < steps; ++i, kv_tokens += seqs) start += Eval(seqs, kv_tokens);
    return start;
  }
  const Row& row = Filled(seqs, last);
  return start + row.sums[last] - SumBefore(row, seqs, kv_tokens);
}

DecodeStepTimes::Steps& DecodeStepTimes::EndedBy(int64_t seqs, int64_t kv_tokens, int64_t steps, SimTime start,
                                                 SimTime until) {
  Steps& s = steps_;
  s = Steps();
  s.seqs = seqs;
  s.start_ = start;
  const int64_t last = kv_tokens + (std::max<int64_t>(steps, 1) - 1) * seqs;
  if (!Remembered(seqs, last)) {
    ends_.clear();
    for (int64_t i = 0; i < steps; ++i, kv_tokens += seqs) {
      start += Eval(seqs, kv_tokens);
      if (start > until) break;
      ends_.push_back(start);
    }
    s.ends_ = ends_.data();
    s.count = static_cast<int64_t>(ends_.size());
    return s;
  }
  const Row& row = Filled(seqs, last);
  s.sums_ = row.sums.data();
  s.kv_ = kv_tokens;
  s.base_ = SumBefore(row, seqs, kv_tokens);
  s.ascending = last < row.first_drop;
  // The steps that end by `until`: ends ascend.
  int64_t lo = 0, hi = steps;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;  // do `mid` steps end by until?
    if (s.End(mid - 1) <= until) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  s.count = lo;
  return s;
}

DecodeStepTimes::Steps& DecodeStepTimes::EndedBy(int64_t seqs, const SimTime* ends, int64_t steps, SimTime start,
                                                 SimTime until) {
  Steps& s = steps_;
  s = Steps();
  s.seqs = seqs;
  s.start_ = start;
  s.ends_ = ends;
  s.count = std::upper_bound(ends, ends + steps, until) - ends;
  return s;
}

void DecodeStepTimes::Ends(int64_t seqs, int64_t kv_tokens, int64_t steps, SimTime start,
                           std::vector<SimTime>* ends) {
  ends->clear();
  for (int64_t i = 0; i < steps; ++i, kv_tokens += seqs) {
    start += StepNs(seqs, kv_tokens);
    ends->push_back(start);
  }
}

}  // namespace fleetsim

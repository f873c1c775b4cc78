#include "sim/cluster/executor.h"

#include <algorithm>
#include <limits>

namespace fleetsim {

void SimulatedExecutor::Launch(uint64_t batch_id, const BatchShape& shape) {
  // With pp stages a batch occupies the first stage for 1/pp of its time;
  // the next batch can enter once the stage frees. In the spine pp = 1, so
  // batches run back to back.
  const SimTime duration = perf_.IterationNs(shape);
  const SimTime start = std::max(sim_.now(), busy_until_);
  const SimTime end = start + duration;
  busy_until_ = start + duration / depth_;
  sim_.At(end, [this, batch_id] { done_(batch_id); });
}

void SimulatedExecutor::Resume(uint64_t batch_id, SimTime end) {
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

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

int64_t SimulatedExecutor::DecodeStepNs(int64_t seqs, int64_t kv_tokens) {
  auto eval = [&] {
    BatchShape shape;
    shape.decode_seqs = static_cast<int32_t>(seqs);
    shape.decode_tokens = seqs;
    shape.decode_kv_tokens = kv_tokens;
    shape.sampled_seqs = static_cast<int32_t>(seqs);
    return perf_.IterationNs(shape);
  };
  if (seqs > kMemoSeqs || kv_tokens >= kMemoKvTokens) return eval();
  if (decode_ns_.empty()) decode_ns_.resize(kMemoSeqs);
  std::vector<int32_t>& memo = decode_ns_[seqs - 1];
  if (static_cast<int64_t>(memo.size()) <= kv_tokens)
    memo.resize(std::min<int64_t>(kMemoKvTokens, std::max<int64_t>(kv_tokens + 1, 2 * static_cast<int64_t>(memo.size()))), 0);
  int32_t& slot = memo[kv_tokens];
  if (slot > 0) return slot;
  const int64_t ns = eval();
  if (ns <= std::numeric_limits<int32_t>::max()) slot = static_cast<int32_t>(ns);
  return ns;
}

void SimulatedExecutor::Resume(uint64_t batch_id, SimTime end) {
  sim_.At(end, [this, batch_id] { done_(batch_id); });
}

}  // namespace fleetsim

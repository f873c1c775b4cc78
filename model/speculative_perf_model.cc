#include "model/speculative_perf_model.h"

#include <algorithm>
#include <cmath>

#include "base/status.h"

namespace fleetsim {

SpeculativePerfModel::SpeculativePerfModel(const PerfModel& target, SpeculativeCost cost)
    : target_(target), cost_(std::move(cost)) {
  FLEETSIM_CHECK(cost_.k >= 1);
  FLEETSIM_CHECK(cost_.draft || (cost_.head_layer_fraction > 0 && cost_.head_layer_fraction <= 1));
}

BatchShape SpeculativePerfModel::VerifyShape(const BatchShape& shape) const {
  BatchShape v = shape;
  if (shape.decode_seqs > 0) {
    const int64_t extra = int64_t{shape.decode_seqs} * cost_.k;
    v.decode_tokens += extra;
    v.sampled_seqs += static_cast<int32_t>(extra);  // logits at every scored position
  }
  return v;
}

double SpeculativePerfModel::PassNs(const BatchShape& shape) const {
  if (cost_.draft) {
    const IterationSplit s = cost_.draft->Split(shape);
    return static_cast<double>(s.layers_ns + s.head_ns);
  }
  const IterationSplit s = target_.Split(shape);
  return cost_.head_layer_fraction * static_cast<double>(s.layers_ns) + static_cast<double>(s.head_ns);
}

int64_t SpeculativePerfModel::ProposerNs(const BatchShape& shape) const {
  // The first pass: the chunks (the proposer's own prefill) and one token
  // per decoder.
  BatchShape first = shape;
  first.swap_in_tokens = first.swap_out_tokens = 0;
  first.cached_tokens = 0;
  if (first.empty()) return 0;
  double ns = PassNs(first);
  if (shape.decode_seqs > 0 && cost_.k > 1) {
    BatchShape next;
    next.decode_seqs = shape.decode_seqs;
    next.decode_tokens = shape.decode_seqs;
    next.decode_kv_tokens = shape.decode_kv_tokens + shape.decode_seqs;  // one more guess in KV each pass
    next.sampled_seqs = shape.decode_seqs;
    for (int i = 1; i < cost_.k; ++i) {
      ns += PassNs(next);
      next.decode_kv_tokens += shape.decode_seqs;
    }
  }
  return std::llround(std::min(ns, 1e15));
}

int64_t SpeculativePerfModel::IterationNs(const BatchShape& shape) const {
  return target_.IterationNs(VerifyShape(shape)) + ProposerNs(shape);
}

std::vector<std::pair<std::string, std::string>> SpeculativePerfModel::Sources() const {
  std::vector<std::pair<std::string, std::string>> out = target_.Sources();
  out.emplace_back("speculative_proposer", cost_.draft ? "draft:" + cost_.proposer : cost_.proposer);
  return out;
}

}  // namespace fleetsim

// PerfModel: "how long does this batch iteration take on this shard plan".
//
// Implementations: RooflinePerfModel (datasheet ceilings x efficiencies, the
// fallback), later profile tables and fitted models. A PerfModel is
// immutable after construction and safe to share between threads.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/batch_shape.h"

namespace fleetsim {

// Operator kinds that a source can time; summary.json perf_sources lists
// the source per kind.
inline constexpr const char* kOpKinds[] = {
    "gemm", "attention_prefill", "attention_decode", "elementwise",
    "all_reduce", "cpu_overhead", "swap", "launch", "server"};

// One iteration's time as pipeline stages share it (pp > 1): the engine's
// CPU time, which the driver spends before the first stage; the GPU time of
// every layer together, of which each stage runs its layers' share; and the
// per-iteration GPU work only the last stage runs (lm_head, logits gather,
// sampling). Activation sends between stages are not in it: the executor
// prices them on the links between the stages' GPUs.
struct IterationSplit {
  int64_t cpu_ns = 0;
  int64_t layers_ns = 0;
  int64_t head_ns = 0;
};

// An iteration's time by the kind of work (ns), summing to IterationNs up
// to rounding: what live mode sets beside the measured times of the same
// kinds of kernels.
struct IterationParts {
  double gemm = 0;               // the layers' products and the lm_head
  double attention_prefill = 0;  // prompt chunks' attention
  double attention_decode = 0;
  double elementwise = 0;        // norms, rotary, activation, residuals, embedding
  double other = 0;              // all-reduce, the engine's CPU time, launches, swap
  double collective = 0;         // of `other`: the collectives (tensor-parallel all-reduces, pp sends, gathers)
};

class PerfModel {
 public:
  virtual ~PerfModel() = default;
  // Wall time of one iteration over all pipeline stages, in nanoseconds,
  // including the engine's CPU overhead. Deterministic: same shape, same
  // answer. REQUIRES: !shape.empty().
  virtual int64_t IterationNs(const BatchShape& shape) const = 0;
  // The split of an iteration for pipeline stages. The default puts it all
  // in the layers. REQUIRES: !shape.empty().
  virtual IterationSplit Split(const BatchShape& shape) const { return {0, IterationNs(shape), 0}; }
  // The parts of IterationNs(shape). The default: all of it in other.
  virtual IterationParts Parts(const BatchShape& shape) const {
    IterationParts p;
    p.other = static_cast<double>(IterationNs(shape));
    return p;
  }
  // (operator kind, source) pairs, e.g. ("gemm", "roofline").
  virtual std::vector<std::pair<std::string, std::string>> Sources() const = 0;
};

}  // namespace fleetsim

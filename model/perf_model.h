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

class PerfModel {
 public:
  virtual ~PerfModel() = default;
  // Wall time of one iteration over all pipeline stages, in nanoseconds,
  // including the engine's CPU overhead. Deterministic: same shape, same
  // answer. REQUIRES: !shape.empty().
  virtual int64_t IterationNs(const BatchShape& shape) const = 0;
  // (operator kind, source) pairs, e.g. ("gemm", "roofline").
  virtual std::vector<std::pair<std::string, std::string>> Sources() const = 0;
};

}  // namespace fleetsim

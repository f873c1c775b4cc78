// EngineSpec: per-engine constants that are not scheduling policy, as data
// (model/engines/). The CPU overhead per iteration (scheduling, input
// preparation, sampling, detokenising) dominates small models.
#pragma once

#include <string>

namespace fleetsim {

struct EngineSpec {
  std::string name;                     // "vllm"
  double cpu_overhead_fixed_us = 0;     // per iteration
  double cpu_overhead_per_seq_us = 0;   // per sequence in the batch
  std::string source;
};

}  // namespace fleetsim

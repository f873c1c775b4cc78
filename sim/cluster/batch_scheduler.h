// BatchScheduler: picks what the next iteration of a replica runs.
//
// A scheduler reads the ReplicaState and builds a Batch through its methods
// (admit, add decodes, add prefill chunks, preempt). It never touches time
// or the executor; engines differ only here (vLLM V1, V0, Sarathi-Serve,
// Orca, SGLang), so each is a small class registered by name.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "sim/cluster/registry.h"
#include "sim/cluster/replica_state.h"

namespace fleetsim {

// Limits every scheduler honours (vLLM's names).
struct SchedulerLimits {
  int64_t max_num_batched_tokens = 8192;  // token budget of one iteration
  int64_t max_num_seqs = 1024;            // running requests at most
};

class BatchScheduler {
 public:
  virtual ~BatchScheduler() = default;
  // Fills `batch` (initially empty) for an iteration starting at `now`. May
  // leave it empty when nothing can run.
  virtual void Schedule(ReplicaState& state, SimTime now, Batch* batch) = 0;
};

using SchedulerFactory =
    std::function<Status(const SchedulerLimits&, std::unique_ptr<BatchScheduler>*)>;
using SchedulerRegistry = Registry<SchedulerFactory>;

void RegisterBuiltinSchedulers(SchedulerRegistry* registry);

}  // namespace fleetsim

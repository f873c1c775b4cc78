// BatchScheduler: picks what the next iteration of a replica runs.
//
// A scheduler reads the ReplicaState and builds a Batch through its methods
// (admit, resume, add decodes, add prefill chunks, preempt). It never
// touches time or the executor; engines differ only here (vLLM V1, V0,
// Sarathi-Serve, Orca, SGLang), so each is a small class registered by name
// with an Options struct holding that engine's defaults.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "base/status.h"
#include "sim/cluster/registry.h"
#include "sim/cluster/replica_state.h"

namespace fleetsim {

// Limits every scheduler honours (vLLM's names), resolved per pool.
struct SchedulerLimits {
  int64_t max_num_batched_tokens = 8192;  // token budget of one iteration
  int64_t max_num_seqs = 1024;            // running requests at most
  int64_t max_model_len = 0;              // the model's context limit, tokens
};

// Scheduler-specific settings from the scenario ("scheduler_options"), by
// name. Each factory converts them into its typed Options and rejects names
// it does not know, so nothing looks strings up past construction.
using SchedulerParams = std::map<std::string, double, std::less<>>;

// How an engine treats prefix caching.
struct PrefixCachePolicy {
  bool supported = true;   // false: the engine has none (a pool may not turn it on)
  bool by_default = true;  // on unless the pool says otherwise
  PrefixCache::Eviction eviction = PrefixCache::Eviction::kLru;
};

// What one iteration may hold under a scheduler, as the engine applies it
// (Sarathi's budget is its chunk size, not max_num_batched_tokens).
struct StepLimits {
  int64_t tokens = 0;    // tokens per iteration
  int64_t seqs = 0;      // running sequences at most
  const char* tokens_from = "max_num_batched_tokens";  // the setting that gives `tokens`
};

class BatchScheduler {
 public:
  virtual ~BatchScheduler() = default;
  virtual StepLimits step_limits() const = 0;
  virtual PrefixCachePolicy prefix_cache_policy() const { return {}; }
  // The engine's preemption order, queueing and caching rules the replica's
  // state applies.
  virtual StateRules state_rules() const { return {}; }
  // Fills `batch` (initially empty) for an iteration starting at `now`. May
  // leave it empty when nothing can run.
  virtual void Schedule(ReplicaState& state, SimTime now, Batch* batch) = 0;
  // The engine restarted: forget what was learnt from earlier batches.
  virtual void Reset() {}
  // The replica ran `steps` iterations without calling Schedule (a decode
  // span, replica.h): each was what Schedule would have built from a state
  // holding only decoders whose next blocks fit, i.e. every decoder and
  // nothing else. Applies to the scheduler's own state what those Schedule
  // calls would have, exactly; schedulers that keep none need nothing.
  virtual void SkipDecodeSteps(int64_t steps) { (void)steps; }
};

// Errors name the offending option ("chunk_size: expected ...").
using SchedulerFactory = std::function<Status(const SchedulerLimits&, const SchedulerParams&,
                                              std::unique_ptr<BatchScheduler>*)>;
using SchedulerRegistry = Registry<SchedulerFactory>;

void RegisterBuiltinSchedulers(SchedulerRegistry* registry);

// Shared steps of several schedulers.
namespace sched {

// Preempts (ReplicaState::PreemptVictim) until the decoding set's new
// blocks fit, then adds it. Returns the budget the decodes used.
int64_t RunDecodes(ReplicaState& state, SimTime now, Batch* batch);
// Brings swapped requests back, oldest first, while their blocks (and the
// decoders' next blocks) fit and fewer than max_num_seqs run. Call before
// RunDecodes.
void ResumeSwapped(ReplicaState& state, int64_t max_num_seqs, Batch* batch);
// Reads a parameter: `*out` keeps its default when absent; errors name it.
Status Param(const SchedulerParams& params, const char* name, double lo, double hi, double* out);
Status IntParam(const SchedulerParams& params, const char* name, int64_t lo, int64_t hi, int64_t* out);
// Fails on a parameter name outside `known`.
Status OnlyParams(const SchedulerParams& params, std::initializer_list<const char*> known);

}  // namespace sched

}  // namespace fleetsim

// RunObserver: what the cluster reports as it runs. Metrics, the trace
// writer and tests implement it; the cluster never formats output itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "model/batch_shape.h"
#include "sim/engine/time.h"
#include "sim/traffic/request.h"

namespace fleetsim {

enum class RequestStatus { kCompleted, kRejected, kFailed, kUnfinished };
std::string_view RequestStatusName(RequestStatus s);

// One row of requests.csv: the life of one request.
struct RequestRecord {
  uint64_t id = 0;
  SimTime arrival = 0;
  SimTime first_scheduled = -1;  // first prefill chunk began (-1: never)
  SimTime first_token = -1;      // -1: none yet
  SimTime finish = -1;           // last token (completed) or end of run
  int32_t prompt_tokens = 0;
  int32_t output_tokens = 0;     // requested
  int32_t generated_tokens = 0;  // produced (== output_tokens when completed)
  int32_t replica = -1;          // -1: never reached one
  int32_t preemptions = 0;
  int32_t cached_tokens = 0;     // prompt tokens found in the prefix cache at first admission
  RequestStatus status = RequestStatus::kCompleted;
  std::string_view reason;       // why rejected/failed/unfinished; empty when completed
  bool truncated = false;        // lengths cut to max_model_len (prompt_tokens is what was served)
  // Its groups for per-group figures (summary.json classes, tenants, models,
  // regions, degraded); copied from the request (Request has their meaning).
  int32_t priority = 0;
  int32_t tenant = -1;
  int32_t model = -1;
  int32_t region = -1;
  uint8_t degraded = 0;
};

// Copies the request's groups into its record.
inline void StampGroups(const Request& req, RequestRecord* r) {
  r->priority = req.priority;
  r->tenant = req.tenant_id;
  r->model = req.model_id;
  r->region = req.region;
  r->degraded = req.degraded;
}

// The record of a request that never reached an engine's queue (turned
// away on arrival, or still in the API server when the run ended):
// `replica` -1 when it reached none.
inline RequestRecord UnservedRecord(const Request& req, int32_t replica, SimTime finish, RequestStatus status,
                                    std::string_view reason) {
  RequestRecord r;
  r.id = req.id;
  r.arrival = req.arrival;
  r.finish = finish;
  r.prompt_tokens = req.prompt_tokens;
  r.output_tokens = req.spec_output > 0 ? req.spec_output : req.output_tokens;  // speculation.h
  r.replica = replica;
  r.truncated = req.truncated;
  StampGroups(req, &r);
  r.status = status;
  r.reason = reason;
  return r;
}

// A replica's state at the end of one sampling interval.
struct ReplicaSample {
  SimTime t = 0;            // end of the interval
  SimTime interval = 0;     // its length (1 s, shorter at the end of the run)
  int replica = 0;
  int64_t arrivals = 0;     // requests routed to it during the interval
  int64_t waiting = 0;
  int64_t running = 0;
  double kv_utilization = 0;
  SimTime busy = 0;         // time spent in iterations during the interval
  const char* state = "ready";  // Cluster::StateName at the end of the interval
  std::optional<double> usd_per_hour;  // its cost rate then (0: stopped; unset: unpriced)
};

// Decode steps run back to back (a decode span's, sim/cluster/replica.h):
// steps `first` to `count` - 1 are reported; step i ends at End(i) and gives
// `seqs` inter-token gaps of End(i) - End(i - 1) each (End(first - 1): the
// end of the step before them). Ends ascend.
class DecodeStepRun {
 public:
  virtual SimTime End(int64_t i) const = 0;
  int64_t first = 0;
  int64_t count = 0;
  int64_t seqs = 0;
  // The gaps never fall from one step to the next, so that a stretch of
  // them within some bounds can be found by bisection.
  bool ascending = false;

 protected:
  ~DecodeStepRun() = default;
};

class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void OnArrival(const Request& r, int replica) = 0;
  // Every request ends in exactly one OnFinished (completed, rejected,
  // failed or unfinished).
  virtual void OnFinished(const RequestRecord& rec) = 0;
  // `count` inter-token gaps of `gap` each, ending at `at`: one call for all
  // sequences that got their previous token at the same instant.
  virtual void OnTokenGaps(SimTime at, SimTime gap, int64_t count) = 0;
  // Decode steps in a row (a decode span's): as OnTokenGaps(run.End(i),
  // run.End(i) - run.End(i - 1), run.seqs) for each reported step in order,
  // which is what it does unless overridden.
  virtual void OnDecodeSteps(const DecodeStepRun& run) {
    for (int64_t i = run.first; i < run.count; ++i) OnTokenGaps(run.End(i), run.End(i) - run.End(i - 1), run.seqs);
  }
  virtual void OnIteration(int replica, SimTime start, SimTime end, const BatchShape& shape) = 0;
  // Whether OnIteration calls are wanted now. When not, a replica may run a
  // stretch of decode-only iterations as one event (Replica's decode spans)
  // and report none of them; every other report is the same either way.
  virtual bool WantsIterations() const { return true; }
  // Once per simulated second per replica (and at the end of the run).
  virtual void OnSample(const ReplicaSample& sample) = 0;
  // A replica's lifecycle: "failure", "crash", "ejected", "unejected", a
  // phase it enters ("failed", "provisioning", "starting", "draining", ...),
  // "ready" when it is back.
  virtual void OnReplicaEvent(int /*replica*/, SimTime /*at*/, std::string_view /*event*/) {}
};

}  // namespace fleetsim

// Live mode's ExecutionMode (sim/runner/run.h): a ReplicaWorker per replica
// on a kernel backend ("cpu": the host, a core each when there are enough;
// "cuda": the machine's GPUs, a replica each), the LiveExecutors over them
// and the wall clock. ScenarioRun::Run runs the scenario with it exactly as
// it simulates one, which is what makes the diff against the simulation
// mean something.
//
// What runs live today: dense Llama-style models (live_model.h) on one
// device per replica (tp = pp = 1, no speculation, no disaggregation). The
// rest is refused by Prepare with the pool's JSON path.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/live/live_executor.h"
#include "sim/live/serve.h"
#include "sim/live/wall_clock.h"
#include "sim/runner/run.h"

namespace fleetsim::live {

struct LiveOptions {
  std::string backend = "cpu";  // "cpu" or "cuda"
  uint64_t seed = 0;            // of the random weights
  // CPU: the KV cache a replica holds at most, in bytes (the host is not a
  // GPU's memory; the scheduler's own count of blocks is unchanged).
  int64_t cpu_kv_bytes = int64_t{1} << 30;
  // Set: the requests come from an OpenAI-compatible endpoint on loopback
  // (serve.h) rather than from the scenario's traffic.
  std::optional<ServeOptions> serve;
};

// Per replica, what live.json reports.
struct ReplicaLiveStats {
  std::string name;
  std::string device;      // rank 0's, and the CUDA device of each rank
  int tp = 1;              // ranks
  int64_t kv_blocks = 0;   // the worker's physical blocks (every rank has as many, of its KV heads)
  double weight_gib = 0;   // a rank's
  WorkerStats worker;
};

class LiveMode final : public ExecutionMode {
 public:
  explicit LiveMode(LiveOptions options) : options_(std::move(options)) {}
  ~LiveMode() override;

  // Checks that every pool of `run` can run live, and builds every
  // replica's worker: backend, weights, KV cache (before the clock starts,
  // so loading does not count). Errors name the pool's JSON path.
  Status Prepare(const ScenarioRun& run);

  void Start(Simulation& sim) override;
  std::unique_ptr<Executor> MakeExecutor(int replica, Executor::Done done) override;
  void Advance(Simulation& sim, SimTime until) override;
  bool busy() const override { return clock_.busy() || arrivals_open(); }
  Status status() override;
  void Finish() override;

  // With LiveOptions::serve: the server, opened by Prepare.
  bool external_arrivals() const override { return server_ != nullptr; }
  void AttachArrivals(std::function<void(Request&&)> arrive) override;
  // Accepting, or accepted requests not yet routed or ended.
  bool arrivals_open() const override { return server_ && (server_->accepting() || server_->open_requests() > 0); }
  void OnRequestEnded(const RequestRecord& rec) override;
  // The served port (0 without a server).
  int port() const { return server_ ? server_->port() : 0; }
  // The requests served, as they arrived (arrival stamped): the diff's
  // simulation replays them.
  const std::vector<Request>& served() const { return served_; }

  std::vector<ReplicaLiveStats> Stats();
  // What makes the diff against the simulation less meaningful (replicas
  // sharing cores), for the summary's reader.
  const std::vector<std::string>& warnings() const { return warnings_; }
  // Whether ops are timed one by one (a synchronous backend: cpu).
  bool per_op() const { return options_.backend == "cpu"; }
  // One line: backend and devices.
  std::string Describe() const;

 private:
  LiveOptions options_;
  WallClock clock_;
  std::vector<std::unique_ptr<ReplicaWorker>> workers_;  // by replica index
  std::vector<const PerfModel*> perf_;                   // the replica's pool's
  std::vector<ReplicaLiveStats> info_;
  std::vector<std::string> warnings_;
  std::unique_ptr<CompletionServer> server_;
  std::function<void(Request&&)> arrive_;  // driving thread
  std::vector<Request> served_;             // driving thread
  Simulation* sim_ = nullptr;               // the run's, between Start and Finish
};

}  // namespace fleetsim::live

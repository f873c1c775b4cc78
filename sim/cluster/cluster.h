// Cluster: the fleet's replicas and their lifecycles, and the routing of
// arriving requests to the ready ones.
//
// A replica goes provisioning -> starting -> ready -> draining -> stopped,
// and from any running phase to failed -> repairing (and back to starting).
// Only ready replicas are routable. Routers (and, with the issues to come,
// autoscalers and failure models) see a replica through its ReplicaView:
// what an operator's metrics would show, never the Replica itself.
//
// GPU time is integrated over each replica's lifetime: from the moment it is
// provisioned (the GPUs are rented) to the moment it stops, in exact
// nanoseconds, per replica, busy (running an iteration) and idle apart; the
// run's cost is that time x each replica's price.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/cluster/observer.h"
#include "sim/cluster/replica.h"
#include "sim/engine/simulation.h"

namespace fleetsim {

enum class ReplicaPhase { kProvisioning, kStarting, kReady, kDraining, kStopped, kFailed, kRepairing };
const char* ReplicaPhaseName(ReplicaPhase phase);

// A replica as the cluster shows it: its identity, phase and load.
class ReplicaView {
 public:
  int index() const { return replica_->options().index; }
  int pool() const { return replica_->options().pool; }
  const std::string& model() const { return replica_->options().model; }
  ReplicaPhase phase() const { return phase_; }
  // Requests held (in the API server, waiting, running).
  int64_t outstanding() const { return replica_->outstanding(); }
  int64_t waiting() const { return replica_->waiting(); }
  int64_t running() const { return replica_->state().num_running(); }
  double kv_utilization() const { return replica_->state().kv().utilization(); }
  // Prompt tokens of `req` held in the replica's prefix cache now.
  int64_t CachedPrefixTokens(const Request& req) const { return replica_->CachedPrefixTokens(req); }

 private:
  friend class Cluster;
  explicit ReplicaView(const Replica* replica) : replica_(replica) {}
  const Replica* replica_;
  ReplicaPhase phase_ = ReplicaPhase::kProvisioning;
};

class Router;

class Cluster {
 public:
  // Requests of no model name go to `default_model`. `observer` hears of
  // requests the cluster turns away; it must outlive the cluster. GPU time
  // is measured from `measure_from` (the warm-up's end).
  Cluster(Simulation& sim, RunObserver& observer, std::string default_model, SimTime measure_from);
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  void SetRouter(std::unique_ptr<Router> router);
  // Adds a replica on `gpus` GPUs at `usd_per_gpu_hour` (unset: unpriced),
  // in `phase` from now. Its index must be the cluster's size.
  void Add(std::unique_ptr<Replica> replica, int gpus, std::optional<double> usd_per_gpu_hour,
           ReplicaPhase phase = ReplicaPhase::kReady);
  // Moves replica `i` to `phase` now.
  void SetPhase(int i, ReplicaPhase phase);

  // An arriving request: to a ready replica of its model (the router picks),
  // or turned away: "unknown_model" when no replica serves its model,
  // "no_ready_replica" when none of those is ready.
  void Route(Request&& req);

  int size() const { return static_cast<int>(replicas_.size()); }
  Replica& replica(int i) { return *replicas_[i].replica; }
  const ReplicaView& view(int i) const { return replicas_[i].view; }
  // Requests routed to replica `i` since the previous call.
  int64_t TakeArrivals(int i);
  // No request held anywhere, no iteration running.
  bool Idle() const;
  // End of run: every request still held is reported unfinished.
  void ReportUnfinished(SimTime end, std::string_view reason);

  // GPU time (GPU-nanoseconds) of the replicas from measure_from to `to`:
  // while not stopped, and of that while running iterations (busy: the
  // iterations that ended by `to`).
  struct Usage {
    __int128 gpu_ns = 0;
    __int128 busy_gpu_ns = 0;
    // Sum of GPU-nanoseconds x $/GPU-hour; unset when an unpriced replica
    // ran in the window.
    std::optional<long double> usd_gpu_ns;
  };
  Usage UsageUntil(SimTime to) const;

 private:
  struct Member {
    std::unique_ptr<Replica> replica;
    ReplicaView view;
    int gpus = 0;
    std::optional<double> usd_per_gpu_hour;
    // Phases with their start times, in order.
    std::vector<std::pair<SimTime, ReplicaPhase>> history;
    int64_t arrivals = 0;
  };
  void RebuildReady();

  Simulation& sim_;
  RunObserver& observer_;
  std::string default_model_;
  SimTime measure_from_;
  std::unique_ptr<Router> router_;
  std::vector<Member> replicas_;
  // Model -> its ready replicas, in index order; models_ lists every model
  // served, ready or not.
  std::map<std::string, std::vector<const ReplicaView*>, std::less<>> ready_;
  std::map<std::string, int, std::less<>> models_;
};

}  // namespace fleetsim

// Network: transfers over a Topology's links, sharing each link's bandwidth
// max-min fairly. Whenever a transfer starts or ends, the rates of all
// transfers in flight are recomputed by progressive filling (every link
// splits what it has left equally among its transfers not yet limited
// elsewhere; the tightest link fixes its transfers' rates first), and the
// next completion is rescheduled. A transfer's last byte arrives after its
// data has drained at those rates plus its path's latency.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "sim/cluster/topology.h"
#include "sim/engine/simulation.h"

namespace fleetsim {

class Network {
 public:
  // `topology` must outlive the network. `efficiency`: the fraction of a
  // link's datasheet bandwidth transfers reach (RooflineOptions::link_efficiency).
  Network(Simulation& sim, const Topology& topology, double efficiency);
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  // Sends `bytes` from `src` to `dst` (GPUs); `done` is called when the last
  // byte has arrived. A transfer to itself, or of nothing, takes its path's
  // latency only.
  void Send(int src, int dst, double bytes, std::function<void()> done);
  const Topology& topology() const { return topo_; }
  // Time link `id` carried at least one transfer, up to now.
  SimTime LinkBusy(Topology::LinkId id) const;
  // Links that have carried anything, in id order.
  std::vector<Topology::LinkId> UsedLinks() const;
  int64_t in_flight() const { return active_; }

 private:
  struct Flow {
    std::vector<Topology::LinkId> links;
    double left = 0;  // bytes
    double rate = 0;  // bytes per ns
    double latency_ns = 0;
    std::function<void()> done;
    bool active = false;
  };
  struct LinkState {
    int flows = 0;
    SimTime busy_since = 0;
    SimTime busy = 0;
    bool used = false;
  };
  // Drains every flow at its rate from the last update to now.
  void Advance();
  // Max-min fair rates for the flows in flight, and the next completion.
  void Recompute();
  void OnNextFinish();
  void Finish(size_t f);

  Simulation& sim_;
  const Topology& topo_;
  double efficiency_;
  std::vector<Flow> flows_;
  std::vector<size_t> free_;
  std::vector<LinkState> links_;
  int64_t active_ = 0;
  SimTime updated_ = 0;
  EventId next_;
  bool next_set_ = false;
  // Scratch for Recompute.
  std::vector<double> cap_;
  std::vector<int> unfrozen_;
  std::vector<Topology::LinkId> touched_;
};

}  // namespace fleetsim

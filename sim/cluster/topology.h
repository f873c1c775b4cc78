// Topology: the fleet's GPUs and the links between them, as a Boost.Graph.
//
// Each node holds gpus_per_node GPUs of one type:
//   - the scale-up fabric of its GpuSpec: "switch" (NVSwitch: every GPU has
//     an uplink to the node's switch and a downlink from it, PeerGbps each
//     way), "mesh" (a direct link per pair of GPUs, one link's bandwidth), or
//     "none" (peers reach each other through the host over PCIe);
//   - a PCIe link each way between every GPU and its node's host, and one
//     between every GPU and its NIC (GPUDirect RDMA: a GPU's traffic to
//     another node goes GPU -> NIC -> network without touching the host);
//   - one NIC per GPU (network_gbps_per_direction each way).
// Nodes are joined by a non-blocking network: rail-optimised (NIC i of every
// node on rail switch i, rails joined by a spine), or one switch for all
// NICs. Switches are vertices without a capacity of their own; every
// directed edge is one link, one direction, with its bandwidth (GB/s) and
// latency (ns). A path is the route on which a 1 MB copy between two GPUs
// takes least time (Boost's Dijkstra over latency + 1 MB / bandwidth per
// link), computed once per source GPU.
//
// Latencies: the fabric's scale_up.latency_us is the one-hop alpha between
// two GPUs of a node (on the uplink; the downlink adds none); the network's
// latency_us is the alpha of a hop between nodes (on the NIC's uplink).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/hardware.h"

namespace fleetsim {

struct NetworkSpec {
  bool rail_optimized = true;
  // Estimated: one RDMA hop between nodes (InfiniBand NDR / RoCE) of a few
  // microseconds, the order NCCL's tuning model charges an inter-node ring
  // step; not a measurement.
  double latency_us = 5.0;
  double gbps_per_gpu = 0;  // 0: each GPU's network_gbps_per_direction
};

class Topology {
 public:
  using LinkId = int32_t;
  struct Link {
    std::string name;  // "n3.g5.nic.tx"
    double gbps = 0;   // one direction
    double latency_ns = 0;
    int node = -1;     // the node it belongs to (-1: the network's spine)
    int from = -1, to = -1;  // its vertices (GPU g is vertex g)
  };
  struct Path {
    std::vector<LinkId> links;
    double latency_ns = 0;
    double gbps = 0;           // the slowest link's
    bool crosses_nodes = false;
  };
  // A collective's ring over GPUs in order: each hop's path, with the
  // bandwidth a hop gets when the ring's hops share links (each link's
  // bandwidth split among the hops crossing it), the slowest hop's, and the
  // largest hop latency.
  struct RingCost {
    double alpha_ns = 0;
    double gbps = 0;
    bool crosses_nodes = false;
  };

  // `node_gpus[n]`: the GPU type of node n (non-null, outliving the
  // topology). REQUIRES: gpus_per_node >= 1.
  Topology(const std::vector<const GpuSpec*>& node_gpus, int gpus_per_node, const NetworkSpec& network);
  ~Topology();
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;

  int nodes() const { return static_cast<int>(node_gpus_.size()); }
  int gpus_per_node() const { return gpus_per_node_; }
  int gpus() const { return nodes() * gpus_per_node_; }
  int node_of(int gpu) const { return gpu / gpus_per_node_; }
  // "n3.g5"
  std::string GpuName(int gpu) const;
  const Link& link(LinkId id) const { return links_[static_cast<size_t>(id)]; }
  size_t num_links() const { return links_.size(); }
  // The path from `src` to `dst` (GPUs); empty when src == dst.
  const Path& PathBetween(int src, int dst) const;
  RingCost Ring(const std::vector<int>& gpus) const;
  // An all-to-all among `gpus`, each sending the same bytes to every other
  // at once: the per-GPU bandwidth it gets (so it takes bytes a GPU sends /
  // gbps, after the largest path latency alpha_ns), the links the pairs
  // share considered.
  RingCost AllToAll(const std::vector<int>& gpus) const;

 private:
  struct Graph;
  int AddVertex();
  LinkId AddLink(int from, int to, double gbps, double latency_ns, int node, std::string name);
  void AddPair(int a, int b, double gbps, double latency_ns, int node, const std::string& name_ab,
               const std::string& name_ba);

  std::vector<const GpuSpec*> node_gpus_;
  int gpus_per_node_;
  std::unique_ptr<Graph> graph_;
  std::vector<Link> links_;
  // Paths from each source GPU, filled on first use: [src] -> (dst -> path).
  mutable std::vector<std::unique_ptr<std::map<int, Path>>> paths_;
  mutable std::vector<std::vector<int>> pred_edge_;  // [src]: the edge into each vertex on its shortest path
};

}  // namespace fleetsim

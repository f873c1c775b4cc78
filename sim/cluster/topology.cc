#include "sim/cluster/topology.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <limits>

#include "base/status.h"

namespace fleetsim {

struct Topology::Graph {
  struct Edge {
    LinkId link = 0;
    // The time a 1 MB copy spends on it: latency + 1e6 / gbps (so a path
    // over NVLink beats one through the host, and bandwidth breaks ties).
    double weight = 0;
  };
  using G = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property, Edge>;
  G g;
};

Topology::~Topology() = default;

int Topology::AddVertex() { return static_cast<int>(boost::add_vertex(graph_->g)); }

Topology::LinkId Topology::AddLink(int from, int to, double gbps, double latency_ns, int node, std::string name) {
  FLEETSIM_CHECK(gbps > 0 && latency_ns >= 0);
  const LinkId id = static_cast<LinkId>(links_.size());
  links_.push_back(Link{std::move(name), gbps, latency_ns, node, from, to});
  boost::add_edge(static_cast<size_t>(from), static_cast<size_t>(to), Graph::Edge{id, latency_ns + 1e6 / gbps}, graph_->g);
  return id;
}

void Topology::AddPair(int a, int b, double gbps, double latency_ns, int node, const std::string& name_ab,
                       const std::string& name_ba) {
  AddLink(a, b, gbps, latency_ns, node, name_ab);
  AddLink(b, a, gbps, 0, node, name_ba);
}

std::string Topology::GpuName(int gpu) const {
  return "n" + std::to_string(node_of(gpu)) + ".g" + std::to_string(gpu % gpus_per_node_);
}

Topology::Topology(const std::vector<const GpuSpec*>& node_gpus, int gpus_per_node, const NetworkSpec& network)
    : node_gpus_(node_gpus), gpus_per_node_(gpus_per_node), graph_(std::make_unique<Graph>()) {
  FLEETSIM_CHECK(gpus_per_node >= 1);
  const int n_gpus = gpus();
  for (int i = 0; i < n_gpus; ++i) AddVertex();  // vertex i is GPU i
  // The network's switches: a rail switch per local GPU index and a spine,
  // or one switch.
  std::vector<int> rails;
  const int spine = AddVertex();
  if (network.rail_optimized)
    for (int r = 0; r < gpus_per_node; ++r) rails.push_back(AddVertex());
  const double net_alpha = network.latency_us * 1e3;
  for (int n = 0; n < nodes(); ++n) {
    const GpuSpec& spec = *node_gpus_[static_cast<size_t>(n)];
    const std::string node = "n" + std::to_string(n);
    const int host = AddVertex();
    const LinkSpec& up = spec.scale_up;
    const double alpha = up.latency_us * 1e3;
    int nvswitch = -1;
    if (up.topology == "switch" && up.PeerGbps() > 0) nvswitch = AddVertex();
    for (int i = 0; i < gpus_per_node; ++i) {
      const int gpu = n * gpus_per_node + i;
      const std::string g = node + ".g" + std::to_string(i);
      const double pcie = spec.pcie_gbps_per_direction > 0 ? spec.pcie_gbps_per_direction : 1;
      AddPair(gpu, host, pcie, 0, n, g + ".pcie.up", g + ".pcie.down");
      if (nvswitch >= 0) AddPair(gpu, nvswitch, up.PeerGbps(), alpha, n, g + "." + up.kind + ".up", g + "." + up.kind + ".down");
      if (up.topology == "mesh" && up.PeerGbps() > 0)
        for (int j = 0; j < gpus_per_node; ++j)
          if (j != i)
            AddLink(gpu, n * gpus_per_node + j, up.PeerGbps(), alpha, n,
                    g + "." + up.kind + ".to.g" + std::to_string(j));
      const double nic = network.gbps_per_gpu > 0 ? network.gbps_per_gpu : spec.network_gbps_per_direction;
      if (nic > 0) {
        const int v = AddVertex();
        AddPair(gpu, v, pcie, 0, n, g + ".nic.pcie.up", g + ".nic.pcie.down");
        AddPair(v, network.rail_optimized ? rails[static_cast<size_t>(i)] : spine, nic, net_alpha, n, g + ".nic.tx",
                g + ".nic.rx");
      }
    }
  }
  // Rails meet at the spine; it is non-blocking (links as fast as the
  // rail's NICs together, no latency of their own).
  for (size_t r = 0; r < rails.size(); ++r) {
    double total = 0;
    for (int n = 0; n < nodes(); ++n) {
      const GpuSpec& spec = *node_gpus_[static_cast<size_t>(n)];
      total += network.gbps_per_gpu > 0 ? network.gbps_per_gpu : spec.network_gbps_per_direction;
    }
    if (total > 0)
      AddPair(rails[r], spine, total, 0, -1, "rail" + std::to_string(r) + ".spine.up",
              "rail" + std::to_string(r) + ".spine.down");
  }
  paths_.resize(static_cast<size_t>(n_gpus));
  pred_edge_.resize(static_cast<size_t>(n_gpus));
}

const Topology::Path& Topology::PathBetween(int src, int dst) const {
  FLEETSIM_CHECK(src >= 0 && src < gpus() && dst >= 0 && dst < gpus());
  auto& slot = paths_[static_cast<size_t>(src)];
  if (!slot) slot = std::make_unique<std::map<int, Path>>();
  auto it = slot->find(dst);
  if (it != slot->end()) return it->second;
  const Graph::G& g = graph_->g;
  std::vector<int>& pred = pred_edge_[static_cast<size_t>(src)];
  if (pred.empty()) {
    // One Dijkstra per source: the predecessor of every vertex, then the
    // edge between each pair along it.
    const size_t n = boost::num_vertices(g);
    std::vector<size_t> p(n);
    std::vector<double> dist(n);
    boost::dijkstra_shortest_paths(
        g, static_cast<size_t>(src),
        boost::predecessor_map(p.data()).distance_map(dist.data()).weight_map(boost::get(&Graph::Edge::weight, g)));
    pred.assign(n, -1);
    for (size_t v = 0; v < n; ++v) {
      if (p[v] == v) continue;
      auto [e, found] = boost::edge(p[v], v, g);
      if (found) pred[v] = g[e].link;
    }
  }
  Path path;
  // Walk back from dst; each link's tail is found from the graph's edges.
  std::vector<LinkId> rev;
  size_t v = static_cast<size_t>(dst);
  while (v != static_cast<size_t>(src)) {
    const int l = pred[v];
    FLEETSIM_CHECK(l >= 0);  // every GPU reaches every other through its host or NIC
    rev.push_back(l);
    v = static_cast<size_t>(links_[static_cast<size_t>(l)].from);
  }
  path.links.assign(rev.rbegin(), rev.rend());
  path.gbps = std::numeric_limits<double>::infinity();
  for (LinkId l : path.links) {
    path.latency_ns += links_[static_cast<size_t>(l)].latency_ns;
    path.gbps = std::min(path.gbps, links_[static_cast<size_t>(l)].gbps);
  }
  if (path.links.empty()) path.gbps = 0;
  path.crosses_nodes = node_of(src) != node_of(dst);
  return slot->emplace(dst, std::move(path)).first->second;
}

Topology::RingCost Topology::Ring(const std::vector<int>& gpus) const {
  RingCost c;
  const size_t p = gpus.size();
  if (p < 2) return c;
  std::map<LinkId, int> uses;
  for (size_t i = 0; i < p; ++i)
    for (LinkId l : PathBetween(gpus[i], gpus[(i + 1) % p]).links) ++uses[l];
  c.gbps = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < p; ++i) {
    const Path& hop = PathBetween(gpus[i], gpus[(i + 1) % p]);
    c.alpha_ns = std::max(c.alpha_ns, hop.latency_ns);
    c.crosses_nodes = c.crosses_nodes || hop.crosses_nodes;
    for (LinkId l : hop.links) c.gbps = std::min(c.gbps, links_[static_cast<size_t>(l)].gbps / uses[l]);
  }
  return c;
}

Topology::RingCost Topology::AllToAll(const std::vector<int>& gpus) const {
  RingCost c;
  const size_t p = gpus.size();
  if (p < 2) return c;
  // Every GPU sends B / (p - 1) to each other at once: link l carries its
  // uses x B / (p - 1), so the exchange takes B / gbps with gbps =
  // (p - 1) / max over links of uses / bandwidth.
  std::map<LinkId, int> uses;
  for (size_t i = 0; i < p; ++i)
    for (size_t j = 0; j < p; ++j) {
      if (i == j) continue;
      const Path& path = PathBetween(gpus[i], gpus[j]);
      c.alpha_ns = std::max(c.alpha_ns, path.latency_ns);
      c.crosses_nodes = c.crosses_nodes || path.crosses_nodes;
      for (LinkId l : path.links) ++uses[l];
    }
  double worst = 0;  // max of uses / gbps
  for (const auto& [l, n] : uses) worst = std::max(worst, n / links_[static_cast<size_t>(l)].gbps);
  c.gbps = worst > 0 ? static_cast<double>(p - 1) / worst : 0;
  return c;
}

}  // namespace fleetsim

// The topology's paths and ring costs, and max-min fair sharing of its
// links, by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/collectives.h"
#include "sim/cluster/network.h"
#include "sim/cluster/topology.h"
#include "tests/sim/replica_rig.h"

namespace fleetsim {
namespace {

using testing_rig::H100;

Topology Nodes(int n, bool rails = true) {
  NetworkSpec net;
  net.rail_optimized = rails;
  return Topology(std::vector<const GpuSpec*>(static_cast<size_t>(n), &H100()), 8, net);
}

TEST(Topology, PathInsideANodeCrossesTheSwitchOnce) {
  Topology t = Nodes(1);
  const Topology::Path& p = t.PathBetween(0, 5);
  ASSERT_EQ(p.links.size(), 2u);
  EXPECT_EQ(t.link(p.links[0]).name, "n0.g0.nvlink.up");
  EXPECT_EQ(t.link(p.links[1]).name, "n0.g5.nvlink.down");
  EXPECT_DOUBLE_EQ(p.gbps, 450);
  EXPECT_DOUBLE_EQ(p.latency_ns, H100().scale_up.latency_us * 1e3);
  EXPECT_FALSE(p.crosses_nodes);
}

TEST(Topology, PathsBetweenNodesTakeTheNicsAndTheRails) {
  Topology t = Nodes(2);
  const Topology::Path& same_rail = t.PathBetween(3, 8 + 3);
  std::vector<std::string> names;
  for (auto l : same_rail.links) names.push_back(t.link(l).name);
  EXPECT_EQ(names, (std::vector<std::string>{"n0.g3.nic.pcie.up", "n0.g3.nic.tx", "n1.g3.nic.rx", "n1.g3.nic.pcie.down"}));
  EXPECT_DOUBLE_EQ(same_rail.gbps, H100().network_gbps_per_direction);
  EXPECT_DOUBLE_EQ(same_rail.latency_ns, 5000);
  EXPECT_TRUE(same_rail.crosses_nodes);
  // Another rail: over NVLink to the GPU on the destination's rail, then
  // that rail (what NCCL's PXN does), rather than through the spine.
  const Topology::Path& other = t.PathBetween(3, 8 + 5);
  names.clear();
  for (auto l : other.links) names.push_back(t.link(l).name);
  EXPECT_EQ(names, (std::vector<std::string>{"n0.g3.nvlink.up", "n0.g5.nvlink.down", "n0.g5.nic.pcie.up", "n0.g5.nic.tx",
                                             "n1.g5.nic.rx", "n1.g5.nic.pcie.down"}));
  // Without rails every NIC meets one switch: no detour.
  Topology flat = Nodes(2, false);
  EXPECT_EQ(flat.PathBetween(3, 8 + 5).links.size(), 4u);
}

// With the ring forced, an all-reduce over the 8 GPUs of a node costs
// 2(p-1) alpha + 2(p-1)/p S/B.
TEST(Topology, RingAllReduceOnEightGpusByHand) {
  Topology t = Nodes(1);
  const Topology::RingCost c = t.Ring({0, 1, 2, 3, 4, 5, 6, 7});
  const double alpha = H100().scale_up.latency_us * 1e3, b = 450 * 0.85, s = 16e6;
  EXPECT_DOUBLE_EQ(c.alpha_ns, alpha);
  EXPECT_DOUBLE_EQ(c.gbps, 450);  // each hop alone on its links
  EXPECT_FALSE(c.crosses_nodes);
  EXPECT_DOUBLE_EQ(RingAllReduceNs(c.alpha_ns, c.gbps * 0.85, 8, s), 2 * 7 * alpha + 2.0 * 7 / 8 * s / b);
}

TEST(Topology, RingAcrossNodesIsBoundByTheNic) {
  Topology t = Nodes(2);
  std::vector<int> gpus;
  for (int i = 0; i < 16; ++i) gpus.push_back(i);
  const Topology::RingCost c = t.Ring(gpus);
  EXPECT_TRUE(c.crosses_nodes);
  EXPECT_DOUBLE_EQ(c.gbps, H100().network_gbps_per_direction);
  // The hops out of a node go over NVLink to the next node's rail first.
  EXPECT_DOUBLE_EQ(c.alpha_ns, 5000 + H100().scale_up.latency_us * 1e3);
}

// An all-to-all inside a node: each GPU's NVLink up carries its three
// sends and its down the three receives, so each GPU sends at the full
// link rate.
TEST(Topology, AllToAllInsideANodeRunsAtEachGpusLink) {
  Topology t = Nodes(1);
  const Topology::RingCost c = t.AllToAll({0, 1, 2, 3});
  EXPECT_DOUBLE_EQ(c.gbps, 450);
  EXPECT_DOUBLE_EQ(c.alpha_ns, H100().scale_up.latency_us * 1e3);
  EXPECT_FALSE(c.crosses_nodes);
}

// 16 GPUs on two rail-optimised nodes: the 8 GPUs of a node reach the other
// node's rail-g GPU through GPU g's NIC, so each NIC carries 8 of the 15
// destinations a GPU sends to: 15 / (8 / 50 GB/s) = 93.75 GB/s per GPU.
TEST(Topology, AllToAllAcrossNodesIsBoundByTheSharedNics) {
  Topology t = Nodes(2);
  std::vector<int> gpus;
  for (int i = 0; i < 16; ++i) gpus.push_back(i);
  const Topology::RingCost c = t.AllToAll(gpus);
  EXPECT_TRUE(c.crosses_nodes);
  EXPECT_DOUBLE_EQ(c.gbps, 15 / (8 / H100().network_gbps_per_direction));
  EXPECT_DOUBLE_EQ(c.alpha_ns, 5000 + H100().scale_up.latency_us * 1e3);
  EXPECT_DOUBLE_EQ(t.AllToAll({3}).gbps, 0);  // one GPU exchanges nothing
}

TEST(Network, OneTransferTakesBytesOverBandwidthPlusLatency) {
  Simulation sim(1);
  Topology t = Nodes(2);
  Network net(sim, t, 0.5);
  SimTime at = -1;
  net.Send(0, 8, 1e6, [&] { at = sim.now(); });  // 1 MB at 50 x 0.5 GB/s
  sim.Run();
  EXPECT_EQ(at, std::llround(1e6 / 25.0) + 5000);
  EXPECT_EQ(net.in_flight(), 0);
}

// Two transfers at once on one link (the same NIC out) each take twice as
// long as one alone; the link was busy the whole time.
TEST(Network, TwoTransfersOnOneLinkEachTakeTwiceAsLong) {
  Simulation sim(1);
  Topology t = Nodes(3);
  Network net(sim, t, 1.0);
  SimTime a = -1, b = -1;
  net.Send(0, 8, 5e6, [&] { a = sim.now(); });
  net.Send(0, 16, 5e6, [&] { b = sim.now(); });
  sim.Run();
  const SimTime alone = std::llround(5e6 / 50.0);
  EXPECT_EQ(a, 2 * alone + 5000);
  EXPECT_EQ(b, 2 * alone + 5000);
  Topology::LinkId nic = -1;
  for (size_t l = 0; l < t.num_links(); ++l)
    if (t.link(static_cast<Topology::LinkId>(l)).name == "n0.g0.nic.tx") nic = static_cast<Topology::LinkId>(l);
  ASSERT_GE(nic, 0);
  EXPECT_EQ(net.LinkBusy(nic), 2 * alone);
}

// Max-min fairness: when one transfer ends the other speeds up, and a
// transfer not sharing the tight link keeps its full rate.
TEST(Network, RatesAreRecomputedWhenATransferEnds) {
  Simulation sim(1);
  Topology t = Nodes(3);
  Network net(sim, t, 1.0);
  SimTime small = -1, big = -1, apart = -1;
  net.Send(0, 8, 1e6, [&] { small = sim.now(); });  // shares n0.g0's NIC with `big`
  net.Send(0, 16, 3e6, [&] { big = sim.now(); });
  net.Send(1, 9, 2e6, [&] { apart = sim.now(); });  // its own NIC
  sim.Run();
  // Both at 25 GB/s until the small one drains 1 MB (40 us); the big one
  // then has 2 MB left at 50 GB/s (40 us more).
  EXPECT_EQ(small, 40000 + 5000);
  EXPECT_EQ(big, 80000 + 5000);
  EXPECT_EQ(apart, 40000 + 5000);
}

}  // namespace
}  // namespace fleetsim

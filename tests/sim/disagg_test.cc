// Disaggregated serving by hand: a prefill replica on node 0, a decode
// replica on node 1, the KV moved between them over the network, and the
// two TTFT conventions (the first token from the decode side after the
// transfer, or from the prefill side).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "sim/cluster/cluster.h"
#include "sim/cluster/network.h"
#include "sim/cluster/router.h"
#include "sim/cluster/topology.h"
#include "tests/sim/replica_rig.h"

namespace fleetsim {
namespace {

using testing_rig::H100;
using testing_rig::LinearPerf;
using testing_rig::Schedulers;

// Records which replica ran each iteration.
struct Observer final : RunObserver {
  struct Iteration {
    int replica;
    SimTime start, end;
    BatchShape shape;
  };
  std::vector<RequestRecord> finished;
  std::vector<Iteration> iterations;
  void OnArrival(const Request&, int) override {}
  void OnFinished(const RequestRecord& r) override { finished.push_back(r); }
  void OnTokenGaps(SimTime, SimTime, int64_t) override {}
  void OnIteration(int replica, SimTime start, SimTime end, const BatchShape& s) override {
    iterations.push_back({replica, start, end, s});
  }
  void OnSample(const ReplicaSample&) override {}
  // The iterations of one replica, in order.
  std::vector<Iteration> Of(int replica) const {
    std::vector<Iteration> out;
    for (const Iteration& it : iterations)
      if (it.replica == replica) out.push_back(it);
    return out;
  }
};

constexpr double kKvBytesPerToken = 1000;

// Replica 0 prefills on GPU 0 of node 0; replica i >= 1 decodes on GPU 0
// of node i, so every transfer leaves by GPU 0's NIC on rail 0. The
// network runs at half the datasheet's NIC bandwidth: a transfer between
// two nodes takes bytes / 25 GB/s + 5 us.
struct DisaggRig {
  explicit DisaggRig(bool ttft_from_prefill, int decoders = 1,
                     Cluster::Disaggregation::Pick pick = Cluster::Disaggregation::Pick::kLeastOutstanding)
      : sim(1),
        topo(std::vector<const GpuSpec*>(static_cast<size_t>(decoders + 1), &H100()), 8, NetworkSpec{}),
        net(sim, topo, 0.5),
        cluster(sim, obs, "m", 0) {
    RouterRegistry routers;
    RegisterBuiltinRouters(&routers);
    std::unique_ptr<Router> router;
    EXPECT_TRUE(routers.Find("round_robin")->factory(RouterContext{sim.Stream("router"), {}, "fleet.router_options", nullptr}, &router).ok());
    cluster.SetRouter(std::move(router));
    Cluster::Disaggregation d;
    d.pick = pick;
    d.ttft_from_prefill = ttft_from_prefill;
    d.network = &net;
    d.kv_bytes_per_token = {kKvBytesPerToken, kKvBytesPerToken};
    d.on_transfer = [this](double bytes, SimTime latency) { transfers.push_back({bytes, latency}); };
    for (int i = 0; i <= decoders; ++i) {
      ReplicaOptions o;
      o.index = i;
      o.pool = i == 0 ? 0 : 1;
      o.role = i == 0 ? ReplicaOptions::Role::kPrefill : ReplicaOptions::Role::kDecode;
      o.model = "m";
      o.max_model_len = 4096;
      o.kv_blocks = i == 1 ? 100 : 1000;  // the first decoder has the least free KV
      SchedulerLimits limits;
      limits.max_model_len = 4096;
      std::unique_ptr<BatchScheduler> sched;
      EXPECT_TRUE(Schedulers().Find("vllm")->factory(limits, {}, &sched).ok());
      cluster.Add(std::make_unique<Replica>(sim, o, std::move(sched), perf, obs), /*gpus=*/1, 1.0);
      d.replica_gpus.push_back({8 * i});
    }
    cluster.SetDisaggregation(std::move(d));
  }
  void SubmitAt(SimTime t, uint64_t id, int32_t prompt, int32_t output) {
    sim.At(t, [this, t, id, prompt, output] {
      Request r;
      r.id = id;
      r.arrival = t;
      r.prompt_tokens = prompt;
      r.output_tokens = output;
      cluster.Route(std::move(r));
    });
  }
  Simulation sim;
  Topology topo;
  Network net;
  LinearPerf perf;
  Observer obs;
  Cluster cluster;
  std::vector<std::pair<double, SimTime>> transfers;
};

// 100 prompt tokens of 1000 bytes each: 1e5 / 25 GB/s + 5 us.
constexpr SimTime kTransferNs = 4000 + 5000;

TEST(Disaggregation, DecodeSideTtftIsPrefillThenTransferThenOneDecodeStep) {
  DisaggRig rig(/*ttft_from_prefill=*/false);
  rig.SubmitAt(0, 1, 100, 10);
  rig.sim.Run(kTimeNever);

  const auto prefill = rig.obs.Of(0);
  ASSERT_EQ(prefill.size(), 1u) << "the prefill replica runs the prompt once and hands the request on";
  EXPECT_EQ(prefill[0].shape.prefill_tokens, 100);
  ASSERT_EQ(rig.transfers.size(), 1u);
  EXPECT_DOUBLE_EQ(rig.transfers[0].first, 100 * kKvBytesPerToken);
  EXPECT_EQ(rig.transfers[0].second, kTransferNs);

  const auto decode = rig.obs.Of(1);
  ASSERT_EQ(decode.size(), 10u) << "the decode replica produces every output token, one per step";
  EXPECT_EQ(decode[0].start, prefill[0].end + kTransferNs) << "the decode side starts when the KV has arrived";
  // The imported KV is not prefilled again: the first step computes one
  // token, the prompt's last (for its logits, as vLLM does on a full KV hit).
  EXPECT_EQ(decode[0].shape.tokens(), 1);

  ASSERT_EQ(rig.obs.finished.size(), 1u) << "one record per request, from the decode side";
  const RequestRecord& r = rig.obs.finished[0];
  EXPECT_EQ(r.status, RequestStatus::kCompleted);
  EXPECT_EQ(r.replica, 1);
  EXPECT_EQ(r.prompt_tokens, 100);
  EXPECT_EQ(r.output_tokens, 10);
  EXPECT_EQ(r.generated_tokens, 10);
  EXPECT_EQ(r.first_scheduled, prefill[0].start) << "queueing ends when the prefill starts";
  EXPECT_EQ(r.first_token, decode[0].end) << "TTFT convention decode: prefill + transfer + the first decode step";
  EXPECT_EQ(r.finish, decode.back().end);
}

TEST(Disaggregation, PrefillSideTtftIsTheEndOfThePrefill) {
  DisaggRig rig(/*ttft_from_prefill=*/true);
  rig.SubmitAt(0, 1, 100, 10);
  rig.sim.Run(kTimeNever);

  const auto prefill = rig.obs.Of(0);
  ASSERT_EQ(prefill.size(), 1u);
  ASSERT_EQ(rig.transfers.size(), 1u);
  EXPECT_EQ(rig.transfers[0].second, kTransferNs);
  const auto decode = rig.obs.Of(1);
  ASSERT_EQ(decode.size(), 9u) << "the prefill side's token is the first; the decode side makes the other nine";
  EXPECT_EQ(decode[0].start, prefill[0].end + kTransferNs);
  EXPECT_EQ(decode[0].shape.tokens(), 1) << "the first token is the decode side's input";

  ASSERT_EQ(rig.obs.finished.size(), 1u);
  const RequestRecord& r = rig.obs.finished[0];
  EXPECT_EQ(r.status, RequestStatus::kCompleted);
  EXPECT_EQ(r.prompt_tokens, 100) << "the record is of the request as the client sent it";
  EXPECT_EQ(r.output_tokens, 10);
  EXPECT_EQ(r.generated_tokens, 10);
  EXPECT_EQ(r.first_token, prefill[0].end) << "TTFT convention prefill: the first token when the prefill ends";
  EXPECT_EQ(r.finish, decode.back().end);
}

TEST(Disaggregation, ASingleTokenRequestNeverLeavesThePrefillReplica) {
  DisaggRig rig(/*ttft_from_prefill=*/false);
  rig.SubmitAt(0, 1, 100, 1);
  rig.sim.Run(kTimeNever);
  EXPECT_TRUE(rig.transfers.empty());
  EXPECT_TRUE(rig.obs.Of(1).empty());
  ASSERT_EQ(rig.obs.finished.size(), 1u);
  EXPECT_EQ(rig.obs.finished[0].replica, 0);
  EXPECT_EQ(rig.obs.finished[0].status, RequestStatus::kCompleted);
}

TEST(Disaggregation, TransfersLeavingOneNicShareIt) {
  // Two requests prefilled together leave GPU 0's NIC at once, to decode
  // replicas on nodes 1 and 2: each transfer takes twice the bytes' time
  // of one alone, plus the latency once.
  DisaggRig rig(/*ttft_from_prefill=*/false, /*decoders=*/2);
  rig.SubmitAt(0, 1, 100, 4);
  rig.SubmitAt(0, 2, 100, 4);
  rig.sim.Run(kTimeNever);
  ASSERT_EQ(rig.obs.Of(0).size(), 1u) << "both prompts in one prefill batch";
  ASSERT_EQ(rig.transfers.size(), 2u);
  for (const auto& [bytes, latency] : rig.transfers) EXPECT_EQ(latency, 2 * 4000 + 5000);
  ASSERT_EQ(rig.obs.finished.size(), 2u);
  EXPECT_NE(rig.obs.finished[0].replica, rig.obs.finished[1].replica)
      << "least outstanding sends the second to the idle decoder";
}

TEST(Disaggregation, MostFreeKvPicksTheDecoderWithTheMostFreeBlocks) {
  DisaggRig rig(/*ttft_from_prefill=*/false, /*decoders=*/2, Cluster::Disaggregation::Pick::kMostFreeKv);
  rig.SubmitAt(0, 1, 100, 4);
  rig.sim.Run(kTimeNever);
  ASSERT_EQ(rig.obs.finished.size(), 1u);
  EXPECT_EQ(rig.obs.finished[0].replica, 2) << "replica 2 has 1000 blocks free, replica 1 100";
}

}  // namespace
}  // namespace fleetsim

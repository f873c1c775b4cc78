// Cluster: routing only to ready replicas, requests turned away with a
// reason when none is, and GPU time integrated exactly over each replica's
// lifetime.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <vector>

#include "sim/cluster/cluster.h"
#include "sim/cluster/router.h"
#include "tests/sim/replica_rig.h"

namespace fleetsim {
namespace {

using testing_rig::LinearPerf;
using testing_rig::Recorder;
using testing_rig::Schedulers;

struct ClusterRig {
  explicit ClusterRig(int n, SimTime measure_from = 0, std::vector<std::string> models = {})
      : sim(1), cluster(sim, rec, "m", measure_from) {
    RouterRegistry routers;
    RegisterBuiltinRouters(&routers);
    std::unique_ptr<Router> router;
    EXPECT_TRUE(routers.Find("round_robin")->factory(RouterContext{sim.Stream("router"), {}, "fleet.router_options", nullptr}, &router).ok());
    cluster.SetRouter(std::move(router));
    for (int i = 0; i < n; ++i) {
      ReplicaOptions o;
      o.index = i;
      o.model = i < static_cast<int>(models.size()) ? models[i] : "m";
      o.max_model_len = 4096;
      o.kv_blocks = 1000;
      o.busy_from = measure_from;
      SchedulerLimits limits;
      limits.max_model_len = 4096;
      std::unique_ptr<BatchScheduler> sched;
      EXPECT_TRUE(Schedulers().Find("vllm")->factory(limits, {}, &sched).ok());
      cluster.Add(std::make_unique<Replica>(sim, o, std::move(sched), perf, rec), /*gpus=*/2 + i,
                  /*usd_per_gpu_hour=*/1.5);
    }
  }
  void SubmitAt(SimTime t, uint64_t id, std::string model = "") {
    sim.At(t, [this, t, id, model] {
      Request r;
      r.id = id;
      r.arrival = t;
      r.prompt_tokens = 100;
      r.output_tokens = 10;
      r.model = model;
      cluster.Route(std::move(r));
    });
  }
  Simulation sim;
  LinearPerf perf;
  Recorder rec;
  Cluster cluster;
};

TEST(Cluster, RoutesOnlyToReadyReplicas) {
  ClusterRig rig(3);
  rig.cluster.SetPhase(1, ReplicaPhase::kStarting);
  for (uint64_t id = 0; id < 6; ++id) rig.SubmitAt(id * kMillisecond, id);
  rig.sim.Run(kTimeNever);
  ASSERT_EQ(rig.rec.finished.size(), 6u);
  for (const RequestRecord& r : rig.rec.finished) {
    EXPECT_EQ(r.status, RequestStatus::kCompleted);
    EXPECT_NE(r.replica, 1) << "request " << r.id << " went to a replica that is not ready";
  }
  EXPECT_EQ(rig.cluster.view(1).phase(), ReplicaPhase::kStarting);
  EXPECT_STREQ(ReplicaPhaseName(rig.cluster.view(1).phase()), "starting");
}

TEST(Cluster, TurnsAwayWhenNoReplicaOfTheModelIsReady) {
  ClusterRig rig(2, 0, {"m", "other"});
  rig.cluster.SetPhase(0, ReplicaPhase::kFailed);
  rig.SubmitAt(0, 0);             // model "m": its only replica failed
  rig.SubmitAt(0, 1, "nobody");   // no replica serves it
  rig.SubmitAt(0, 2, "other");    // served
  rig.sim.Run(kTimeNever);
  ASSERT_EQ(rig.rec.finished.size(), 3u);
  std::map<uint64_t, RequestRecord> by_id;
  for (const RequestRecord& r : rig.rec.finished) by_id[r.id] = r;
  EXPECT_EQ(by_id[0].status, RequestStatus::kRejected);
  EXPECT_EQ(by_id[0].reason, "no_ready_replica");
  EXPECT_EQ(by_id[1].status, RequestStatus::kRejected);
  EXPECT_EQ(by_id[1].reason, "unknown_model");
  EXPECT_EQ(by_id[2].status, RequestStatus::kCompleted);
  EXPECT_EQ(by_id[2].replica, 1);
}

TEST(Cluster, GpuTimeIsTheIntegralOfEachReplicasLifetime) {
  // Replica 0 (2 GPUs) lives throughout; replica 1 (3 GPUs) stops at 4 s
  // and is ready again from 7 s; replica 2 (4 GPUs) fails at 5 s (failed
  // GPUs are still rented). Measured from 1 s to 10 s.
  ClusterRig rig(3, 1 * kSecond);
  rig.sim.At(4 * kSecond, [&] { rig.cluster.SetPhase(1, ReplicaPhase::kStopped); });
  rig.sim.At(5 * kSecond, [&] { rig.cluster.SetPhase(2, ReplicaPhase::kFailed); });
  rig.sim.At(7 * kSecond, [&] { rig.cluster.SetPhase(1, ReplicaPhase::kReady); });
  rig.SubmitAt(2 * kSecond, 0);
  rig.sim.Run(kTimeNever);
  const Cluster::Usage u = rig.cluster.UsageUntil(10 * kSecond);
  const __int128 expected = (__int128)2 * 9 * kSecond + (__int128)3 * (3 + 3) * kSecond + (__int128)4 * 9 * kSecond;
  EXPECT_TRUE(u.gpu_ns == expected);
  ASSERT_TRUE(u.usd_gpu_ns.has_value());
  EXPECT_EQ(static_cast<double>(*u.usd_gpu_ns / 3.6e12L), static_cast<double>(expected * 1.5L / 3.6e12L));
  // Busy: the iterations of the one request, on its replica's GPUs.
  ASSERT_EQ(rig.rec.finished.size(), 1u);
  SimTime busy = 0;
  for (const auto& [start, end] : rig.rec.iterations) busy += end - start;
  const int gpus = 2 + rig.rec.finished[0].replica;
  EXPECT_TRUE(u.busy_gpu_ns == (__int128)busy * gpus);
  EXPECT_GT(busy, 0);
}

}  // namespace
}  // namespace fleetsim

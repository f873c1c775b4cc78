// Admission at the replica: the waiting queue's order by priority class
// (strict, weighted fair queueing), the queue timeout, and the per-replica
// queue limit. One request runs at a time (max_num_seqs 1), so the order in
// which requests are first scheduled is the queue's order.
#include <gtest/gtest.h>

#include <algorithm>
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

struct QueueRig {
  explicit QueueRig(ReplicaOptions::QueueOrder order, std::vector<std::pair<int32_t, double>> weights = {})
      : sim(1) {
    ReplicaOptions o;
    o.max_model_len = 4096;
    o.kv_blocks = 1000;
    o.queue_order = order;
    o.class_weights = std::move(weights);
    SchedulerLimits limits;
    limits.max_model_len = 4096;
    limits.max_num_seqs = 1;
    std::unique_ptr<BatchScheduler> sched;
    EXPECT_TRUE(Schedulers().Find("vllm")->factory(limits, {}, &sched).ok());
    replica = std::make_unique<Replica>(sim, o, std::move(sched), perf, rec);
  }
  void SubmitAt(SimTime t, uint64_t id, int32_t priority, SimTime deadline = kTimeNever) {
    sim.At(t, [=, this] {
      Request r;
      r.id = id;
      r.arrival = t;
      r.prompt_tokens = 32;
      r.output_tokens = 4;
      r.priority = priority;
      r.queue_deadline = deadline;
      replica->Submit(std::move(r));
    });
  }
  // Completed request ids in the order they were first scheduled.
  std::vector<uint64_t> ServedOrder() const {
    std::vector<RequestRecord> done;
    for (const RequestRecord& r : rec.finished)
      if (r.status == RequestStatus::kCompleted) done.push_back(r);
    std::sort(done.begin(), done.end(),
              [](const RequestRecord& a, const RequestRecord& b) { return a.first_scheduled < b.first_scheduled; });
    std::vector<uint64_t> ids;
    for (const RequestRecord& r : done) ids.push_back(r.id);
    return ids;
  }
  Simulation sim;
  LinearPerf perf;
  Recorder rec;
  std::unique_ptr<Replica> replica;
};

TEST(ReplicaQueue, FcfsServesInArrivalOrder) {
  QueueRig rig(ReplicaOptions::QueueOrder::kFcfs);
  rig.SubmitAt(0, 0, 1);
  rig.SubmitAt(kMillisecond, 1, 1);
  rig.SubmitAt(kMillisecond, 2, 1);
  rig.SubmitAt(kMillisecond, 3, 0);
  rig.sim.Run(kTimeNever);
  EXPECT_EQ(rig.ServedOrder(), (std::vector<uint64_t>{0, 1, 2, 3}));
}

TEST(ReplicaQueue, StrictServesTheMoreImportantClassFirstAndFcfsWithinIt) {
  QueueRig rig(ReplicaOptions::QueueOrder::kStrict);
  rig.SubmitAt(0, 0, 1);  // runs at once
  rig.SubmitAt(kMillisecond, 1, 1);
  rig.SubmitAt(kMillisecond, 2, 2);
  rig.SubmitAt(kMillisecond, 3, 0);
  rig.SubmitAt(2 * kMillisecond, 4, 0);
  rig.SubmitAt(2 * kMillisecond, 5, 1);
  rig.sim.Run(kTimeNever);
  EXPECT_EQ(rig.ServedOrder(), (std::vector<uint64_t>{0, 3, 4, 1, 5, 2}));
}

TEST(ReplicaQueue, WeightedFairQueueingAdmitsInProportionToTheWeights) {
  // Class 0 of weight 3 and class 1 of weight 1, 12 of each waiting: while
  // both wait, class 0 takes three of every four places.
  QueueRig rig(ReplicaOptions::QueueOrder::kWeighted, {{0, 3.0}, {1, 1.0}});
  rig.SubmitAt(0, 100, 1);  // runs at once
  for (uint64_t k = 0; k < 12; ++k) {
    rig.SubmitAt(kMillisecond, k, 1);       // class 1 first in arrival order
    rig.SubmitAt(kMillisecond, 50 + k, 0);  // class 0
  }
  rig.sim.Run(kTimeNever);
  const std::vector<uint64_t> order = rig.ServedOrder();
  ASSERT_EQ(order.size(), 25u);
  int class0 = 0;
  for (size_t i = 1; i <= 16; ++i) class0 += order[i] >= 50;
  EXPECT_EQ(class0, 12) << "16 places while both wait: 12 to weight 3, 4 to weight 1";
  // FCFS within a class.
  std::vector<uint64_t> ones;
  for (uint64_t id : order)
    if (id < 50) ones.push_back(id);
  EXPECT_TRUE(std::is_sorted(ones.begin(), ones.end()));
}

TEST(ReplicaQueue, QueueTimeoutDropsOnlyRequestsNeverScheduled) {
  QueueRig rig(ReplicaOptions::QueueOrder::kFcfs);
  // Request 0 runs from 0; 1, 2 and 3 wait behind it and each other. Each
  // request takes a few ms; request 3's deadline (2 ms) passes while it
  // waits, request 1's (1 s) does not.
  rig.SubmitAt(0, 0, 0, kMillisecond / 2);  // scheduled at once: never dropped
  rig.SubmitAt(0, 1, 0, kSecond);
  rig.SubmitAt(0, 2, 0);
  rig.SubmitAt(0, 3, 0, 2 * kMillisecond);
  rig.sim.Run(kTimeNever);
  std::map<uint64_t, RequestRecord> by;
  for (const RequestRecord& r : rig.rec.finished) by[r.id] = r;
  ASSERT_EQ(by.size(), 4u);
  EXPECT_EQ(by[0].status, RequestStatus::kCompleted);
  EXPECT_EQ(by[1].status, RequestStatus::kCompleted);
  EXPECT_EQ(by[2].status, RequestStatus::kCompleted);
  EXPECT_EQ(by[3].status, RequestStatus::kRejected);
  EXPECT_EQ(by[3].reason, "queue_timeout");
  EXPECT_EQ(by[3].finish, 2 * kMillisecond);
  EXPECT_EQ(by[3].replica, 0);
  EXPECT_EQ(by[3].first_scheduled, -1);
  EXPECT_EQ(rig.replica->state().num_live(), 0);
}

TEST(ReplicaQueue, ArrivingPastItsDeadlineIsDroppedAtOnce) {
  QueueRig rig(ReplicaOptions::QueueOrder::kFcfs);
  rig.SubmitAt(5 * kMillisecond, 0, 0, 5 * kMillisecond);
  rig.sim.Run(kTimeNever);
  ASSERT_EQ(rig.rec.finished.size(), 1u);
  EXPECT_EQ(rig.rec.finished[0].reason, "queue_timeout");
}

TEST(ClusterAdmission, ReplicaQueueLimitRejectsOnceTheQueueIsFull) {
  Simulation sim(1);
  LinearPerf perf;
  Recorder rec;
  Cluster cluster(sim, rec, "m", 0);
  RouterRegistry routers;
  RegisterBuiltinRouters(&routers);
  std::unique_ptr<Router> router;
  ASSERT_TRUE(routers.Find("round_robin")->factory(RouterContext{sim.Stream("router"), {}, "fleet.router_options", nullptr}, &router).ok());
  cluster.SetRouter(std::move(router));
  cluster.SetReplicaQueueLimit(2);
  ReplicaOptions o;
  o.model = "m";
  o.max_model_len = 4096;
  o.kv_blocks = 1000;
  SchedulerLimits limits;
  limits.max_model_len = 4096;
  limits.max_num_seqs = 1;
  std::unique_ptr<BatchScheduler> sched;
  ASSERT_TRUE(Schedulers().Find("vllm")->factory(limits, {}, &sched).ok());
  cluster.Add(std::make_unique<Replica>(sim, o, std::move(sched), perf, rec), 1, 1.0);
  // Five at one instant: the engine has not stepped, so all wait; the
  // third finds two waiting.
  sim.At(0, [&] {
    for (uint64_t id = 0; id < 5; ++id) {
      Request r;
      r.id = id;
      r.prompt_tokens = 32;
      r.output_tokens = 4;
      cluster.Route(std::move(r));
    }
  });
  sim.Run(kTimeNever);
  int completed = 0, full = 0;
  for (const RequestRecord& r : rec.finished) {
    completed += r.status == RequestStatus::kCompleted;
    full += r.reason == "replica_queue_full";
  }
  EXPECT_EQ(completed, 2);
  EXPECT_EQ(full, 3);
}

}  // namespace
}  // namespace fleetsim

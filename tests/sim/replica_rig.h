// A replica on a PerfModel whose answers are easy to add up by hand, and an
// observer that records everything: the rig of the replica and scheduler
// tests.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/catalog.h"
#include "sim/cluster/batch_scheduler.h"
#include "sim/cluster/replica.h"
#include "sim/engine/simulation.h"

namespace fleetsim::testing_rig {

// The builtin catalogue's H100 SXM, loaded once.
inline const GpuSpec& H100() {
  static const Catalog* c = [] {
    auto* cat = new Catalog();
    EXPECT_TRUE(Catalog::LoadBuiltin(cat).ok());
    return cat;
  }();
  return *c->FindGpu("H100-SXM");
}

// 1 ms per iteration + 1 us per token + 1 ns per KV token read + 10 ns per
// swapped token.
class LinearPerf final : public PerfModel {
 public:
  int64_t IterationNs(const BatchShape& s) const override {
    return kMillisecond + s.tokens() * kMicrosecond + s.decode_kv_tokens + s.prefill_kv_tokens +
           10 * (s.swap_in_tokens + s.swap_out_tokens);
  }
  std::vector<std::pair<std::string, std::string>> Sources() const override { return {{"all", "test"}}; }
};

struct Recorder final : RunObserver {
  std::vector<RequestRecord> finished;
  std::vector<BatchShape> shapes;
  std::vector<std::pair<SimTime, SimTime>> iterations;
  std::vector<std::pair<SimTime, int64_t>> gaps;  // (gap, count), one per report
  int64_t gap_total = 0;                           // sum of the counts
  void OnArrival(const Request&, int) override {}
  void OnFinished(const RequestRecord& r) override { finished.push_back(r); }
  void OnTokenGaps(SimTime, SimTime gap, int64_t count) override {
    gaps.push_back({gap, count});
    gap_total += count;
  }
  void OnIteration(int, SimTime start, SimTime end, const BatchShape& s) override {
    shapes.push_back(s);
    iterations.push_back({start, end});
  }
  void OnSample(const ReplicaSample&) override {}
};

inline const SchedulerRegistry& Schedulers() {
  static const SchedulerRegistry* r = [] {
    auto* reg = new SchedulerRegistry();
    RegisterBuiltinSchedulers(reg);
    return reg;
  }();
  return *r;
}

struct Rig {
  std::string scheduler = "vllm";
  SchedulerParams params;
  SchedulerLimits limits;
  int64_t kv_blocks = 1000;
  PreemptionMode mode = PreemptionMode::kRecompute;
  int64_t host_blocks = 0;
  std::optional<bool> prefix_caching;
  const PipelinePlan* pipeline = nullptr;  // pp > 1; must outlive the fixture
  std::optional<SpeculationOptions> speculation;
  bool admit_after_next_step = false;
};

struct Fixture {
  explicit Fixture(const Rig& s) : sim(1) {
    ReplicaOptions o;
    o.max_model_len = static_cast<int>(s.limits.max_model_len);
    o.kv_blocks = s.kv_blocks;
    o.block_size = 16;
    o.preemption = s.mode;
    o.host_kv_blocks = s.host_blocks;
    o.prefix_caching = s.prefix_caching;
    o.pipeline = s.pipeline;
    o.speculation = s.speculation;
    o.admit_after_next_step = s.admit_after_next_step;
    std::unique_ptr<BatchScheduler> sched;
    const auto* entry = Schedulers().Find(s.scheduler);
    EXPECT_NE(entry, nullptr) << s.scheduler;
    Status st = entry->factory(s.limits, s.params, &sched);
    EXPECT_TRUE(st.ok()) << st.message();
    replica = std::make_unique<Replica>(sim, o, std::move(sched), perf, rec);
  }
  void SubmitAt(SimTime t, int32_t prompt, int32_t output, uint64_t id, std::vector<uint64_t> prefix = {},
                int32_t prefix_tokens = 0) {
    sim.At(t, [this, t, prompt, output, id, prefix, prefix_tokens] {
      Request r;
      r.id = id;
      r.arrival = t;
      r.prompt_tokens = prompt;
      r.output_tokens = output;
      r.prefix_blocks = prefix;
      r.prefix_block_tokens = prefix_tokens;
      replica->Submit(std::move(r));
    });
  }
  // Runs to the end, checking the state's running sums every millisecond.
  void RunChecked() {
    while (sim.pending() > 0) {
      sim.Run(sim.now() + kMillisecond);
      ASSERT_TRUE(replica->state().CheckInvariants()) << "at " << sim.now();
    }
  }
  Simulation sim;
  LinearPerf perf;
  Recorder rec;
  std::unique_ptr<Replica> replica;
};

}  // namespace fleetsim::testing_rig

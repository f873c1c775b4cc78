// Event-queue throughput: events per second with 1e3 ... 1e6 events pending.
// Each iteration pops the earliest event and schedules a replacement a
// random delay later, so the queue stays at its size (the "hold" model).
#include <benchmark/benchmark.h>

#include "sim/engine/event_queue.h"
#include "sim/engine/rng.h"
#include "sim/engine/simulation.h"

namespace fleetsim {
namespace {

void BM_EventQueueHold(benchmark::State& state) {
  const int64_t pending = state.range(0);
  EventQueue q;
  Rng rng(1);
  int64_t fired = 0;
  for (int64_t i = 0; i < pending; ++i)
    q.Schedule(static_cast<SimTime>(rng.Below(1000000)), [&fired] { ++fired; });
  EventQueue::Callback cb;
  for (auto _ : state) {
    SimTime t = q.Pop(&cb);
    cb();
    q.Schedule(t + 1 + static_cast<SimTime>(rng.Below(1000000)), [&fired] { ++fired; });
  }
  benchmark::DoNotOptimize(fired);
  state.SetItemsProcessed(state.iterations());
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                      benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EventQueueHold)->RangeMultiplier(10)->Range(1000, 1000000);

// Cancel-heavy traffic: half the scheduled events are cancelled before they
// fire (timeouts that do not trigger).
void BM_EventQueueCancel(benchmark::State& state) {
  const int64_t pending = state.range(0);
  EventQueue q;
  Rng rng(2);
  std::vector<EventId> ids;
  for (int64_t i = 0; i < pending; ++i) ids.push_back(q.Schedule(static_cast<SimTime>(rng.Below(1000000)), [] {}));
  EventQueue::Callback cb;
  size_t k = 0;
  for (auto _ : state) {
    SimTime t = q.Pop(&cb);
    EventId a = q.Schedule(t + 1 + static_cast<SimTime>(rng.Below(1000000)), [] {});
    EventId b = q.Schedule(t + 1 + static_cast<SimTime>(rng.Below(1000000)), [] {});
    q.Cancel(k++ % 2 ? a : b);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EventQueueCancel)->RangeMultiplier(10)->Range(1000, 1000000);

}  // namespace
}  // namespace fleetsim

BENCHMARK_MAIN();

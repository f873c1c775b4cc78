#include "sim/engine/simulation.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace fleetsim {
namespace {

TEST(Simulation, ClockAdvancesToEachEvent) {
  Simulation sim(1);
  std::vector<SimTime> seen;
  sim.At(5 * kMillisecond, [&] {
    seen.push_back(sim.now());
    sim.After(kMillisecond, [&] { seen.push_back(sim.now()); });
  });
  sim.Run();
  EXPECT_EQ(seen, (std::vector<SimTime>{5 * kMillisecond, 6 * kMillisecond}));
  EXPECT_EQ(sim.events_processed(), 2u);
}

TEST(Simulation, RunStopsAtHorizonWithEventsLeft) {
  Simulation sim(1);
  int fired = 0;
  sim.At(10, [&] { ++fired; });
  sim.At(100, [&] { ++fired; });
  sim.Run(50);
  EXPECT_EQ(fired, 1);
  EXPECT_EQ(sim.now(), 50);
  EXPECT_EQ(sim.pending(), 1u);
}

// A self-rescheduling process whose gaps come from a named stream.
uint64_t RunProcess(uint64_t seed) {
  Simulation sim(seed);
  Rng rng = sim.Stream("arrivals");
  uint64_t checksum = 0;
  int left = 20000;
  std::function<void()> tick = [&] {
    checksum = checksum * 31 + static_cast<uint64_t>(sim.now());
    if (--left > 0) sim.After(SecondsToTime(rng.Exponential(0.01)), tick);
  };
  sim.At(0, tick);
  sim.Run();
  return checksum;
}

TEST(Simulation, TwoSimulationsRunInTwoThreadsWithSameResults) {
  uint64_t a = 0, b = 0;
  std::thread t1([&] { a = RunProcess(7); });
  std::thread t2([&] { b = RunProcess(7); });
  t1.join();
  t2.join();
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, RunProcess(7));
  EXPECT_NE(a, RunProcess(8));
}

}  // namespace
}  // namespace fleetsim

#include "sim/traffic/trace_window.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/traffic/test_util.h"

namespace fleetsim {
namespace {

using testing_traffic::Drain;
using testing_traffic::VectorSource;

// Requests at the given trace times (ns), ids scrambled to show renumbering.
std::vector<Request> At(std::vector<SimTime> times) {
  std::vector<Request> rows;
  for (size_t i = 0; i < times.size(); ++i) {
    Request r;
    r.id = 100 + i;
    r.arrival = times[i];
    r.prompt_tokens = static_cast<int32_t>(i + 1);
    r.output_tokens = 1;
    rows.push_back(r);
  }
  return rows;
}

std::vector<SimTime> Arrivals(const std::vector<Request>& rows) {
  std::vector<SimTime> out;
  for (const Request& r : rows) out.push_back(r.arrival);
  return out;
}

TEST(TraceWindow, PassesThroughRebasedToFirstArrival) {
  TraceWindow w(std::make_unique<VectorSource>(At({5 * kSecond, 6 * kSecond, 8 * kSecond})), {});
  std::vector<Request> rows = Drain(w);
  EXPECT_EQ(Arrivals(rows), (std::vector<SimTime>{0, kSecond, 3 * kSecond}));
  EXPECT_EQ(rows[0].id, 0u);
  EXPECT_EQ(rows[2].id, 2u);
  EXPECT_EQ(rows[2].prompt_tokens, 3);
}

TEST(TraceWindow, KeepsHalfOpenWindowShiftedToZero) {
  TraceWindowOptions o;
  o.start = 10 * kSecond;
  o.end = 20 * kSecond;
  auto src = std::make_unique<VectorSource>(
      At({0, 9 * kSecond, 10 * kSecond, 15 * kSecond, 19'999'999'999, 20 * kSecond, 21 * kSecond}));
  VectorSource* raw = src.get();
  TraceWindow w(std::move(src), o);
  std::vector<Request> rows = Drain(w);
  EXPECT_EQ(Arrivals(rows), (std::vector<SimTime>{0, 5 * kSecond, 9'999'999'999}));
  EXPECT_EQ(rows[0].id, 0u);
  EXPECT_EQ(rows[0].prompt_tokens, 3);
  // Stops reading at the first arrival past the window.
  EXPECT_EQ(raw->pulled(), 6u);
}

TEST(TraceWindow, DividesArrivalsByRateScale) {
  TraceWindowOptions o;
  o.start = 2 * kSecond;
  o.rate_scale = 4.0;
  TraceWindow w(std::make_unique<VectorSource>(At({0, 2 * kSecond, 3 * kSecond, 12 * kSecond + 2})),
                o);
  // (t - 2 s) / 4, rounded to the nearest ns: 0, 0.25 s, 2.5 s + 0.5 ns -> 2.5 s + 1 ns.
  EXPECT_EQ(Arrivals(Drain(w)), (std::vector<SimTime>{0, 250'000'000, 2'500'000'001}));
}

TEST(TraceWindow, SlowsDownWithRateScaleBelowOne) {
  TraceWindowOptions o;
  o.rate_scale = 0.5;
  TraceWindow w(std::make_unique<VectorSource>(At({0, 3, kSecond})), o);
  EXPECT_EQ(Arrivals(Drain(w)), (std::vector<SimTime>{0, 6, 2 * kSecond}));
}

TEST(TraceWindow, StopsAtMaxRequests) {
  TraceWindowOptions o;
  o.max_requests = 2;
  auto src = std::make_unique<VectorSource>(At({0, 1, 2, 3}));
  VectorSource* raw = src.get();
  TraceWindow w(std::move(src), o);
  EXPECT_EQ(Drain(w).size(), 2u);
  EXPECT_EQ(raw->pulled(), 2u);
}

TEST(TraceWindow, StopsBeforeMaxArrivalAfterScaling) {
  TraceWindowOptions o;
  o.rate_scale = 2.0;
  o.max_arrival = kSecond;  // output time: trace times below 2 s
  TraceWindow w(std::make_unique<VectorSource>(At({0, kSecond, 1'999'999'997, 1'999'999'999})), o);
  // 1,999,999,999 / 2 rounds to exactly 1 s: not before max_arrival.
  EXPECT_EQ(Arrivals(Drain(w)), (std::vector<SimTime>{0, 500'000'000, 999'999'999}));
}

TEST(TraceWindow, ForwardsTheInnerError) {
  TraceWindow w(std::make_unique<VectorSource>(At({0, 1}), Status::Invalid("t.csv:4: bad")), {});
  EXPECT_EQ(Drain(w).size(), 2u);
  EXPECT_EQ(w.status().message(), "t.csv:4: bad");
}

}  // namespace
}  // namespace fleetsim

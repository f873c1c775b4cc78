#include "sim/engine/event_queue.h"

#include <gtest/gtest.h>

#include <vector>

namespace fleetsim {
namespace {

void Drain(EventQueue& q) {
  EventQueue::Callback cb;
  while (!q.empty()) {
    q.Pop(&cb);
    cb();
  }
}

TEST(EventQueue, FiresInTimeOrderAndBreaksTiesBySchedulingOrder) {
  EventQueue q;
  std::vector<int> order;
  q.Schedule(20, [&] { order.push_back(3); });
  q.Schedule(10, [&] { order.push_back(1); });
  q.Schedule(10, [&] { order.push_back(2); });
  q.Schedule(5, [&] { order.push_back(0); });
  Drain(q);
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

TEST(EventQueue, CancelledEventDoesNotFire) {
  EventQueue q;
  std::vector<int> order;
  EventId a = q.Schedule(10, [&] { order.push_back(1); });
  q.Schedule(20, [&] { order.push_back(2); });
  EXPECT_TRUE(q.Cancel(a));
  EXPECT_FALSE(q.Cancel(a));
  EXPECT_EQ(q.size(), 1u);
  Drain(q);
  EXPECT_EQ(order, (std::vector<int>{2}));
}

TEST(EventQueue, RescheduleMovesEventAndKeepsId) {
  EventQueue q;
  std::vector<int> order;
  EventId a = q.Schedule(10, [&] { order.push_back(1); });
  q.Schedule(20, [&] { order.push_back(2); });
  EXPECT_TRUE(q.Reschedule(a, 30));
  EXPECT_TRUE(q.IsPending(a));
  EXPECT_EQ(q.NextTime(), 20);
  EXPECT_TRUE(q.Reschedule(a, 5));
  EXPECT_EQ(q.NextTime(), 5);
  Drain(q);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_FALSE(q.IsPending(a));
}

TEST(EventQueue, RescheduledEventSortsAfterEventsAlreadyAtThatTime) {
  EventQueue q;
  std::vector<int> order;
  EventId a = q.Schedule(1, [&] { order.push_back(1); });
  q.Schedule(10, [&] { order.push_back(2); });
  q.Reschedule(a, 10);
  Drain(q);
  EXPECT_EQ(order, (std::vector<int>{2, 1}));
}

TEST(EventQueue, StaleIdDoesNotCancelSlotReuser) {
  EventQueue q;
  int fired = 0;
  EventId a = q.Schedule(10, [&] { ++fired; });
  EventQueue::Callback cb;
  q.Pop(&cb);
  cb();
  EventId b = q.Schedule(20, [&] { fired += 10; });
  EXPECT_EQ(a.slot, b.slot);
  EXPECT_FALSE(q.Cancel(a));
  Drain(q);
  EXPECT_EQ(fired, 11);
}

TEST(EventQueue, MatchesSortedReferenceUnderRandomOperations) {
  // Reference: a plain list of (time, seq) sorted at the end.
  EventQueue q;
  std::vector<std::pair<SimTime, int>> expect;
  std::vector<std::pair<SimTime, int>> got;
  std::vector<EventId> ids;
  std::vector<SimTime> times;
  uint64_t x = 12345;
  auto next = [&] { x = x * 6364136223846793005ULL + 1442695040888963407ULL; return x >> 33; };
  for (int i = 0; i < 2000; ++i) {
    SimTime t = static_cast<SimTime>(next() % 500);
    int tag = i;
    ids.push_back(q.Schedule(t, [&got, &times, tag] { got.push_back({times[tag], tag}); }));
    times.push_back(t);
  }
  std::vector<bool> live(ids.size(), true);
  for (int i = 0; i < 500; ++i) {
    size_t k = next() % ids.size();
    if (next() % 2) {
      if (q.Cancel(ids[k])) live[k] = false;
    } else if (live[k]) {
      times[k] = static_cast<SimTime>(next() % 500);
      q.Reschedule(ids[k], times[k]);
    }
  }
  EventQueue::Callback cb;
  SimTime last = -1;
  while (!q.empty()) {
    SimTime t = q.Pop(&cb);
    EXPECT_GE(t, last);
    last = t;
    cb();
  }
  for (size_t k = 0; k < ids.size(); ++k)
    if (live[k]) expect.push_back({times[k], static_cast<int>(k)});
  EXPECT_EQ(got.size(), expect.size());
  for (auto& [t, tag] : got) EXPECT_EQ(t, times[tag]);
}

}  // namespace
}  // namespace fleetsim

// Simulation: one clock, one event queue, one family of RNG streams.
//
// A Simulation is a plain object with no global state: many run side by side
// in one process (the planner's thread pool relies on it). Components hold a
// reference to it and schedule callbacks; models never pop the queue
// themselves (SimGrid's split between engine and models).
#pragma once

#include <cstdint>
#include <string_view>

#include "sim/engine/event_queue.h"
#include "sim/engine/rng.h"
#include "sim/engine/time.h"

namespace fleetsim {

class Simulation {
 public:
  // `seed` and `replication` select the random streams (ns-3's run number):
  // replications of one seed are independent, and naming streams per
  // component keeps one component's draws from shifting another's.
  explicit Simulation(uint64_t seed, uint64_t replication = 0)
      : seed_(seed), replication_(replication) {}
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  SimTime now() const { return now_; }
  uint64_t events_processed() const { return events_; }
  size_t pending() const { return queue_.size(); }
  // Time of the earliest pending event; kTimeNever when none.
  SimTime next_time() { return queue_.empty() ? kTimeNever : queue_.NextTime(); }

  // REQUIRES: at >= now().
  EventId At(SimTime at, EventQueue::Callback cb);
  EventId After(SimTime delay, EventQueue::Callback cb) { return At(now_ + delay, std::move(cb)); }
  // Runs `cb` at the current instant, after every normal event of this
  // instant has run, including those scheduled meanwhile (arrivals that
  // share the instant): what an engine loop does when it drains its input
  // queue before it schedules a step.
  EventId AtEndOfInstant(EventQueue::Callback cb) {
    return queue_.Schedule(now_, std::move(cb), EventQueue::Phase::kLate);
  }
  // True when another normal event is pending at the current instant.
  bool MoreNow() { return queue_.HasNormalAt(now_); }
  bool Cancel(EventId id) { return queue_.Cancel(id); }
  bool Reschedule(EventId id, SimTime at);
  bool IsPending(EventId id) const { return queue_.IsPending(id); }

  // Runs events in order until the queue is empty or the next event lies
  // beyond `until`; the clock then stands at the last event run (or at
  // `until` when events remain past it). Returns the number of events run.
  uint64_t Run(SimTime until = kTimeNever);
  // Moves the clock to `at` without running anything (a wall clock's
  // instant with no event: live mode). REQUIRES: no event pending before
  // `at`. Earlier than now() is a no-op.
  void AdvanceTo(SimTime at);
  // Stops Run() after the current event.
  void Stop() { stop_ = true; }

  // An independent stream for the component called `name`.
  Rng Stream(std::string_view name) const { return Rng::ForStream(seed_, replication_, name); }

 private:
  EventQueue queue_;
  SimTime now_ = 0;
  uint64_t events_ = 0;
  uint64_t seed_;
  uint64_t replication_;
  bool stop_ = false;
};

}  // namespace fleetsim

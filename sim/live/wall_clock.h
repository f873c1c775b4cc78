// The wall clock live mode swaps in for the simulated one. The simulation's
// event queue stays the one source of order: events run when wall time
// reaches them (simulated time = nanoseconds of wall time since Start), and
// work that finishes on other threads (a replica's worker ending a batch)
// is posted here and runs on the driving thread, as an event at the instant
// it was posted. Components see one clock either way: Simulation::now().
//
// The driving thread calls RunUntil; workers call Post. Everything else is
// the driving thread's.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>

#include "sim/engine/simulation.h"

namespace fleetsim::live {

class WallClock {
 public:
  WallClock() = default;
  WallClock(const WallClock&) = delete;
  WallClock& operator=(const WallClock&) = delete;

  // Simulated time 0 is now. RunUntil starts the clock if nobody did.
  void Start();
  bool started() const { return started_.load(std::memory_order_acquire); }
  // Nanoseconds of wall time since Start.
  SimTime Now() const;

  // Work that will Post its end has begun: RunUntil waits for it even when
  // no event is pending. Driving thread.
  void Begin() { ++outstanding_; }
  // Any thread: runs `fn` on the driving thread, at the wall time of this
  // call, and ends one Begin.
  void Post(std::function<void()> fn);
  // Any thread: runs `fn` on the driving thread at the wall time of this
  // call, with no Begin to end (an arrival from outside: live mode's server).
  void PostExternal(std::function<void()> fn);
  // While open, RunUntil waits out its slice when nothing is pending (work
  // may be posted from outside at any time) rather than returning at once.
  void set_open(bool open) { open_ = open; }
  // Work begun and not yet posted back, or posted and not yet run.
  bool busy() const { return outstanding_ > 0; }

  // Runs events as wall time reaches them and posted work as it comes, in
  // time order, until simulated time `until`, or `wall_slice` of wall time
  // has passed (so the caller can report progress and notice a stop), or
  // nothing is pending and nothing is outstanding.
  void RunUntil(Simulation& sim, SimTime until, SimTime wall_slice);

  // While work is outstanding, wait for it by spinning rather than
  // sleeping: a sleeping thread wakes 50-100 us after the post, a share of
  // every step. For a driving thread with a core of its own.
  void set_spin_while_busy(bool on) { spin_while_busy_ = on; }

  // Drops posted work that has not run (the run is over); the next
  // RunUntil starts the clock again.
  void Clear();

 private:
  struct Posted {
    SimTime at;
    std::function<void()> fn;
    bool ends_work = true;  // ends a Begin
  };
  void Enqueue(std::function<void()> fn, bool ends_work);
  // Waits until wall time `t` or until something is posted.
  void WaitFor(SimTime t);

  std::atomic<bool> started_{false};  // t0_ is set before it is
  std::chrono::steady_clock::time_point t0_;
  int64_t outstanding_ = 0;  // driving thread only
  bool spin_while_busy_ = false;
  std::atomic<bool> open_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Posted> inbox_;
  std::atomic<int64_t> posted_{0};  // inbox_.size(), read without the lock while spinning
};

}  // namespace fleetsim::live

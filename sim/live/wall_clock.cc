#include "sim/live/wall_clock.h"

#include <algorithm>
#include <thread>
#include <vector>

namespace fleetsim::live {
namespace {

// Waits shorter than this spin instead of sleeping: a sleeping thread wakes
// 50-100 us late, which is a tenth of a small model's step on a CPU.
constexpr SimTime kSpinNs = 200 * 1000;

}  // namespace

void WallClock::Start() {
  t0_ = std::chrono::steady_clock::now();
  started_.store(true, std::memory_order_release);
}

SimTime WallClock::Now() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count();
}

void WallClock::Post(std::function<void()> fn) { Enqueue(std::move(fn), true); }

void WallClock::PostExternal(std::function<void()> fn) { Enqueue(std::move(fn), false); }

void WallClock::Enqueue(std::function<void()> fn, bool ends_work) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Posted before the clock started: due at its start.
    inbox_.push_back(Posted{started() ? Now() : 0, std::move(fn), ends_work});
    posted_.store(static_cast<int64_t>(inbox_.size()), std::memory_order_release);
  }
  cv_.notify_one();
}

void WallClock::WaitFor(SimTime t) {
  SimTime left = t - Now();
  if (left > kSpinNs && !(spin_while_busy_ && outstanding_ > 0)) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_until(lock, t0_ + std::chrono::nanoseconds(t - kSpinNs), [this] { return !inbox_.empty(); });
    if (!inbox_.empty()) return;
  }
  while (Now() < t && posted_.load(std::memory_order_acquire) == 0) std::this_thread::yield();
}

void WallClock::RunUntil(Simulation& sim, SimTime until, SimTime wall_slice) {
  if (!started()) Start();
  const SimTime slice_end = Now() + wall_slice;
  std::vector<Posted> ready;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      while (!inbox_.empty() && inbox_.front().at <= until) {
        ready.push_back(std::move(inbox_.front()));
        inbox_.pop_front();
      }
      posted_.store(static_cast<int64_t>(inbox_.size()), std::memory_order_release);
    }
    for (Posted& p : ready) {
      // Events due before the work ended run first; the work then runs at
      // its instant, or at the clock's when the clock has passed it (it was
      // posted while the driving thread ran events up to a later wall time).
      const SimTime at = std::max(p.at, sim.now());
      sim.Run(at);
      sim.AdvanceTo(at);
      if (p.ends_work) --outstanding_;
      p.fn();
    }
    ready.clear();
    const SimTime now = Now();
    if (now >= until) {
      if (until > sim.now()) sim.Run(until);
      return;
    }
    const SimTime next = sim.next_time();
    if (next <= now) {
      sim.Run(now);
      continue;
    }
    if (now >= slice_end) {
      sim.Run(now);
      return;
    }
    if (next == kTimeNever && outstanding_ == 0 && !open_) return;
    WaitFor(std::min({next, until, slice_end}));
  }
}

void WallClock::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  inbox_.clear();
  posted_.store(0, std::memory_order_release);
  outstanding_ = 0;
  started_.store(false, std::memory_order_release);
}

}  // namespace fleetsim::live

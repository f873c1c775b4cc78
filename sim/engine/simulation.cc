#include "sim/engine/simulation.h"

#include "base/status.h"

namespace fleetsim {

EventId Simulation::At(SimTime at, EventQueue::Callback cb) {
  FLEETSIM_CHECK(at >= now_);
  return queue_.Schedule(at, std::move(cb));
}

bool Simulation::Reschedule(EventId id, SimTime at) {
  FLEETSIM_CHECK(at >= now_);
  return queue_.Reschedule(id, at);
}

void Simulation::AdvanceTo(SimTime at) {
  if (at <= now_) return;
  FLEETSIM_CHECK(queue_.empty() || queue_.NextTime() >= at);
  now_ = at;
}

uint64_t Simulation::Run(SimTime until) {
  stop_ = false;
  uint64_t ran = 0;
  EventQueue::Callback cb;
  while (!stop_ && !queue_.empty()) {
    if (queue_.NextTime() > until) {
      now_ = until;
      break;
    }
    now_ = queue_.Pop(&cb);
    ++ran;
    ++events_;
    cb();
  }
  return ran;
}

}  // namespace fleetsim

#include "sim/engine/event_queue.h"

#include <algorithm>

#include "base/status.h"

namespace fleetsim {

void EventQueue::Push(SimTime at, uint32_t slot) {
  const uint64_t seq = next_seq_++ | (slots_[slot].late ? kLateBit : 0);
  slots_[slot].live_seq = seq;
  heap_.push_back(Entry{at, seq, slot});
  std::push_heap(heap_.begin(), heap_.end(), Later);
}

EventId EventQueue::Schedule(SimTime at, Callback cb, Phase phase) {
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[slot];
  s.cb = std::move(cb);
  s.pending = true;
  s.late = phase == Phase::kLate;
  ++live_;
  Push(at, slot);
  return EventId{slot, s.generation};
}

bool EventQueue::IsPending(EventId id) const {
  return id.valid() && id.slot < slots_.size() && slots_[id.slot].pending &&
         slots_[id.slot].generation == id.generation;
}

bool EventQueue::Cancel(EventId id) {
  if (!IsPending(id)) return false;
  Slot& s = slots_[id.slot];
  s.pending = false;
  s.cb = nullptr;
  if (++s.generation == 0) s.generation = 1;
  free_slots_.push_back(id.slot);
  --live_;
  return true;
}

bool EventQueue::Reschedule(EventId id, SimTime at) {
  if (!IsPending(id)) return false;
  // The old heap entry goes stale because the slot's live_seq moves on.
  Push(at, id.slot);
  return true;
}

void EventQueue::DropStale() {
  while (!heap_.empty()) {
    const Entry& top = heap_.front();
    const Slot& s = slots_[top.slot];
    bool stale = !s.pending || s.live_seq != top.seq;
    if (!stale) return;
    std::pop_heap(heap_.begin(), heap_.end(), Later);
    heap_.pop_back();
  }
}

SimTime EventQueue::NextTime() {
  DropStale();
  FLEETSIM_CHECK(!heap_.empty());
  return heap_.front().time;
}

bool EventQueue::HasNormalAt(SimTime at) {
  DropStale();
  return !heap_.empty() && heap_.front().time == at && (heap_.front().seq & kLateBit) == 0;
}

SimTime EventQueue::Pop(Callback* cb) {
  DropStale();
  FLEETSIM_CHECK(!heap_.empty());
  Entry top = heap_.front();
  std::pop_heap(heap_.begin(), heap_.end(), Later);
  heap_.pop_back();
  Slot& s = slots_[top.slot];
  *cb = std::move(s.cb);
  s.cb = nullptr;
  s.pending = false;
  if (++s.generation == 0) s.generation = 1;
  free_slots_.push_back(top.slot);
  --live_;
  return top.time;
}

}  // namespace fleetsim

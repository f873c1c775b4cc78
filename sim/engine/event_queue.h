// EventQueue: pending events ordered by (time, phase, sequence number).
//
// The sequence number is assigned at scheduling time, so events at the same
// instant and phase fire in the order they were scheduled: ties break
// deterministically (ns-3's (time, uid) rule). Late-phase events fire after
// every normal event of their instant, including normal events scheduled for
// that instant while it is being handled: an engine loop that drains its
// input queue before it schedules a step is a late event. Events can be cancelled and rescheduled in
// O(log n): the heap holds (time, seq, slot) entries and each slot remembers
// the seq of its one live entry, so an entry left behind by a cancel or a
// move is recognised and dropped when it reaches the top (lazy deletion).
//
// Callbacks are std::function<void()>; captures of up to two pointers stay in
// its small-buffer and allocate nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "sim/engine/time.h"

namespace fleetsim {

// Names a scheduled event. Stays valid (and refers to nothing) after the
// event fires or is cancelled; a later event never reuses a live id because
// the generation is part of it.
struct EventId {
  uint32_t slot = 0;
  uint32_t generation = 0;  // 0 means "no event"
  bool valid() const { return generation != 0; }
};

class EventQueue {
 public:
  using Callback = std::function<void()>;

  EventQueue() = default;
  EventQueue(const EventQueue&) = delete;
  EventQueue& operator=(const EventQueue&) = delete;

  enum class Phase : uint8_t { kNormal, kLate };
  EventId Schedule(SimTime at, Callback cb, Phase phase = Phase::kNormal);
  // Returns false if the event already fired or was cancelled.
  bool Cancel(EventId id);
  // Moves a pending event to `at` (it then sorts after events of its phase
  // already scheduled for `at`). Returns false if the event is no longer pending.
  bool Reschedule(EventId id, SimTime at);
  bool IsPending(EventId id) const;

  bool empty() const { return live_ == 0; }
  size_t size() const { return live_; }
  // REQUIRES: !empty().
  SimTime NextTime();
  // True when a normal-phase event is pending at exactly `at` (the earliest
  // pending event, so `at` must be the current instant).
  bool HasNormalAt(SimTime at);
  // Removes the earliest event and returns its time; its callback is moved
  // into *cb. REQUIRES: !empty().
  SimTime Pop(Callback* cb);

 private:
  // Late events carry kLateBit in their seq, so they sort after every
  // normal event of the same instant and among themselves by scheduling.
  static constexpr uint64_t kLateBit = uint64_t{1} << 63;
  struct Entry {
    SimTime time;
    uint64_t seq;
    uint32_t slot;
  };
  struct Slot {
    Callback cb;
    uint64_t live_seq = 0;    // seq of the heap entry that is not stale (with kLateBit)
    bool late = false;        // Phase::kLate
    uint32_t generation = 1;  // bumped when the event fires or is cancelled
    bool pending = false;
  };
  static bool Later(const Entry& a, const Entry& b) {
    return a.time != b.time ? a.time > b.time : a.seq > b.seq;
  }
  void Push(SimTime at, uint32_t slot);
  void DropStale();

  std::vector<Entry> heap_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  uint64_t next_seq_ = 0;
  size_t live_ = 0;
};

}  // namespace fleetsim

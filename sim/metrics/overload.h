// OverloadMonitor: decides whether a run was in sustained overload, in
// memory bounded by a fixed number of time bins (never by requests seen).
//
// Over the arrival window [warm-up, last arrival] a fleet is overloaded when
//   (a) completions fall below 95% of arrivals: completions finished in the
//       window by requests that arrived after warm-up, against arrivals up
//       to the last arrival minus a lag (the median service time, end-to-end
//       minus queueing delay, of the first quarter's arrivals: what a stable
//       system needs to finish what arrived), or
//   (b) queueing delay grows across the window: the median queueing delay of
//       requests arriving in the last quarter is above twice that of the
//       second quarter, and above 1 s.
// A burst that drains after the last arrival is neither. Arrivals, queueing
// delays and service times are binned by arrival time, completions by
// finish time; the bins double their width as the run grows, so quarters are
// resolved to 1/kBins of the window, and medians to a quarter of an octave.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/engine/time.h"

namespace fleetsim {

struct OverloadVerdict {
  bool judged = false;       // enough arrivals in a long enough window to judge
  bool overloaded = false;
  std::string reason;        // why overloaded, or why not judged
  std::optional<double> completion_ratio;  // (a): completions / arrivals expected to complete
  std::optional<double> queue_p50_ms_q2;   // (b): median queueing delay, second quarter
  std::optional<double> queue_p50_ms_q4;   //      and last quarter of the arrival window
};

// Counts of durations in buckets a quarter of an octave wide (19% apart)
// from 1 ns to 2^64 ns: 1 KiB, for medians compared by factors of two.
class CoarseHistogram {
 public:
  void Add(SimTime ns);
  void Merge(const CoarseHistogram& other);
  int64_t count() const { return count_; }
  // The median's bucket, as its geometric midpoint in ns; 0 when empty.
  double Median() const;

 private:
  static constexpr int kBuckets = 256;
  uint32_t counts_[kBuckets] = {};
  int64_t count_ = 0;
};

class OverloadMonitor {
 public:
  static constexpr int kBins = 256;
  static constexpr int64_t kMinArrivals = 100;  // fewer in the window: not judged

  explicit OverloadMonitor(SimTime warmup) : warmup_(warmup) {}

  void OnArrival(SimTime at);
  // A request that left: completed ones give their end-to-end latency;
  // `queue_delay` is arrival to first scheduled (or to the end of the run
  // for one never scheduled).
  void OnCompleted(SimTime arrival, SimTime finish, SimTime queue_delay);
  void OnUnscheduled(SimTime arrival, SimTime waited);
  // A request turned away (rejected, failed) leaves the arrivals that
  // should complete.
  void OnTurnedAway(SimTime arrival);

  OverloadVerdict Judge() const;

 private:
  struct Bin {
    int64_t arrivals = 0;
    int64_t completions = 0;  // by finish time
    CoarseHistogram queue;    // by arrival time
    CoarseHistogram service;  // end-to-end minus queueing delay, by arrival time
  };
  // The bin of time `t` >= warmup, widening the bins until it fits.
  Bin& At(SimTime t);

  SimTime warmup_;
  SimTime width_ = kSecond / 4;  // doubles as needed
  std::vector<Bin> bins_ = std::vector<Bin>(kBins);
  SimTime last_arrival_ = -1;
  int64_t arrivals_ = 0;                      // at or after warm-up
  int64_t completions_ = 0;                   // of requests that arrived at or after warm-up
  int64_t completions_at_last_arrival_ = 0;   // of those, by the latest arrival
};

}  // namespace fleetsim

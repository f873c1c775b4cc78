// TimeWindows: the stretches of simulated time during which something was
// going on (a failure, a rolling restart), as a union of intervals built in
// time order. Open() and Close() nest: a window opens when the first of
// several overlapping causes opens and closes when the last one closes.
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

#include "sim/engine/time.h"

namespace fleetsim {

class TimeWindows {
 public:
  void Open(SimTime t) {
    if (open_++ == 0) windows_.emplace_back(t, kTimeNever);
  }
  void Close(SimTime t) {
    if (open_ > 0 && --open_ == 0) windows_.back().second = t;
  }
  // Whether `t` lies in a window, [start, end), as known now: a window
  // still open covers everything from its start. Exact for any t up to the
  // current time, since windows are opened and closed in time order.
  bool Inside(SimTime t) const {
    auto it = std::upper_bound(windows_.begin(), windows_.end(), t,
                               [](SimTime x, const std::pair<SimTime, SimTime>& w) { return x < w.first; });
    if (it == windows_.begin()) return false;
    --it;
    return t >= it->first && t < it->second;
  }
  bool empty() const { return windows_.empty(); }
  // Total time covered within [from, to).
  SimTime CoveredBetween(SimTime from, SimTime to) const {
    SimTime sum = 0;
    for (const auto& [a, b] : windows_) {
      const SimTime lo = std::max(a, from), hi = std::min(b, to);
      if (hi > lo) sum += hi - lo;
    }
    return sum;
  }
  const std::vector<std::pair<SimTime, SimTime>>& windows() const { return windows_; }

 private:
  int open_ = 0;
  std::vector<std::pair<SimTime, SimTime>> windows_;
};

}  // namespace fleetsim

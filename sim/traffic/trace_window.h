// TraceWindow: cuts and rescales a trace stream as the scenario asks, without
// buffering: keep arrivals in [start, end) measured from the trace's first
// arrival, shift them so the window starts at 0, divide by rate_scale, then
// stop at max_requests or max_arrival. Ids are renumbered 0, 1, 2, ... in
// output order.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>

#include "sim/engine/time.h"
#include "sim/traffic/source.h"

namespace fleetsim {

struct TraceWindowOptions {
  // Window on trace time, ns from the trace's first arrival: [start, end).
  SimTime start = 0;
  SimTime end = kTimeNever;  // kTimeNever: to the end of the trace
  // Arrival times (after the shift) are divided by this: 2 replays the trace
  // twice as fast. > 0. Exactly 1 leaves times untouched (no double round trip).
  double rate_scale = 1.0;
  // Output limits, applied after scaling: at most max_requests requests, and
  // only those arriving strictly before max_arrival.
  int64_t max_requests = std::numeric_limits<int64_t>::max();
  SimTime max_arrival = kTimeNever;
};

class TraceWindow final : public RequestSource {
 public:
  // REQUIRES: options.rate_scale > 0 and finite, 0 <= start <= end.
  TraceWindow(std::unique_ptr<RequestSource> inner, const TraceWindowOptions& options);

  bool Next(Request* out) override;
  // The inner stream's status: a corrupt row inside the window surfaces
  // here; one past the window's end is never read. Or the window's own: a
  // row that rate_scale would move beyond the range of simulated time.
  const Status& status() const override { return own_.ok() ? inner_->status() : own_; }
  // The inner reader's count: rows it skipped up to the last row it read.
  int64_t skipped_rows() const override { return inner_->skipped_rows(); }

 private:
  std::unique_ptr<RequestSource> inner_;
  TraceWindowOptions options_;
  bool done_ = false;
  bool have_first_ = false;
  SimTime first_ = 0;
  int64_t emitted_ = 0;
  Status own_;
};

}  // namespace fleetsim

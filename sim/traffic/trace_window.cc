#include "sim/traffic/trace_window.h"

#include <cmath>
#include <cstdio>
#include <utility>

#include "base/status.h"

namespace fleetsim {

TraceWindow::TraceWindow(std::unique_ptr<RequestSource> inner, const TraceWindowOptions& options)
    : inner_(std::move(inner)), options_(options) {
  FLEETSIM_CHECK(options_.rate_scale > 0 && std::isfinite(options_.rate_scale));
  FLEETSIM_CHECK(options_.start >= 0 && options_.start <= options_.end);
}

bool TraceWindow::Next(Request* out) {
  if (done_) return false;
  if (emitted_ >= options_.max_requests) {
    done_ = true;
    return false;
  }
  while (inner_->Next(out)) {
    if (!have_first_) {
      have_first_ = true;
      first_ = out->arrival;
    }
    // RequestSource contract: arrivals never decrease, so t >= 0 and the
    // first t >= end ends the window (no need to read the rest).
    FLEETSIM_CHECK(out->arrival >= first_);
    const SimTime t = out->arrival - first_;
    if (t < options_.start) continue;
    if (t >= options_.end) break;
    SimTime at = t - options_.start;
    if (options_.rate_scale != 1.0) {
      const double scaled = static_cast<double>(at) / options_.rate_scale;
      // Slowed down past the range of simulated time (292 years): refused,
      // not dropped without a word.
      if (!(scaled < 9.2e18)) {
        char buf[200];
        std::snprintf(buf, sizeof buf,
                      "traffic.trace.rate_scale: %g moves request %lld (%.6g s into the trace) beyond 292 years "
                      "of simulated time",
                      options_.rate_scale, static_cast<long long>(emitted_), TimeToSeconds(t));
        own_ = Status::Invalid(buf);
        done_ = true;
        return false;
      }
      at = static_cast<SimTime>(std::llround(scaled));
    }
    if (at >= options_.max_arrival) break;
    out->arrival = at;
    out->id = static_cast<uint64_t>(emitted_++);
    return true;
  }
  done_ = true;
  return false;
}

}  // namespace fleetsim

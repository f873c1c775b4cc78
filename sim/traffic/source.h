// RequestSource: a stream of requests in arrival order. Trace readers and
// generators implement it; both are pulled one request at a time as the
// simulation advances, so a trace is never held in memory whole.
#pragma once

#include <memory>

#include "base/status.h"
#include "sim/traffic/request.h"

namespace fleetsim {

class RequestSource {
 public:
  virtual ~RequestSource() = default;
  // Fills *out with the next request and returns true; returns false at the
  // end of the stream or on error. After false, status() tells which: a
  // corrupt row leaves a message naming file:line. Arrivals are
  // non-decreasing; ids are 0, 1, 2, ... in order.
  virtual bool Next(Request* out) = 0;
  virtual const Status& status() const = 0;
};

}  // namespace fleetsim

// RequestSource: a stream of requests in arrival order. Trace readers and
// generators implement it; both are pulled one request at a time as the
// simulation advances, so a trace is never held in memory whole.
#pragma once

#include <cstdint>
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
  // Rows of the input that the format defines as not being requests and
  // that were therefore skipped, not errors (BurstGPT's failed requests);
  // counted up to the last Next. 0 for formats that skip nothing.
  virtual int64_t skipped_rows() const { return 0; }
};

}  // namespace fleetsim

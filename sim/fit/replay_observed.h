// Observed runs (sim/observe) as replays for the fit (sim/fit/engine_fit.h):
// each request's send time and lengths, the clients' concurrency for a
// closed-loop run, and the figures the fit compares, computed from the
// requests with fleetsim's definitions (observed_summary.h).
#pragma once

#include <string>

#include "base/status.h"
#include "sim/fit/engine_fit.h"
#include "sim/observe/observed_run.h"

namespace fleetsim {

// Errors (user input, naming the file and run): a run read for its
// aggregates only (nothing to replay), one without prompt lengths, a
// closed-loop run without its concurrency, a run with no completed request.
Status ReplayFromObserved(const ObservedRun& run, ReplayRun* out);

}  // namespace fleetsim

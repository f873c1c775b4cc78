// ScanTraffic: what a scenario's traffic is, without simulating it: how many
// requests, over what span, at what rate, as the trace itself has them and as
// the run will see them after the window and rate_scale.
//
// It pulls the same stream MakeRequestSource builds, one request at a time,
// so memory stays bounded whatever the trace's length (a million-row CSV
// takes about a second). For a trace it then reads on past the window to
// the end of the file for the whole-trace figures; a corrupt row anywhere in
// the file is therefore reported (`path:line: what`), even one past the
// window that a run would never read.
#pragma once

#include <array>
#include <cstdint>

#include "base/status.h"
#include "sim/engine/rng.h"
#include "sim/traffic/traffic_spec.h"

namespace fleetsim {

struct TrafficStats {
  // --- The stream a run receives (after start_s/end_s, rate_scale,
  // max_requests and max_arrival_s), in simulated seconds. ---
  int64_t requests = 0;
  double first_arrival_s = 0;  // 0 when there are no requests
  double last_arrival_s = 0;
  double span_s = 0;           // last_arrival_s - first_arrival_s
  // requests / span_s: the mean arrival rate the fleet sees, after
  // rate_scale and the window. 0 when span_s is 0 (fewer than two distinct
  // arrival instants).
  double rate_per_s = 0;
  // The same requests in the trace's own time, before rate_scale
  // (rate_per_s / rate_scale). Generators: equal to rate_per_s.
  double trace_rate_per_s = 0;
  double mean_prompt_tokens = 0;  // over the requests above; 0 when none
  double mean_output_tokens = 0;
  // The highest arrival rate of a 10-minute window (simulated time from 0)
  // in each hour of the day, over every day the stream spans: the daily
  // profile an operator plans a schedule from.
  std::array<double, 24> peak_rate_by_hour{};

  // --- The whole trace, every row, before any window or scaling (trace
  // seconds from its first arrival). Generators: the stream above. ---
  int64_t trace_requests = 0;
  double trace_span_s = 0;             // last arrival of the whole trace
  double trace_mean_rate_per_s = 0;    // trace_requests / trace_span_s; 0 if span 0
  // Rows the format skips by design (BurstGPT's failed requests).
  int64_t skipped_rows = 0;
};

// Fills *out for `spec`; `rng` as for MakeRequestSource (the same seed gives
// the same figures as the run's stream). Errors: those of MakeRequestSource
// and of the stream (file:line).
Status ScanTraffic(const TrafficSpec& spec, Rng rng, TrafficStats* out);

}  // namespace fleetsim

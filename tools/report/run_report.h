// The report of a run's output folder (summary.json, requests.csv,
// timeseries.csv, itl.csv when present), and the time-series plots that the
// plan report reuses for its chosen configuration.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "tools/report/document.h"
#include "tools/report/report.h"

namespace fleetsim::report {

// Most points drawn per time series and per CDF: longer ones are thinned so
// that a report stays small whatever the run's length.
inline constexpr size_t kMaxSeriesPoints = 1000;
inline constexpr size_t kMaxCdfPoints = 500;

// timeseries.csv summed (queue depth, running, arrivals) or averaged (KV
// use) over replicas at each sample time, in time order, averaged over runs
// of consecutive samples down to at most kMaxSeriesPoints.
struct FleetTimeseries {
  std::vector<double> t_s, queue_depth, running, kv_util, arrivals;
  // From files with `state` and `usd_per_hour` (empty otherwise): replicas
  // ready, and the fleet's cost rate (unpriced replicas count 0).
  std::vector<double> ready, usd_per_hour;
};
Status ReadFleetTimeseries(const std::string& path, FleetTimeseries* out);

// Plots of queue depth and KV use over time; with `all`, running requests
// and arrivals too.
void AddTimeseriesPlots(Document* doc, const FleetTimeseries& ts, bool all);

Status RenderRunReport(const std::string& dir, ReportFiles* out);

}  // namespace fleetsim::report

// Report rendering: report.html and report.md for an output folder.
#pragma once

#include <string>

#include "base/status.h"

namespace fleetsim {

struct ReportFiles {
  std::string html;  // report.html: one self-contained page, plots as inline SVG
  std::string md;    // report.md
};

// Renders the report of `dir`: a plan's folder (plan.json, and chosen/ when
// present) or a run's folder (summary.json, requests.csv, timeseries.csv).
// Errors name the file and, for JSON, the key.
Status RenderReport(const std::string& dir, ReportFiles* out);

}  // namespace fleetsim

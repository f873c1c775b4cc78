// What `fleetsim fit` writes beside the profile: report.md (the fitted
// terms, and the error per metric and run before the fit, after it and on
// each run left out) and errors.svg (median |error| per metric, the three
// side by side). Deterministic text: same result, same bytes.
#pragma once

#include <string>
#include <vector>

#include "sim/fit/engine_fit.h"

namespace fleetsim {

std::string FitReportMarkdown(const FitResult& result, const std::vector<ReplayRun>& runs,
                              const std::string& profile_name);
std::string FitErrorsSvg(const FitResult& result);

// "12.3%" or "-" for a missing figure.
std::string Percent(const std::optional<double>& v);

}  // namespace fleetsim

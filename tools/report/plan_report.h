// The report of a plan's output folder: plan.json (fleetsim-plan-result v1,
// docs/plan.md) and, when present, the chosen configuration's run folder.
#pragma once

#include <string>

#include "base/status.h"
#include "tools/report/report.h"

namespace fleetsim::report {

Status RenderPlanReport(const std::string& dir, ReportFiles* out);

}  // namespace fleetsim::report

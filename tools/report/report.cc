#include "tools/report/report.h"

#include <sys/stat.h>

#include "tools/report/plan_report.h"
#include "tools/report/run_report.h"

namespace fleetsim {
namespace {

bool Exists(const std::string& path, bool dir) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && (dir ? S_ISDIR(st.st_mode) : true);
}

}  // namespace

Status RenderReport(const std::string& dir, ReportFiles* out) {
  *out = ReportFiles();
  if (!Exists(dir, true)) return Status::Invalid(dir + ": not a folder (expected a plan's or a run's output folder)");
  if (Exists(dir + "/plan.json", false)) return report::RenderPlanReport(dir, out);
  if (Exists(dir + "/summary.json", false)) return report::RenderRunReport(dir, out);
  return Status::Invalid(dir + ": neither plan.json (a plan's output) nor summary.json (a run's output) is there");
}

}  // namespace fleetsim

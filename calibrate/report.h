// The calibration report: what `fleetsim calibrate` measured and how well
// its fitted model predicts shapes it did not see. A Markdown page (facts
// about the run, a table per fitted operator, notes) and, per operator, an
// SVG of held-out predicted vs measured time on log-log axes with the y = x
// line and a ±10% band, points coloured by shape group.
//
// Pure string generation: the caller writes the files (the Markdown links
// each SVG by ReportSection::svg_file). Output is deterministic: the same
// input gives byte-identical text (numbers printed with fixed precision, no
// dates or locale-dependent formatting).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "calibrate/fit.h"
#include "model/fitted_curve.h"

namespace fleetsim::calibrate {

struct ReportSection {
  std::string op;                 // operator name, e.g. "gemm bf16"
  FittedCurve fit;                // from FitScaled
  std::vector<HeldOut> held_out;  // from CrossValidate on the same samples
  std::string svg_file;           // file name the Markdown links to; empty: no link
  // Legend labels by HeldOut::group, e.g. {3, "n=768 k=256"}; groups not
  // listed are labelled "group <id>".
  std::map<int, std::string> group_names;
};

struct ReportInput {
  std::string title;
  // Shown as a two-column table in this order: device, clocks, versions,
  // date, wall time, ...
  std::vector<std::pair<std::string, std::string>> facts;
  std::vector<ReportSection> sections;
  std::vector<std::string> notes;  // one bullet each
};

// The Markdown page: title, facts table, then per section a table of
// samples, CV method, held-out median and p90 relative error, fixed cost,
// knot count; the per-unit cost at each knot; the link to its SVG; notes.
std::string ReportMarkdown(const ReportInput& in);

// A standalone SVG 1.1 document (starts with "<svg", ends with "</svg>\n"):
// one <circle> per held-out point at (measured, predicted), both axes
// log10 over whole decades covering every positive value, decade ticks
// labelled in ns/µs/ms/s. A value the axes cannot show (non-positive,
// NaN, infinite) is clamped to the nearer edge, so that no point disappears
// silently.
std::string PredictedVsMeasuredSvg(const ReportSection& s);

}  // namespace fleetsim::calibrate

// Inline SVG plots for report.html: axes with ticks on a linear or log scale,
// series of points and lines with optional error bars, dashed reference
// lines, a legend and a title. The markup is plain SVG 1.1 (no script, no
// external resources) and is a pure function of the spec.
#pragma once

#include <string>
#include <vector>

namespace fleetsim::report {

struct Series {
  std::string name;          // legend entry
  std::vector<double> x, y;  // one data point each; non-finite ones are skipped
  std::vector<double> err;   // half-widths of y's error bars: empty for none, NaN for a point without
  bool line = true;          // connect the points, in the order given
  bool points = true;        // draw each point as a circle (a lone point always is)
  bool faint = false;        // context: light, behind the other series
  double radius = 3;         // of the circles, in px
};

// A dashed line across the plot at x = at (vertical) or y = at.
struct RefLine {
  bool vertical = false;
  double at = 0;
  std::string label;  // legend entry
};

enum class Scale { kAuto, kLinear, kLog };  // auto: log when positive data span >= 50x

struct PlotSpec {
  std::string title, x_label, y_label;
  Scale x_scale = Scale::kAuto, y_scale = Scale::kAuto;
  bool x_from_zero = false;  // a linear axis starts at 0 when its data are positive
  bool y_from_zero = true;
  std::vector<Series> series;
  std::vector<RefLine> refs;
};

// Data points drawn (finite, and positive on a log axis).
int CountPoints(const PlotSpec& spec);

// `<svg class="plot" data-points="N" ...>` with N = CountPoints(spec); data
// marks are <circle class="pt"> and <path class="line">. Empty when N is 0:
// a plot without data is not drawn.
std::string RenderPlot(const PlotSpec& spec);

}  // namespace fleetsim::report

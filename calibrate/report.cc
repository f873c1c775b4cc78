// The calibration report of calibrate/report.h.
#include "calibrate/report.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

namespace fleetsim::calibrate {
namespace {

// printf into a std::string; every number in the report goes through here
// with an explicit precision, which keeps the output deterministic.
std::string Fmt(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string Fmt(const char* format, ...) {
  char buf[256];
  va_list args;
  va_start(args, format);
  const int n = std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  if (n < 0) return std::string();
  if (static_cast<size_t>(n) < sizeof buf) return std::string(buf, static_cast<size_t>(n));
  std::string big(static_cast<size_t>(n) + 1, '\0');
  va_start(args, format);
  std::vsnprintf(big.data(), big.size(), format, args);
  va_end(args);
  big.resize(static_cast<size_t>(n));
  return big;
}

// A Markdown table cell: pipes escaped, line breaks flattened.
std::string Cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string XmlEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string Percent(double fraction) { return Fmt("%.2f%%", 100.0 * fraction); }

// ---- SVG geometry -------------------------------------------------------
constexpr double kLeft = 90;     // plot area's left edge, px
constexpr double kTop = 50;      // plot area's top edge, px
constexpr double kSide = 360;    // plot area is kSide × kSide px
constexpr double kLegend = 170;  // legend column right of the plot, px
constexpr double kWidth = kLeft + kSide + kLegend;
constexpr double kHeight = kTop + kSide + 60;
constexpr size_t kMaxLegendEntries = 16;

// Okabe-Ito colours (distinguishable with the common colour-vision
// deficiencies), yellow replaced by grey for contrast on white.
constexpr const char* kPalette[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                    "#CC79A7", "#56B4E9", "#999999", "#000000"};
constexpr size_t kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);

// "1 ns", "10 µs", "100 ms", "1 s", ... for 10^decade nanoseconds.
std::string DecadeLabel(int decade) {
  static const char* const kUnits[] = {"ns", "µs", "ms", "s"};
  const int unit = std::clamp(decade >= 0 ? decade / 3 : 0, 0, 3);
  return Fmt("%g %s", std::pow(10.0, decade - 3 * unit), kUnits[unit]);
}

struct Axes {
  int lo = 3, hi = 6;  // log10 ns at the edges, whole decades, lo < hi

  double Log(double ns) const {
    if (std::isnan(ns) || ns <= 0) return lo;
    return std::clamp(std::log10(ns), static_cast<double>(lo), static_cast<double>(hi));
  }
  double X(double log_ns) const { return kLeft + (log_ns - lo) / (hi - lo) * kSide; }
  double Y(double log_ns) const { return kTop + kSide - (log_ns - lo) / (hi - lo) * kSide; }
};

Axes AxesFor(const std::vector<HeldOut>& points) {
  double min_v = 0, max_v = 0;
  bool any = false;
  for (const HeldOut& h : points) {
    for (double v : {h.measured_ns, h.predicted_ns}) {
      if (!std::isfinite(v) || v <= 0) continue;
      min_v = any ? std::min(min_v, v) : v;
      max_v = any ? std::max(max_v, v) : v;
      any = true;
    }
  }
  Axes axes;
  if (!any) return axes;
  axes.lo = static_cast<int>(std::floor(std::log10(min_v)));
  axes.hi = static_cast<int>(std::ceil(std::log10(max_v)));
  if (axes.hi <= axes.lo) axes.hi = axes.lo + 1;
  return axes;
}

std::string Line(double x1, double y1, double x2, double y2, const char* style) {
  return Fmt("<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" %s/>\n", x1, y1, x2, y2, style);
}

}  // namespace

std::string ReportMarkdown(const ReportInput& in) {
  std::string md = "# " + in.title + "\n\n";
  if (!in.facts.empty()) {
    md += "| fact | value |\n|---|---|\n";
    for (const auto& [key, value] : in.facts) md += "| " + Cell(key) + " | " + Cell(value) + " |\n";
    md += "\n";
  }
  for (const ReportSection& s : in.sections) {
    const FittedCurve& f = s.fit;
    md += "## " + s.op + "\n\n";
    md += "Model: ns = fixed + " + Cell(f.scale_var) + " · g(" + Cell(f.size_var) +
          "), g piecewise-linear between the knots, proportional to " + Cell(f.size_var) +
          " above the last.\n\n";
    md += "| | |\n|---|---|\n";
    md += "| samples | " + std::to_string(f.samples) + " |\n";
    md += "| cross-validation | " + Cell(f.cv_method) + " |\n";
    md += "| held-out points | " + std::to_string(s.held_out.size()) + " |\n";
    md += "| held-out median error | " + Percent(f.cv_median_rel_error) + " |\n";
    md += "| held-out p90 error | " + Percent(f.cv_p90_rel_error) + " |\n";
    md += "| fixed cost | " + Fmt("%.1f", f.fixed_ns) + " ns |\n";
    md += "| knots | " + std::to_string(f.knots.size()) + " |\n\n";
    if (!f.knots.empty()) {
      md += "| " + Cell(f.size_var) + " | g (ns per unit of " + Cell(f.scale_var) + ") |\n|---|---|\n";
      for (size_t i = 0; i < f.knots.size() && i < f.values.size(); ++i) {
        md += Fmt("| %.6g | %.6g |\n", f.knots[i], f.values[i]);
      }
      md += "\n";
    }
    if (!s.svg_file.empty()) md += "![" + s.op + ": held-out predicted vs measured](" + s.svg_file + ")\n\n";
  }
  if (!in.notes.empty()) {
    md += "## Notes\n\n";
    for (const std::string& note : in.notes) md += "- " + note + "\n";
    md += "\n";
  }
  return md;
}

std::string PredictedVsMeasuredSvg(const ReportSection& s) {
  const Axes axes = AxesFor(s.held_out);
  std::string svg = Fmt(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" height=\"%.0f\" "
      "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
      kWidth, kHeight, kWidth, kHeight);
  svg += Fmt("<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", kWidth, kHeight);
  svg += Fmt("<text x=\"%.2f\" y=\"20\" font-size=\"14\">", kLeft) + XmlEscape(s.op) +
         ": held-out predicted vs measured</text>\n";
  svg += Fmt("<text x=\"%.2f\" y=\"38\">", kLeft) + XmlEscape(s.fit.cv_method) + "; median error " +
         Percent(s.fit.cv_median_rel_error) + ", p90 " + Percent(s.fit.cv_p90_rel_error) + "</text>\n";

  // Decade grid, ticks and labels.
  for (int d = axes.lo; d <= axes.hi; ++d) {
    const double x = axes.X(d), y = axes.Y(d);
    svg += Line(x, kTop, x, kTop + kSide, "stroke=\"#e0e0e0\"");
    svg += Line(kLeft, y, kLeft + kSide, y, "stroke=\"#e0e0e0\"");
    svg += Line(x, kTop + kSide, x, kTop + kSide + 5, "stroke=\"black\"");
    svg += Line(kLeft - 5, y, kLeft, y, "stroke=\"black\"");
    svg += Fmt("<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">", x, kTop + kSide + 18) + DecadeLabel(d) +
           "</text>\n";
    svg += Fmt("<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\">", kLeft - 8, y + 4) + DecadeLabel(d) + "</text>\n";
  }
  svg += Fmt("<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"none\" stroke=\"black\"/>\n", kLeft,
             kTop, kSide, kSide);
  svg += Fmt("<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">measured</text>\n", kLeft + kSide / 2,
             kTop + kSide + 40);
  svg += Fmt("<text x=\"20\" y=\"%.2f\" text-anchor=\"middle\" transform=\"rotate(-90 20 %.2f)\">"
             "predicted (held out)</text>\n",
             kTop + kSide / 2, kTop + kSide / 2);

  // y = x and the ±10% band, clipped to the plot area: in log space the
  // band lines are y = x shifted by log10(1.1) and log10(0.9).
  const double lo = axes.lo, hi = axes.hi;
  const double up = std::log10(1.1), down = std::log10(0.9);
  svg += Line(axes.X(lo), axes.Y(lo), axes.X(hi), axes.Y(hi), "stroke=\"black\" stroke-width=\"1\"");
  svg += Line(axes.X(lo), axes.Y(lo + up), axes.X(hi - up), axes.Y(hi),
              "stroke=\"#808080\" stroke-dasharray=\"4 3\"");
  svg += Line(axes.X(lo - down), axes.Y(lo), axes.X(hi), axes.Y(hi + down),
              "stroke=\"#808080\" stroke-dasharray=\"4 3\"");

  // Points, coloured by the rank of their group among the distinct groups.
  std::set<int> group_set;
  for (const HeldOut& h : s.held_out) group_set.insert(h.group);
  const std::vector<int> groups(group_set.begin(), group_set.end());
  auto colour = [&](int group) {
    const size_t rank = static_cast<size_t>(std::lower_bound(groups.begin(), groups.end(), group) - groups.begin());
    return kPalette[rank % kPaletteSize];
  };
  for (const HeldOut& h : s.held_out) {
    svg += Fmt("<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3\" fill=\"%s\" fill-opacity=\"0.8\"/>\n",
               axes.X(axes.Log(h.measured_ns)), axes.Y(axes.Log(h.predicted_ns)), colour(h.group));
  }

  // Legend: the band, then one swatch per group.
  const double lx = kLeft + kSide + 20;
  double ly = kTop + 10;
  svg += Line(lx, ly, lx + 16, ly, "stroke=\"black\"");
  svg += Fmt("<text x=\"%.2f\" y=\"%.2f\">y = x</text>\n", lx + 22, ly + 4);
  ly += 18;
  svg += Line(lx, ly, lx + 16, ly, "stroke=\"#808080\" stroke-dasharray=\"4 3\"");
  svg += Fmt("<text x=\"%.2f\" y=\"%.2f\">±10%%</text>\n", lx + 22, ly + 4);
  ly += 24;
  for (size_t i = 0; i < groups.size() && i < kMaxLegendEntries; ++i) {
    const auto named = s.group_names.find(groups[i]);
    const std::string label =
        named != s.group_names.end() ? named->second : "group " + std::to_string(groups[i]);
    svg += Fmt("<rect x=\"%.2f\" y=\"%.2f\" width=\"10\" height=\"10\" fill=\"%s\"/>\n", lx + 3, ly - 5,
               colour(groups[i]));
    svg += Fmt("<text x=\"%.2f\" y=\"%.2f\">", lx + 22, ly + 4) + XmlEscape(label) + "</text>\n";
    ly += 18;
  }
  if (groups.size() > kMaxLegendEntries) {
    svg += Fmt("<text x=\"%.2f\" y=\"%.2f\">and %zu more groups</text>\n", lx, ly + 4,
               groups.size() - kMaxLegendEntries);
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace fleetsim::calibrate

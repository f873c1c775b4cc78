#include "tools/report/svg.h"

#include <algorithm>
#include <cmath>

#include "tools/report/text.h"

namespace fleetsim::report {
namespace {

// Geometry, in px: the plot area is [kLeft, kWidth - kRight] x [kTop, kHeight - kBottom];
// the legend's rows follow below kHeight.
constexpr double kWidth = 680, kHeight = 360, kLeft = 72, kRight = 20, kTop = 34, kBottom = 50, kLegendRow = 18;
constexpr const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                    "#9467bd", "#8c564b", "#e377c2", "#17becf"};
constexpr const char* kRefColor = "#444";

struct Axis {
  bool log = false;
  double lo = 0, hi = 1;  // range, in log10 units on a log axis
  std::vector<double> ticks;

  bool Usable(double v) const { return std::isfinite(v) && (!log || v > 0); }
  // Position of `v` between p0 (at lo) and p1 (at hi), clamped to the range.
  double Map(double v, double p0, double p1) const {
    double t = log ? (v > 0 ? (std::log10(v) - lo) / (hi - lo) : 0) : (v - lo) / (hi - lo);
    return p0 + std::clamp(t, 0.0, 1.0) * (p1 - p0);
  }
};

double NiceStep(double raw) {
  const double e = std::pow(10, std::floor(std::log10(raw)));
  const double f = raw / e;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * e;
}

// An axis covering `values` (finite; empty gives [0, 1]).
Axis MakeAxis(const std::vector<double>& values, Scale scale, bool from_zero) {
  Axis a;
  std::vector<double> v;
  for (double d : values) {
    if (std::isfinite(d)) v.push_back(d);
  }
  double mn = v.empty() ? 0 : *std::min_element(v.begin(), v.end());
  double mx = v.empty() ? 1 : *std::max_element(v.begin(), v.end());
  const bool positive = !v.empty() && mn > 0;
  const bool any_positive = std::any_of(v.begin(), v.end(), [](double d) { return d > 0; });
  a.log = scale == Scale::kLog ? any_positive : scale == Scale::kAuto && positive && mx / mn >= 50;
  if (a.log) {
    double pmn = mx;
    for (double d : v) {
      if (d > 0) pmn = std::min(pmn, d);
    }
    a.lo = std::floor(std::log10(pmn));
    a.hi = std::ceil(std::log10(mx));
    if (a.hi <= a.lo) a.hi = a.lo + 1;
    for (int k = static_cast<int>(a.lo); k <= static_cast<int>(a.hi); ++k) {
      for (double m : {1.0, 2.0, 5.0}) {
        if (m > 1 && (a.hi - a.lo > 2 || k == static_cast<int>(a.hi))) continue;
        a.ticks.push_back(m * std::pow(10.0, k));
      }
    }
    return a;
  }
  if (from_zero && mn > 0) mn = 0;
  if (from_zero && mx < 0) mx = 0;
  if (mx == mn && from_zero && mn == 0) {
    mx = 1;  // all zero: show [0, 1] rather than a range around 0
  } else if (mx == mn) {
    const double d = mn == 0 ? 1 : std::fabs(mn) * 0.1;
    mn -= d;
    mx += d;
  }
  const double step = NiceStep((mx - mn) / 5);
  a.lo = std::floor(mn / step) * step;
  a.hi = std::ceil(mx / step) * step;
  for (int i = 0;; ++i) {
    double t = a.lo + i * step;
    if (t > a.hi + step * 1e-6) break;
    if (std::fabs(t) < step * 1e-9) t = 0;
    a.ticks.push_back(t);
  }
  return a;
}

struct Layout {
  Axis x, y;
  int points = 0;
};

Layout MakeLayout(const PlotSpec& spec) {
  std::vector<double> xs, ys;
  for (const Series& s : spec.series) {
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      xs.push_back(s.x[i]);
      ys.push_back(s.y[i]);
      if (i < s.err.size() && std::isfinite(s.err[i])) {
        // The figures plotted are non-negative (latencies, rates, costs): a
        // symmetric interval reaching below zero does not stretch the axis
        // there; its bar is clipped at the axis.
        ys.push_back(s.y[i] >= 0 ? std::max(0.0, s.y[i] - s.err[i]) : s.y[i] - s.err[i]);
        ys.push_back(s.y[i] + s.err[i]);
      }
    }
  }
  const bool any = !xs.empty();
  for (const RefLine& r : spec.refs) (r.vertical ? xs : ys).push_back(r.at);
  Layout l;
  l.x = MakeAxis(xs, spec.x_scale, spec.x_from_zero);
  l.y = MakeAxis(ys, spec.y_scale, spec.y_from_zero);
  if (!any) return l;
  for (const Series& s : spec.series) {
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) l.points += l.x.Usable(s.x[i]) && l.y.Usable(s.y[i]);
  }
  return l;
}

std::string Px(double v) { return Format("%.1f", v); }

double TextWidth(const std::string& s) { return 6.2 * static_cast<double>(s.size()); }

}  // namespace

int CountPoints(const PlotSpec& spec) { return MakeLayout(spec).points; }

std::string RenderPlot(const PlotSpec& spec) {
  const Layout l = MakeLayout(spec);
  if (l.points == 0) return "";
  const double x0 = kLeft, x1 = kWidth - kRight, y0 = kHeight - kBottom, y1 = kTop;
  auto px = [&](double v) { return l.x.Map(v, x0, x1); };
  auto py = [&](double v) { return l.y.Map(v, y0, y1); };

  // Legend entries, laid out in rows below the plot.
  struct Entry {
    std::string name, color;
    bool dashed, faint, line, dot;
  };
  std::vector<Entry> entries;
  int color_index = 0;
  std::vector<std::string> colors;
  for (const Series& s : spec.series) {
    colors.push_back(s.faint ? "#888" : kPalette[color_index++ % std::size(kPalette)]);
    if (!s.name.empty()) entries.push_back({s.name, colors.back(), false, s.faint, s.line, s.points || !s.line});
  }
  for (const RefLine& r : spec.refs) {
    if (!r.label.empty()) entries.push_back({r.label, kRefColor, true, false, true, false});
  }
  std::string legend;
  double lx = kLeft, ly = kHeight + 4;
  for (const Entry& e : entries) {
    const double w = 30 + TextWidth(e.name) + 16;
    if (lx + w > kWidth - kRight && lx > kLeft) {
      lx = kLeft;
      ly += kLegendRow;
    }
    if (e.line)
      legend += "<line x1=\"" + Px(lx) + "\" y1=\"" + Px(ly + 6) + "\" x2=\"" + Px(lx + 24) + "\" y2=\"" + Px(ly + 6) +
                "\" stroke=\"" + e.color + "\" stroke-width=\"2\"" + (e.dashed ? " stroke-dasharray=\"6 4\"" : "") +
                (e.faint ? " opacity=\"0.5\"" : "") + "/>";
    if (e.dot) {
      legend += "<circle cx=\"" + Px(lx + 12) + "\" cy=\"" + Px(ly + 6) + "\" r=\"3\" fill=\"" + e.color + "\"" +
                (e.faint ? " opacity=\"0.5\"" : "") + "/>";
    }
    legend += "<text x=\"" + Px(lx + 30) + "\" y=\"" + Px(ly + 10) + "\">" + HtmlEscape(e.name) + "</text>";
    lx += w;
  }
  const double height = entries.empty() ? kHeight : ly + kLegendRow + 2;

  std::string o;
  o += "<svg class=\"plot\" data-points=\"" + std::to_string(l.points) +
       "\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + Px(kWidth) + " " + Px(height) + "\" width=\"" +
       Px(kWidth) + "\" height=\"" + Px(height) + "\" role=\"img\" aria-label=\"" + HtmlEscape(spec.title) + "\">";
  o += "<title>" + HtmlEscape(spec.title) + "</title>";
  o += "<g font-family=\"sans-serif\" font-size=\"11\" fill=\"#222\">";
  o += "<text x=\"" + Px(kWidth / 2) + "\" y=\"20\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">" +
       HtmlEscape(spec.title) + "</text>";
  // Grid, ticks and tick labels.
  o += "<g class=\"axes\" stroke=\"#ddd\">";
  std::string labels;
  for (double t : l.x.ticks) {
    const double p = px(t);
    o += "<line x1=\"" + Px(p) + "\" y1=\"" + Px(y1) + "\" x2=\"" + Px(p) + "\" y2=\"" + Px(y0 + 5) + "\"/>";
    labels += "<text x=\"" + Px(p) + "\" y=\"" + Px(y0 + 17) + "\" text-anchor=\"middle\">" + Num(t) + "</text>";
  }
  for (double t : l.y.ticks) {
    const double p = py(t);
    o += "<line x1=\"" + Px(x0 - 5) + "\" y1=\"" + Px(p) + "\" x2=\"" + Px(x1) + "\" y2=\"" + Px(p) + "\"/>";
    labels += "<text x=\"" + Px(x0 - 8) + "\" y=\"" + Px(p + 4) + "\" text-anchor=\"end\">" + Num(t) + "</text>";
  }
  o += "</g><rect x=\"" + Px(x0) + "\" y=\"" + Px(y1) + "\" width=\"" + Px(x1 - x0) + "\" height=\"" + Px(y0 - y1) +
       "\" fill=\"none\" stroke=\"#888\"/>";
  o += labels;
  o += "<text x=\"" + Px((x0 + x1) / 2) + "\" y=\"" + Px(kHeight - 10) + "\" text-anchor=\"middle\">" +
       HtmlEscape(spec.x_label) + (l.x.log ? " (log scale)" : "") + "</text>";
  o += "<text transform=\"translate(16," + Px((y0 + y1) / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
       HtmlEscape(spec.y_label) + (l.y.log ? " (log scale)" : "") + "</text>";
  // Reference lines.
  for (const RefLine& r : spec.refs) {
    if (!(r.vertical ? l.x : l.y).Usable(r.at)) continue;
    const double p = r.vertical ? px(r.at) : py(r.at);
    o += "<line class=\"ref\" x1=\"" + Px(r.vertical ? p : x0) + "\" y1=\"" + Px(r.vertical ? y0 : p) + "\" x2=\"" +
         Px(r.vertical ? p : x1) + "\" y2=\"" + Px(r.vertical ? y1 : p) + "\" stroke=\"" + kRefColor +
         "\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>";
  }
  // Series: faint ones first, so that the others are drawn over them.
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t k = 0; k < spec.series.size(); ++k) {
      const Series& s = spec.series[k];
      if (s.faint != (pass == 0)) continue;
      const std::string& c = colors[k];
      const std::string opacity = s.faint ? " opacity=\"0.45\"" : "";
      std::string d, err, dots;
      int n = 0;
      for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
        if (!l.x.Usable(s.x[i]) || !l.y.Usable(s.y[i])) continue;
        const double cx = px(s.x[i]), cy = py(s.y[i]);
        d += (n++ == 0 ? "M" : "L") + Px(cx) + " " + Px(cy);
        if (i < s.err.size() && std::isfinite(s.err[i]) && s.err[i] > 0) {
          const double lo = py(s.y[i] - s.err[i]), hi = py(s.y[i] + s.err[i]);
          err += "M" + Px(cx) + " " + Px(lo) + "V" + Px(hi) + "M" + Px(cx - 3) + " " + Px(lo) + "H" + Px(cx + 3) + "M" +
                 Px(cx - 3) + " " + Px(hi) + "H" + Px(cx + 3);
        }
        dots += "<circle class=\"pt\" cx=\"" + Px(cx) + "\" cy=\"" + Px(cy) + "\" r=\"" + Px(s.radius) + "\" fill=\"" +
                c + "\"" + opacity + "/>";
      }
      if (n == 0) continue;
      o += "<g class=\"series\">";
      if (!err.empty())
        o += "<path class=\"err\" d=\"" + err + "\" stroke=\"" + c + "\" fill=\"none\"" + opacity + "/>";
      if (s.line && n > 1) {
        o += "<path class=\"line\" d=\"" + d + "\" stroke=\"" + c + "\" stroke-width=\"1.8\" fill=\"none\"" + opacity +
             "/>";
      }
      if (s.points || n == 1 || !s.line) o += dots;
      o += "</g>";
    }
  }
  o += "<g class=\"legend\">" + legend + "</g></g></svg>\n";
  return o;
}

}  // namespace fleetsim::report

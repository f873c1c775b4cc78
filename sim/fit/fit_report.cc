#include "sim/fit/fit_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace fleetsim {

std::string Percent(const std::optional<double>& v) {
  if (!v) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", 100 * *v);
  return b;
}

namespace {

std::string Number(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

// The metrics some run compares (a published figure is often one or two of
// them): the tables and the chart leave the others out.
std::vector<int> Compared(const FitResult& r) {
  std::vector<int> out;
  for (int m = 0; m < kNumFitMetrics; ++m)
    if (MedianAbsError(r.before, m)) out.push_back(m);
  return out;
}

// One table: a row per run, a column per compared metric, signed errors.
std::string RunTable(const std::vector<RunErrors>& errors, const std::vector<int>& metrics) {
  std::string t = "| run |";
  for (int m : metrics) t += std::string(" ") + kFitMetrics[m] + " |";
  t += "\n|---|";
  for (size_t i = 0; i < metrics.size(); ++i) t += "---|";
  t += "\n";
  for (const RunErrors& e : errors) {
    t += "| " + e.run + " |";
    for (int m : metrics) t += " " + Percent(e.error[m]) + " |";
    t += "\n";
  }
  return t;
}

}  // namespace

std::string FitReportMarkdown(const FitResult& r, const std::vector<ReplayRun>& runs,
                              const std::string& profile_name) {
  std::string md = "# fleetsim fit: " + profile_name + "\n\n";
  md += std::to_string(runs.size()) + " observed run" + (runs.size() == 1 ? "" : "s") + " replayed, " +
        std::to_string(r.evaluations) + " simulations, " + std::to_string(r.iterations) +
        " Levenberg-Marquardt iterations on all runs.\n\n";
  if (!r.warnings.empty()) {
    md += "## Warnings\n\n";
    for (const std::string& w : r.warnings) md += "- " + w + "\n";
    md += "\n";
  }
  md += "## Terms\n\n" + std::to_string(r.figures) + " observed figure" + (r.figures == 1 ? "" : "s") +
        ". \"spread\": the posterior spread of the term on its fitted scale (a factor of e for a cost, a unit "
        "of the logistic scale for a fraction) at a 5% scatter per figure; below 0.3 the runs determine it.\n\n"
        "| term | unit | side | before | fitted | spread | what the runs say |\n|---|---|---|---|---|---|---|\n";
  for (int i = 0; i < kNumFitTerms; ++i) {
    std::string verdict = "kept: no run depends on it";
    std::string spread = "-";
    if (r.informed[i]) {
      spread = Number(r.spread[i]);
      verdict = r.determined[i] ? "determined" : "not determined: stays near its start";
      if (r.at_bound[i] != 0) verdict += std::string(r.at_bound[i] < 0 ? "; at its lower bound" : "; at its upper bound");
    }
    md += std::string("| ") + kFitTerms[static_cast<size_t>(i)] + " | " + FitTermUnit(i) + " | " +
          (IsGpuFitTerm(i) ? "GPU" : "CPU / server") + " | " + Number(r.initial_terms[i]) + " | " +
          (r.informed[i] ? Number(r.terms[i]) : "-") + " | " + spread + " | " + verdict + " |\n";
  }
  const std::vector<int> metrics = Compared(r);
  md += "\n## Median |error| per metric (simulated vs observed)\n\n| metric | before | fitted | left out |\n"
        "|---|---|---|---|\n";
  for (int m : metrics)
    md += std::string("| ") + kFitMetrics[m] + " | " + Percent(MedianAbsError(r.before, m)) + " | " +
          Percent(MedianAbsError(r.after, m)) + " | " + Percent(MedianAbsError(r.left_out, m)) + " |\n";
  md += "\n\"left out\": each run predicted by terms fitted on the others";
  md += r.left_out.empty() ? " (needs two runs or more: not computed).\n" : ".\n";
  md += "\n## Per run, before the fit (signed: simulated / observed - 1)\n\n" + RunTable(r.before, metrics);
  md += "\n## Per run, fitted on all runs\n\n" + RunTable(r.after, metrics);
  if (!r.left_out.empty()) md += "\n## Per run, left out of the fit\n\n" + RunTable(r.left_out, metrics);
  md += "\n![median error per metric](errors.svg)\n";
  return md;
}

std::string FitErrorsSvg(const FitResult& r) {
  constexpr int kW = 760, kH = 320, kLeft = 60, kBottom = 260, kTop = 30;
  const std::vector<RunErrors>* sets[3] = {&r.before, &r.after, &r.left_out};
  const char* colours[3] = {"#c0504d", "#4f81bd", "#9bbb59"};
  const char* labels[3] = {"before", "fitted", "left out"};
  const std::vector<int> metrics = Compared(r);
  double top = 0.05;
  for (const auto* set : sets)
    for (int m : metrics) top = std::max(top, MedianAbsError(*set, m).value_or(0));
  top = std::ceil(top * 20) / 20;  // a multiple of 5%
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(kW) + "\" height=\"" +
                    std::to_string(kH) + "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg += "<text x=\"" + std::to_string(kLeft) + "\" y=\"18\" font-size=\"13\">median |error| per metric</text>\n";
  char b[256];
  for (int g = 0; g <= 4; ++g) {
    const double y = kBottom - (kBottom - kTop) * g / 4.0;
    std::snprintf(b, sizeof b,
                  "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%d\" y=\"%.1f\" "
                  "text-anchor=\"end\">%.0f%%</text>\n",
                  kLeft, y, kW - 10, y, kLeft - 4, y + 4, 100 * top * g / 4.0);
    svg += b;
  }
  const double group = (kW - kLeft - 10) / static_cast<double>(std::max<size_t>(metrics.size(), 1));
  const double bar = group / 4;
  for (size_t g = 0; g < metrics.size(); ++g) {
    const int m = metrics[g];
    for (int k = 0; k < 3; ++k) {
      const std::optional<double> v = MedianAbsError(*sets[k], m);
      if (!v) continue;
      const double h = (kBottom - kTop) * std::min(*v, top) / top;
      std::snprintf(b, sizeof b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n",
                    kLeft + g * group + (k + 0.5) * bar, kBottom - h, bar * 0.9, h, colours[k]);
      svg += b;
    }
    std::snprintf(b, sizeof b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
                  kLeft + (g + 0.5) * group, kBottom + 16, kFitMetrics[m]);
    svg += b;
  }
  for (int k = 0; k < 3; ++k) {
    std::snprintf(b, sizeof b,
                  "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/><text x=\"%d\" y=\"%d\">%s</text>\n",
                  kLeft + k * 100, kBottom + 32, colours[k], kLeft + k * 100 + 14, kBottom + 41, labels[k]);
    svg += b;
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace fleetsim

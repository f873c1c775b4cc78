#include "tools/live_diff.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "sim/metrics/text_out.h"
#include "tools/report/csv.h"
#include "tools/report/svg.h"
#include "tools/report/text.h"

namespace fleetsim {
namespace {

struct Metric {
  const char* name;
  const Distribution Summary::*field;
  const char* unit;
};
constexpr Metric kMetrics[] = {
    {"ttft", &Summary::ttft, "ms"}, {"tpot", &Summary::tpot, "ms"}, {"itl", &Summary::itl, "ms"},
    {"e2e", &Summary::e2e, "ms"},   {"queue", &Summary::queue, "ms"},
};
struct Stat {
  const char* name;
  std::optional<double> Distribution::*field;
};
constexpr Stat kStats[] = {{"mean", &Distribution::mean}, {"p50", &Distribution::p50}, {"p90", &Distribution::p90},
                           {"p95", &Distribution::p95},   {"p99", &Distribution::p99}};

// Per-request TTFT and TPOT (ms) of a requests.csv, completed requests only.
Status ReadLatencies(const std::string& path, std::vector<double>* ttft, std::vector<double>* tpot) {
  return report::ReadCsv(path, {"arrival_s", "first_token_s", "finish_s", "output_tokens", "status"},
                         [&](const report::CsvRow& row) -> Status {
                           if (row.cells[4] != "completed") return Status::Ok();
                           double v[4];
                           for (int i = 0; i < 4; ++i)
                             if (!report::ParseNumber(row.cells[static_cast<size_t>(i)], &v[i]))
                               return report::BadCell(path, row, i == 0 ? "arrival_s" : i == 1 ? "first_token_s" : i == 2 ? "finish_s" : "output_tokens",
                                                      row.cells[static_cast<size_t>(i)]);
                           ttft->push_back((v[1] - v[0]) * 1e3);
                           if (v[3] > 1) tpot->push_back((v[2] - v[1]) * 1e3 / (v[3] - 1));
                           return Status::Ok();
                         });
}

// A CDF as at most 200 points: the value at each of 200 evenly spaced ranks.
report::Series Cdf(const std::string& name, std::vector<double> values) {
  report::Series s;
  s.name = name;
  s.points = false;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  if (n == 0) return s;
  const size_t points = std::min<size_t>(n, 200);
  for (size_t i = 0; i < points; ++i) {
    const size_t r = points == 1 ? n - 1 : i * (n - 1) / (points - 1);
    s.x.push_back(values[r]);
    s.y.push_back(static_cast<double>(r + 1) / static_cast<double>(n));
  }
  return s;
}

// The bound on |relative error| of a metric's statistic: P50 and P99 of
// TTFT and TPOT only.
std::optional<double> TargetOf(const Metric& m, const Stat& st, const LiveDiffTargets& targets) {
  const std::string metric = m.name, stat = st.name;
  if (metric != "ttft" && metric != "tpot") return std::nullopt;
  if (stat == "p50") return targets.p50;
  if (stat == "p99") return targets.p99;
  return std::nullopt;
}

std::string Ms(const std::optional<double>& v) { return v ? report::Format("%.3f", *v) : "-"; }

// One statistic of the simulation (x) against the live run's (y).
struct Comparison {
  std::optional<double> abs, rel;  // x - y, (x - y) / y
  std::optional<double> target;    // the bound on |rel|, where there is one
  bool met = false;
  std::string rel_cell, target_cell;  // diff.md's
};

Comparison Compare(const Metric& m, const Stat& st, const std::optional<double>& x, const std::optional<double>& y,
                   const LiveDiffTargets& targets) {
  Comparison c;
  if (x && y) {
    c.abs = *x - *y;
    if (*y != 0) c.rel = (*x - *y) / *y;
  }
  c.target = TargetOf(m, st, targets);
  c.met = c.target && c.rel && std::fabs(*c.rel) <= *c.target;
  c.rel_cell = c.rel ? report::Format("%+.1f%%", 100 * *c.rel) : std::string("-");
  if (c.target) c.target_cell = report::Format("±%.0f%% %s", 100 * *c.target, c.met ? "met" : "**missed**");
  return c;
}

}  // namespace

Status DiffLiveRun(const Summary& sim, const Summary& live, const std::string& sim_requests,
                   const std::string& live_requests, const std::vector<std::string>& context,
                   const LiveDiffTargets& targets, const KernelsAsRun* as_run, LiveDiff* out) {
  std::vector<double> sim_ttft, sim_tpot, live_ttft, live_tpot, run_ttft, run_tpot;
  FLEETSIM_RETURN_IF_ERROR(ReadLatencies(sim_requests, &sim_ttft, &sim_tpot));
  FLEETSIM_RETURN_IF_ERROR(ReadLatencies(live_requests, &live_ttft, &live_tpot));
  if (as_run) FLEETSIM_RETURN_IF_ERROR(ReadLatencies(as_run->sim_requests, &run_ttft, &run_tpot));

  JsonWriter w;
  w.BeginObject();
  w.Key("format").String("fleetsim-live-diff");
  w.Key("version").Int(1);
  w.Key("error").String("relative error = (sim - live) / live; absolute error = sim - live");
  w.Key("targets").BeginObject().Key("p50").Double(targets.p50).Key("p99").Double(targets.p99);
  w.Key("applies_to").String("ttft and tpot").EndObject();
  std::string md = "# Simulation against live run\n\n";
  for (const std::string& c : context) md += "- " + c + "\n";
  md += "\nRelative error is (sim − live) / live: negative means the simulation was optimistic.\n\n";
  md += "| metric | stat | sim (ms) | live (ms) | abs (ms) | rel | target |\n|---|---|---:|---:|---:|---:|---|\n";
  out->misses.clear();
  out->as_run_line.clear();
  w.Key("metrics").BeginObject();
  for (const Metric& m : kMetrics) {
    const Distribution& a = sim.*m.field;
    const Distribution& b = live.*m.field;
    w.Key(m.name).BeginObject();
    w.Key("count").BeginObject().Key("sim").Int(a.count).Key("live").Int(b.count).EndObject();
    for (const Stat& st : kStats) {
      const std::optional<double>& x = a.*st.field;
      const std::optional<double>& y = b.*st.field;
      const Comparison c = Compare(m, st, x, y, targets);
      w.Key(st.name).BeginObject();
      if (x) w.Key("sim").Double(*x); else w.Key("sim").Null();
      if (y) w.Key("live").Double(*y); else w.Key("live").Null();
      if (c.abs) w.Key("abs").Double(*c.abs); else w.Key("abs").Null();
      if (c.rel) w.Key("rel").Double(*c.rel); else w.Key("rel").Null();
      if (c.target) w.Key("target").Double(*c.target).Key("met").Bool(c.met);
      w.EndObject();
      if (c.target && !c.met)
        out->misses.push_back(std::string(m.name) + " " + st.name + ": sim " + Ms(x) + " ms, live " + Ms(y) + " ms" +
                              (c.rel ? report::Format(" (%+.1f%%)", 100 * *c.rel) : std::string(" (no value)")));
      md += "| " + std::string(m.name) + " | " + st.name + " | " + Ms(x) + " | " + Ms(y) + " | " + Ms(c.abs) + " | " +
            c.rel_cell + " | " + c.target_cell + " |\n";
    }
    w.EndObject();
  }
  w.EndObject();
  auto counts = [&](const Summary& s) {
    JsonWriter& o = w.BeginObject();
    o.Key("arrived").Int(s.arrived).Key("completed").Int(s.completed).Key("rejected").Int(s.rejected);
    o.Key("failed").Int(s.failed).Key("unfinished").Int(s.unfinished);
    o.Key("retried").Int(s.reliability ? s.reliability->requests_retried : 0);
    if (s.output_tokens_per_s) o.Key("output_tokens_per_s").Double(*s.output_tokens_per_s);
    o.EndObject();
  };
  w.Key("requests").BeginObject();
  w.Key("sim");
  counts(sim);
  w.Key("live");
  counts(live);
  w.EndObject();
  out->within_targets = out->misses.empty();
  w.Key("within_targets").Bool(out->within_targets);
  std::string as_run_md;
  if (as_run) {
    w.Key("kernels_as_run").BeginObject();
    w.Key("kernel_time_scale").Double(as_run->scale);
    w.Key("note").String("the simulation again, its profile's kernel times multiplied by kernel_time_scale (the "
                         "live run's measured over predicted, live.json): the error left is the rest of the model's");
    // Counts that turn on timing (how many requests a failed replica was
    // streaming) compare with these: the simulation at the speed the
    // kernels ran.
    w.Key("requests");
    counts(*as_run->sim);
    as_run_md = report::Format(
        "\n## With the kernels at the speed they ran\n\nThe kernels ran at %.3f× the profile's figures for the same "
        "batches (live.json); simulated again with them so priced, the error left is the rest of the model's "
        "(scheduling, batching, queueing, the executor's terms):\n\n"
        "| metric | stat | sim (ms) | live (ms) | rel | target |\n|---|---|---:|---:|---:|---|\n",
        as_run->scale);
    bool all_met = true;
    w.Key("metrics").BeginObject();
    for (const Metric& m : kMetrics) {
      w.Key(m.name).BeginObject();
      for (const Stat& st : kStats) {
        const std::optional<double>& x = as_run->sim->*m.field.*st.field;
        const std::optional<double>& y = live.*m.field.*st.field;
        const Comparison c = Compare(m, st, x, y, targets);
        if (c.target && !c.met) all_met = false;
        if (c.target && c.rel)
          out->as_run_line += (out->as_run_line.empty() ? "" : ", ") + std::string(m.name) + " " + st.name +
                              report::Format(" %+.1f%%", 100 * *c.rel);
        w.Key(st.name).BeginObject();
        if (x) w.Key("sim").Double(*x); else w.Key("sim").Null();
        if (c.rel) w.Key("rel").Double(*c.rel); else w.Key("rel").Null();
        if (c.target) w.Key("met").Bool(c.met);
        w.EndObject();
        as_run_md += "| " + std::string(m.name) + " | " + st.name + " | " + Ms(x) + " | " + Ms(y) + " | " + c.rel_cell +
                     " | " + c.target_cell + " |\n";
      }
      w.EndObject();
    }
    w.EndObject();
    w.Key("within_targets").Bool(all_met);
    w.EndObject();
    as_run_md += all_met ? "\nWithin targets with the kernels as they ran.\n"
                         : "\nMissed targets even with the kernels as they ran.\n";
  }
  w.EndObject();
  out->json = w.Finish();

  md += "\n| requests | sim | live |\n|---|---:|---:|\n";
  auto row = [&](const char* name, int64_t a, int64_t b) {
    md += report::Format("| %s | %lld | %lld |\n", name, static_cast<long long>(a), static_cast<long long>(b));
  };
  row("arrived", sim.arrived, live.arrived);
  row("completed", sim.completed, live.completed);
  row("rejected", sim.rejected, live.rejected);
  row("failed", sim.failed, live.failed);
  row("unfinished", sim.unfinished, live.unfinished);
  row("retried", sim.reliability ? sim.reliability->requests_retried : 0,
      live.reliability ? live.reliability->requests_retried : 0);
  md += out->within_targets ? "\nWithin targets (P50 TTFT and TPOT ±" + report::Format("%.0f", 100 * targets.p50) +
                                  "%, P99 ±" + report::Format("%.0f", 100 * targets.p99) + "%).\n"
                            : "\nMissed targets:\n";
  for (const std::string& m : out->misses) md += "- " + m + "\n";
  md += as_run_md;

  out->svgs.clear();
  for (int k = 0; k < 2; ++k) {
    report::PlotSpec p;
    p.title = k == 0 ? "TTFT, simulated and live" : "TPOT, simulated and live";
    p.x_label = k == 0 ? "TTFT (ms)" : "TPOT (ms)";
    p.y_label = "fraction of completed requests";
    p.x_scale = report::Scale::kLog;
    p.series.push_back(Cdf("simulated", k == 0 ? sim_ttft : sim_tpot));
    p.series.push_back(Cdf("live", k == 0 ? live_ttft : live_tpot));
    if (as_run) p.series.push_back(Cdf("simulated, kernels as run", k == 0 ? run_ttft : run_tpot));
    const std::string svg = report::RenderPlot(p);
    if (svg.empty()) continue;
    const std::string name = k == 0 ? "diff_ttft.svg" : "diff_tpot.svg";
    out->svgs.emplace_back(name, svg);
    md += "\n![" + p.title + "](" + name + ")\n";
  }
  out->markdown = std::move(md);
  return Status::Ok();
}

}  // namespace fleetsim

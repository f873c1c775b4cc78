#include "tools/report/run_report.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "tools/report/checked_json.h"
#include "tools/report/csv.h"
#include "tools/report/text.h"

namespace fleetsim::report {
namespace {

// Averages runs of consecutive entries so that at most `max` remain.
std::vector<double> Thin(const std::vector<double>& v, size_t max) {
  if (v.size() <= max) return v;
  std::vector<double> out;
  out.reserve(max);
  for (size_t b = 0; b < max; ++b) {
    const size_t lo = b * v.size() / max, hi = (b + 1) * v.size() / max;
    double sum = 0;
    for (size_t i = lo; i < hi; ++i) sum += v[i];
    out.push_back(sum / static_cast<double>(hi - lo));
  }
  return out;
}

// The empirical CDF of `v` (sorted in place), as at most kMaxCdfPoints
// points taken at evenly spaced ranks, the extremes included.
Series Cdf(std::vector<double> v, const std::string& name) {
  std::sort(v.begin(), v.end());
  Series s;
  s.name = name;
  s.points = false;
  const size_t n = v.size(), k = std::min(n, kMaxCdfPoints);
  for (size_t j = 0; j < k; ++j) {
    const size_t i = k == 1 ? n - 1 : static_cast<size_t>(std::llround(static_cast<double>(j) * (n - 1) / (k - 1)));
    s.x.push_back(v[i]);
    s.y.push_back(static_cast<double>(i + 1) / static_cast<double>(n));
  }
  return s;
}

// Latencies of the measured, completed requests of requests.csv, as the
// summary computes them (sim/metrics/collector.cc).
struct RequestLatencies {
  std::vector<double> ttft_ms, tpot_ms, e2e_ms;
  size_t rows = 0, measured = 0;
};

Status ReadRequests(const std::string& path, std::optional<double> warmup_s, std::optional<int64_t> measured,
                    RequestLatencies* out) {
  struct Row {
    double arrival, first_token, finish, generated;
    bool completed;
  };
  std::vector<Row> rows;
  const std::vector<std::string> cols = {"arrival_s", "first_token_s", "finish_s", "generated_tokens", "status"};
  FLEETSIM_RETURN_IF_ERROR(ReadCsv(path, cols, [&](const CsvRow& r) {
    Row row{};
    row.completed = r.cells[4] == "completed";
    double* fields[] = {&row.arrival, &row.first_token, &row.finish, &row.generated};
    for (int i = 0; i < 4; ++i) {
      // A request that never got its first token or finished leaves those cells empty.
      if (!ParseNumber(r.cells[i], fields[i]) && (i == 0 || row.completed))
        return BadCell(path, r, cols[i], r.cells[i]);
    }
    rows.push_back(row);
    return Status::Ok();
  }));
  // summary.json does not give the warm-up; its count of measured requests
  // does: they are the latest arrivals (those at or after the warm-up).
  double cut = -std::numeric_limits<double>::infinity();
  if (warmup_s) {
    cut = *warmup_s;
  } else if (measured && *measured < static_cast<int64_t>(rows.size())) {
    std::vector<double> arrivals;
    for (const Row& r : rows) arrivals.push_back(r.arrival);
    std::sort(arrivals.begin(), arrivals.end());
    cut = *measured <= 0 ? std::numeric_limits<double>::infinity() : arrivals[arrivals.size() - *measured];
  }
  out->rows = rows.size();
  for (const Row& r : rows) {
    if (r.arrival < cut) continue;
    ++out->measured;
    if (!r.completed) continue;
    out->ttft_ms.push_back((r.first_token - r.arrival) * 1e3);
    out->e2e_ms.push_back((r.finish - r.arrival) * 1e3);
    if (r.generated > 1) out->tpot_ms.push_back((r.finish - r.first_token) * 1e3 / (r.generated - 1));
  }
  return Status::Ok();
}

// itl.csv: a histogram of inter-token latencies, as a CDF at the bins' upper edges.
Status ReadItl(const std::string& path, Series* out) {
  std::vector<double> high, count;
  const std::vector<std::string> cols = {"low_ms", "high_ms", "count"};
  FLEETSIM_RETURN_IF_ERROR(ReadCsv(path, cols, [&](const CsvRow& r) {
    double v[3];
    for (int i = 0; i < 3; ++i) {
      if (!ParseNumber(r.cells[i], &v[i])) return BadCell(path, r, cols[i], r.cells[i]);
    }
    if (v[2] < 0) return BadCell(path, r, "count", r.cells[2]);
    high.push_back(v[1]);
    count.push_back(v[2]);
    return Status::Ok();
  }));
  double total = 0;
  for (double c : count) total += c;
  out->name = "ITL (itl.csv histogram)";
  out->points = false;
  if (total <= 0) return Status::Ok();
  double cum = 0;
  std::vector<double> xs, ys;
  for (size_t i = 0; i < high.size(); ++i) {
    cum += count[i];
    if (count[i] > 0) {
      xs.push_back(high[i]);
      ys.push_back(cum / total);
    }
  }
  // Thin by taking evenly spaced bins: a CDF must keep its steps' positions.
  const size_t k = std::min(xs.size(), kMaxCdfPoints);
  for (size_t j = 0; j < k; ++j) {
    const size_t i = k == 1 ? xs.size() - 1 : j * (xs.size() - 1) / (k - 1);
    out->x.push_back(xs[i]);
    out->y.push_back(ys[i]);
  }
  return Status::Ok();
}

std::vector<Cell> DistributionRow(const std::string& name, const Node& d) {
  std::vector<Cell> row = {name, std::to_string(d.Get("count").Int())};
  for (const char* k : {"mean", "p50", "p90", "p95", "p99", "max"}) row.push_back(Num(d.Get(k).NumOrNull()));
  return row;
}

PlotSpec CdfPlot(const std::string& title, Series s, std::optional<double> slo, const std::string& slo_name) {
  PlotSpec p;
  p.title = title;
  p.x_label = "latency (ms)";
  p.y_label = "fraction of requests";
  p.x_from_zero = true;
  p.y_scale = Scale::kLinear;
  p.series.push_back(std::move(s));
  if (slo) p.refs.push_back({true, *slo, slo_name + " SLO " + Num(*slo) + " ms"});
  return p;
}

}  // namespace

Status ReadFleetTimeseries(const std::string& path, FleetTimeseries* out) {
  struct Sample {
    double queue = 0, running = 0, kv = 0, arrivals = 0, ready = 0, usd = 0;
    int replicas = 0;
  };
  // Runs before the autoscaling issue wrote no cost rate.
  bool scaled = false;
  {
    std::ifstream in(path, std::ios::binary);
    std::string header;
    std::getline(in, header);
    scaled = header.find(",state,usd_per_hour") != std::string::npos;
  }
  std::map<double, Sample> by_time;
  std::vector<std::string> cols = {"t_s", "arrivals", "queue_depth", "running", "kv_util"};
  if (scaled) {
    cols.push_back("state");
    cols.push_back("usd_per_hour");
  }
  FLEETSIM_RETURN_IF_ERROR(ReadCsv(path, cols, [&](const CsvRow& r) {
    double v[5];
    for (int i = 0; i < 5; ++i) {
      if (!ParseNumber(r.cells[i], &v[i])) return BadCell(path, r, cols[i], r.cells[i]);
    }
    Sample& s = by_time[v[0]];
    s.arrivals += v[1];
    s.queue += v[2];
    s.running += v[3];
    s.kv += v[4];
    ++s.replicas;
    if (scaled) {
      if (r.cells[5] == "ready") s.ready += 1;
      double usd = 0;
      if (!r.cells[6].empty() && !ParseNumber(r.cells[6], &usd)) return BadCell(path, r, cols[6], r.cells[6]);
      s.usd += usd;
    }
    return Status::Ok();
  }));
  FleetTimeseries all;
  for (const auto& [t, s] : by_time) {
    all.t_s.push_back(t);
    all.queue_depth.push_back(s.queue);
    all.running.push_back(s.running);
    all.kv_util.push_back(s.kv / s.replicas);
    all.arrivals.push_back(s.arrivals);
    if (scaled) {
      all.ready.push_back(s.ready);
      all.usd_per_hour.push_back(s.usd);
    }
  }
  for (auto member : {&FleetTimeseries::t_s, &FleetTimeseries::queue_depth, &FleetTimeseries::running,
                      &FleetTimeseries::kv_util, &FleetTimeseries::arrivals, &FleetTimeseries::ready,
                      &FleetTimeseries::usd_per_hour}) {
    out->*member = Thin(all.*member, kMaxSeriesPoints);
  }
  return Status::Ok();
}

void AddTimeseriesPlots(Document* doc, const FleetTimeseries& ts, bool all) {
  auto plot = [&](const std::string& title, const std::string& y_label,
                  std::vector<std::pair<std::string, const std::vector<double>*>> series) {
    PlotSpec p;
    p.title = title;
    p.x_label = "simulated time (s)";
    p.y_label = y_label;
    p.x_scale = p.y_scale = Scale::kLinear;
    p.x_from_zero = true;
    for (const auto& [name, ys] : series) {
      Series s;
      s.name = name;
      s.x = ts.t_s;
      s.y = *ys;
      s.points = false;
      p.series.push_back(std::move(s));
    }
    doc->Plot(p, title + ": timeseries.csv has no samples.");
  };
  if (all) {
    plot("Queue depth and running requests over time", "requests",
         {{"queued (sum over replicas)", &ts.queue_depth}, {"running (sum over replicas)", &ts.running}});
  } else {
    plot("Queue depth over time", "queued requests", {{"queued (sum over replicas)", &ts.queue_depth}});
  }
  plot("KV-cache utilisation over time", "KV-cache use (fraction)", {{"KV use (mean over replicas)", &ts.kv_util}});
  if (all) plot("Arrivals over time", "arrivals per sample interval", {{"arrivals (sum over replicas)", &ts.arrivals}});
  if (all && !ts.ready.empty()) {
    plot("Ready replicas over time", "replicas", {{"ready", &ts.ready}});
    plot("Fleet cost rate over time", "$ per hour", {{"cost rate (sum over replicas)", &ts.usd_per_hour}});
  }
}

Status RenderRunReport(const std::string& dir, ReportFiles* out) {
  const std::string file = dir + "/summary.json";
  nlohmann::json j;
  FLEETSIM_RETURN_IF_ERROR(ReadJsonObject(file, &j));
  JsonErrors errors(file);
  const Node root(&j, "", &errors);
  const Node run = root.Get("run"), req = root.Get("requests"), lat = root.Get("latency_ms"),
             thr = root.Get("throughput"), cost = root.Get("cost"), slo = root.Opt("slo"), sim = root.Opt("sim");

  const std::string scenario = run.Get("scenario").Str();
  Document doc("fleetsim run report: " + scenario);
  doc.Heading(1, "Run report: " + scenario);
  std::string intro = "Scenario " + scenario;
  if (auto seed = run.Opt("seed").NumOrNull()) intro += ", seed " + Num(*seed);
  intro += ", fleetsim " + run.Opt("fleetsim_version").StrOr("(unknown version)") + ".";
  for (const Node& o : run.Opt("overrides").ItemsOrEmpty()) intro += " Override: " + o.Str() + ".";
  doc.Paragraph(intro);

  if (const Node fleet = root.Opt("fleet"); fleet.present()) {
    doc.Heading(2, "Fleet");
    std::vector<std::vector<Cell>> rows;
    // Expert parallelism's columns only where a pool has it (summary.json
    // writes ep and dp above 1).
    bool expert_parallel = false;
    for (const Node& p : fleet.Get("pools").Items()) expert_parallel = expert_parallel || p.Opt("ep").present();
    auto degree = [](const Node& p, const char* key) {
      return p.Opt(key).present() ? std::to_string(p.Get(key).Int()) : std::string("1");
    };
    for (const Node& p : fleet.Get("pools").Items()) {
      std::vector<Cell> row = {p.Get("name").Str(), p.Get("model").Str(), p.Get("gpu").Str(),
                               std::to_string(p.Get("replicas").Int()), std::to_string(p.Get("tp").Int()),
                               std::to_string(p.Get("pp").Int())};
      if (expert_parallel) {
        row.push_back(degree(p, "ep"));
        row.push_back(degree(p, "dp"));
      }
      for (Cell c : std::vector<Cell>{std::to_string(p.Get("gpus").Int()), p.Opt("scheduler").StrOr(""),
                                      p.Opt("engine").StrOr(""), Usd(p.Opt("usd_per_gpu_hour").NumOrNull())})
        row.push_back(std::move(c));
      rows.push_back(std::move(row));
    }
    std::vector<std::string> header = {"Pool", "Model", "GPU", "Replicas", "TP", "PP"};
    if (expert_parallel) header.insert(header.end(), {"EP", "DP (attention)"});
    header.insert(header.end(), {"GPUs", "Scheduler", "Engine", "$/GPU-hour"});
    doc.Table(header, rows);
  }

  doc.Heading(2, "Summary");
  const std::optional<int64_t> measured = req.Get("measured").Int();
  std::vector<std::vector<Cell>> rows = {
      {"Requests arrived", std::to_string(req.Get("arrived").Int())},
      {"Measured (arrived after warm-up)", std::to_string(*measured)},
      {"Completed", std::to_string(req.Get("completed").Int())},
      {"Rejected", std::to_string(req.Get("rejected").Int())},
      {"Failed", std::to_string(req.Get("failed").Int())},
      {"Unfinished", std::to_string(req.Opt("unfinished").IntOrNull().value_or(0))},
      {"Measurement window (s)", Num(thr.Get("window_s").Num())},
      {"Throughput (requests/s)", Num(thr.Opt("requests_per_s").NumOrNull())},
      {"Output tokens/s", Num(thr.Opt("output_tokens_per_s").NumOrNull())},
      {"Input tokens/s", Num(thr.Opt("input_tokens_per_s").NumOrNull())},
  };
  for (const auto& [reason, n] : req.Opt("reasons").MembersOrEmpty()) {
    rows.push_back({"Not completed: " + reason, std::to_string(n.Int())});
  }
  if (slo.present()) {
    rows.push_back({"SLO: TTFT (ms)", Num(slo.Opt("ttft_ms").NumOrNull())});
    rows.push_back({"SLO: TPOT (ms)", Num(slo.Opt("tpot_ms").NumOrNull())});
    rows.push_back({"SLO attainment (measured requests within the SLO)", Percent(slo.Opt("attainment").NumOrNull())});
    rows.push_back({"Goodput (requests/s within the SLO)", Num(slo.Opt("goodput_rps").NumOrNull())});
  }
  rows.push_back({"Fleet cost ($/hour)", Usd(cost.Get("usd_per_hour").NumOrNull())});
  rows.push_back({"Run cost ($)", Num(cost.Opt("total_usd").NumOrNull())});
  rows.push_back({"GPU-hours", Num(cost.Opt("gpu_hours").NumOrNull())});
  rows.push_back({"$ per million output tokens", Num(cost.Opt("usd_per_million_output_tokens").NumOrNull())});
  if (sim.present()) {
    rows.push_back({"Simulated time (s)", Num(sim.Opt("simulated_s").NumOrNull())});
    rows.push_back({"Preemptions", Num(sim.Opt("preemptions").NumOrNull())});
    std::string overloaded = sim.Opt("overloaded").BoolOr(false) ? "yes" : "no";
    const std::string why = sim.Opt("overload").Opt("reason").StrOr("");
    if (!why.empty()) overloaded += ": " + why;
    rows.push_back({"Overloaded", overloaded});
  }
  doc.Table({"Quantity", "Value"}, rows);

  if (const Node as = root.Opt("autoscaling"); as.present()) {
    // Autoscaling and spot (docs/autoscaling.md).
    doc.Heading(2, "Autoscaling");
    doc.Table({"Quantity", "Value"},
              {{"Replicas started (scale-ups)", std::to_string(as.Get("scale_ups").Int())},
               {"Replicas drained or cancelled (scale-downs)", std::to_string(as.Get("scale_downs").Int())},
               {"Ready replicas, fewest to most",
                std::to_string(as.Get("replicas_min").Int()) + "–" + std::to_string(as.Get("replicas_max").Int())},
               {"Replica-seconds not stopped", Num(as.Get("replica_seconds").Num())},
               {"Starts refused (no capacity)", std::to_string(as.Get("refused").Int())},
               {"Starts on the fallback class", std::to_string(as.Get("fallbacks").Int())},
               {"Spot reclaims", std::to_string(as.Get("spot_reclaims").Int())},
               {"Idle share of paid GPU time", Percent(cost.Opt("idle_share").NumOrNull())}});
  }
  if (const Node parts = cost.Opt("by_pool"); parts.present() && parts.ItemsOrEmpty().size() > 1) {
    doc.Heading(2, "Cost by pool and pricing class");
    std::vector<std::vector<Cell>> crows;
    for (const Node& c : parts.ItemsOrEmpty())
      crows.push_back({c.Get("pool").Str(), c.Get("pricing_class").Str(), Num(c.Get("gpu_hours").Num()),
                       Num(c.Get("busy_gpu_hours").Num()), Num(c.Opt("usd").NumOrNull())});
    doc.Table({"Pool", "Pricing class", "GPU-hours", "Busy GPU-hours", "$"}, crows);
  }

  if (const Node fail = root.Opt("failures"); fail.present()) {
    // Failures and rolling restarts (docs/reliability.md).
    const Node avail = root.Opt("availability"), restarts = root.Opt("restarts");
    doc.Heading(2, "Failures and availability");
    std::vector<std::vector<Cell>> frows = {
        {"Failure events", std::to_string(fail.Get("events").Int())},
        {"Replicas taken down", std::to_string(fail.Get("replica_failures").Int())},
        {"Requests failed to the client", std::to_string(fail.Get("requests_failed").Int())},
        {"Requests retried", std::to_string(fail.Get("requests_retried").Int())},
        {"Output tokens of failed requests", std::to_string(fail.Get("partial_output_tokens").Int())},
        {"Mean detection delay (s)", Num(fail.Opt("detection_delay_s_mean").NumOrNull())},
        {"Replica downtime (replica-s)", Num(fail.Get("replica_downtime_s").Num())},
        {"Availability: requests completed", Percent(avail.Opt("requests").NumOrNull())},
        {"Availability: time at required capacity", Percent(avail.Opt("capacity").NumOrNull())},
    };
    for (const auto& [cause, n] : fail.Opt("by_cause").MembersOrEmpty())
      frows.push_back({"Events: " + cause, std::to_string(n.Int())});
    if (slo.present() && slo.Opt("requests_in_failure_windows").present()) {
      frows.push_back({"SLO attainment, arrivals in failure windows", Percent(slo.Opt("attainment_in_failure_windows").NumOrNull())});
      frows.push_back({"SLO attainment, other arrivals", Percent(slo.Opt("attainment_outside_failure_windows").NumOrNull())});
      if (slo.Opt("attainment_during_restarts").present())
        frows.push_back({"SLO attainment, arrivals during rolling restarts", Percent(slo.Opt("attainment_during_restarts").NumOrNull())});
    }
    if (restarts.present()) {
      frows.push_back({"Replicas restarted", std::to_string(restarts.Get("replicas_restarted").Int())});
      frows.push_back({"Rolling restart duration (s)", Num(restarts.Get("duration_s").Num())});
      frows.push_back({"Fewest ready replicas during it", std::to_string(restarts.Get("min_ready_replicas").Int())});
    }
    doc.Table({"Quantity", "Value"}, frows);
  }

  doc.Heading(2, "Latency (ms), measured completed requests");
  std::vector<std::vector<Cell>> lrows = {
      DistributionRow("TTFT", lat.Get("ttft")), DistributionRow("TPOT", lat.Get("tpot")),
      DistributionRow("ITL", lat.Get("itl")), DistributionRow("E2E", lat.Get("e2e"))};
  if (lat.Opt("queue").present()) lrows.push_back(DistributionRow("Queueing", lat.Get("queue")));
  doc.Table({"Latency", "Count", "Mean", "p50", "p90", "p95", "p99", "Max"}, lrows);
  doc.Paragraph("Percentiles: " + lat.Opt("percentiles").StrOr("unknown") + ".");

  if (const auto warnings = root.Opt("warnings").ItemsOrEmpty(); !warnings.empty()) {
    doc.Heading(2, "Warnings");
    std::vector<std::string> items;
    for (const Node& w : warnings) items.push_back(w.Str());
    doc.List(items);
  }
  // Stop before reading the CSVs when the summary itself is wrong.
  const std::optional<double> warmup = run.Opt("warmup_s").NumOrNull();
  const std::optional<double> ttft_slo = slo.Opt("ttft_ms").NumOrNull(), tpot_slo = slo.Opt("tpot_ms").NumOrNull();
  FLEETSIM_RETURN_IF_ERROR(errors.status());

  doc.Heading(2, "Latency distributions");
  RequestLatencies lats;
  FLEETSIM_RETURN_IF_ERROR(ReadRequests(dir + "/requests.csv", warmup, measured, &lats));
  doc.Paragraph("CDFs over the " + std::to_string(lats.measured) + " measured requests of requests.csv (" +
                std::to_string(lats.rows) + " rows), completed ones only, as in summary.json; SLO thresholds dashed.");
  doc.Plot(CdfPlot("TTFT CDF", Cdf(lats.ttft_ms, "TTFT"), ttft_slo, "TTFT"),
           "No completed measured requests: no TTFT CDF.");
  doc.Plot(CdfPlot("TPOT CDF", Cdf(lats.tpot_ms, "TPOT"), tpot_slo, "TPOT"),
           "No measured request produced more than one token: no TPOT CDF.");
  doc.Plot(CdfPlot("End-to-end latency CDF", Cdf(lats.e2e_ms, "E2E"), std::nullopt, ""),
           "No completed measured requests: no end-to-end latency CDF.");
  const std::string itl = dir + "/itl.csv";
  if (CheckRegularFile(itl, "ITL histogram").ok()) {
    Series s;
    FLEETSIM_RETURN_IF_ERROR(ReadItl(itl, &s));
    doc.Plot(CdfPlot("Inter-token latency CDF", std::move(s), std::nullopt, ""), "itl.csv holds no inter-token gaps.");
  } else {
    doc.Paragraph("No itl.csv in this folder: no inter-token latency distribution.");
  }

  doc.Heading(2, "Over time");
  FleetTimeseries ts;
  FLEETSIM_RETURN_IF_ERROR(ReadFleetTimeseries(dir + "/timeseries.csv", &ts));
  AddTimeseriesPlots(&doc, ts, true);
  *out = doc.Finish();
  return Status::Ok();
}

}  // namespace fleetsim::report

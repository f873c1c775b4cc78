// The planner's machine-readable outputs: plan.json, curves.csv and
// frontier.csv (formats in docs/plan.md), and the stdout lines.
#include <cmath>
#include <cstdio>
#include <set>

#include "sim/metrics/text_out.h"
#include "sim/plan/planner.h"

namespace fleetsim {
namespace {

void Opt(JsonWriter& w, double v) {
  if (std::isfinite(v))
    w.Double(v);
  else
    w.Null();
}

void Settings(JsonWriter& w, const std::vector<std::pair<std::string, std::string>>& settings) {
  w.BeginObject();
  for (const auto& [k, v] : settings) w.Key(k).RawValue(v);
  w.EndObject();
}

void Launch(JsonWriter& w, const PlanLaunch& l) {
  w.BeginObject();
  w.Key("engine").String(l.engine);
  w.Key("replicas").Int(l.replicas);
  w.Key("command").String(l.command);
  w.EndObject();
}

void Headroom(JsonWriter& w, const PlanResult& /*r*/, const PlanFamily& f) {
  if (!f.headroom_scale) {
    w.Null();
    return;
  }
  w.BeginObject();
  w.Key("rate_scale").Double(*f.headroom_scale);
  w.Key("rate_per_s");
  Opt(w, f.base_rate_per_s ? *f.base_rate_per_s * *f.headroom_scale : std::nan(""));
  w.Key("capped").Bool(f.headroom_capped);
  w.EndObject();
}

void Binding(JsonWriter& w, const PlanResult& r, const PlanFamily& f) {
  if (!f.binding) {
    w.Null();
    return;
  }
  w.BeginObject();
  w.Key("target").String(r.plan.targets[f.binding->target].id);
  w.Key("rate_scale").Double(f.binding->rate_scale);
  w.EndObject();
}

const char* StatusName(PlanFamily::Status s) {
  switch (s) {
    case PlanFamily::Status::kMeets: return "meets";
    case PlanFamily::Status::kMisses: return "misses";
    case PlanFamily::Status::kDropped: return "dropped";
  }
  return "dropped";
}

// Configs that appear in the outputs: those with a point, and the chosen.
std::vector<bool> ConfigsShown(const PlanResult& r) {
  std::vector<bool> shown(r.configs.size(), false);
  for (const PlanPoint& p : r.points) shown[p.config] = true;
  if (r.chosen >= 0) shown[r.chosen] = true;
  return shown;
}

std::string Csv(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

void CsvNum(TextBuffer& b, double v) {
  if (std::isfinite(v)) b.Double(v);
}

}  // namespace

std::string PlanResultToJson(const PlanResult& r, const std::string& fleetsim_version) {
  const PlanSpec& plan = r.plan;
  JsonWriter w;
  w.BeginObject();
  w.Key("format").String("fleetsim-plan-result");
  w.Key("version").Int(1);
  w.Key("plan").BeginObject();
  w.Key("name").String(plan.name);
  w.Key("file").String(plan.file);
  w.Key("sha256").String(plan.sha256);
  w.Key("seed").Int(static_cast<int64_t>(plan.seed));
  w.Key("replications").Int(plan.replications);
  w.Key("confidence").Double(0.95);
  w.Key("shortlist").Int(plan.shortlist);
  w.Key("fleetsim_version").String(fleetsim_version);
  w.EndObject();
  w.Key("scenario").BeginObject().Key("name").String(r.scenario_name).Key("file").String(plan.scenario_file).EndObject();
  w.Key("load").BeginObject();
  w.Key("base_rate_per_s");
  Opt(w, r.base_rate_per_s ? *r.base_rate_per_s : std::nan(""));
  w.Key("rate_scales").BeginArray();
  for (double s : plan.rate_scales) w.Double(s);
  w.EndArray();
  w.Key("max_rate_scale").Double(plan.max_rate_scale);
  w.Key("trace_window_s");
  Opt(w, plan.trace_window_s ? *plan.trace_window_s : std::nan(""));
  w.Key("traffic_replicated").Bool(r.traffic_replicated);
  w.Key("description").String(r.load_description);
  w.EndObject();
  w.Key("targets").BeginArray();
  for (const PlanTarget& t : plan.targets)
    w.BeginObject()
        .Key("id").String(t.id)
        .Key("metric").String(t.metric)
        .Key("kind").String(t.is_max ? "max" : "min")
        .Key("limit").Double(t.limit)
        .Key("label").String(t.label)
        .EndObject();
  w.EndArray();
  if (plan.node_failure_at_s) {
    // Every run of every config had its worst node fail at this time
    // (configs[].drill_node).
    w.Key("node_failure")
        .BeginObject()
        .Key("at_s").Double(*plan.node_failure_at_s)
        .Key("kind").String(plan.node_failure_kind)
        .EndObject();
  }
  w.Key("budget_usd_per_hour");
  Opt(w, plan.budget_usd_per_hour ? *plan.budget_usd_per_hour : std::nan(""));
  w.Key("quotas").BeginObject();
  for (const auto& [gpu, n] : plan.quotas) w.Key(gpu).Int(n);
  w.EndObject();
  w.Key("dimensions").BeginArray();
  for (const PlanDimension& d : plan.dimensions) {
    w.BeginObject();
    w.Key("keys").BeginArray();
    for (const std::string& k : d.keys) w.String(k);
    w.EndArray();
    if (d.bisect) {
      w.Key("search").String("bisect").Key("min").Int(d.min).Key("max").Int(d.max);
      if (d.keys.size() > 1 || d.ratios.size() > 1) {
        w.Key("ratios").BeginArray();
        for (const std::vector<int64_t>& ratio : d.ratios) {
          w.BeginArray();
          for (int64_t share : ratio) w.Int(share);
          w.EndArray();
        }
        w.EndArray();
      }
    } else {
      w.Key("values").BeginArray();
      for (const auto& v : d.values) {
        if (v.size() == 1) {
          w.RawValue(v[0]);
        } else {
          w.BeginArray();
          for (const std::string& x : v) w.RawValue(x);
          w.EndArray();
        }
      }
      w.EndArray();
      w.Key("search").String("exhaustive");
    }
    w.EndObject();
  }
  w.EndArray();
  w.Key("assumptions").BeginArray();
  for (const std::string& a : r.assumptions) w.String(a);
  w.EndArray();
  w.Key("monotonicity").BeginArray();
  for (const auto& [f, text] : r.monotonicity) w.BeginObject().Key("family").Int(f).Key("text").String(text).EndObject();
  w.EndArray();

  w.Key("families").BeginArray();
  for (const PlanFamily& f : r.families) {
    w.BeginObject();
    w.Key("id").Int(f.id);
    w.Key("label").String(f.label);
    w.Key("settings");
    Settings(w, f.settings);
    if (f.ratio.size() > 1) {
      // Its replica counts are min_replicas (and replica_range) times these.
      w.Key("ratio").BeginArray();
      for (int64_t share : f.ratio) w.Int(share);
      w.EndArray();
    }
    w.Key("status").String(StatusName(f.status));
    w.Key("reason").String(f.reason);
    w.Key("replica_range");
    if (f.replica_range)
      w.BeginArray().Int(f.replica_range->first).Int(f.replica_range->second).EndArray();
    else
      w.Null();
    w.Key("min_replicas");
    if (f.min_replicas)
      w.Int(*f.min_replicas);
    else
      w.Null();
    w.Key("config");
    if (f.status == PlanFamily::Status::kMeets && f.config >= 0)
      w.String(r.configs[f.config].id);
    else
      w.Null();
    w.Key("shortlisted").Bool(f.shortlisted);
    w.Key("headroom");
    Headroom(w, r, f);
    w.Key("binding");
    Binding(w, r, f);
    w.Key("cost_curve").BeginArray();
    for (const PlanFamily::CostPoint& c : f.cost_curve) {
      w.BeginObject();
      w.Key("rate_scale").Double(c.rate_scale);
      w.Key("rate_per_s");
      Opt(w, f.base_rate_per_s ? *f.base_rate_per_s * c.rate_scale : std::nan(""));
      w.Key("replicas");
      if (c.replicas)
        w.Int(*c.replicas);
      else
        w.Null();
      w.Key("usd_per_hour");
      Opt(w, c.config >= 0 && r.configs[c.config].usd_per_hour ? *r.configs[c.config].usd_per_hour : std::nan(""));
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();

  const std::vector<bool> shown = ConfigsShown(r);
  w.Key("configs").BeginArray();
  // In family, then replica order, as the points.
  std::vector<int> order;
  for (size_t i = 0; i < r.configs.size(); ++i)
    if (shown[i]) order.push_back(static_cast<int>(i));
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    if (r.configs[a].family != r.configs[b].family) return r.configs[a].family < r.configs[b].family;
    return r.configs[a].replicas < r.configs[b].replicas;
  });
  for (int i : order) {
    const PlanConfig& c = r.configs[i];
    w.BeginObject();
    w.Key("id").String(c.id);
    w.Key("family").Int(c.family);
    w.Key("replicas").Int(c.launch.replicas);
    w.Key("settings");
    Settings(w, c.settings);
    if (c.drill_node >= 0) w.Key("drill_node").Int(c.drill_node);
    w.Key("gpus").Int(c.gpus);
    w.Key("gpus_by_type").BeginObject();
    for (const auto& [g, n] : c.gpus_by_type) w.Key(g).Int(n);
    w.EndObject();
    w.Key("usd_per_hour");
    Opt(w, c.usd_per_hour ? *c.usd_per_hour : std::nan(""));
    if (c.autoscaled) {
      // usd_per_hour is then the measured mean at the stated load.
      w.Key("autoscaled").Bool(true);
      w.Key("peak_usd_per_hour");
      Opt(w, c.peak_usd_per_hour ? *c.peak_usd_per_hour : std::nan(""));
    }
    w.Key("memory").BeginObject();
    w.Key("gpu_mib").Double(c.gpu_mib);
    w.Key("weights_gib_per_gpu").Double(std::round(c.weights_gib_per_gpu * 1000) / 1000);
    w.Key("kv_gib_per_gpu").Double(std::round(c.kv_gib_per_gpu * 1000) / 1000);
    w.Key("kv_blocks").Int(c.kv_blocks);
    w.EndObject();
    w.Key("launch");
    Launch(w, c.launch);
    w.EndObject();
  }
  w.EndArray();

  w.Key("points").BeginArray();
  for (const PlanPoint& p : r.points) {
    w.BeginObject();
    w.Key("config").String(r.configs[p.config].id);
    w.Key("rate_scale").Double(p.rate_scale);
    w.Key("rate_per_s");
    Opt(w, p.rate_per_s ? *p.rate_per_s : std::nan(""));
    w.Key("replications").Int(plan.replications);
    w.Key("metrics").BeginObject();
    for (int m = 0; m < kNumPlanMetrics; ++m) {
      const Interval& iv = p.metrics[m];
      w.Key(PlanMetricName(m)).BeginObject();
      w.Key("mean");
      Opt(w, iv.mean);
      w.Key("half_width");
      Opt(w, iv.half_width);
      w.Key("lo");
      Opt(w, iv.lo);
      w.Key("hi");
      Opt(w, iv.hi);
      w.Key("values").BeginArray();
      for (double v : p.values[m]) Opt(w, v);
      w.EndArray();
      w.EndObject();
    }
    w.EndObject();
    w.Key("met_fraction").BeginObject();
    for (size_t t = 0; t < plan.targets.size(); ++t) w.Key(plan.targets[t].id).Double(p.met_fraction[t]);
    w.EndObject();
    w.Key("meets").BeginObject();
    for (size_t t = 0; t < plan.targets.size(); ++t) w.Key(plan.targets[t].id).Bool(p.meets[t]);
    w.EndObject();
    w.Key("meets_all").Bool(p.meets_all);
    w.Key("worst_ratio");
    Opt(w, p.worst_ratio);
    w.EndObject();
  }
  w.EndArray();

  w.Key("recommendations").BeginArray();
  int rank = 0;
  for (int f : r.recommendations) {
    const PlanFamily& fam = r.families[f];
    const PlanConfig& c = r.configs[fam.config];
    w.BeginObject();
    w.Key("rank").Int(++rank);
    w.Key("family").Int(f);
    w.Key("config").String(c.id);
    w.Key("usd_per_hour");
    Opt(w, c.usd_per_hour ? *c.usd_per_hour : std::nan(""));
    w.Key("gpus").Int(c.gpus);
    w.Key("replicas").Int(c.launch.replicas);
    w.Key("launch");
    Launch(w, c.launch);
    w.Key("headroom");
    Headroom(w, r, fam);
    w.Key("binding");
    Binding(w, r, fam);
    w.EndObject();
  }
  w.EndArray();
  w.Key("frontier_cost").String(r.frontier_cost_is_usd ? "usd_per_hour" : "gpus");
  w.Key("frontier").BeginArray();
  for (int c : r.frontier) w.String(r.configs[c].id);
  w.EndArray();
  w.Key("chosen");
  if (r.chosen >= 0)
    w.BeginObject().Key("config").String(r.configs[r.chosen].id).Key("run").String("chosen").EndObject();
  else
    w.Null();
  int64_t dropped = 0, shown_n = 0;
  for (const PlanFamily& f : r.families) dropped += f.status == PlanFamily::Status::kDropped;
  for (bool s : shown) shown_n += s;
  w.Key("counts").BeginObject();
  w.Key("families").Int(static_cast<int64_t>(r.families.size()));
  w.Key("dropped").Int(dropped);
  w.Key("configs").Int(shown_n);
  w.Key("points").Int(static_cast<int64_t>(r.points.size()));
  w.Key("simulations").Int(r.simulations);
  w.EndObject();
  w.EndObject();
  return w.Finish();
}

std::string PlanCurvesCsv(const PlanResult& r) {
  TextBuffer b;
  b.Raw("config,family,replicas,rate_scale,rate_per_s,metric,mean,half_width,lo,hi\n");
  for (const PlanPoint& p : r.points) {
    const PlanConfig& c = r.configs[p.config];
    for (int m = 0; m < kNumPlanMetrics; ++m) {
      const Interval& iv = p.metrics[m];
      b.Raw(c.id);
      b.Char(',');
      b.Int(c.family);
      b.Char(',');
      b.Int(c.launch.replicas);
      b.Char(',');
      b.Double(p.rate_scale);
      b.Char(',');
      if (p.rate_per_s) b.Double(*p.rate_per_s);
      b.Char(',');
      b.Raw(PlanMetricName(m));
      for (double v : {iv.mean, iv.half_width, iv.lo, iv.hi}) {
        b.Char(',');
        CsvNum(b, v);
      }
      b.Char('\n');
    }
  }
  return std::move(b.str());
}

std::string PlanFrontierCsv(const PlanResult& r) {
  const std::vector<int> lat = FrontierMetrics(r.plan);
  TextBuffer b;
  b.Raw("config,family,label,replicas,gpus,usd_per_hour");
  for (int m : lat) {
    std::string id = PlanMetricName(m);
    id.resize(id.size() - 3);  // "ttft_p99_ms" -> "ttft_p99", as the target ids
    b.Raw("," + id + "_mean," + id + "_half_width," + id + "_hi");
  }
  b.Raw(",meets_all\n");
  for (int ci : r.frontier) {
    const PlanConfig& c = r.configs[ci];
    const PlanPoint* p = nullptr;
    for (const PlanPoint& q : r.points)
      if (q.config == ci && q.rate_scale == 1.0) p = &q;
    if (!p) continue;
    b.Raw(c.id);
    b.Char(',');
    b.Int(c.family);
    b.Char(',');
    b.Raw(Csv(r.families[c.family].label));
    b.Char(',');
    b.Int(c.launch.replicas);
    b.Char(',');
    b.Int(c.gpus);
    b.Char(',');
    if (c.usd_per_hour) b.Double(*c.usd_per_hour);
    for (int m : lat) {
      const Interval& iv = p->metrics[m];
      for (double v : {iv.mean, iv.half_width, iv.hi}) {
        b.Char(',');
        CsvNum(b, v);
      }
    }
    b.Raw(p->meets_all ? ",true\n" : ",false\n");
  }
  return std::move(b.str());
}

std::string FormatPlanSummary(const PlanResult& r) {
  std::string s;
  char buf[512];
  int64_t meets = 0, dropped = 0;
  for (const PlanFamily& f : r.families) {
    meets += f.status == PlanFamily::Status::kMeets;
    dropped += f.status == PlanFamily::Status::kDropped;
  }
  std::snprintf(buf, sizeof buf, "families    %zu: %lld meet the targets, %lld dropped before running\n",
                r.families.size(), static_cast<long long>(meets), static_cast<long long>(dropped));
  s += buf;
  std::snprintf(buf, sizeof buf, "simulated   %zu points, %lld simulations (%d replications each)\n", r.points.size(),
                static_cast<long long>(r.simulations), r.plan.replications);
  s += buf;
  if (r.recommendations.empty()) {
    s += "no configuration meets every target within the plan's ranges, quotas and budget\n";
    return s;
  }
  int rank = 0;
  for (int f : r.recommendations) {
    const PlanFamily& fam = r.families[f];
    const PlanConfig& c = r.configs[fam.config];
    std::snprintf(buf, sizeof buf, "%s #%d     %s, %d replica%s, %lld GPUs, %s/h", rank == 0 ? "recommend" : "         ",
                  rank + 1, fam.label.c_str(), c.launch.replicas, c.launch.replicas == 1 ? "" : "s",
                  static_cast<long long>(c.gpus), c.usd_per_hour ? ("$" + std::to_string(std::lround(*c.usd_per_hour))).c_str() : "no price");
    s += buf;
    if (fam.headroom_scale) {
      std::snprintf(buf, sizeof buf, ", headroom %s%.3gx load", fam.headroom_capped ? ">= " : "", *fam.headroom_scale);
      s += buf;
    }
    if (fam.binding) s += ", then " + r.plan.targets[fam.binding->target].id + " binds";
    s += "\n";
    if (rank == 0) s += "            " + c.launch.command + "\n";
    ++rank;
  }
  return s;
}

}  // namespace fleetsim

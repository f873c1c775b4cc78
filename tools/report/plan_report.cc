#include "tools/report/plan_report.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "tools/report/checked_json.h"
#include "tools/report/document.h"
#include "tools/report/run_report.h"
#include "tools/report/text.h"

namespace fleetsim::report {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// plan.json, typed: the fields the report shows (docs/plan.md).
struct Interval {
  std::optional<double> mean, half_width, lo, hi;
  std::vector<std::optional<double>> values;  // one per replication
};
struct Target {
  std::string id, metric, kind, label;
  double limit = 0;
  bool latency() const { return metric.size() > 3 && metric.compare(metric.size() - 3, 3, "_ms") == 0; }
};
struct Headroom {
  double rate_scale = 0;
  std::optional<double> rate_per_s;
  bool capped = false;
};
struct Binding {
  std::string target;
  double rate_scale = 0;
};
struct Launch {
  std::string engine, command;
  std::optional<int64_t> replicas;
};
struct CostPoint {
  double rate_scale = 0;
  std::optional<double> rate_per_s, replicas, usd_per_hour;
};
struct Family {
  int64_t id = 0;
  std::string label, status, reason;
  std::optional<std::pair<int64_t, int64_t>> replica_range;
  std::optional<int64_t> min_replicas;
  std::optional<std::string> config;
  bool shortlisted = false;
  std::optional<Headroom> headroom;
  std::optional<Binding> binding;
  std::vector<CostPoint> cost_curve;
};
struct Config {
  std::string id;
  int64_t family = 0, replicas = 0, gpus = 0;
  std::optional<double> usd_per_hour;
  std::optional<Launch> launch;
};
struct Point {
  std::string config;
  double rate_scale = 0;
  std::optional<double> rate_per_s;
  int64_t replications = 0;
  std::map<std::string, Interval> metrics;
  std::map<std::string, double> met_fraction;
  std::map<std::string, bool> meets;
  bool meets_all = false;
};
struct Recommendation {
  int64_t rank = 0, family = 0;
  std::string config;
  std::optional<double> usd_per_hour;
  std::optional<int64_t> gpus, replicas;
  std::optional<Launch> launch;
  std::optional<Headroom> headroom;
  std::optional<Binding> binding;
};
struct Plan {
  std::string name, scenario_name, scenario_file;
  int64_t replications = 0;
  double confidence = 0.95;
  std::string load_description;
  std::optional<double> base_rate_per_s, max_rate_scale, trace_window_s, budget_usd_per_hour;
  std::vector<double> rate_scales;
  bool traffic_replicated = true;
  std::vector<Target> targets;
  std::vector<std::pair<std::string, double>> quotas;
  std::vector<std::string> assumptions;
  std::vector<std::pair<int64_t, std::string>> monotonicity;
  std::vector<Family> families;
  std::vector<Config> configs;
  std::vector<Point> points;
  std::vector<Recommendation> recommendations;
  std::vector<std::string> frontier;
  std::optional<std::string> chosen_config, chosen_run;
  std::vector<std::pair<std::string, int64_t>> counts;
};

std::optional<Headroom> ReadHeadroom(const Node& n) {
  if (!n.present()) return std::nullopt;
  return Headroom{n.Get("rate_scale").Num(), n.Opt("rate_per_s").NumOrNull(), n.Opt("capped").BoolOr(false)};
}

std::optional<Binding> ReadBinding(const Node& n) {
  if (!n.present()) return std::nullopt;
  return Binding{n.Get("target").Str(), n.Get("rate_scale").Num()};
}

std::optional<Launch> ReadLaunch(const Node& n) {
  if (!n.present()) return std::nullopt;
  return Launch{n.Opt("engine").StrOr(""), n.Get("command").Str(), n.Opt("replicas").IntOrNull()};
}

void ReadPlan(const Node& root, Plan* p) {
  if (const std::string f = root.Get("format").Str(); f != "fleetsim-plan-result" && !f.empty()) {
    root.Get("format").Fail("expected \"fleetsim-plan-result\", got \"" + f + "\"");
  }
  if (const int64_t v = root.Get("version").Int(); v != 1)
    root.Get("version").Fail("version " + std::to_string(v) + " is not supported (this fleetsim reads 1)");
  const Node plan = root.Get("plan");
  p->name = plan.Get("name").Str();
  p->replications = plan.Get("replications").Int();
  p->confidence = plan.Opt("confidence").NumOrNull().value_or(0.95);
  const Node scenario = root.Get("scenario");
  p->scenario_name = scenario.Opt("name").StrOr("");
  p->scenario_file = scenario.Opt("file").StrOr("");
  const Node load = root.Get("load");
  p->base_rate_per_s = load.Get("base_rate_per_s").NumOrNull();
  for (const Node& s : load.Get("rate_scales").Items()) p->rate_scales.push_back(s.Num());
  p->max_rate_scale = load.Opt("max_rate_scale").NumOrNull();
  p->trace_window_s = load.Opt("trace_window_s").NumOrNull();
  p->traffic_replicated = load.Get("traffic_replicated").Bool();
  p->load_description = load.Opt("description").StrOr("");
  for (const Node& t : root.Get("targets").Items()) {
    p->targets.push_back({t.Get("id").Str(), t.Get("metric").Str(), t.Get("kind").Str(), t.Opt("label").StrOr(""),
                          t.Get("limit").Num()});
    if (p->targets.back().label.empty()) p->targets.back().label = p->targets.back().id;
  }
  p->budget_usd_per_hour = root.Opt("budget_usd_per_hour").NumOrNull();
  for (const auto& [gpu, n] : root.Opt("quotas").MembersOrEmpty()) p->quotas.emplace_back(gpu, n.Num());
  for (const Node& a : root.Opt("assumptions").ItemsOrEmpty()) p->assumptions.push_back(a.Str());
  for (const Node& m : root.Opt("monotonicity").ItemsOrEmpty()) {
    p->monotonicity.emplace_back(m.Get("family").Int(), m.Get("text").Str());
  }
  for (const Node& f : root.Get("families").Items()) {
    Family fam;
    fam.id = f.Get("id").Int();
    fam.label = f.Get("label").Str();
    fam.status = f.Get("status").Str();
    if (fam.status != "meets" && fam.status != "misses" && fam.status != "dropped") {
      f.Get("status").Fail("expected \"meets\", \"misses\" or \"dropped\", got \"" + fam.status + "\"");
    }
    fam.reason = f.Opt("reason").StrOr("");
    if (const Node r = f.Opt("replica_range"); r.present()) {
      const std::vector<Node> lh = r.Items();
      if (lh.size() == 2) {
        fam.replica_range.emplace(lh[0].Int(), lh[1].Int());
      } else {
        r.Fail("expected [lo, hi] or null");
      }
    }
    fam.min_replicas = f.Opt("min_replicas").IntOrNull();
    fam.config = f.Opt("config").StrOrNull();
    fam.shortlisted = f.Opt("shortlisted").BoolOr(false);
    fam.headroom = ReadHeadroom(f.Opt("headroom"));
    fam.binding = ReadBinding(f.Opt("binding"));
    for (const Node& c : f.Opt("cost_curve").ItemsOrEmpty()) {
      fam.cost_curve.push_back({c.Get("rate_scale").Num(), c.Opt("rate_per_s").NumOrNull(),
                                c.Opt("replicas").NumOrNull(), c.Opt("usd_per_hour").NumOrNull()});
    }
    p->families.push_back(std::move(fam));
  }
  for (const Node& c : root.Get("configs").Items()) {
    p->configs.push_back({c.Get("id").Str(), c.Get("family").Int(), c.Get("replicas").Int(), c.Get("gpus").Int(),
                          c.Get("usd_per_hour").NumOrNull(), ReadLaunch(c.Opt("launch"))});
  }
  for (const Node& n : root.Get("points").Items()) {
    Point pt;
    pt.config = n.Get("config").Str();
    pt.rate_scale = n.Get("rate_scale").Num();
    pt.rate_per_s = n.Opt("rate_per_s").NumOrNull();
    pt.replications = n.Opt("replications").IntOrNull().value_or(p->replications);
    for (const auto& [name, m] : n.Get("metrics").Members()) {
      Interval& iv = pt.metrics[name];
      iv.mean = m.Get("mean").NumOrNull();
      iv.half_width = m.Opt("half_width").NumOrNull();
      iv.lo = m.Opt("lo").NumOrNull();
      iv.hi = m.Opt("hi").NumOrNull();
      for (const Node& v : m.Opt("values").ItemsOrEmpty()) iv.values.push_back(v.NumOrNull());
    }
    for (const auto& [id, v] : n.Opt("met_fraction").MembersOrEmpty()) pt.met_fraction[id] = v.Num();
    for (const auto& [id, v] : n.Opt("meets").MembersOrEmpty()) pt.meets[id] = v.Bool();
    pt.meets_all = n.Get("meets_all").Bool();
    p->points.push_back(std::move(pt));
  }
  for (const Node& r : root.Get("recommendations").Items()) {
    p->recommendations.push_back({r.Get("rank").Int(), r.Get("family").Int(), r.Get("config").Str(),
                                  r.Opt("usd_per_hour").NumOrNull(), r.Opt("gpus").IntOrNull(),
                                  r.Opt("replicas").IntOrNull(), ReadLaunch(r.Opt("launch")),
                                  ReadHeadroom(r.Opt("headroom")), ReadBinding(r.Opt("binding"))});
  }
  for (const Node& f : root.Opt("frontier").ItemsOrEmpty()) p->frontier.push_back(f.Str());
  if (const Node c = root.Opt("chosen"); c.present()) {
    p->chosen_config = c.Get("config").Str();
    p->chosen_run = c.Opt("run").StrOr("chosen");
  }
  for (const auto& [k, v] : root.Opt("counts").MembersOrEmpty()) p->counts.emplace_back(k, v.Int());
}

// Lookups over a parsed plan.
class Index {
 public:
  explicit Index(const Plan& p) : plan_(p) {
    for (const Family& f : p.families) families_[f.id] = &f;
    for (const Config& c : p.configs) configs_[c.id] = &c;
  }
  const Family* family(int64_t id) const {
    auto it = families_.find(id);
    return it == families_.end() ? nullptr : it->second;
  }
  const Config* config(const std::string& id) const {
    auto it = configs_.find(id);
    return it == configs_.end() ? nullptr : it->second;
  }
  // The config's point at `scale`; nullptr when it was not run there.
  const Point* point(const std::string& config, double scale) const {
    for (const Point& p : plan_.points) {
      if (p.config == config && std::fabs(p.rate_scale - scale) < 1e-9) return &p;
    }
    return nullptr;
  }
  // The config's points, by load.
  std::vector<const Point*> curve(const std::string& config) const {
    std::vector<const Point*> out;
    for (const Point& p : plan_.points) {
      if (p.config == config) out.push_back(&p);
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const Point* a, const Point* b) { return a->rate_scale < b->rate_scale; });
    return out;
  }
  std::string target_label(const std::string& id) const {
    for (const Target& t : plan_.targets) {
      if (t.id == id) return t.label;
    }
    return id;
  }
  std::string family_label(int64_t id) const {
    const Family* f = family(id);
    return f ? f->label : "family " + std::to_string(id);
  }

 private:
  const Plan& plan_;
  std::map<int64_t, const Family*> families_;
  std::map<std::string, const Config*> configs_;
};

std::string LoadText(double s) { return "×" + Num(s); }

std::string HeadroomText(const std::optional<Headroom>& h) {
  if (!h) return "n/a";
  std::string s = (h->capped ? "≥ " : "") + LoadText(h->rate_scale);
  if (h->rate_per_s) s += " (" + Num(*h->rate_per_s) + " req/s)";
  if (h->capped) s += ", still meets targets at the highest load tried";
  return s;
}

std::string BindingText(const Index& ix, const std::optional<Binding>& b, const std::optional<Headroom>& h) {
  if (b) return ix.target_label(b->target) + " at " + LoadText(b->rate_scale);
  return h && h->capped ? "none within the loads tried" : "n/a";
}

// "mean ± half; meets; 3/3 reps met" for target `t` at point `p`.
std::string TargetCell(const Point* p, const Target& t) {
  if (p == nullptr) return "not run";
  auto m = p->metrics.find(t.metric);
  std::string s = m == p->metrics.end() ? "n/a" : PlusMinus(m->second.mean, m->second.half_width);
  if (auto it = p->meets.find(t.id); it != p->meets.end()) s += it->second ? "; meets" : "; misses";
  if (auto it = p->met_fraction.find(t.id); it != p->met_fraction.end()) {
    if (p->replications > 0) {
      s += "; " + std::to_string(std::llround(it->second * p->replications)) + "/" + std::to_string(p->replications) +
           " reps met";
    } else {
      s += "; " + Percent(it->second) + " of reps met";
    }
  }
  return s;
}

std::string IntOr(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "n/a"; }

std::string LoadAxisLabel(const Plan& p) {
  return p.base_rate_per_s ? "load (× base rate " + Num(*p.base_rate_per_s) + " req/s)" : "load (× base rate)";
}

// The short-listed families that have a fewest-replicas config, in plan order.
std::vector<const Family*> Shortlist(const Plan& p) {
  std::vector<const Family*> out;
  for (const Family& f : p.families) {
    if (f.shortlisted && f.config) out.push_back(&f);
  }
  return out;
}

std::string SeriesName(const Index& ix, const Family& f) {
  const Config* c = ix.config(*f.config);
  return f.label + (c ? " (" + std::to_string(c->replicas) + " replicas)" : "");
}

void Header(const Plan& p, Document* doc) {
  doc->Heading(1, "Capacity plan: " + p.name);
  doc->Paragraph("Scenario " + (p.scenario_name.empty() ? std::string("(inline)") : p.scenario_name) +
                 (p.scenario_file.empty() ? "" : " (" + p.scenario_file + ")") + ".");
  std::string load =
      "Load: " + (p.load_description.empty() ? std::string("the scenario's traffic") : p.load_description);
  load += p.base_rate_per_s ? "; base rate " + Num(*p.base_rate_per_s) + " requests/s at rate scale 1" : "";
  std::string scales;
  for (double s : p.rate_scales) scales += (scales.empty() ? "" : ", ") + LoadText(s);
  load += "; curve points at " + (scales.empty() ? std::string("none") : scales);
  if (p.max_rate_scale) load += "; headroom searched up to " + LoadText(*p.max_rate_scale);
  if (p.trace_window_s) load += "; trace window " + Num(*p.trace_window_s) + " s per replication";
  doc->Paragraph(load + ".");
  doc->Paragraph("Every point was run " + std::to_string(p.replications) + " times (independent replications); " +
                 "figures are means ± the half-width of their " + Num(p.confidence * 100) +
                 "% confidence interval. A point meets a target only when the interval's pessimistic bound does " +
                 "(the upper bound for latencies and reject rate, the lower for attainment).");
  if (!p.traffic_replicated) {
    doc->Note(
        "Every replication replays the same requests (a trace without trace_window_s): the intervals cover "
        "only the service's randomness, not the traffic's.");
  }
  std::vector<std::string> targets;
  for (const Target& t : p.targets) targets.push_back(t.label + " (" + t.id + ")");
  if (p.budget_usd_per_hour) targets.push_back("Budget: at most " + Usd(p.budget_usd_per_hour) + " per hour");
  for (const auto& [gpu, n] : p.quotas) targets.push_back("Quota: at most " + Num(n) + " " + gpu + " GPUs");
  doc->Heading(2, "Targets and constraints");
  doc->List(targets);
  if (!p.counts.empty()) {
    std::string counts;
    for (const auto& [k, v] : p.counts) counts += (counts.empty() ? "" : ", ") + k + " " + std::to_string(v);
    doc->Paragraph("Searched: " + counts + ".");
  }
  doc->Heading(2, "Assumptions");
  if (p.assumptions.empty()) {
    doc->Paragraph("None stated.");
  } else {
    doc->List(p.assumptions);
  }
  doc->Heading(2, "Monotonicity checks");
  if (p.monotonicity.empty()) {
    doc->Paragraph("No violation seen: latency never rose when replicas were added, nor fell when load rose.");
  } else {
    const Index ix(p);
    std::vector<std::string> items;
    for (const auto& [fam, text] : p.monotonicity) items.push_back(ix.family_label(fam) + ": " + text);
    doc->Note(
        "The search assumes latency does not rise with replicas nor fall with load; these points violate it, "
        "so a bisection's answer there may be off:");
    doc->List(items);
  }
}

void Recommendations(const Plan& p, const Index& ix, Document* doc) {
  doc->Heading(2, "Recommendations");
  if (p.recommendations.empty()) {
    doc->Note("No configuration meets every target within the search's bounds: see the families' reasons below.");
    return;
  }
  std::vector<std::string> header = {"Rank", "Family", "Replicas", "GPUs", "$/hour"};
  for (const Target& t : p.targets) header.push_back(t.label + " (at ×1)");
  for (const char* h : {"Headroom", "Binding constraint", "Launch command", "Launch replicas"}) header.push_back(h);
  std::vector<std::vector<Cell>> rows;
  for (const Recommendation& r : p.recommendations) {
    const Point* pt = ix.point(r.config, 1);
    std::vector<Cell> row = {std::to_string(r.rank), ix.family_label(r.family), IntOr(r.replicas), IntOr(r.gpus),
                             Usd(r.usd_per_hour)};
    for (const Target& t : p.targets) row.push_back(TargetCell(pt, t));
    row.push_back(HeadroomText(r.headroom));
    row.push_back(BindingText(ix, r.binding, r.headroom));
    row.push_back(r.launch ? Cell::Code(r.launch->command) : Cell("n/a"));
    row.push_back(r.launch ? IntOr(r.launch->replicas ? r.launch->replicas : r.replicas) + " × " + r.launch->engine
                           : "n/a");
    rows.push_back(std::move(row));
  }
  doc->Table(header, rows);
}

// Each recommendation's point at ×1, replication by replication: the
// figure each target is judged on, whether that replication alone met it,
// and the bound the verdict rests on.
void PerReplication(const Plan& p, const Index& ix, Document* doc) {
  if (p.recommendations.empty()) return;
  doc->Heading(2, "Per-replication attainment");
  std::string intro =
      "The recommendations at ×1, one row per replication: each target's figure in that replication and whether "
      "it alone met the target; the last rows give the " + Num(p.confidence * 100) +
      "% bound the verdict uses (a point meets only when the bound does, however many replications met).";
  if (p.replications < 2)
    intro += " With one replication there is no interval: the bound is the single value, and a verdict so close "
             "to a target deserves more replications.";
  doc->Paragraph(intro);
  for (const Recommendation& r : p.recommendations) {
    const Point* pt = ix.point(r.config, 1);
    if (pt == nullptr) continue;
    doc->Heading(3, "Rank " + std::to_string(r.rank) + ": " + ix.family_label(r.family) + ", " + IntOr(r.replicas) +
                        " replicas");
    std::vector<std::string> header = {"Replication"};
    for (const Target& t : p.targets) header.push_back(t.label);
    std::vector<std::vector<Cell>> rows;
    size_t n = 0;
    for (const Target& t : p.targets) {
      if (auto m = pt->metrics.find(t.metric); m != pt->metrics.end()) n = std::max(n, m->second.values.size());
    }
    auto met = [](const Target& t, double v) { return t.kind == "min" ? v >= t.limit : v <= t.limit; };
    for (size_t i = 0; i < n; ++i) {
      std::vector<Cell> row = {std::to_string(i + 1)};
      for (const Target& t : p.targets) {
        auto m = pt->metrics.find(t.metric);
        const std::optional<double> v =
            m != pt->metrics.end() && i < m->second.values.size() ? m->second.values[i] : std::nullopt;
        row.push_back(!v ? Cell("no figure; missed") : Cell(Num(*v) + (met(t, *v) ? "; met" : "; missed")));
      }
      rows.push_back(std::move(row));
    }
    std::vector<Cell> met_row = {"Replications met"}, bound_row = {"Bound judged"};
    for (const Target& t : p.targets) {
      auto f = pt->met_fraction.find(t.id);
      met_row.push_back(f == pt->met_fraction.end()
                            ? Cell("n/a")
                            : Cell(std::to_string(std::llround(f->second * pt->replications)) + "/" +
                                   std::to_string(pt->replications)));
      auto m = pt->metrics.find(t.metric);
      const std::optional<double> bound =
          m == pt->metrics.end() ? std::nullopt : (t.kind == "min" ? m->second.lo : m->second.hi);
      std::string b = bound ? std::string(t.kind == "min" ? "lower " : "upper ") + Num(*bound) : "n/a";
      if (auto v = pt->meets.find(t.id); v != pt->meets.end()) b += v->second ? "; meets" : "; misses";
      bound_row.push_back(b);
    }
    rows.push_back(std::move(met_row));
    rows.push_back(std::move(bound_row));
    doc->Table(header, rows);
  }
}

void LoadCurves(const Plan& p, const Index& ix, Document* doc) {
  doc->Heading(2, "Latency vs load");
  const std::vector<const Family*> shortlist = Shortlist(p);
  doc->Paragraph(
      "Each short-listed family at its fewest replicas meeting every target at ×1, run at every load; "
      "error bars are the confidence intervals, the dashed line the target.");
  for (const Target& t : p.targets) {
    if (!t.latency()) continue;
    PlotSpec plot;
    plot.title = t.label + ": latency vs load";
    plot.x_label = LoadAxisLabel(p);
    plot.y_label = t.metric;
    plot.x_scale = Scale::kLinear;
    plot.x_from_zero = true;
    for (const Family* f : shortlist) {
      Series s;
      s.name = SeriesName(ix, *f);
      for (const Point* pt : ix.curve(*f->config)) {
        auto m = pt->metrics.find(t.metric);
        if (m == pt->metrics.end() || !m->second.mean) continue;
        s.x.push_back(pt->rate_scale);
        s.y.push_back(*m->second.mean);
        s.err.push_back(m->second.half_width.value_or(kNaN));
      }
      plot.series.push_back(std::move(s));
    }
    plot.refs.push_back({false, t.limit, "target " + t.label});
    doc->Plot(plot, "No latency-vs-load points for " + t.label + ": no short-listed family was run at the loads.");
  }
  // The same figures as a table, for report.md's readers.
  std::vector<std::string> header = {"Family", "Load", "Rate (req/s)"};
  for (const Target& t : p.targets) header.push_back(t.label);
  header.push_back("Meets all");
  std::vector<std::vector<Cell>> rows;
  for (const Family* f : shortlist) {
    for (const Point* pt : ix.curve(*f->config)) {
      std::vector<Cell> row = {SeriesName(ix, *f), LoadText(pt->rate_scale), Num(pt->rate_per_s)};
      for (const Target& t : p.targets) row.push_back(TargetCell(pt, t));
      row.push_back(pt->meets_all ? "yes" : "no");
      rows.push_back(std::move(row));
    }
  }
  if (!rows.empty()) doc->Table(header, rows);
}

void CostCurves(const Plan& p, const Index& ix, Document* doc) {
  doc->Heading(2, "Cost vs load");
  const std::vector<const Family*> shortlist = Shortlist(p);
  PlotSpec fleet;
  fleet.title = "Fleet cost vs load (fewest replicas meeting every target)";
  fleet.x_label = LoadAxisLabel(p);
  fleet.y_label = "$ per hour";
  fleet.x_scale = fleet.y_scale = Scale::kLinear;
  fleet.x_from_zero = true;
  std::vector<std::vector<Cell>> rows;
  for (const Family* f : shortlist) {
    Series s;
    s.name = f->label;
    for (const CostPoint& c : f->cost_curve) {
      rows.push_back({f->label, LoadText(c.rate_scale), Num(c.rate_per_s),
                      c.replicas ? Num(*c.replicas) : "none within bounds", Usd(c.usd_per_hour)});
      if (!c.usd_per_hour) continue;
      s.x.push_back(c.rate_scale);
      s.y.push_back(*c.usd_per_hour);
    }
    fleet.series.push_back(std::move(s));
  }
  doc->Plot(fleet, "No cost-vs-load points: no short-listed family.");
  if (!rows.empty()) doc->Table({"Family", "Load", "Rate (req/s)", "Fewest replicas", "$/hour"}, rows);

  PlotSpec unit;
  unit.title = "Cost per million output tokens vs load (fixed fleet)";
  unit.x_label = LoadAxisLabel(p);
  unit.y_label = "$ per million output tokens";
  unit.x_scale = Scale::kLinear;
  unit.x_from_zero = true;
  for (const Family* f : shortlist) {
    Series s;
    s.name = SeriesName(ix, *f);
    for (const Point* pt : ix.curve(*f->config)) {
      auto m = pt->metrics.find("usd_per_million_output_tokens");
      if (m == pt->metrics.end() || !m->second.mean) continue;
      s.x.push_back(pt->rate_scale);
      s.y.push_back(*m->second.mean);
      s.err.push_back(m->second.half_width.value_or(kNaN));
    }
    unit.series.push_back(std::move(s));
  }
  doc->Plot(unit, "No cost-per-token points: no short-listed family, or no prices.");
}

void Frontier(const Plan& p, const Index& ix, Document* doc) {
  doc->Heading(2, "Pareto frontier: cost against latency at the stated load");
  const Target* first = nullptr;
  for (const Target& t : p.targets) {
    if (t.latency() && first == nullptr) first = &t;
  }
  if (first != nullptr) {
    PlotSpec plot;
    plot.title = "Cost vs " + first->label + " at ×1";
    plot.x_label = "fleet cost ($ per hour)";
    plot.y_label = first->metric;
    plot.x_from_zero = false;
    Series all, front;
    all.name = "every configuration run";
    all.faint = true;
    all.line = false;
    front.name = "Pareto frontier";
    front.radius = 4.5;
    for (const Point& pt : p.points) {
      const Config* c = ix.config(pt.config);
      auto m = pt.metrics.find(first->metric);
      if (std::fabs(pt.rate_scale - 1) > 1e-9 || !c || !c->usd_per_hour || m == pt.metrics.end() || !m->second.mean) {
        continue;
      }
      all.x.push_back(*c->usd_per_hour);
      all.y.push_back(*m->second.mean);
    }
    for (const std::string& id : p.frontier) {
      const Config* c = ix.config(id);
      const Point* pt = ix.point(id, 1);
      if (!c || !c->usd_per_hour || !pt) continue;
      auto m = pt->metrics.find(first->metric);
      if (m == pt->metrics.end() || !m->second.mean) continue;
      front.x.push_back(*c->usd_per_hour);
      front.y.push_back(*m->second.mean);
      front.err.push_back(m->second.half_width.value_or(kNaN));
    }
    plot.series = {std::move(all), std::move(front)};
    plot.refs.push_back({false, first->limit, "target " + first->label});
    doc->Plot(plot, "No configuration with a price and a latency at ×1: no frontier to draw.");
  } else {
    doc->Paragraph("The plan has no latency target: no frontier plot.");
  }
  std::vector<std::string> header = {"Config", "Family", "Replicas", "GPUs", "$/hour"};
  for (const Target& t : p.targets) header.push_back(t.label + " (at ×1)");
  header.push_back("Meets all");
  std::vector<std::vector<Cell>> rows;
  for (const std::string& id : p.frontier) {
    const Config* c = ix.config(id);
    const Point* pt = ix.point(id, 1);
    std::vector<Cell> row = {id, c ? ix.family_label(c->family) : "n/a", c ? std::to_string(c->replicas) : "n/a",
                             c ? std::to_string(c->gpus) : "n/a", Usd(c ? c->usd_per_hour : std::nullopt)};
    for (const Target& t : p.targets) row.push_back(TargetCell(pt, t));
    row.push_back(pt ? (pt->meets_all ? "yes" : "no") : "n/a");
    rows.push_back(std::move(row));
  }
  if (rows.empty()) {
    doc->Paragraph("The frontier is empty.");
  } else {
    doc->Table(header, rows);
  }
}

void Chosen(const Plan& p, const Index& ix, const std::string& dir, Document* doc) {
  doc->Heading(2, "Chosen configuration over time");
  if (!p.chosen_config) {
    doc->Paragraph("No configuration was chosen.");
    return;
  }
  const Config* c = ix.config(*p.chosen_config);
  doc->Paragraph("Config " + *p.chosen_config +
                 (c ? " (" + ix.family_label(c->family) + ", " + std::to_string(c->replicas) + " replicas)" : "") +
                 ", run once more at ×1 into " + *p.chosen_run + "/; `fleetsim report DIR/" + *p.chosen_run +
                 "` renders its full run report.");
  FleetTimeseries ts;
  if (Status s = ReadFleetTimeseries(dir + "/" + *p.chosen_run + "/timeseries.csv", &ts); !s.ok()) {
    doc->Note("No time series: " + s.message());
    return;
  }
  AddTimeseriesPlots(doc, ts, false);
}

void FamilyTables(const Plan& p, const Index& ix, Document* doc) {
  doc->Heading(2, "All families");
  std::vector<std::vector<Cell>> rows, dropped;
  for (const Family& f : p.families) {
    const Config* c = f.config ? ix.config(*f.config) : nullptr;
    rows.push_back({std::to_string(f.id), f.label, f.status, f.reason,
                    f.replica_range
                        ? std::to_string(f.replica_range->first) + "–" + std::to_string(f.replica_range->second)
                        : "n/a",
                    IntOr(f.min_replicas), c ? std::to_string(c->gpus) : "n/a", Usd(c ? c->usd_per_hour : std::nullopt),
                    f.shortlisted ? "yes" : "no", f.shortlisted ? HeadroomText(f.headroom) : ""});
    if (f.status == "dropped") dropped.push_back({f.label, f.reason});
  }
  doc->Table({"ID", "Family", "Status", "Reason", "Replica range", "Min replicas", "GPUs", "$/hour", "Short-listed",
              "Headroom"},
             rows);
  doc->Heading(2, "Dropped families");
  if (dropped.empty()) {
    doc->Paragraph("No family was dropped.");
  } else {
    doc->Table({"Family", "Why it cannot run"}, dropped);
  }
}

}  // namespace

Status RenderPlanReport(const std::string& dir, ReportFiles* out) {
  const std::string file = dir + "/plan.json";
  nlohmann::json j;
  FLEETSIM_RETURN_IF_ERROR(ReadJsonObject(file, &j));
  JsonErrors errors(file);
  Plan plan;
  ReadPlan(Node(&j, "", &errors), &plan);
  FLEETSIM_RETURN_IF_ERROR(errors.status());
  const Index ix(plan);
  Document doc("fleetsim capacity plan: " + plan.name);
  Header(plan, &doc);
  Recommendations(plan, ix, &doc);
  PerReplication(plan, ix, &doc);
  LoadCurves(plan, ix, &doc);
  CostCurves(plan, ix, &doc);
  Frontier(plan, ix, &doc);
  Chosen(plan, ix, dir, &doc);
  FamilyTables(plan, ix, &doc);
  *out = doc.Finish();
  return Status::Ok();
}

}  // namespace fleetsim::report

#include "sim/plan/plan_spec.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <set>

#include "base/file.h"
#include "base/json_parse.h"
#include "base/sha256.h"
#include "model/object_reader.h"

namespace fleetsim {
namespace {

using model_json::Bound;
using model_json::json;
using model_json::ObjectReader;

constexpr int64_t kMaxBisectReplicas = 100000;  // the scenario's own bound on a pool's replicas
// A round holds at most families x replications simulations.
constexpr int64_t kMaxRoundSimulations = 1000000;

// "fleet.pools[3].replicas": the one key the planner bisects, since GPUs and
// cost are affine in it and latency is monotone in it.
// fleet.pools[i].replicas, or an autoscaled pool's
// fleet.pools[i].autoscaler.max_replicas.
bool IsReplicaKey(const std::string& k) {
  const std::string head = "fleet.pools[";
  for (const std::string tail : {"].replicas", "].autoscaler.max_replicas"}) {
    if (k.size() <= head.size() + tail.size() || k.compare(0, head.size(), head) != 0 ||
        k.compare(k.size() - tail.size(), tail.size(), tail) != 0)
      continue;
    bool digits = true;
    for (size_t i = head.size(); i < k.size() - tail.size(); ++i) digits = digits && k[i] >= '0' && k[i] <= '9';
    if (digits) return true;
  }
  return false;
}

std::string Fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

Status ParseDimension(const json& d, const std::string& file, const std::string& path, PlanDimension* out) {
  if (!d.is_object()) return Status::Invalid(file + ": " + path + ": expected an object");
  const ObjectReader r(d, file, path + ".");
  FLEETSIM_RETURN_IF_ERROR(r.CheckKeys({"key", "keys", "values", "search", "min", "max", "ratios"}));
  PlanDimension dim;
  dim.path = path;
  if (r.Has("key") == r.Has("keys")) return r.Error("key", "give either key (one scenario key) or keys (a list)");
  if (r.Has("key")) {
    std::string k;
    FLEETSIM_RETURN_IF_ERROR(r.String("key", &k));
    dim.keys.push_back(k);
  } else {
    const json& ks = d["keys"];
    if (!ks.is_array() || ks.empty()) return r.Error("keys", "expected a non-empty array of scenario keys");
    for (const json& k : ks) {
      if (!k.is_string() || k.get<std::string>().empty()) return r.Error("keys", "expected scenario key strings");
      dim.keys.push_back(k.get<std::string>());
    }
  }
  for (const std::string& k : dim.keys) {
    if (k.empty()) return r.Error(r.Has("key") ? "key" : "keys", "expected a scenario key path");
    if (k == "seed")
      return r.Error(r.Has("key") ? "key" : "keys", "the plan's seed and replications decide the seeds");
  }
  std::string search = "exhaustive";
  if (r.Has("search")) FLEETSIM_RETURN_IF_ERROR(r.String("search", &search));
  if (search == "bisect") {
    std::set<std::string> distinct;
    for (const std::string& k : dim.keys) {
      if (!IsReplicaKey(k))
        return r.Error(r.Has("key") ? "key" : "keys",
                       "only pools' replica counts (fleet.pools[i].replicas, or an autoscaled pool's "
                       "fleet.pools[i].autoscaler.max_replicas) are bisected; give other keys values");
      if (!distinct.insert(k).second) return r.Error("keys", "names " + k + " twice");
    }
    if (r.Has("values")) return r.Error("values", "a bisected dimension takes min and max, not values");
    FLEETSIM_RETURN_IF_ERROR(r.Int64("min", Bound::kPositive, kMaxBisectReplicas, &dim.min));
    FLEETSIM_RETURN_IF_ERROR(r.Int64("max", Bound::kPositive, kMaxBisectReplicas, &dim.max));
    if (dim.max < dim.min) return r.Error("max", "is below min " + std::to_string(dim.min));
    if (r.Has("ratios")) {
      const json& rs = d["ratios"];
      if (!rs.is_array() || rs.empty()) return r.Error("ratios", "expected a non-empty array of ratios");
      dim.ratios.clear();
      std::set<std::vector<int64_t>> seen;
      for (size_t i = 0; i < rs.size(); ++i) {
        const std::string where = "ratios[" + std::to_string(i) + "]";
        const json& ratio = rs[i];
        if (!ratio.is_array() || ratio.size() != dim.keys.size())
          return r.Error(where, "expected an array of " + std::to_string(dim.keys.size()) + " integers, one per key");
        std::vector<int64_t> shares;
        for (const json& x : ratio) {
          if (!x.is_number_integer() || x.get<int64_t>() < 1 || x.get<int64_t>() > kMaxBisectReplicas)
            return r.Error(where, "expected integers from 1 to " + std::to_string(kMaxBisectReplicas));
          shares.push_back(x.get<int64_t>());
        }
        if (!seen.insert(shares).second) return r.Error(where, "repeats an earlier ratio");
        for (int64_t share : shares)
          if (share * dim.max > kMaxBisectReplicas)
            return r.Error(where, "times max " + std::to_string(dim.max) + " exceeds " +
                                      std::to_string(kMaxBisectReplicas) + " replicas");
        dim.ratios.push_back(std::move(shares));
      }
    } else if (dim.keys.size() != 1) {
      return r.Error("ratios", "a bisected dimension of several keys needs ratios (one share per key)");
    }
    dim.bisect = true;
  } else if (search == "exhaustive") {
    if (r.Has("min") || r.Has("max") || r.Has("ratios"))
      return r.Error("search", "min, max and ratios go with \"search\": \"bisect\"");
    auto it = d.find("values");
    if (it == d.end()) return r.Error("values", "missing required key");
    if (!it->is_array() || it->empty()) return r.Error("values", "expected a non-empty array");
    std::set<std::string> seen;
    for (size_t i = 0; i < it->size(); ++i) {
      const json& v = (*it)[i];
      const std::string where = "values[" + std::to_string(i) + "]";
      std::vector<std::string> texts;
      if (dim.keys.size() == 1) {
        texts.push_back(v.dump());
      } else {
        if (!v.is_array() || v.size() != dim.keys.size())
          return r.Error(where, "expected an array of " + std::to_string(dim.keys.size()) + " values, one per key");
        for (const json& x : v) texts.push_back(x.dump());
      }
      std::string joined;
      for (const std::string& t : texts) joined += t + "\n";
      if (!seen.insert(joined).second) return r.Error(where, "repeats an earlier value");
      dim.values.push_back(std::move(texts));
    }
  } else {
    return r.Error("search", "expected \"exhaustive\" or \"bisect\", got \"" + search + "\"");
  }
  *out = std::move(dim);
  return Status::Ok();
}

Status ParseTargets(const ObjectReader& top, const std::string& file, std::vector<PlanTarget>* targets,
                    std::optional<double>* budget, std::optional<double>* node_failure_at_s,
                    std::string* node_failure_kind) {
  ObjectReader t;
  FLEETSIM_RETURN_IF_ERROR(top.Object("targets", &t));
  FLEETSIM_RETURN_IF_ERROR(t.CheckKeys({"ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "attainment", "max_reject_rate",
                                        "budget_usd_per_hour", "node_failure"}));
  const std::pair<const char*, const char*> latency[] = {
      {"ttft", "TTFT"}, {"tpot", "TPOT"}, {"itl", "ITL"}, {"e2e", "E2E"}};
  for (const auto& [metric, label] : latency) {
    const std::string key = std::string(metric) + "_ms";
    if (!t.Has(key)) continue;
    ObjectReader pct;
    FLEETSIM_RETURN_IF_ERROR(t.Object(key, &pct));
    FLEETSIM_RETURN_IF_ERROR(pct.CheckKeys({"p50", "p90", "p95", "p99"}));
    if (pct.object().empty()) return t.Error(key, "expected percentiles: {\"p99\": limit_ms}");
    for (const char* p : {"p50", "p90", "p95", "p99"}) {
      if (!pct.Has(p)) continue;
      PlanTarget tg;
      FLEETSIM_RETURN_IF_ERROR(pct.Number(p, Bound::kPositive, &tg.limit));
      tg.id = std::string(metric) + "_" + p;
      tg.metric = tg.id + "_ms";
      tg.is_max = true;
      tg.label = std::string(label) + " " + p + " <= " + Fmt(tg.limit) + " ms";
      targets->push_back(tg);
    }
  }
  if (t.Has("attainment")) {
    PlanTarget tg;
    FLEETSIM_RETURN_IF_ERROR(t.Number("attainment", Bound::kPositive, &tg.limit));
    if (tg.limit > 1) return t.Error("attainment", "expected a fraction in (0, 1]");
    tg.id = tg.metric = "attainment";
    tg.is_max = false;
    tg.label = "SLO attainment >= " + Fmt(tg.limit);
    targets->push_back(tg);
  }
  if (t.Has("max_reject_rate")) {
    PlanTarget tg;
    FLEETSIM_RETURN_IF_ERROR(t.Number("max_reject_rate", Bound::kNonNegative, &tg.limit));
    if (tg.limit >= 1) return t.Error("max_reject_rate", "expected a fraction in [0, 1)");
    tg.id = tg.metric = "reject_rate";
    tg.is_max = true;
    tg.label = "rejected, failed or unfinished <= " + Fmt(tg.limit);
    targets->push_back(tg);
  }
  if (t.Has("node_failure")) {
    ObjectReader nf;
    FLEETSIM_RETURN_IF_ERROR(t.Object("node_failure", &nf));
    FLEETSIM_RETURN_IF_ERROR(nf.CheckKeys({"at_s", "kind"}));
    double at = 0;
    if (nf.Has("at_s")) FLEETSIM_RETURN_IF_ERROR(nf.Number("at_s", Bound::kNonNegative, &at));
    if (at > 1e7) return nf.Error("at_s", "expected at most 1e7 s");
    *node_failure_at_s = at;
    if (nf.Has("kind")) {
      FLEETSIM_RETURN_IF_ERROR(nf.String("kind", node_failure_kind));
      if (*node_failure_kind != "crash" && *node_failure_kind != "hang")
        return nf.Error("kind", "expected \"crash\" or \"hang\", got \"" + *node_failure_kind + "\"");
    }
  }
  if (t.Has("budget_usd_per_hour")) {
    double b = 0;
    FLEETSIM_RETURN_IF_ERROR(t.Number("budget_usd_per_hour", Bound::kPositive, &b));
    *budget = b;
  }
  if (targets->empty())
    return Status::Invalid(file + ": targets: name at least one of ttft_ms, tpot_ms, itl_ms, e2e_ms, attainment, "
                           "max_reject_rate");
  return Status::Ok();
}

Status ParseLoad(const ObjectReader& top, PlanSpec* plan) {
  plan->rate_scales = {0.5, 0.75, 1, 1.25, 1.5, 2};
  if (!top.Has("load")) return Status::Ok();
  ObjectReader l;
  FLEETSIM_RETURN_IF_ERROR(top.Object("load", &l));
  FLEETSIM_RETURN_IF_ERROR(l.CheckKeys({"rate_scales", "max_rate_scale", "trace_window_s"}));
  if (l.Has("rate_scales")) {
    const json& a = l.object()["rate_scales"];
    if (!a.is_array() || a.empty() || a.size() > 64)
      return l.Error("rate_scales", "expected an array of 1 to 64 positive numbers");
    plan->rate_scales.clear();
    for (const json& v : a) {
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0.001 || v.get<double>() > 1000)
        return l.Error("rate_scales", "expected numbers in [0.001, 1000], got " + v.dump());
      plan->rate_scales.push_back(v.get<double>());
    }
  }
  if (std::find(plan->rate_scales.begin(), plan->rate_scales.end(), 1.0) == plan->rate_scales.end())
    plan->rate_scales.push_back(1.0);  // the stated load is always a curve point
  std::sort(plan->rate_scales.begin(), plan->rate_scales.end());
  plan->rate_scales.erase(std::unique(plan->rate_scales.begin(), plan->rate_scales.end()), plan->rate_scales.end());
  if (l.Has("max_rate_scale")) {
    FLEETSIM_RETURN_IF_ERROR(l.Number("max_rate_scale", Bound::kPositive, &plan->max_rate_scale));
    if (plan->max_rate_scale < 1 || plan->max_rate_scale > 1000)
      return l.Error("max_rate_scale", "expected a number in [1, 1000]");
  }
  if (l.Has("trace_window_s")) {
    double w = 0;
    FLEETSIM_RETURN_IF_ERROR(l.Number("trace_window_s", Bound::kPositive, &w));
    if (w > 1e8) return l.Error("trace_window_s", "expected at most 1e8 seconds");
    plan->trace_window_s = w;
  }
  return Status::Ok();
}

}  // namespace

Status ParsePlan(const std::string& text, const std::string& file, PlanSpec* out) {
  json doc;
  FLEETSIM_RETURN_IF_ERROR(model_json::ParseDocument(text, file, &doc));
  const ObjectReader top(doc, file, "");
  FLEETSIM_RETURN_IF_ERROR(top.CheckKeys({"format", "version", "name", "description", "scenario", "dimensions",
                                          "redundancy", "targets", "quotas", "load", "replications", "seed",
                                          "shortlist"}));
  FLEETSIM_RETURN_IF_ERROR(top.FormatAndVersion("fleetsim-plan", 1));
  PlanSpec plan;
  plan.file = file;
  plan.sha256 = Sha256Hex(text);
  const std::string base_dir = std::filesystem::path(file).parent_path().string();
  if (top.Has("name")) FLEETSIM_RETURN_IF_ERROR(top.String("name", &plan.name));
  if (plan.name.empty()) plan.name = std::filesystem::path(file).stem().string();
  if (top.Has("description")) FLEETSIM_RETURN_IF_ERROR(top.String("description", &plan.description));

  // The scenario: a path (relative to the plan's folder) or inline.
  auto sc = doc.find("scenario");
  if (sc == doc.end()) return top.Error("scenario", "missing required key");
  if (sc->is_string()) {
    std::filesystem::path p = sc->get<std::string>();
    if (p.empty()) return top.Error("scenario", "expected a scenario file path or an inline scenario object");
    if (p.is_relative() && !base_dir.empty()) p = std::filesystem::path(base_dir) / p;
    plan.scenario_file = p.string();
    FLEETSIM_RETURN_IF_ERROR(
        ReadWholeFile(plan.scenario_file, "scenario", &plan.scenario_text).WithPrefix(file + ": scenario: "));
    plan.scenario_base_dir = p.parent_path().string();
  } else if (sc->is_object()) {
    plan.scenario_text = sc->dump();
    plan.scenario_file = file + ": scenario";
    plan.scenario_base_dir = base_dir;
  } else {
    return top.Error("scenario", "expected a scenario file path or an inline scenario object");
  }

  auto dims = doc.find("dimensions");
  if (dims == doc.end()) return top.Error("dimensions", "missing required key");
  if (!dims->is_array()) return top.Error("dimensions", "expected an array");
  int64_t families = 1;
  std::set<std::string> keys;
  for (size_t i = 0; i < dims->size(); ++i) {
    PlanDimension d;
    FLEETSIM_RETURN_IF_ERROR(ParseDimension((*dims)[i], file, "dimensions[" + std::to_string(i) + "]", &d));
    for (const std::string& k : d.keys)
      if (!keys.insert(k).second)
        return Status::Invalid(file + ": " + d.path + ": key \"" + k + "\" is searched by an earlier dimension");
    if (d.bisect) {
      for (const PlanDimension& e : plan.dimensions)
        if (e.bisect)
          return Status::Invalid(file + ": " + d.path + ": only one dimension can be bisected (" + e.path + " is)");
      families *= static_cast<int64_t>(d.ratios.size());
      if (families > kMaxPlanFamilies)
        return Status::Invalid(file + ": dimensions: more than " + std::to_string(kMaxPlanFamilies) +
                               " combinations; search fewer values or ratios");
    } else {
      families *= static_cast<int64_t>(d.values.size());
      if (families > kMaxPlanFamilies)
        return Status::Invalid(file + ": dimensions: more than " + std::to_string(kMaxPlanFamilies) +
                               " combinations; search fewer values or bisect the replicas");
    }
    plan.dimensions.push_back(std::move(d));
  }
  // redundancy: N+k as a dimension, the same k spare replicas for every
  // pool of the base scenario.
  if (auto red = doc.find("redundancy"); red != doc.end()) {
    if (!red->is_array() || red->empty()) return top.Error("redundancy", "expected a non-empty array of spares per pool, e.g. [0, 1, 2]");
    json base;
    int pools = 0;
    if (ParseJson(plan.scenario_text, &base).ok() && base.is_object() && base.contains("fleet") &&
        base["fleet"].is_object() && base["fleet"].contains("pools") && base["fleet"]["pools"].is_array())
      pools = static_cast<int>(base["fleet"]["pools"].size());
    if (pools == 0) return top.Error("redundancy", "the scenario has no fleet.pools to give spares to");
    PlanDimension d;
    d.path = "redundancy";
    for (int p = 0; p < pools; ++p) {
      d.keys.push_back("fleet.pools[" + std::to_string(p) + "].spares");
      if (keys.count(d.keys.back()))
        return Status::Invalid(file + ": redundancy: key \"" + d.keys.back() + "\" is searched by a dimension too");
    }
    std::set<int64_t> seen;
    for (size_t i = 0; i < red->size(); ++i) {
      const json& v = (*red)[i];
      const std::string where = "redundancy[" + std::to_string(i) + "]";
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 100000)
        return top.Error(where, "expected a number of spare replicas in [0, 100000]");
      if (!seen.insert(v.get<int64_t>()).second) return top.Error(where, "repeats an earlier value");
      d.values.emplace_back(static_cast<size_t>(pools), v.dump());
    }
    families *= static_cast<int64_t>(d.values.size());
    if (families > kMaxPlanFamilies)
      return Status::Invalid(file + ": dimensions: more than " + std::to_string(kMaxPlanFamilies) +
                             " combinations; search fewer values or bisect the replicas");
    plan.dimensions.push_back(std::move(d));
  }

  FLEETSIM_RETURN_IF_ERROR(
      ParseTargets(top, file, &plan.targets, &plan.budget_usd_per_hour, &plan.node_failure_at_s,
                   &plan.node_failure_kind));
  if (plan.node_failure_at_s)
    for (const PlanDimension& d : plan.dimensions)
      for (const std::string& k : d.keys)
        if (k.rfind("failures", 0) == 0)
          return Status::Invalid(file + ": " + d.path + ": targets.node_failure adds a drill to the scenario's "
                                 "failures; do not search \"" + k + "\" with it");
  if (top.Has("quotas")) {
    ObjectReader q;
    FLEETSIM_RETURN_IF_ERROR(top.Object("quotas", &q));
    for (auto it = q.object().begin(); it != q.object().end(); ++it) {
      int64_t n = 0;
      FLEETSIM_RETURN_IF_ERROR(q.Int64(it.key(), Bound::kNonNegative, int64_t{1} << 40, &n));
      plan.quotas[it.key()] = n;
    }
  }
  FLEETSIM_RETURN_IF_ERROR(ParseLoad(top, &plan));
  if (top.Has("replications")) {
    int64_t r = 0;
    FLEETSIM_RETURN_IF_ERROR(top.Int64("replications", Bound::kPositive, kMaxPlanReplications, &r));
    plan.replications = static_cast<int>(r);
  }
  if (top.Has("seed")) {
    int64_t s = 0;
    FLEETSIM_RETURN_IF_ERROR(
        top.Int64("seed", Bound::kNonNegative, std::numeric_limits<int64_t>::max() - kMaxPlanReplications, &s));
    plan.seed = static_cast<uint64_t>(s);
  }
  if (families * plan.replications > kMaxRoundSimulations)
    return Status::Invalid(file + ": replications: " + std::to_string(families) + " configurations x " +
                           std::to_string(plan.replications) + " replications is more than " +
                           std::to_string(kMaxRoundSimulations) + " simulations in one round; search fewer values");
  if (top.Has("shortlist")) {
    int64_t n = 0;
    FLEETSIM_RETURN_IF_ERROR(top.Int64("shortlist", Bound::kPositive, 100, &n));
    plan.shortlist = static_cast<int>(n);
  }
  *out = std::move(plan);
  return Status::Ok();
}

Status LoadPlanFile(const std::string& path, PlanSpec* out) {
  std::string text;
  FLEETSIM_RETURN_IF_ERROR(ReadWholeFile(path, "plan", &text));
  return ParsePlan(text, path, out);
}

}  // namespace fleetsim

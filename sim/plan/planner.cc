#include "sim/plan/planner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/json_parse.h"
#include "sim/engine/rng.h"
#include "sim/engine/time.h"
#include "sim/scenario/parse.h"
#include "sim/traffic/source.h"

namespace fleetsim {
namespace {

// SimOutcome::metrics order.
constexpr const char* kMetricNames[kNumPlanMetrics] = {
    "ttft_p50_ms", "ttft_p90_ms", "ttft_p95_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p90_ms",
    "tpot_p95_ms", "tpot_p99_ms", "itl_p50_ms",  "itl_p90_ms",  "itl_p95_ms",  "itl_p99_ms",
    "e2e_p50_ms",  "e2e_p90_ms",  "e2e_p95_ms",  "e2e_p99_ms",  "attainment",  "reject_rate",
    "requests_per_s", "output_tokens_per_s", "usd_per_million_output_tokens", "usd_per_hour"};

double Or(const std::optional<double>& v) { return v ? *v : std::nan(""); }

SimOutcome Extract(const Summary& s) {
  SimOutcome o;
  int i = 0;
  for (const Distribution* d : {&s.ttft, &s.tpot, &s.itl, &s.e2e}) {
    o.metrics[i++] = Or(d->p50);
    o.metrics[i++] = Or(d->p90);
    o.metrics[i++] = Or(d->p95);
    o.metrics[i++] = Or(d->p99);
  }
  o.metrics[i++] = Or(s.attainment);
  o.metrics[i++] = s.arrived > 0 ? static_cast<double>(s.rejected + s.failed + s.unfinished) /
                                       static_cast<double>(s.arrived)
                                 : std::nan("");
  o.metrics[i++] = Or(s.requests_per_s);
  o.metrics[i++] = Or(s.output_tokens_per_s);
  o.metrics[i++] = Or(s.usd_per_million_output_tokens);
  o.metrics[i++] = Or(s.usd_per_hour);
  return o;
}

// A scale in a point's key: three decimals, so that bisection midpoints
// print as they are.
double Round3(double x) { return std::round(x * 1000.0) / 1000.0; }

std::string ValueLabel(const std::string& json_text) {
  if (json_text.size() >= 2 && json_text.front() == '"' && json_text.back() == '"')
    return json_text.substr(1, json_text.size() - 2);
  return json_text;
}

// "fleet.pools[0].max_num_batched_tokens" -> "max_num_batched_tokens".
std::string KeyLabel(const std::string& key) {
  const size_t dot = key.rfind('.');
  std::string k = dot == std::string::npos ? key : key.substr(dot + 1);
  const size_t br = k.find('[');
  return br == std::string::npos ? k : k.substr(0, br);
}

std::string Num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

// Bisection for the fewest n in [lo, hi] that passes, assuming pass is
// monotone in n: the top first (if it fails, nothing in range passes), then
// halving between the highest known failure and the lowest known pass.
struct IntSearch {
  int family = 0;
  double scale = 1;
  int64_t lo = 0, hi = 0;
  int64_t fail_below = 0, pass_at = 0;  // fail_below < answer <= pass_at
  bool top_done = false, done = false;
  std::optional<int64_t> result;
  int64_t Next() const { return !top_done ? hi : fail_below + (pass_at - fail_below) / 2; }
  void Observe(bool pass) {
    const int64_t n = Next();
    if (!top_done) {
      top_done = true;
      if (!pass) {
        done = true;
        return;
      }
      fail_below = lo - 1;
      pass_at = hi;
    } else if (pass) {
      pass_at = n;
    } else {
      fail_below = n;
    }
    if (pass_at - fail_below <= 1) {
      done = true;
      result = pass_at;
    }
  }
};

// Bisection (geometric) for the highest load scale that passes, between a
// known pass and a known or assumed failure.
struct ScaleSearch {
  int family = 0, config = 0;
  double pass_at = 1, fail_at = 0;
  bool fail_known = false, done = false, capped = false;
  double Next() const { return !fail_known ? fail_at : Round3(std::sqrt(pass_at * fail_at)); }
  void Observe(bool pass) {
    if (!fail_known) {
      if (pass) {
        pass_at = fail_at;
        capped = done = true;
        return;
      }
      fail_known = true;
    } else {
      (pass ? pass_at : fail_at) = Next();
    }
    Settle();
  }
  void Settle() {
    if (!fail_known) return;
    const double mid = Round3(std::sqrt(pass_at * fail_at));
    if (fail_at / pass_at <= 1.05 || mid <= pass_at || mid >= fail_at) done = true;
  }
};

// The traffic of a family (its traffic keys may be searched too): read once
// when it is a trace, as one list per replication window.
struct FamilyTraffic {
  TrafficSpec base;
  std::vector<std::shared_ptr<const std::vector<Request>>> lists;  // empty: not preloaded
  std::optional<double> base_rate_per_s;
  std::string description;
};

}  // namespace

const char* PlanMetricName(int i) { return kMetricNames[i]; }

std::vector<int> FrontierMetrics(const PlanSpec& plan) {
  std::vector<int> lat;
  for (const PlanTarget& t : plan.targets)
    if (t.is_max && t.metric.size() > 3 && t.metric.compare(t.metric.size() - 3, 3, "_ms") == 0)
      lat.push_back(PlanMetricIndex(t.metric));
  if (lat.empty()) lat = {PlanMetricIndex("ttft_p99_ms"), PlanMetricIndex("tpot_p99_ms")};
  return lat;
}
int PlanMetricIndex(const std::string& name) {
  for (int i = 0; i < kNumPlanMetrics; ++i)
    if (name == kMetricNames[i]) return i;
  return -1;
}

struct Planner::Impl {
  const Catalog& catalog;
  const Policies& policies;
  PlanResult* out;
  const PlanSpec& plan;
  PlanOptions options;
  std::unique_ptr<BatchRunner> own_runner;
  BatchRunner* runner = nullptr;
  const PlanDimension* bisect = nullptr;
  std::map<std::pair<int, int64_t>, int> config_of;       // (family, n) -> config
  std::map<std::pair<int, double>, int> point_of;         // (config, scale) -> point
  std::vector<std::string> family_traffic_key;             // per family
  std::map<std::string, FamilyTraffic> traffic;           // by family_traffic_key
  PlanProgress progress;
  BuildCache build_cache;  // a measured profile or engine file is read once per plan

  Impl(const Catalog& c, const Policies& p, PlanResult* o) : catalog(c), policies(p), out(o), plan(o->plan) {}

  std::string FamilyError(int f, const std::string& what) const {
    return plan.file + ": family " + std::to_string(f) + " (" + out->families[f].label + "): " + what;
  }

  Status ExpandFamilies() {
    std::vector<const PlanDimension*> dims;
    for (const PlanDimension& d : plan.dimensions) {
      if (d.bisect)
        bisect = &d;
      else
        dims.push_back(&d);
    }
    // The bisected dimension's ratios vary fastest of all: each family of
    // the exhaustive dimensions once per ratio.
    const size_t ratios = bisect ? bisect->ratios.size() : 1;
    size_t n = ratios;
    for (const PlanDimension* d : dims) n *= d->values.size();
    for (size_t i = 0; i < n; ++i) {
      PlanFamily f;
      f.id = static_cast<int>(i);
      size_t rest = i / ratios;
      // The last dimension varies fastest.
      std::vector<size_t> pick(dims.size());
      for (size_t k = dims.size(); k-- > 0;) {
        pick[k] = rest % dims[k]->values.size();
        rest /= dims[k]->values.size();
      }
      std::string key;
      for (size_t k = 0; k < dims.size(); ++k) {
        for (size_t j = 0; j < dims[k]->keys.size(); ++j) {
          const std::string& v = dims[k]->values[pick[k]][j];
          f.settings.emplace_back(dims[k]->keys[j], v);
          if (!f.label.empty()) f.label += " ";
          f.label += KeyLabel(dims[k]->keys[j]) + "=" + ValueLabel(v);
          if (dims[k]->keys[j].rfind("traffic", 0) == 0 || dims[k]->keys[j] == "duration_s")
            key += dims[k]->keys[j] + "=" + v + "\n";
        }
      }
      if (bisect) {
        f.ratio = bisect->ratios[i % ratios];
        if (bisect->keys.size() > 1 || bisect->ratios.size() > 1) {
          // "ratio(pools[0]:pools[1])=1:2"
          std::string pools, shares;
          for (size_t j = 0; j < bisect->keys.size(); ++j) {
            const std::string& k = bisect->keys[j];
            const size_t at = k.find("pools["), end = k.find(']', at);
            pools += (j ? ":" : "") + k.substr(at, end + 1 - at);
            shares += (j ? ":" : "") + std::to_string(f.ratio[j]);
          }
          if (!f.label.empty()) f.label += " ";
          f.label += "ratio(" + pools + ")=" + shares;
        }
      }
      if (f.label.empty()) f.label = "base";
      family_traffic_key.push_back(key);
      out->families.push_back(std::move(f));
    }
    return Status::Ok();
  }

  // The node whose failure takes the largest share of a pool's required
  // replicas (lowest id on ties); every node of a pool holds that pool's
  // replicas only.
  static int WorstNode(const ScenarioRun& run) {
    const FleetPlacement& fp = run.placement();
    std::vector<int> pool_of;
    for (const PoolPlan& p : run.pools())
      for (int r = 0; r < p.spec->total_replicas(); ++r) pool_of.push_back(static_cast<int>(&p - run.pools().data()));
    std::vector<double> lost(fp.nodes(), 0.0);
    for (size_t r = 0; r < fp.replica_nodes.size(); ++r)
      for (int n : fp.replica_nodes[r]) lost[n] += 1.0 / std::max(1, run.pools()[pool_of[r]].spec->replicas);
    return static_cast<int>(std::max_element(lost.begin(), lost.end()) - lost.begin());
  }
  // The base scenario's failures (JSON text) with a drill of `node`.
  std::string FailuresWithDrill(int node) const {
    nlohmann::json base, failures = nlohmann::json::array();
    if (ParseJson(plan.scenario_text, &base).ok() && base.is_object() && base.contains("failures") &&
        base["failures"].is_array())
      failures = base["failures"];
    failures.push_back(
        {{"model", "drill"}, {"node", node}, {"at_s", *plan.node_failure_at_s}, {"kind", plan.node_failure_kind}});
    return failures.dump();
  }

  // Builds the configuration (family f, bisected value n; n unused without
  // a bisected dimension). An infeasible configuration sets *infeasible.
  Status Config(int f, int64_t n, int* index, std::string* infeasible) {
    auto it = config_of.find({f, n});
    if (it != config_of.end()) {
      *index = it->second;
      return Status::Ok();
    }
    PlanConfig c;
    c.family = f;
    c.settings = out->families[f].settings;
    c.id = "f" + std::to_string(f);
    if (bisect) {
      c.replicas = n;
      const std::vector<int64_t>& ratio = out->families[f].ratio;
      for (size_t j = 0; j < bisect->keys.size(); ++j) c.settings.emplace_back(bisect->keys[j], std::to_string(n * ratio[j]));
      c.id += "-r" + std::to_string(n);
    }
    std::vector<std::string> overrides;
    for (const auto& [k, v] : c.settings) overrides.push_back(k + "=" + v);
    ScenarioSpec spec;
    Status s = ParseScenario(plan.scenario_text, plan.scenario_file, plan.scenario_base_dir, &spec, overrides);
    std::unique_ptr<ScenarioRun> run;
    if (s.ok()) s = ScenarioRun::Build(spec, catalog, policies, &run, &build_cache);
    if (s.ok() && plan.node_failure_at_s) {
      // Again, with the worst node's drill added to the scenario's failures.
      c.drill_node = WorstNode(*run);
      overrides.push_back("failures=" + FailuresWithDrill(c.drill_node));
      s = ParseScenario(plan.scenario_text, plan.scenario_file, plan.scenario_base_dir, &spec, overrides);
      if (s.ok()) s = ScenarioRun::Build(spec, catalog, policies, &run, &build_cache);
    }
    if (!s.ok()) {
      if (s.infeasible()) {
        *infeasible = s.message();
        *index = -1;
        return Status::Ok();
      }
      return Status::Invalid(FamilyError(f, s.message()));
    }
    bool priced = true;
    double usd = 0;
    for (const PoolPlan& p : run->pools()) {
      const int64_t g = int64_t{p.spec->total_replicas()} * p.shard.gpus();
      c.gpus += g;
      c.gpus_by_type[p.gpu->name] += g;
      if (p.usd_per_gpu_hour)
        usd += static_cast<double>(g) * *p.usd_per_gpu_hour;
      else
        priced = false;
    }
    if (priced) c.usd_per_hour = usd;
    for (const PoolPlan& p : run->pools()) c.autoscaled = c.autoscaled || p.spec->autoscaler.has_value();
    if (c.autoscaled) c.peak_usd_per_hour = c.usd_per_hour;
    const PoolPlan& p0 = run->pools().front();
    c.gpu_mib = static_cast<double>(p0.gpu->memory_mib);
    c.weights_gib_per_gpu = static_cast<double>(p0.memory.weight_bytes_per_gpu) / 1073741824.0;
    c.kv_gib_per_gpu = static_cast<double>(p0.memory.kv_bytes_per_gpu) / 1073741824.0;
    c.kv_blocks = p0.memory.kv_blocks;
    c.launch = Launch(*run);
    c.run = std::move(run);
    *index = static_cast<int>(out->configs.size());
    out->configs.push_back(std::move(c));
    config_of[{f, n}] = *index;
    return Status::Ok();
  }

  static PlanLaunch Launch(const ScenarioRun& run) {
    PlanLaunch l;
    for (const PoolPlan& p : run.pools()) {
      const PoolSpec& s = *p.spec;
      const std::string model = !p.model->hf_repo.empty() ? p.model->hf_repo : p.model->name;
      const bool sglang = s.scheduler == "sglang";
      const bool prefix = s.prefix_caching.value_or(s.scheduler == "vllm" || s.scheduler == "sglang");
      std::string c;
      char util[16];
      std::snprintf(util, sizeof util, "%.2f", s.gpu_memory_utilization);
      if (sglang) {
        // SGLang's tp-size is the replica's GPUs per stage; with data-parallel
        // attention each of its dp-size ranks gets tp-size / dp-size of them.
        c = "python3 -m sglang.launch_server --model-path " + model + " --tp-size " +
            std::to_string(p.shard.tp * p.shard.dp);
        if (p.shard.pp > 1) c += " --pp-size " + std::to_string(p.shard.pp);
        if (p.shard.ep > 1) c += " --ep-size " + std::to_string(p.shard.ep);
        if (p.shard.dp > 1) c += " --enable-dp-attention --dp-size " + std::to_string(p.shard.dp);
        if (s.role != PoolSpec::Role::kBoth)
          c += std::string(" --disaggregation-mode ") + (s.role == PoolSpec::Role::kPrefill ? "prefill" : "decode");
        if (s.speculative) {
          const SpeculativeSpec& sp = *s.speculative;
          // One chain of k guesses, as the simulation prices it.
          // SGLang runs a model's own MTP layers with its EAGLE worker,
          // read from the checkpoint.
          c += sp.method == "eagle" ? " --speculative-algorithm EAGLE --speculative-draft-model-path '<EAGLE head for " +
                                          model + ">'"
               : sp.method == "mtp" ? std::string(" --speculative-algorithm EAGLE")
                                    : " --speculative-algorithm STANDALONE --speculative-draft-model-path " +
                                          (p.draft && !p.draft->hf_repo.empty() ? p.draft->hf_repo : sp.draft_model);
          c += " --speculative-num-steps " + std::to_string(sp.k) + " --speculative-eagle-topk 1" +
               " --speculative-num-draft-tokens " + std::to_string(sp.k + 1);
        }
        c += " --chunked-prefill-size " + std::to_string(p.limits.max_num_batched_tokens) +
             " --max-running-requests " + std::to_string(p.limits.max_num_seqs) + " --mem-fraction-static " + util;
        if (s.max_model_len) c += " --context-length " + std::to_string(p.max_model_len);
        if (s.kv_cache_dtype == "fp8") c += " --kv-cache-dtype fp8_e4m3";
        if (!prefix) c += " --disable-radix-cache";
        if (s.block_size != 16) c += " --page-size " + std::to_string(s.block_size);
      } else {
        // vLLM V1 unless the pool runs V0's (or Sarathi-Serve's chunked) scheduler.
        const bool v0 = s.scheduler == "vllm_v0" || s.scheduler == "sarathi";
        c = std::string(v0 ? "VLLM_USE_V1=0 " : "") + "vllm serve " + model + " --tensor-parallel-size " +
            std::to_string(p.shard.tp);
        if (p.shard.pp > 1) c += " --pipeline-parallel-size " + std::to_string(p.shard.pp);
        if (p.shard.ep > 1) c += " --enable-expert-parallel";
        if (p.shard.dp > 1) c += " --data-parallel-size " + std::to_string(p.shard.dp);
        // Disaggregated pools move KV with NIXL, as vLLM's P/D proxy example runs them.
        if (s.role != PoolSpec::Role::kBoth)
          c += " --kv-transfer-config '{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}'";
        if (s.speculative) {
          const SpeculativeSpec& sp = *s.speculative;
          nlohmann::json cfg = {{"num_speculative_tokens", sp.k}};
          // An EAGLE head's checkpoint is the user's to name.
          if (sp.method == "eagle")
            cfg.update({{"method", "eagle"}, {"model", "<EAGLE head for " + model + ">"}});
          else if (sp.method == "mtp")
            cfg["method"] = "deepseek_mtp";  // the checkpoint's own MTP layers
          else
            cfg["model"] = p.draft && !p.draft->hf_repo.empty() ? p.draft->hf_repo : sp.draft_model;
          c += " --speculative-config '" + cfg.dump() + "'";
        }
        // vLLM applies these to each data-parallel engine; the simulated
        // scheduler holds dp times them (ResolvePool).
        c += " --max-num-batched-tokens " + std::to_string(p.limits.max_num_batched_tokens / p.shard.dp) +
             " --max-num-seqs " + std::to_string(p.limits.max_num_seqs / p.shard.dp) + " --gpu-memory-utilization " +
             util;
        if (s.max_model_len) c += " --max-model-len " + std::to_string(p.max_model_len);
        if (s.kv_cache_dtype != "auto") c += " --kv-cache-dtype " + s.kv_cache_dtype;
        if (s.block_size != 16) c += " --block-size " + std::to_string(s.block_size);
        if (s.scheduler == "vllm_v0") c += " --no-enable-chunked-prefill";
        if (s.scheduler == "sarathi") c += " --enable-chunked-prefill";
        c += prefix ? " --enable-prefix-caching" : " --no-enable-prefix-caching";
        if (s.preemption == "swap") c += " --swap-space " + Num(s.swap_space_gib);
      }
      if (!l.command.empty()) l.command += "\n";
      l.command += c;
      l.engine = sglang ? "sglang" : "vllm";
      l.replicas += s.total_replicas();  // spares are deployed too
    }
    return l;
  }

  // Reads a family's trace once (one list per replication window), or notes
  // how a generator's load scales.
  Status PrepareTraffic(int f, const ScenarioRun& run) {
    const std::string& key = family_traffic_key[f];
    if (traffic.count(key)) return Status::Ok();
    FamilyTraffic t;
    const ScenarioSpec& spec = run.spec();
    t.base = spec.traffic;
    const TrafficSpec& b = t.base;
    char buf[256];
    if (b.kind == TrafficSpec::Kind::kGenerator || (b.kind == TrafficSpec::Kind::kTrace && b.format == TraceFormat::kServeGen)) {
      if (plan.trace_window_s)
        return Status::Invalid(plan.file + ": load.trace_window_s: the scenario's traffic " +
                               (b.kind == TrafficSpec::Kind::kGenerator ? "is generated"
                                                                         : "is a ServeGen trace, whose arrivals are generated") +
                               ": replications already draw their own arrivals; leave trace_window_s out");
      if (b.kind == TrafficSpec::Kind::kGenerator && !b.closed_loop && !b.sessions) t.base_rate_per_s = b.rate_per_s;
      if (b.closed_loop) {
        std::snprintf(buf, sizeof buf, "closed loop: %lld clients at scale 1 (a load scale multiplies the clients)",
                      static_cast<long long>(b.closed_loop->users));
      } else if (b.kind == TrafficSpec::Kind::kGenerator) {
        std::snprintf(buf, sizeof buf, "generated: %.6g %s per second at scale 1", b.rate_per_s,
                      b.sessions ? "sessions" : "requests");
      } else {
        std::snprintf(buf, sizeof buf, "ServeGen trace %s at rate_scale %.6g at scale 1", b.path.c_str(), b.rate_scale);
      }
      t.description = buf;
      traffic[key] = std::move(t);
      return Status::Ok();
    }
    if (b.kind != TrafficSpec::Kind::kTrace) return Status::Invalid(plan.file + ": scenario: traffic: unsupported kind");
    // The longest stretch of trace time any run can reach: the arrival
    // limit at the highest load scale tried.
    double max_scale = plan.max_rate_scale;
    for (double s : plan.rate_scales) max_scale = std::max(max_scale, s);
    double limit_s = b.max_arrival_s;
    if (spec.duration_s) limit_s = std::min(limit_s, *spec.duration_s);
    const int windows = plan.trace_window_s ? plan.replications : 1;
    double rate_requests = 0, rate_span = 0;
    for (int w = 0; w < windows; ++w) {
      TrafficSpec rd = b;
      rd.rate_scale = 1;
      rd.max_arrival_s = std::numeric_limits<double>::infinity();
      if (plan.trace_window_s) {
        rd.start_s = b.start_s + w * *plan.trace_window_s;
        rd.end_s = std::min(b.end_s, rd.start_s + *plan.trace_window_s);
      }
      // Closed-loop clients take requests at their own pace: no cut by time.
      if (std::isfinite(limit_s) && !b.closed_loop)
        rd.end_s = std::min(rd.end_s, rd.start_s + limit_s * b.rate_scale * max_scale);
      std::unique_ptr<RequestSource> src;
      FLEETSIM_RETURN_IF_ERROR(
          MakeRequestSource(rd, Rng::ForStream(plan.seed, 0, "traffic"), &src).WithPrefix(spec.file + ": "));
      auto list = std::make_shared<std::vector<Request>>();
      Request r;
      while (src->Next(&r)) list->push_back(r);
      FLEETSIM_RETURN_IF_ERROR(src->status().WithPrefix(spec.file + ": "));
      if (list->empty())
        return Status::Invalid(plan.file + ": load.trace_window_s: replication " + std::to_string(w) +
                               "'s window of the trace (from " + Num(rd.start_s) + " s) holds no requests; " +
                               "use a shorter window or fewer replications");
      // The rate at scale 1: requests over the span they arrive in, over
      // every window.
      {
        const double last = TimeToSeconds(list->back().arrival) / b.rate_scale;
        int64_t in_limit = 0;
        for (const Request& q : *list)
          if (TimeToSeconds(q.arrival) / b.rate_scale < limit_s) ++in_limit;
        in_limit = std::min<int64_t>(in_limit, b.max_requests);
        double span = std::isfinite(limit_s) ? std::min(limit_s, last) : last;
        if (in_limit >= b.max_requests) {
          // Cut by count: the span is where the last counted request arrives.
          span = TimeToSeconds((*list)[static_cast<size_t>(in_limit - 1)].arrival) / b.rate_scale;
        } else if (plan.trace_window_s) {
          const double window = *plan.trace_window_s / b.rate_scale;
          span = std::isfinite(limit_s) ? std::min(limit_s, window) : window;
        }
        rate_requests += static_cast<double>(in_limit);
        rate_span += span;
      }
      t.lists.push_back(std::move(list));
    }
    if (rate_span > 0 && rate_requests > 1 && !b.closed_loop) t.base_rate_per_s = rate_requests / rate_span;
    std::snprintf(buf, sizeof buf, "trace %s at rate_scale %.6g at scale 1%s", b.path.c_str(), b.rate_scale,
                  plan.trace_window_s ? "; replication r replays its own window of the trace" : "");
    t.description = buf;
    traffic[key] = std::move(t);
    return Status::Ok();
  }

  TrafficSpec TrafficFor(int f, double scale, int rep) const {
    const FamilyTraffic& t = traffic.at(family_traffic_key[f]);
    TrafficSpec s = t.base;
    if (s.closed_loop) {
      s.closed_loop->users = std::max<int64_t>(1, std::llround(static_cast<double>(s.closed_loop->users) * scale));
      if (!t.lists.empty()) {
        s.kind = TrafficSpec::Kind::kList;
        s.requests = t.lists[t.lists.size() > 1 ? rep : 0];
        s.rate_scale = 1;
      }
      return s;
    }
    if (s.kind == TrafficSpec::Kind::kGenerator) {
      s.rate_per_s *= scale;
    } else if (!t.lists.empty()) {
      s.kind = TrafficSpec::Kind::kList;
      s.requests = t.lists[t.lists.size() > 1 ? rep : 0];
      s.rate_scale = t.base.rate_scale * scale;
    } else {
      s.rate_scale *= scale;
    }
    return s;
  }

  void Report(const std::string& phase) {
    progress.phase = phase;
    if (options.progress) options.progress(progress);
  }

  // Runs every (config, scale) point not yet run, R replications each.
  Status Evaluate(std::vector<std::pair<int, double>> keys) {
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    std::vector<std::pair<int, double>> todo;
    for (const auto& k : keys)
      if (!point_of.count(k)) todo.push_back(k);
    if (todo.empty()) return Status::Ok();
    const int R = plan.replications;
    std::vector<TrafficSpec> specs(todo.size() * R);
    for (size_t k = 0; k < todo.size(); ++k)
      for (int r = 0; r < R; ++r) specs[k * R + r] = TrafficFor(out->configs[todo[k].first].family, todo[k].second, r);
    auto job = [&](size_t i) -> SimOutcome {
      const PlanConfig& c = out->configs[todo[i / R].first];
      RunOptions ro;
      ro.seed = plan.seed + static_cast<uint64_t>(i % R);
      ro.traffic = &specs[i];
      ro.identify_inputs = false;
      ro.stop = options.stop;
      RunReport report;
      const Status s = c.run->Run(MetricsOptions(), ro, {}, &report);
      if (!s.ok()) {
        SimOutcome o;
        o.error = s.message();
        return o;
      }
      return Extract(report.summary);
    };
    progress.sims_round = static_cast<int64_t>(runner->LocalJobs(specs.size()));
    progress.sims_round_done = 0;
    ++progress.round;
    std::vector<SimOutcome> outs;
    runner->Run(specs.size(), job, [&](size_t done) {
      progress.sims_round_done = static_cast<int64_t>(done);
      Report(progress.phase);
    }, &outs);
    progress.sims_done += progress.sims_round;
    progress.sims_round = progress.sims_round_done = 0;
    out->simulations += static_cast<int64_t>(specs.size());
    // A stop on any rank stops every rank, before the next round.
    if (!runner->AllAgree(!(options.stop && *options.stop))) return Status::Invalid("stopped");
    for (size_t i = 0; i < outs.size(); ++i)
      if (!outs[i].error.empty())
        return Status::Invalid(FamilyError(out->configs[todo[i / R].first].family, outs[i].error));
    for (size_t k = 0; k < todo.size(); ++k) {
      PlanPoint p;
      p.config = todo[k].first;
      p.rate_scale = todo[k].second;
      const FamilyTraffic& t = traffic.at(family_traffic_key[out->configs[p.config].family]);
      if (t.base_rate_per_s) p.rate_per_s = *t.base_rate_per_s * p.rate_scale;
      p.values.assign(kNumPlanMetrics, std::vector<double>(R));
      for (int m = 0; m < kNumPlanMetrics; ++m) {
        for (int r = 0; r < R; ++r) p.values[m][r] = outs[k * R + r].metrics[m];
        p.metrics.push_back(MeanInterval(p.values[m]));
      }
      Judge(&p);
      point_of[todo[k]] = static_cast<int>(out->points.size());
      out->points.push_back(std::move(p));
    }
    return Status::Ok();
  }

  void Judge(PlanPoint* p) const {
    const int R = plan.replications;
    p->meets_all = true;
    p->worst_ratio = 0;
    for (size_t t = 0; t < plan.targets.size(); ++t) {
      const PlanTarget& tg = plan.targets[t];
      const int m = PlanMetricIndex(tg.metric);
      const Interval& iv = p->metrics[m];
      int met = 0;
      for (double v : p->values[m])
        if (std::isfinite(v) && (tg.is_max ? v <= tg.limit : v >= tg.limit)) ++met;
      p->met_fraction.push_back(static_cast<double>(met) / R);
      const bool missing = iv.n < R;  // a replication without the figure (nothing completed) misses
      const double bound = tg.is_max ? iv.hi : iv.lo;
      const bool ok = !missing && (tg.is_max ? bound <= tg.limit : bound >= tg.limit);
      p->meets.push_back(ok);
      p->meets_all = p->meets_all && ok;
      double ratio = std::numeric_limits<double>::infinity();
      if (!missing) {
        if (tg.is_max)
          ratio = tg.limit > 0 ? bound / tg.limit : (bound > 0 ? ratio : 0.0);
        else if (bound > 0)
          ratio = tg.limit / bound;
      }
      if (p->worst_target < 0 || ratio > p->worst_ratio) {
        p->worst_ratio = ratio;
        p->worst_target = static_cast<int>(t);
      }
    }
  }

  const PlanPoint& Point(int config, double scale) const { return out->points[point_of.at({config, scale})]; }

  // The bisected range a family may use within the quotas and the budget,
  // from its configs at the range's ends (GPUs and cost are affine in it).
  Status BoundRange(int f) {
    PlanFamily& fam = out->families[f];
    const int64_t lo = bisect ? bisect->min : 0, hi = bisect ? bisect->max : 0;
    int a = -1, b = -1;
    std::string infeasible;
    FLEETSIM_RETURN_IF_ERROR(Config(f, lo, &a, &infeasible));
    if (a < 0) {
      fam.status = PlanFamily::Status::kDropped;
      fam.reason = infeasible;
      return Status::Ok();
    }
    FLEETSIM_RETURN_IF_ERROR(PrepareTraffic(f, *out->configs[a].run));
    fam.base_rate_per_s = traffic.at(family_traffic_key[f]).base_rate_per_s;
    if (hi != lo) {
      FLEETSIM_RETURN_IF_ERROR(Config(f, hi, &b, &infeasible));
      if (b < 0) {
        fam.status = PlanFamily::Status::kDropped;
        fam.reason = infeasible;
        return Status::Ok();
      }
    } else {
      b = a;
    }
    const PlanConfig& A = out->configs[a];
    const PlanConfig& B = out->configs[b];
    std::string why_not;
    auto allowed = [&](int64_t n, std::string* why) {
      const double t = hi == lo ? 0.0 : static_cast<double>(n - lo) / static_cast<double>(hi - lo);
      for (const auto& [gpu, quota] : plan.quotas) {
        const double ga = A.gpus_by_type.count(gpu) ? static_cast<double>(A.gpus_by_type.at(gpu)) : 0.0;
        const double gb = B.gpus_by_type.count(gpu) ? static_cast<double>(B.gpus_by_type.at(gpu)) : 0.0;
        const double g = ga + (gb - ga) * t;
        if (g > static_cast<double>(quota) + 1e-9) {
          *why = "needs " + Num(g) + " " + gpu + " GPUs; the quota is " + std::to_string(quota);
          return false;
        }
      }
      if (plan.budget_usd_per_hour) {
        if (!A.usd_per_hour || !B.usd_per_hour) {
          *why = "has no price for its GPUs, so the budget cannot be checked";
          return false;
        }
        const double usd = *A.usd_per_hour + (*B.usd_per_hour - *A.usd_per_hour) * t;
        if (usd > *plan.budget_usd_per_hour * (1 + 1e-12)) {
          *why = "costs $" + Num(usd) + "/h; the budget is $" + Num(*plan.budget_usd_per_hour) + "/h";
          return false;
        }
      }
      return true;
    };
    if (!allowed(lo, &why_not)) {
      fam.status = PlanFamily::Status::kDropped;
      fam.reason = (bisect ? "at " + std::to_string(lo) + " (the fewest) it " : "it ") + why_not;
      return Status::Ok();
    }
    int64_t top = hi;
    if (!allowed(hi, &why_not)) {
      int64_t ok = lo, bad = hi;  // allowed is monotone: GPUs and cost grow with n
      while (bad - ok > 1) {
        const int64_t mid = ok + (bad - ok) / 2;
        std::string w;
        (allowed(mid, &w) ? ok : bad) = mid;
      }
      top = ok;
      allowed(top + 1, &fam.reason);  // why the range stops there
      fam.reason = "capped at " + std::to_string(top) + ": " + std::to_string(top + 1) + " " + fam.reason;
    }
    if (bisect) fam.replica_range = std::make_pair(lo, top);
    fam.status = PlanFamily::Status::kMeets;  // provisional: decided by the search
    return Status::Ok();
  }

  // Runs searches in lockstep rounds until all are done.
  Status RunSearches(std::vector<IntSearch>* ints, std::vector<ScaleSearch>* scales, const std::string& phase,
                     bool phase_counts_families) {
    for (;;) {
      std::vector<std::pair<int, double>> keys;
      std::vector<std::pair<size_t, int>> int_probe;  // search, config
      for (size_t i = 0; i < ints->size(); ++i) {
        IntSearch& s = (*ints)[i];
        if (s.done) continue;
        int c = -1;
        std::string infeasible;
        FLEETSIM_RETURN_IF_ERROR(Config(s.family, s.Next(), &c, &infeasible));
        if (c < 0) return Status::Invalid(FamilyError(s.family, "infeasible inside its range: " + infeasible));
        keys.emplace_back(c, s.scale);
        int_probe.emplace_back(i, c);
      }
      for (const ScaleSearch& s : *scales)
        if (!s.done) keys.emplace_back(s.config, s.Next());
      if (keys.empty()) return Status::Ok();
      Report(phase);
      FLEETSIM_RETURN_IF_ERROR(Evaluate(keys));
      for (const auto& [i, c] : int_probe) (*ints)[i].Observe(Point(c, (*ints)[i].scale).meets_all);
      for (ScaleSearch& s : *scales)
        if (!s.done) s.Observe(Point(s.config, s.Next()).meets_all);
      if (phase_counts_families) {
        progress.families_done = 0;
        for (const IntSearch& s : *ints) progress.families_done += s.done;
      }
    }
  }

  Status Search() {
    PlanResult& r = *out;
    progress.families = static_cast<int64_t>(r.families.size());
    Report("building configurations");
    Status built;
    for (size_t f = 0; f < r.families.size() && built.ok(); ++f) built = BoundRange(static_cast<int>(f));
    // Every rank reads the same files; should one fail alone, all stop.
    if (!runner->AllAgree(built.ok()))
      return built.ok() ? Status::Invalid(plan.file + ": another MPI rank could not build the configurations") : built;
    bool any = false;
    int64_t expected = 0, widest = 0;
    for (const PlanFamily& f : r.families) {
      if (f.status == PlanFamily::Status::kDropped) continue;
      any = true;
      const int64_t range = f.replica_range ? f.replica_range->second - f.replica_range->first + 1 : 1;
      const int64_t steps = static_cast<int64_t>(std::ceil(std::log2(static_cast<double>(range)))) + 1;
      expected += steps;
      widest = std::max(widest, steps);
    }
    if (!any) return Status::Ok();
    const int64_t curves = static_cast<int64_t>(plan.rate_scales.size());
    expected += plan.shortlist * (curves + 5 + (bisect ? (curves - 1) * widest : 0));
    progress.sims_expected = expected * plan.replications / std::max(1, runner->ranks());

    // 1. The fewest replicas meeting every target at the stated load.
    std::vector<IntSearch> ints;
    for (const PlanFamily& f : r.families) {
      if (f.status == PlanFamily::Status::kDropped) continue;
      IntSearch s;
      s.family = f.id;
      s.lo = f.replica_range ? f.replica_range->first : 0;
      s.hi = f.replica_range ? f.replica_range->second : 0;
      ints.push_back(s);
    }
    std::vector<ScaleSearch> none;
    FLEETSIM_RETURN_IF_ERROR(RunSearches(&ints, &none, "replicas at the stated load", true));
    for (const IntSearch& s : ints) {
      PlanFamily& f = r.families[s.family];
      int c = -1;
      std::string unused;
      if (s.result) {
        FLEETSIM_RETURN_IF_ERROR(Config(s.family, *s.result, &c, &unused));
        f.status = PlanFamily::Status::kMeets;
        f.config = c;
        if (bisect) f.min_replicas = *s.result;
        f.reason.clear();
      } else {
        FLEETSIM_RETURN_IF_ERROR(Config(s.family, s.hi, &c, &unused));
        const PlanPoint& p = Point(c, 1.0);
        f.status = PlanFamily::Status::kMisses;
        const PlanTarget& tg = plan.targets[p.worst_target];
        const int m = PlanMetricIndex(tg.metric);
        const std::string at = bisect ? " even at " + std::to_string(s.hi) + " (the top of its range" +
                                            (f.reason.empty() ? "" : ", " + f.reason) + ")"
                                      : "";
        f.reason = "misses " + tg.label + at + ": " + (tg.is_max ? "upper" : "lower") + " bound " +
                   Num(tg.is_max ? p.metrics[m].hi : p.metrics[m].lo);
        f.binding = PlanBinding{p.worst_target, 1.0};
      }
    }

    // An autoscaled fleet costs what its runs at the stated load paid (the
    // mean over replications), not its peak.
    for (size_t c = 0; c < r.configs.size(); ++c) {
      PlanConfig& pc = r.configs[c];
      if (!pc.autoscaled || !pc.usd_per_hour || !point_of.count({static_cast<int>(c), 1.0})) continue;
      const double measured = Point(static_cast<int>(c), 1.0).metrics[PlanMetricIndex("usd_per_hour")].mean;
      if (std::isfinite(measured)) pc.usd_per_hour = measured;
    }

    // 2. The shortlist: the cheapest passing families.
    std::vector<int> pass;
    for (const PlanFamily& f : r.families)
      if (f.status == PlanFamily::Status::kMeets) pass.push_back(f.id);
    auto cost = [&](int f) {
      const PlanConfig& c = r.configs[r.families[f].config];
      return c.usd_per_hour ? *c.usd_per_hour : std::numeric_limits<double>::infinity();
    };
    std::stable_sort(pass.begin(), pass.end(), [&](int a, int b) {
      const PlanConfig& ca = r.configs[r.families[a].config];
      const PlanConfig& cb = r.configs[r.families[b].config];
      if (cost(a) != cost(b)) return cost(a) < cost(b);
      if (ca.gpus != cb.gpus) return ca.gpus < cb.gpus;
      return Point(r.families[a].config, 1.0).worst_ratio < Point(r.families[b].config, 1.0).worst_ratio;
    });
    if (static_cast<int>(pass.size()) > plan.shortlist) pass.resize(plan.shortlist);
    r.recommendations = pass;
    for (int f : pass) r.families[f].shortlisted = true;
    if (!pass.empty()) r.chosen = r.families[pass[0]].config;

    // 3. Curves at every load point, the fleet needed per load, headroom.
    std::vector<std::pair<int, double>> curve;
    std::vector<IntSearch> costs;
    for (int f : pass) {
      const PlanFamily& fam = r.families[f];
      for (double s : plan.rate_scales) {
        curve.emplace_back(fam.config, s);
        if (!bisect || s == 1.0) continue;
        IntSearch cs;
        cs.family = f;
        cs.scale = s;
        cs.lo = s < 1 ? fam.replica_range->first : *fam.min_replicas;
        cs.hi = s < 1 ? *fam.min_replicas : fam.replica_range->second;
        costs.push_back(cs);
      }
    }
    Report("load curves");
    FLEETSIM_RETURN_IF_ERROR(Evaluate(curve));
    std::vector<ScaleSearch> heads;
    for (int f : pass) {
      const PlanFamily& fam = r.families[f];
      ScaleSearch h;
      h.family = f;
      h.config = fam.config;
      h.pass_at = 1;
      h.fail_at = plan.max_rate_scale;  // assumed to fail until run
      // The curve points up to max_rate_scale narrow the search; those
      // beyond it are curve points only.
      for (double s : plan.rate_scales) {
        if (s <= 1 || s > plan.max_rate_scale) continue;
        if (!Point(fam.config, s).meets_all) {
          h.fail_at = s;
          h.fail_known = true;
          break;
        }
        h.pass_at = s;
      }
      if (h.pass_at >= plan.max_rate_scale) {
        h.capped = h.done = true;
      } else {
        h.Settle();
      }
      heads.push_back(h);
    }
    FLEETSIM_RETURN_IF_ERROR(RunSearches(&costs, &heads, "cost and headroom per load", false));
    for (const ScaleSearch& h : heads) {
      PlanFamily& fam = r.families[h.family];
      fam.headroom_scale = h.pass_at;
      fam.headroom_capped = h.capped;
      if (!h.capped) {
        const PlanPoint& p = Point(h.config, h.fail_at);
        int worst = -1;
        double ratio = -1;
        for (size_t t = 0; t < plan.targets.size(); ++t) {
          if (p.meets[t]) continue;
          const PlanTarget& tg = plan.targets[t];
          const Interval& iv = p.metrics[PlanMetricIndex(tg.metric)];
          const double bound = tg.is_max ? iv.hi : iv.lo;
          const double q = iv.n < plan.replications ? std::numeric_limits<double>::infinity()
                                                    : (tg.is_max ? bound / std::max(tg.limit, 1e-300)
                                                                 : tg.limit / std::max(bound, 1e-300));
          if (q > ratio) {
            ratio = q;
            worst = static_cast<int>(t);
          }
        }
        if (worst >= 0) fam.binding = PlanBinding{worst, h.fail_at};
      }
    }
    for (int f : pass) {
      PlanFamily& fam = r.families[f];
      for (double s : plan.rate_scales) {
        PlanFamily::CostPoint cp;
        cp.rate_scale = s;
        if (!bisect) {
          if (Point(fam.config, s).meets_all) cp.config = fam.config;
        } else if (s == 1.0) {
          cp.replicas = fam.min_replicas;
          cp.config = fam.config;
        } else {
          for (const IntSearch& cs : costs)
            if (cs.family == f && cs.scale == s && cs.result) {
              cp.replicas = cs.result;
              std::string unused;
              FLEETSIM_RETURN_IF_ERROR(Config(f, *cs.result, &cp.config, &unused));
            }
        }
        fam.cost_curve.push_back(cp);
      }
    }
    return Status::Ok();
  }

  void Finish() {
    PlanResult& r = *out;
    // Points in config then scale order: the outputs do not depend on the
    // order the search ran them in.
    std::vector<int> order(r.points.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      const PlanPoint& pa = r.points[a];
      const PlanPoint& pb = r.points[b];
      const PlanConfig& ca = r.configs[pa.config];
      const PlanConfig& cb = r.configs[pb.config];
      if (ca.family != cb.family) return ca.family < cb.family;
      if (ca.replicas != cb.replicas) return ca.replicas < cb.replicas;
      return pa.rate_scale < pb.rate_scale;
    });
    std::vector<PlanPoint> sorted;
    for (int i : order) sorted.push_back(std::move(r.points[i]));
    r.points = std::move(sorted);
    point_of.clear();
    for (size_t i = 0; i < r.points.size(); ++i) point_of[{r.points[i].config, r.points[i].rate_scale}] = static_cast<int>(i);

    // Monotonicity, on every point run.
    for (const PlanFamily& f : r.families) {
      std::map<double, std::vector<std::pair<int64_t, bool>>> by_scale;  // scale -> (n, meets)
      std::map<int64_t, std::vector<std::pair<double, bool>>> by_n;      // n -> (scale, meets)
      for (const PlanPoint& p : r.points) {
        const PlanConfig& c = r.configs[p.config];
        if (c.family != f.id) continue;
        by_scale[p.rate_scale].emplace_back(c.replicas, p.meets_all);
        by_n[c.replicas].emplace_back(p.rate_scale, p.meets_all);
      }
      for (const auto& [scale, v] : by_scale)
        for (size_t i = 0; i < v.size(); ++i)
          for (size_t j = i + 1; j < v.size(); ++j)
            if (v[i].second && !v[j].second)
              r.monotonicity.emplace_back(
                  f.id, "at rate scale " + Num(scale) + " it meets the targets with " + std::to_string(v[i].first) +
                            " replicas but not with " + std::to_string(v[j].first));
      for (const auto& [n, v] : by_n)
        for (size_t i = 0; i < v.size(); ++i)
          for (size_t j = i + 1; j < v.size(); ++j)
            if (!v[i].second && v[j].second)
              r.monotonicity.emplace_back(f.id, (bisect ? "with " + std::to_string(n) + " replicas it" : "it") +
                                                    std::string(" misses the targets at rate scale ") +
                                                    Num(v[i].first) + " but meets them at " + Num(v[j].first));
    }

    // The Pareto frontier at the stated load: cost against each latency target.
    const std::vector<int> lat = FrontierMetrics(plan);
    // Cost in one unit: $/hour, or GPUs when some configuration has no price.
    bool all_priced = true;
    for (const PlanPoint& p : r.points) all_priced = all_priced && r.configs[p.config].usd_per_hour.has_value();
    r.frontier_cost_is_usd = all_priced;
    std::vector<std::pair<int, std::vector<double>>> cand;  // config, objectives
    for (const PlanPoint& p : r.points) {
      if (p.rate_scale != 1.0) continue;
      const PlanConfig& c = r.configs[p.config];
      std::vector<double> o = {all_priced ? *c.usd_per_hour : static_cast<double>(c.gpus)};
      bool finite = true;
      for (int m : lat) {
        o.push_back(p.metrics[m].mean);
        finite = finite && std::isfinite(p.metrics[m].mean);
      }
      if (finite) cand.emplace_back(p.config, std::move(o));
    }
    for (size_t i = 0; i < cand.size(); ++i) {
      bool dominated = false;
      for (size_t j = 0; j < cand.size() && !dominated; ++j) {
        if (i == j) continue;
        bool le = true, lt = false;
        for (size_t k = 0; k < cand[i].second.size(); ++k) {
          le = le && cand[j].second[k] <= cand[i].second[k];
          lt = lt || cand[j].second[k] < cand[i].second[k];
        }
        dominated = le && lt;
      }
      if (!dominated) r.frontier.push_back(static_cast<int>(i));
    }
    std::sort(r.frontier.begin(), r.frontier.end(), [&](int a, int b) {
      if (cand[a].second != cand[b].second) return cand[a].second < cand[b].second;
      return cand[a].first < cand[b].first;
    });
    for (int& i : r.frontier) i = cand[i].first;

    r.assumptions.push_back(
        "A point meets a target when the pessimistic bound of its 95% Student-t interval over " +
        std::to_string(plan.replications) + " replication" + (plan.replications == 1 ? "" : "s") +
        " does (the upper bound for latencies and the reject rate, the lower for attainment)" +
        (plan.replications == 1 ? "; with one replication there is no interval and the bound is the value" : "") + ".");
    if (bisect) {
      std::string keys;
      for (const std::string& k : bisect->keys) keys += (keys.empty() ? "" : ", ") + k;
      r.assumptions.push_back(
          "Adding replicas (" + keys +
          (bisect->keys.size() > 1 ? ", m units of the family's ratio" : "") +
          ") never makes a configuration miss a target it met: the fewest replicas are found "
          "by bisection. Checked on every point run (violations below).");
    }
    r.assumptions.push_back(
        "Raising the load never makes a configuration meet a target it missed: the headroom and the fleet "
        "needed per load are found by bisection. Checked on every point run (violations below).");
    r.assumptions.push_back("Replication r runs with seed " + std::to_string(plan.seed) +
                            " + r; in a replication every configuration sees the same traffic (common random "
                            "numbers), so differences between configurations are not noise in the traffic.");
    r.assumptions.push_back(std::string("chosen/ is the recommended configuration run once more at the stated load ") +
                            "as replication 0 (seed " + std::to_string(plan.seed) + ")" +
                            (plan.trace_window_s ? ", replaying the first window of the trace" : "") + ".");
    if (!r.traffic_replicated)
      r.assumptions.push_back(
          "The traffic is a trace replayed whole in every replication: the intervals cover only the service's "
          "randomness, not the traffic's (set load.trace_window_s to give each replication its own window).");
  }
};

Planner::Planner(const PlanSpec& plan, const Catalog& catalog, const Policies& policies) {
  result_.plan = plan;
  impl_ = std::make_unique<Impl>(catalog, policies, &result_);
}

Planner::~Planner() = default;

Status Planner::Run(const PlanOptions& options) {
  Impl& m = *impl_;
  m.options = options;
  m.runner = options.runner;
  if (!m.runner) {
    m.own_runner = MakeThreadRunner(std::max(1, options.threads));
    m.runner = m.own_runner.get();
  }
  FLEETSIM_RETURN_IF_ERROR(m.ExpandFamilies());
  {
    ScenarioSpec base;
    FLEETSIM_RETURN_IF_ERROR(ParseScenario(result_.plan.scenario_text, result_.plan.scenario_file,
                                           result_.plan.scenario_base_dir, &base));
    result_.scenario_name = !base.name.empty() ? base.name : result_.plan.scenario_file;
    bool slo_searched = false;
    for (const PlanDimension& d : result_.plan.dimensions)
      for (const std::string& k : d.keys) slo_searched = slo_searched || k.rfind("slo", 0) == 0;
    for (const auto& [gpu, quota] : result_.plan.quotas)
      if (!impl_->catalog.FindGpu(gpu))
        return Status::Invalid(result_.plan.file + ": quotas." + gpu + ": unknown GPU \"" + gpu +
                               "\" (fleetsim list shows the catalogue's)");
    for (const PlanTarget& t : result_.plan.targets)
      if (t.id == "attainment" && !base.ttft_slo_ms && !base.tpot_slo_ms && !slo_searched)
        return Status::Invalid(result_.plan.file +
                               ": targets.attainment: the scenario has no slo section (slo.ttft_ms, slo.tpot_ms) "
                               "to measure attainment against");
    result_.traffic_replicated = !(base.traffic.kind == TrafficSpec::Kind::kTrace &&
                                   base.traffic.format != TraceFormat::kServeGen && !result_.plan.trace_window_s);
  }
  FLEETSIM_RETURN_IF_ERROR(m.Search());
  // The load as the first family that was built sees it (families differ
  // only when a traffic key is searched; each family keeps its own rate).
  for (const std::string& key : m.family_traffic_key) {
    auto it = m.traffic.find(key);
    if (it == m.traffic.end()) continue;
    result_.base_rate_per_s = it->second.base_rate_per_s;
    result_.load_description = it->second.description;
    break;
  }
  m.Finish();
  return Status::Ok();
}

Status Planner::RunChosen(const MetricsOptions& outputs, RunReport* report) {
  if (result_.chosen < 0) return Status::Invalid("no configuration meets the targets");
  const PlanConfig& c = result_.configs[result_.chosen];
  const TrafficSpec t = impl_->TrafficFor(c.family, 1.0, 0);
  RunOptions ro;
  ro.seed = result_.plan.seed;
  ro.traffic = &t;
  ro.stop = impl_->options.stop;
  return c.run->Run(outputs, ro, {}, report);
}

}  // namespace fleetsim

// GuideLLM's benchmarks.json (GenerativeBenchmarksReport): "benchmarks", one
// per strategy of a run (a sweep has several), each with its strategy, its
// metrics (StatusDistributionSummary per metric: successful/errored/
// incomplete/total of {mean, median, percentiles: {p90, p99, ...}}), its
// request totals and its requests by status. Two generations of the
// schema are read:
//   0.3 (guidellm/benchmark/benchmark.py): args.strategy, request_totals,
//       worker.backend_model; requests carry start_time, end_time,
//       first_token_time, prompt_tokens, output_tokens.
//   0.4 to 0.7 (guidellm/benchmark/schemas/): config.strategy,
//       metrics.request_totals, report-level args (or config); requests
//       (GenerativeRequestStats) carry the computed request_start_time,
//       request_end_time, prompt_tokens, output_tokens.
// Both serialize request_latency (s) and time_to_first_token_ms. GuideLLM's
// inter_token_latency_ms is (last - first token) / (output - 1): TPOT here;
// its time_per_output_token_ms includes the first token and is not read.
// No per-chunk times are kept, so requests have no ITL gaps.
#include <cmath>
#include <limits>

#include "sim/observe/readers.h"

namespace fleetsim::observe_internal {
namespace {

struct Totals {
  std::optional<int64_t> successful, errored, incomplete;
};

Status ReadTotals(const Where& w, const Json& b, const std::string& path, Totals* t) {
  std::string tpath = Join(path, "request_totals");
  const Json* totals = Member(b, "request_totals");
  if (totals == nullptr) {
    if (const Json* metrics = Member(b, "metrics")) totals = Member(*metrics, "request_totals");
    tpath = Join(Join(path, "metrics"), "request_totals");
  }
  if (totals == nullptr) return Status::Ok();
  FLEETSIM_RETURN_IF_ERROR(ExpectObject(w, *totals, tpath));
  for (auto [key, out] : {std::pair{"successful", &t->successful}, std::pair{"errored", &t->errored},
                          std::pair{"incomplete", &t->incomplete}}) {
    if (const Json* v = Member(*totals, key)) {
      int64_t n;
      FLEETSIM_RETURN_IF_ERROR(ReadInteger(w, *v, Join(tpath, key), 0, std::numeric_limits<int64_t>::max(), &n));
      *out = n;
    }
  }
  return Status::Ok();
}

Status ReadStrategy(const Where& w, const Json& b, const std::string& path, ObservedRun* run) {
  const Json* strategy = nullptr;
  std::string spath;
  for (const char* holder : {"config", "args"}) {
    if (const Json* h = Member(b, holder); h != nullptr && (strategy = Member(*h, "strategy")) != nullptr) {
      spath = Join(Join(path, holder), "strategy");
      break;
    }
  }
  if (strategy == nullptr) {
    run->notes.push_back("no strategy recorded: load mode unknown");
    return Status::Ok();
  }
  FLEETSIM_RETURN_IF_ERROR(ExpectObject(w, *strategy, spath));
  const Json* type_json;
  std::string type;
  FLEETSIM_RETURN_IF_ERROR(Required(w, *strategy, spath, "type_", &type_json));
  FLEETSIM_RETURN_IF_ERROR(ReadString(w, *type_json, Join(spath, "type_"), &type));
  auto positive_int = [&](const char* key, std::optional<int32_t>* out) -> Status {
    const Json* v = Member(*strategy, key);
    if (v == nullptr) return Status::Ok();
    int64_t n;
    FLEETSIM_RETURN_IF_ERROR(ReadInteger(w, *v, Join(spath, key), 1, std::numeric_limits<int32_t>::max(), &n));
    *out = static_cast<int32_t>(n);
    return Status::Ok();
  };
  if (type == "synchronous") {
    run->mode = LoadMode::kClosed;
    run->max_concurrency = 1;
  } else if (type == "concurrent") {
    run->mode = LoadMode::kClosed;
    FLEETSIM_RETURN_IF_ERROR(positive_int("streams", &run->max_concurrency));
    if (!run->max_concurrency) return w.Error(Join(spath, "streams"), "missing");
  } else if (type == "throughput") {
    run->mode = LoadMode::kOpen;
    run->request_rate_per_s = std::numeric_limits<double>::infinity();
    FLEETSIM_RETURN_IF_ERROR(positive_int("max_concurrency", &run->max_concurrency));
  } else if (type == "constant" || type == "poisson") {
    run->mode = LoadMode::kOpen;
    const Json* rate;
    double r;
    FLEETSIM_RETURN_IF_ERROR(Required(w, *strategy, spath, "rate", &rate));
    FLEETSIM_RETURN_IF_ERROR(ReadNumber(w, *rate, Join(spath, "rate"), &r));
    if (!(r > 0)) return w.Error(Join(spath, "rate"), "expected a rate > 0, got " + Shown(*rate));
    run->request_rate_per_s = r;
    FLEETSIM_RETURN_IF_ERROR(positive_int("max_concurrency", &run->max_concurrency));
    run->notes.push_back(type == "constant" ? "evenly spaced arrivals (constant)" : "Poisson arrivals");
  } else {
    run->notes.push_back("strategy " + Shown(*type_json) + ": load mode unknown");
  }
  return Status::Ok();
}

// metrics.<name>.successful as LatencyStats, values times `scale`.
Status ReadDistribution(const Where& w, const Json& metrics, const std::string& path, const char* name, double scale,
                        LatencyStats* s) {
  const Json* m = Member(metrics, name);
  const Json* d = m == nullptr ? nullptr : Member(*m, "successful");
  if (d == nullptr) return Status::Ok();
  const std::string dpath = Join(Join(path, name), "successful");
  FLEETSIM_RETURN_IF_ERROR(ExpectObject(w, *d, dpath));
  FLEETSIM_RETURN_IF_ERROR(OptionalSeconds(w, *d, dpath, "mean", scale, &s->mean_s));
  FLEETSIM_RETURN_IF_ERROR(OptionalSeconds(w, *d, dpath, "median", scale, &s->median_s));
  if (const Json* p = Member(*d, "percentiles")) {
    const std::string ppath = Join(dpath, "percentiles");
    FLEETSIM_RETURN_IF_ERROR(ExpectObject(w, *p, ppath));
    FLEETSIM_RETURN_IF_ERROR(OptionalSeconds(w, *p, ppath, "p90", scale, &s->p90_s));
    FLEETSIM_RETURN_IF_ERROR(OptionalSeconds(w, *p, ppath, "p99", scale, &s->p99_s));
  }
  return Status::Ok();
}

Status ReadMean(const Where& w, const Json& metrics, const std::string& path, const char* name,
                std::optional<double>* out) {
  const Json* m = Member(metrics, name);
  const Json* d = m == nullptr ? nullptr : Member(*m, "successful");
  if (d == nullptr) return Status::Ok();
  return OptionalNumber(w, *d, Join(Join(path, name), "successful"), "mean", out);
}

Status ReadAggregates(const Where& w, const Json& b, const std::string& path, const Totals& totals,
                      ObservedAggregates* a) {
  FLEETSIM_RETURN_IF_ERROR(OptionalSeconds(w, b, path, "duration", 1, &a->duration_s));
  if (totals.successful) a->completed = totals.successful;
  if (totals.errored || totals.incomplete) a->failed = totals.errored.value_or(0) + totals.incomplete.value_or(0);
  const Json* metrics = Member(b, "metrics");
  if (metrics == nullptr) return Status::Ok();
  const std::string mpath = Join(path, "metrics");
  FLEETSIM_RETURN_IF_ERROR(ExpectObject(w, *metrics, mpath));
  FLEETSIM_RETURN_IF_ERROR(ReadDistribution(w, *metrics, mpath, "time_to_first_token_ms", 1e-3, &a->ttft));
  FLEETSIM_RETURN_IF_ERROR(ReadDistribution(w, *metrics, mpath, "inter_token_latency_ms", 1e-3, &a->tpot));
  FLEETSIM_RETURN_IF_ERROR(ReadDistribution(w, *metrics, mpath, "request_latency", 1, &a->e2e));
  FLEETSIM_RETURN_IF_ERROR(ReadMean(w, *metrics, mpath, "requests_per_second", &a->request_throughput_per_s));
  return ReadMean(w, *metrics, mpath, "output_tokens_per_second", &a->output_throughput_tokens_per_s);
}

// The first of `keys` present in `obj`, or nullptr.
const Json* FirstMember(const Json& obj, std::initializer_list<const char*> keys, const char** found) {
  for (const char* k : keys) {
    if (const Json* v = Member(obj, k)) {
      *found = k;
      return v;
    }
  }
  return nullptr;
}

// One request of the list `status`; false in *started for a failed request
// that never started (nothing to replay).
Status ReadRequest(const Where& w, const Json& req, const std::string& path, bool ok, ObservedRequest* r,
                   bool* started) {
  FLEETSIM_RETURN_IF_ERROR(ExpectObject(w, req, path));
  r->ok = ok;
  const char* key = nullptr;
  const Json* start = FirstMember(req, {"request_start_time", "start_time"}, &key);
  *started = start != nullptr;
  if (!ok) {
    if (start != nullptr) FLEETSIM_RETURN_IF_ERROR(ReadSeconds(w, *start, Join(path, key), 1, &r->start_s));
    if (const Json* p = Member(req, "prompt_tokens"))
      FLEETSIM_RETURN_IF_ERROR(ReadTokens(w, *p, Join(path, "prompt_tokens"), 0, &r->input_tokens));
    return Status::Ok();
  }
  if (start == nullptr) return w.Error(Join(path, "request_start_time"), "missing");
  FLEETSIM_RETURN_IF_ERROR(ReadSeconds(w, *start, Join(path, key), 1, &r->start_s));
  const Json *prompt, *output;
  FLEETSIM_RETURN_IF_ERROR(Required(w, req, path, "prompt_tokens", &prompt));
  FLEETSIM_RETURN_IF_ERROR(ReadTokens(w, *prompt, Join(path, "prompt_tokens"), 1, &r->input_tokens));
  FLEETSIM_RETURN_IF_ERROR(Required(w, req, path, "output_tokens", &output));
  FLEETSIM_RETURN_IF_ERROR(ReadTokens(w, *output, Join(path, "output_tokens"), 1, &r->output_tokens));
  FLEETSIM_RETURN_IF_ERROR(OptionalSeconds(w, req, path, "time_to_first_token_ms", 1e-3, &r->ttft_s));
  FLEETSIM_RETURN_IF_ERROR(OptionalSeconds(w, req, path, "request_latency", 1, &r->e2e_s));
  if (!r->e2e_s) {
    const Json* end = FirstMember(req, {"request_end_time", "end_time"}, &key);
    if (end == nullptr) return w.Error(Join(path, "request_latency"), "missing");
    double end_s;
    FLEETSIM_RETURN_IF_ERROR(ReadSeconds(w, *end, Join(path, key), 1, &end_s));
    if (end_s < r->start_s) return w.Error(Join(path, key), "earlier than the request's start");
    r->e2e_s = end_s - r->start_s;
  }
  if (r->ttft_s && !TtftWithinE2e(*r->ttft_s, *r->e2e_s)) {
    return w.Error(Join(path, "time_to_first_token_ms"), "longer than request_latency");
  }
  return Status::Ok();
}

Status ReadBenchmark(const ReadContext& ctx, const Where& w, const Json& b, const std::string& path,
                     ObservedRun* run) {
  FLEETSIM_RETURN_IF_ERROR(ExpectObject(w, b, path));
  if (const Json* worker = Member(b, "worker")) {  // 0.3
    FLEETSIM_RETURN_IF_ERROR(OptionalString(w, *worker, Join(path, "worker"), "backend_model", &run->model));
    FLEETSIM_RETURN_IF_ERROR(OptionalString(w, *worker, Join(path, "worker"), "backend_type", &run->backend));
  }
  FLEETSIM_RETURN_IF_ERROR(ReadStrategy(w, b, path, run));
  Totals totals;
  FLEETSIM_RETURN_IF_ERROR(ReadTotals(w, b, path, &totals));
  FLEETSIM_RETURN_IF_ERROR(ReadAggregates(w, b, path, totals, &run->file_aggregates));

  const Json* requests;
  const std::string rpath = Join(path, "requests");
  FLEETSIM_RETURN_IF_ERROR(Required(w, b, path, "requests", &requests));
  FLEETSIM_RETURN_IF_ERROR(ExpectObject(w, *requests, rpath));
  struct Group {
    const char* key;
    bool ok;
    std::optional<int64_t> total;
  };
  const Group groups[] = {{"successful", true, totals.successful},
                          {"errored", false, totals.errored},
                          {"incomplete", false, totals.incomplete}};
  // Sampling first: a sample is refused (or read for aggregates) whatever
  // its entries hold.
  for (const Group& g : groups) {
    const Json* list = Member(*requests, g.key);
    const std::string lpath = Join(rpath, g.key);
    if (list != nullptr) FLEETSIM_RETURN_IF_ERROR(ExpectArray(w, *list, lpath));
    const size_t listed = list == nullptr ? 0 : list->size();
    if (g.total && static_cast<int64_t>(listed) < *g.total) {
      return WithoutPerRequestTiming(
          ctx,
          (run->run_label.empty() ? lpath : Join("requests", g.key)) + " lists " + std::to_string(listed) + " of " + std::to_string(*g.total) +
              " requests (GuideLLM kept a sample)",
          "rerun guidellm keeping every request: without --output-sampling (0.3), --sample-requests (0.4 to 0.6) "
          "or --metrics sample_size (0.7)",
          run);
    }
  }
  int64_t never_started = 0;
  for (const Group& g : groups) {
    const Json* list = Member(*requests, g.key);
    if (list == nullptr) continue;
    for (size_t j = 0; j < list->size(); ++j) {
      ObservedRequest r;
      bool started;
      FLEETSIM_RETURN_IF_ERROR(ReadRequest(w, (*list)[j], Index(Join(rpath, g.key), j), g.ok, &r, &started));
      if (!started) {
        ++never_started;
        continue;
      }
      run->requests.push_back(std::move(r));
    }
  }
  if (never_started > 0) {
    run->notes.push_back(std::to_string(never_started) + " errored or incomplete requests never started: skipped");
  }
  return Status::Ok();
}

}  // namespace

Status ReadGuidellmReport(const ReadContext& ctx, const Json& doc, std::vector<ObservedRun>* out) {
  const Where w(ctx.path + ": ");
  FLEETSIM_RETURN_IF_ERROR(ExpectObject(w, doc, ""));
  std::string version, model, backend;
  if (const Json* meta = Member(doc, "metadata")) {
    FLEETSIM_RETURN_IF_ERROR(OptionalString(w, *meta, "metadata", "guidellm_version", &version));
  }
  // The report's own arguments (0.4 to 0.6: args; 0.7: config) name the
  // model and backend for every benchmark.
  for (const char* holder : {"args", "config"}) {
    const Json* h = Member(doc, holder);
    if (h == nullptr || !h->is_object()) continue;
    if (const Json* m = Member(*h, "model"); m != nullptr && m->is_string() && model.empty()) model = m->get<std::string>();
    if (const Json* k = Member(*h, "backend"); k != nullptr && k->is_string() && backend.empty())
      backend = k->get<std::string>();
  }
  const Json* benchmarks;
  FLEETSIM_RETURN_IF_ERROR(Required(w, doc, "", "benchmarks", &benchmarks));
  FLEETSIM_RETURN_IF_ERROR(ExpectArray(w, *benchmarks, "benchmarks"));
  if (benchmarks->empty()) return w.Error("benchmarks", "empty");
  for (size_t i = 0; i < benchmarks->size(); ++i) {
    ObservedRun run;
    run.format = ObservedFormat::kGuidellm;
    run.tool = "guidellm";
    run.tool_version = version;
    run.model = model;
    run.backend = backend;
    if (benchmarks->size() > 1) run.run_label = Index("benchmarks", i);
    FLEETSIM_RETURN_IF_ERROR(ReadBenchmark(ctx, w, (*benchmarks)[i], Index("benchmarks", i), &run));
    out->push_back(std::move(run));
  }
  return Status::Ok();
}

}  // namespace fleetsim::observe_internal

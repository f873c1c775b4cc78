// The aggregate JSON that AIPerf (profile_export_aiperf.json,
// aiperf/common/models/export_models.py JsonExportData) and GenAI-Perf
// (<stem>_genai_perf.json, genai_perf/export_data/json_exporter.py) write
// beside their per-request exports. AIPerf copied GenAI-Perf's layout: one
// object per metric, {"unit": "ms", "avg": .., "p50": .., "p90": .., "p99": ..},
// plus "input_config", the run's configuration. Both define
// inter_token_latency per request as (latency - TTFT) / (OSL - 1): TPOT here.
#include <filesystem>
#include <limits>

#include "base/file.h"
#include "sim/observe/readers.h"

namespace fleetsim::observe_internal {
namespace {

Status ReadLatency(const Where& w, const Json& doc, const char* name, LatencyStats* s) {
  const Json* m = Member(doc, name);
  if (m == nullptr) return Status::Ok();
  FLEETSIM_RETURN_IF_ERROR(ExpectObject(w, *m, name));
  const Json* unit;
  FLEETSIM_RETURN_IF_ERROR(Required(w, *m, name, "unit", &unit));
  double scale;
  FLEETSIM_RETURN_IF_ERROR(TimeUnitSeconds(w, *unit, Join(name, "unit"), &scale));
  FLEETSIM_RETURN_IF_ERROR(OptionalSeconds(w, *m, name, "avg", scale, &s->mean_s));
  FLEETSIM_RETURN_IF_ERROR(OptionalSeconds(w, *m, name, "p50", scale, &s->median_s));
  FLEETSIM_RETURN_IF_ERROR(OptionalSeconds(w, *m, name, "p90", scale, &s->p90_s));
  return OptionalSeconds(w, *m, name, "p99", scale, &s->p99_s);
}

// metric.avg of a rate or count metric.
Status ReadAverage(const Where& w, const Json& doc, const char* name, std::optional<double>* out) {
  const Json* m = Member(doc, name);
  if (m == nullptr) return Status::Ok();
  FLEETSIM_RETURN_IF_ERROR(ExpectObject(w, *m, name));
  return OptionalNumber(w, *m, name, "avg", out);
}

Status ReadCount(const Where& w, const Json& doc, const char* name, std::optional<int64_t>* out) {
  std::optional<double> v;
  FLEETSIM_RETURN_IF_ERROR(ReadAverage(w, doc, name, &v));
  if (!v) return Status::Ok();
  if (!(*v >= 0 && *v <= 9e15)) return w.Error(Join(name, "avg"), "expected a count >= 0, got " + std::to_string(*v));
  *out = static_cast<int64_t>(*v);
  return Status::Ok();
}

// The first of `names` (a JSON array of strings) at `path`, if any.
Status FirstModelName(const Where& w, const Json* names, const std::string& path, std::string* out) {
  if (names == nullptr || !out->empty()) return Status::Ok();
  FLEETSIM_RETURN_IF_ERROR(ExpectArray(w, *names, path));
  if (names->empty()) return Status::Ok();
  return ReadString(w, (*names)[0], Index(path, 0), out);
}

// AIPerf's input_config: loadgen.request_rate (open loop, perhaps capped by
// loadgen.concurrency), loadgen.concurrency (closed loop), input.fixed_schedule
// (trace). Written with exclude_unset, so a run that set none of them ran
// AIPerf's default, one request at a time (user_config.py).
Status ReadAiperfConfig(const Where& w, const Json& config, ObservedRun* run) {
  FLEETSIM_RETURN_IF_ERROR(ExpectObject(w, config, "input_config"));
  if (const Json* endpoint = Member(config, "endpoint")) {
    FLEETSIM_RETURN_IF_ERROR(
        FirstModelName(w, Member(*endpoint, "model_names"), "input_config.endpoint.model_names", &run->model));
    if (run->backend.empty()) {
      FLEETSIM_RETURN_IF_ERROR(OptionalString(w, *endpoint, "input_config.endpoint", "type", &run->backend));
    }
  }
  if (run->mode != LoadMode::kUnknown) return Status::Ok();
  const Json* loadgen = Member(config, "loadgen");
  const Json* input = Member(config, "input");
  const Json* fixed = input == nullptr ? nullptr : Member(*input, "fixed_schedule");
  std::optional<double> rate, concurrency;
  if (loadgen != nullptr) {
    FLEETSIM_RETURN_IF_ERROR(OptionalNumber(w, *loadgen, "input_config.loadgen", "request_rate", &rate));
    FLEETSIM_RETURN_IF_ERROR(OptionalNumber(w, *loadgen, "input_config.loadgen", "concurrency", &concurrency));
  }
  if (concurrency) {
    int64_t n;
    FLEETSIM_RETURN_IF_ERROR(ReadInteger(w, *Member(*loadgen, "concurrency"), "input_config.loadgen.concurrency", 1,
                                         std::numeric_limits<int32_t>::max(), &n));
    run->max_concurrency = static_cast<int32_t>(n);
  }
  if (fixed != nullptr && fixed->is_boolean() && fixed->get<bool>()) {
    run->mode = LoadMode::kTrace;
  } else if (rate) {
    if (!(*rate > 0)) return w.Error("input_config.loadgen.request_rate", "expected a rate > 0");
    run->mode = LoadMode::kOpen;
    run->request_rate_per_s = *rate;
  } else {
    run->mode = LoadMode::kClosed;
    if (!run->max_concurrency) {
      run->max_concurrency = 1;
      run->notes.push_back("no loadgen settings recorded: AIPerf's default, concurrency 1");
    }
  }
  return Status::Ok();
}

}  // namespace

Status ReadCompanionSummary(const std::string& companion, ObservedRun* run) {
  const std::string name = std::filesystem::path(companion).filename().string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(companion, ec)) {
    run->notes.push_back("no " + name + " beside it: " +
                         (run->mode == LoadMode::kUnknown ? "load mode and " : "") + "the tool's aggregates unknown");
    return Status::Ok();
  }
  std::string text;
  FLEETSIM_RETURN_IF_ERROR(ReadWholeFile(companion, "aggregate file", &text));
  Json doc;
  FLEETSIM_RETURN_IF_ERROR(ParsePythonJson(text, &doc).WithPrefix(companion + ": "));
  const Where w(companion + ": ");
  FLEETSIM_RETURN_IF_ERROR(ExpectObject(w, doc, ""));
  ObservedAggregates& a = run->file_aggregates;
  FLEETSIM_RETURN_IF_ERROR(ReadLatency(w, doc, "time_to_first_token", &a.ttft));
  FLEETSIM_RETURN_IF_ERROR(ReadLatency(w, doc, "inter_token_latency", &a.tpot));
  FLEETSIM_RETURN_IF_ERROR(ReadLatency(w, doc, "inter_chunk_latency", &a.itl));
  FLEETSIM_RETURN_IF_ERROR(ReadLatency(w, doc, "request_latency", &a.e2e));
  FLEETSIM_RETURN_IF_ERROR(ReadAverage(w, doc, "request_throughput", &a.request_throughput_per_s));
  FLEETSIM_RETURN_IF_ERROR(ReadAverage(w, doc, "output_token_throughput", &a.output_throughput_tokens_per_s));
  LatencyStats duration;  // AIPerf: {"unit": "sec", "avg": ...}
  FLEETSIM_RETURN_IF_ERROR(ReadLatency(w, doc, "benchmark_duration", &duration));
  a.duration_s = duration.mean_s;
  FLEETSIM_RETURN_IF_ERROR(ReadCount(w, doc, "request_count", &a.completed));
  FLEETSIM_RETURN_IF_ERROR(ReadCount(w, doc, "error_request_count", &a.failed));
  if (const Json* config = Member(doc, "input_config")) {
    if (run->format == ObservedFormat::kAiperf) {
      FLEETSIM_RETURN_IF_ERROR(ReadAiperfConfig(w, *config, run));
    } else {
      FLEETSIM_RETURN_IF_ERROR(ExpectObject(w, *config, "input_config"));
      FLEETSIM_RETURN_IF_ERROR(
          FirstModelName(w, Member(*config, "model_names"), "input_config.model_names", &run->model));
    }
  }
  run->notes.push_back("aggregates" + std::string(run->format == ObservedFormat::kAiperf ? ", load mode" : "") +
                       " from " + name);
  return Status::Ok();
}

}  // namespace fleetsim::observe_internal

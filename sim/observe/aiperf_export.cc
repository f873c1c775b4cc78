// AIPerf's profile_export.jsonl (aiperf/common/models/record_models.py,
// MetricRecordInfo; docs/tutorials/working-with-profile-exports.md): one
// record a line, written as requests complete (so not in start order):
//   {"metadata": {"request_start_ns": ..., "request_end_ns": ...,
//                 "benchmark_phase": "profiling", "was_cancelled": false, ...},
//    "metrics": {"input_sequence_length": {"value": 550, "unit": "tokens"},
//                "time_to_first_token": {"value": 255.9, "unit": "ms"},
//                "inter_chunk_latency": {"value": [4.9, 5.3], "unit": "ms"}, ...},
//    "error": null | {"code": ..., "type": ..., "message": ...}}
// Times are wall-clock ns (time.time_ns()); metric values are in their
// display unit, named by "unit". AIPerf's own "inter_token_latency" per
// request is (latency - TTFT) / (OSL - 1), fleetsim's TPOT; its
// "inter_chunk_latency" list is fleetsim's ITL.
#include <filesystem>
#include <limits>
#include <sstream>

#include "sim/observe/readers.h"
#include "sim/traffic/line_reader.h"

namespace fleetsim::observe_internal {
namespace {

constexpr int64_t kMaxNs = std::numeric_limits<int64_t>::max();

// metrics.<name> = {"value": ..., "unit": ...}; nullptr when absent.
Status Metric(const Where& w, const Json* metrics, const char* name, const Json** value, const Json** unit) {
  *value = *unit = nullptr;
  const Json* m = metrics == nullptr ? nullptr : Member(*metrics, name);
  if (m == nullptr) return Status::Ok();
  const std::string path = Join("metrics", name);
  FLEETSIM_RETURN_IF_ERROR(ExpectObject(w, *m, path));
  FLEETSIM_RETURN_IF_ERROR(Required(w, *m, path, "value", value));
  FLEETSIM_RETURN_IF_ERROR(Required(w, *m, path, "unit", unit));
  return Status::Ok();
}

Status MetricSeconds(const Where& w, const Json* metrics, const char* name, std::optional<double>* out) {
  const Json *value, *unit;
  FLEETSIM_RETURN_IF_ERROR(Metric(w, metrics, name, &value, &unit));
  if (value == nullptr) return Status::Ok();
  const std::string path = Join("metrics", name);
  double scale, s;
  FLEETSIM_RETURN_IF_ERROR(TimeUnitSeconds(w, *unit, Join(path, "unit"), &scale));
  FLEETSIM_RETURN_IF_ERROR(ReadSeconds(w, *value, Join(path, "value"), scale, &s));
  *out = s;
  return Status::Ok();
}

Status MetricTokens(const Where& w, const Json* metrics, const char* name, int32_t min, std::optional<int32_t>* out) {
  const Json *value, *unit;
  FLEETSIM_RETURN_IF_ERROR(Metric(w, metrics, name, &value, &unit));
  if (value == nullptr) return Status::Ok();
  int32_t n;
  FLEETSIM_RETURN_IF_ERROR(ReadTokens(w, *value, Join(Join("metrics", name), "value"), min, &n));
  *out = n;
  return Status::Ok();
}

Status MetricSecondsList(const Where& w, const Json* metrics, const char* name, std::vector<double>* out) {
  const Json *value, *unit;
  FLEETSIM_RETURN_IF_ERROR(Metric(w, metrics, name, &value, &unit));
  if (value == nullptr) return Status::Ok();
  const std::string path = Join(Join("metrics", name), "value");
  double scale;
  FLEETSIM_RETURN_IF_ERROR(TimeUnitSeconds(w, *unit, Join(Join("metrics", name), "unit"), &scale));
  FLEETSIM_RETURN_IF_ERROR(ExpectArray(w, *value, path));
  out->resize(value->size());
  for (size_t k = 0; k < value->size(); ++k)
    FLEETSIM_RETURN_IF_ERROR(ReadSeconds(w, (*value)[k], Index(path, k), scale, &(*out)[k]));
  return Status::Ok();
}

// One record into *r, with its start in wall-clock ns. False in *measured
// for a record of another phase than profiling (warm-up).
Status ReadRecord(const Where& w, const Json& rec, ObservedRequest* r, int64_t* start_ns, bool* measured) {
  FLEETSIM_RETURN_IF_ERROR(ExpectObject(w, rec, ""));
  const Json* meta;
  FLEETSIM_RETURN_IF_ERROR(Required(w, rec, "", "metadata", &meta));
  FLEETSIM_RETURN_IF_ERROR(ExpectObject(w, *meta, "metadata"));
  std::string phase;
  FLEETSIM_RETURN_IF_ERROR(OptionalString(w, *meta, "metadata", "benchmark_phase", &phase));
  *measured = phase.empty() || phase == "profiling";
  const Json *start, *end;
  int64_t end_ns;
  FLEETSIM_RETURN_IF_ERROR(Required(w, *meta, "metadata", "request_start_ns", &start));
  FLEETSIM_RETURN_IF_ERROR(ReadInteger(w, *start, "metadata.request_start_ns", 0, kMaxNs, start_ns));
  FLEETSIM_RETURN_IF_ERROR(Required(w, *meta, "metadata", "request_end_ns", &end));
  FLEETSIM_RETURN_IF_ERROR(ReadInteger(w, *end, "metadata.request_end_ns", 0, kMaxNs, &end_ns));
  if (end_ns < *start_ns) return w.Error("metadata.request_end_ns", "earlier than request_start_ns");
  bool cancelled = false;
  if (const Json* c = Member(*meta, "was_cancelled")) {
    if (!c->is_boolean()) return w.Error("metadata.was_cancelled", "expected true or false, got " + Shown(*c));
    cancelled = c->get<bool>();
  }
  r->ok = Member(rec, "error") == nullptr && !cancelled;

  const Json* metrics = Member(rec, "metrics");
  if (metrics != nullptr) FLEETSIM_RETURN_IF_ERROR(ExpectObject(w, *metrics, "metrics"));
  std::optional<int32_t> isl, osl;
  if (!r->ok) {
    // Failed records carry only error_isl (their prompt), if anything.
    FLEETSIM_RETURN_IF_ERROR(MetricTokens(w, metrics, "error_isl", 0, &isl));
    r->input_tokens = isl.value_or(0);
    return Status::Ok();
  }
  if (metrics == nullptr) return w.Error("metrics", "missing");
  FLEETSIM_RETURN_IF_ERROR(MetricTokens(w, metrics, "input_sequence_length", 1, &isl));
  if (!isl) return w.Error("metrics.input_sequence_length", "missing");
  FLEETSIM_RETURN_IF_ERROR(MetricTokens(w, metrics, "output_sequence_length", 1, &osl));
  if (!osl) FLEETSIM_RETURN_IF_ERROR(MetricTokens(w, metrics, "output_token_count", 1, &osl));
  if (!osl) return w.Error("metrics.output_sequence_length", "missing");
  r->input_tokens = *isl;
  r->output_tokens = *osl;
  FLEETSIM_RETURN_IF_ERROR(MetricSeconds(w, metrics, "time_to_first_token", &r->ttft_s));
  FLEETSIM_RETURN_IF_ERROR(MetricSeconds(w, metrics, "request_latency", &r->e2e_s));
  if (!r->e2e_s) r->e2e_s = static_cast<double>(end_ns - *start_ns) * 1e-9;
  if (r->ttft_s && !TtftWithinE2e(*r->ttft_s, *r->e2e_s)) {
    return w.Error("metrics.time_to_first_token", "longer than request_latency");
  }
  return MetricSecondsList(w, metrics, "inter_chunk_latency", &r->itl_s);
}

}  // namespace

Status ReadAiperfExport(const ReadContext& ctx, std::string_view text, std::vector<ObservedRun>* out) {
  ObservedRun run;
  run.format = ObservedFormat::kAiperf;
  run.tool = "aiperf";
  LineReader lines(ctx.path, std::make_unique<std::istringstream>(std::string(text)));
  std::vector<int64_t> starts_ns;
  int64_t first_ns = kMaxNs;
  int64_t warmup = 0;
  std::string_view line;
  while (lines.NextRecord(&line)) {
    const Where w(ctx.path + ":" + std::to_string(lines.line_number()) + ": ");
    Json rec;
    const Status parsed = ParsePythonJson(line, &rec, /*single_line=*/true);
    if (!parsed.ok()) return lines.ErrorAt(parsed.message());
    ObservedRequest r;
    int64_t start_ns;
    bool measured;
    FLEETSIM_RETURN_IF_ERROR(ReadRecord(w, rec, &r, &start_ns, &measured));
    if (!measured) {
      ++warmup;
      continue;
    }
    first_ns = std::min(first_ns, start_ns);
    starts_ns.push_back(start_ns);
    run.requests.push_back(std::move(r));
  }
  FLEETSIM_RETURN_IF_ERROR(lines.status());
  if (lines.line_number() == 0) {
    return lines.ErrorAtLine(1, "empty file; expected AIPerf records, one JSON object a line");
  }
  // Differences in integer ns first: epoch ns as a double would keep only
  // about a quarter of a microsecond.
  for (size_t i = 0; i < starts_ns.size(); ++i)
    run.requests[i].start_s = static_cast<double>(starts_ns[i] - first_ns) * 1e-9;
  if (warmup > 0) run.notes.push_back(std::to_string(warmup) + " warm-up records skipped");
  if (ctx.options.read_companion) {
    const std::filesystem::path p(ctx.path);
    std::filesystem::path companion = p.parent_path() / (p.stem().string() + "_aiperf.json");
    if (!std::filesystem::exists(companion)) companion = p.parent_path() / "profile_export_aiperf.json";
    FLEETSIM_RETURN_IF_ERROR(ReadCompanionSummary(companion.string(), &run));
  }
  out->push_back(std::move(run));
  return Status::Ok();
}

}  // namespace fleetsim::observe_internal

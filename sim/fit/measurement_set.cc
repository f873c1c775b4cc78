#include "sim/fit/measurement_set.h"

#include <filesystem>
#include <limits>
#include <memory>
#include <utility>

#include "base/file.h"
#include "model/object_reader.h"
#include "sim/engine/rng.h"
#include "sim/engine/time.h"
#include "sim/scenario/parse.h"
#include "sim/traffic/length_table.h"

namespace fleetsim {
namespace {

using model_json::Bound;
using model_json::json;
using model_json::ObjectReader;

// The largest workload a run may describe: a published benchmark sends
// thousands of requests, not millions, and a replay runs once per fit step.
constexpr int64_t kMaxRequests = 100000;
constexpr int64_t kMaxTokens = 1 << 20;

// A run's scenario: the set's `scenario` with the run's `set` applied and a
// placeholder traffic section (the replay replaces it) when it has none.
Status RunScenario(const json& scenario, const ObjectReader& run, const std::string& file,
                   const std::string& base_dir, const std::string& path, std::shared_ptr<ScenarioSpec>* out) {
  json doc = scenario;
  if (!doc.contains("traffic")) {
    doc["traffic"] = {{"generator", {{"arrival", "poisson"}, {"rate_per_s", 1}, {"prompt_tokens", 1},
                                     {"output_tokens", 1}}},
                      {"max_requests", 1}};
  }
  std::vector<std::string> overrides;
  if (run.Has("set")) {
    ObjectReader set;
    FLEETSIM_RETURN_IF_ERROR(run.Object("set", &set));
    for (auto it = set.object().begin(); it != set.object().end(); ++it) {
      // The replay replaces the traffic and runs every request to the end
      // with the set's seed: keys that would change those are refused, not
      // dropped.
      const std::string& key = it.key();
      if (key.rfind("traffic", 0) == 0 || key == "seed" || key == "warmup_s" || key == "duration_s")
        return set.Error(key, "a measured run's workload, and the set's seed, decide this; leave it out");
      overrides.push_back(key + "=" + it.value().dump());
    }
  }
  auto spec = std::make_shared<ScenarioSpec>();
  FLEETSIM_RETURN_IF_ERROR(
      ParseScenario(doc.dump(), file + ": " + path + " (scenario with its set)", base_dir, spec.get(), overrides));
  if (spec->pools.size() != 1)
    return Status::Invalid(file + ": " + path + ": a measured run has one pool; its scenario has " +
                           std::to_string(spec->pools.size()));
  *out = std::move(spec);
  return Status::Ok();
}

// Lengths drawn from a length CSV (sim/traffic/length_table.h), keeping the
// rows a benchmark client would keep: vLLM's and SGLang's ShareGPT sampling
// drop a conversation whose prompt or output is shorter than min_tokens,
// whose prompt is longer than max_prompt_tokens or whose total is longer
// than max_total_tokens.
struct LengthFilter {
  int64_t min_tokens = 1;
  int64_t max_prompt_tokens = kMaxTokens;  // at most kMaxTokens, as fixed lengths
  int64_t max_total_tokens = 2 * kMaxTokens;
  bool Keeps(const LengthTable::Row& r) const {
    const int64_t prompt = r.prompt_tokens, output = r.output_tokens;
    return prompt >= min_tokens && output >= min_tokens && prompt <= max_prompt_tokens && output <= kMaxTokens &&
           prompt + output <= max_total_tokens;
  }
};

// A length: an integer, or {"min": a, "max": b} for integers drawn
// uniformly from [a, b] (a benchmark client's random dataset with a range:
// vLLM's and SGLang's randint(low, high + 1)).
struct LengthRange {
  int64_t lo = 0, hi = 0;
};

Status ReadLength(const ObjectReader& w, std::string_view key, LengthRange* out) {
  if (w.Has(key) && w.object()[std::string(key)].is_object()) {
    ObjectReader r;
    FLEETSIM_RETURN_IF_ERROR(w.Object(key, &r));
    FLEETSIM_RETURN_IF_ERROR(r.CheckKeys({"min", "max"}));
    FLEETSIM_RETURN_IF_ERROR(r.Int64("min", Bound::kPositive, kMaxTokens, &out->lo));
    FLEETSIM_RETURN_IF_ERROR(r.Int64("max", Bound::kPositive, kMaxTokens, &out->hi));
    if (out->hi < out->lo) return r.Error("max", "is less than min");
    return Status::Ok();
  }
  FLEETSIM_RETURN_IF_ERROR(w.Int64(key, Bound::kPositive, kMaxTokens, &out->lo));
  out->hi = out->lo;
  return Status::Ok();
}

Status ReadWorkload(const ObjectReader& w, const std::string& where, const std::string& base_dir, uint64_t seed,
                    const std::string& id, ReplayRun* run) {
  FLEETSIM_RETURN_IF_ERROR(w.CheckKeys({"requests", "prompt_tokens", "output_tokens", "lengths_csv", "min_tokens",
                                        "max_prompt_tokens", "max_total_tokens", "concurrency", "rate_per_s",
                                        "all_at_once", "server"}));
  if (w.Has("server")) FLEETSIM_RETURN_IF_ERROR(w.Bool("server", &run->server));
  int64_t n = 0;
  LengthRange prompt, output;
  FLEETSIM_RETURN_IF_ERROR(w.Int64("requests", Bound::kPositive, kMaxRequests, &n));
  std::unique_ptr<LengthTable> table;
  LengthFilter filter;
  if (w.Has("lengths_csv")) {
    if (w.Has("prompt_tokens") || w.Has("output_tokens"))
      return Status::Invalid(where + ": give lengths_csv or prompt_tokens and output_tokens, not both");
    std::string csv;
    FLEETSIM_RETURN_IF_ERROR(w.String("lengths_csv", &csv));
    const std::filesystem::path p(csv);
    FLEETSIM_RETURN_IF_ERROR(
        LengthTable::Load(p.is_absolute() ? csv : (std::filesystem::path(base_dir) / p).string(), &table)
            .WithPrefix(where + ".lengths_csv: "));
    if (w.Has("min_tokens")) FLEETSIM_RETURN_IF_ERROR(w.Int64("min_tokens", Bound::kPositive, kMaxTokens, &filter.min_tokens));
    if (w.Has("max_prompt_tokens"))
      FLEETSIM_RETURN_IF_ERROR(w.Int64("max_prompt_tokens", Bound::kPositive, kMaxTokens, &filter.max_prompt_tokens));
    if (w.Has("max_total_tokens"))
      FLEETSIM_RETURN_IF_ERROR(w.Int64("max_total_tokens", Bound::kPositive, 2 * kMaxTokens, &filter.max_total_tokens));
    bool any = false;
    for (const LengthTable::Row& r : table->rows()) any = any || filter.Keeps(r);
    if (!any) return Status::Invalid(where + ": no row of lengths_csv passes min_tokens, max_prompt_tokens and max_total_tokens");
  } else {
    for (const char* k : {"min_tokens", "max_prompt_tokens", "max_total_tokens"})
      if (w.Has(k)) return w.Error(k, "applies to lengths_csv only");
    FLEETSIM_RETURN_IF_ERROR(ReadLength(w, "prompt_tokens", &prompt));
    FLEETSIM_RETURN_IF_ERROR(ReadLength(w, "output_tokens", &output));
  }
  const int modes = w.Has("concurrency") + w.Has("rate_per_s") + w.Has("all_at_once");
  if (modes != 1)
    return Status::Invalid(where +
                           ": give exactly one of concurrency (closed loop), rate_per_s (Poisson) or all_at_once");
  double rate = 0;
  if (w.Has("concurrency")) {
    int64_t c = 0;
    FLEETSIM_RETURN_IF_ERROR(w.Int64("concurrency", Bound::kPositive, kMaxRequests, &c));
    run->concurrency = c;
  } else if (w.Has("rate_per_s")) {
    FLEETSIM_RETURN_IF_ERROR(w.Number("rate_per_s", Bound::kPositive, &rate));
    // The scenario generator's bounds.
    if (rate < 1e-6 || rate > 1e6) return w.Error("rate_per_s", "expected a rate from 1e-6 to 1e6 requests per second");
  } else {
    bool at_once = false;
    FLEETSIM_RETURN_IF_ERROR(w.Bool("all_at_once", &at_once));
    if (!at_once) return w.Error("all_at_once", "expected true (or give concurrency or rate_per_s)");
  }
  // Streams named by the run's id: adding or moving another run changes
  // nothing in this one.
  Rng rng = Rng::ForStream(seed, 0, "measured run arrivals: " + id);
  Rng lengths = Rng::ForStream(seed, 0, "measured run lengths: " + id);
  double t = 0;
  run->requests.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    Request r;
    if (rate > 0 && i > 0) t += rng.Exponential(1.0 / rate);
    r.arrival = SecondsToTime(t);
    if (table) {
      // Rejection sampling: the filter keeps some row (checked above).
      const LengthTable::Row* row = &table->Sample(lengths);
      while (!filter.Keeps(*row)) row = &table->Sample(lengths);
      r.prompt_tokens = row->prompt_tokens;
      r.output_tokens = row->output_tokens;
    } else {
      // One draw per ranged length, prompt first (none for a fixed one).
      auto draw = [&lengths](const LengthRange& l) {
        return l.hi == l.lo ? l.lo : l.lo + static_cast<int64_t>(lengths.Below(static_cast<uint64_t>(l.hi - l.lo + 1)));
      };
      r.prompt_tokens = static_cast<int32_t>(draw(prompt));
      r.output_tokens = static_cast<int32_t>(draw(output));
    }
    run->requests.push_back(r);
  }
  return Status::Ok();
}

// A static batch: `batch` sequences of `prompt_tokens`, prefilled in one
// step, then `decode_steps` decode steps (SGLang's bench_one_batch runs
// output_len - 1 of them). No server: the engine alone.
Status ReadStep(const ObjectReader& st, ReplayRun* run) {
  FLEETSIM_RETURN_IF_ERROR(st.CheckKeys({"batch", "prompt_tokens", "decode_steps"}));
  StepBatch b;
  FLEETSIM_RETURN_IF_ERROR(st.Int64("batch", Bound::kPositive, 1 << 16, &b.batch));
  FLEETSIM_RETURN_IF_ERROR(st.Int64("prompt_tokens", Bound::kPositive, kMaxTokens, &b.prompt_tokens));
  FLEETSIM_RETURN_IF_ERROR(st.Int64("decode_steps", Bound::kPositive, 1 << 16, &b.decode_steps));
  run->step = b;
  run->server = false;
  return Status::Ok();
}

Status ReadObservedFigures(const ObjectReader& o, const std::string& where, ReplayRun* run) {
  bool any = false;
  for (auto it = o.object().begin(); it != o.object().end(); ++it) {
    const int m = FitMetricIndex(it.key());
    if (m < 0) {
      std::string known;
      for (const char* k : kFitMetrics) known += std::string(known.empty() ? "" : ", ") + k;
      return o.Error(it.key(), "unknown figure (known: " + known + ")");
    }
    double v = 0;
    FLEETSIM_RETURN_IF_ERROR(o.Number(it.key(), Bound::kPositive, &v));
    run->observed.values[m] = v;
    any = true;
  }
  if (!any) return Status::Invalid(where + ": no figure (give at least one of the fit's metrics)");
  return Status::Ok();
}

}  // namespace

bool LooksLikeMeasurementSet(std::string_view text) {
  json doc;
  // A set with a syntax error, or with its format misspelt, is still read
  // as a set, so that its error is the one reported.
  if (!ParseJson(text, &doc).ok()) return text.find("fleetsim-measurements") != std::string_view::npos;
  if (!doc.is_object()) return false;
  auto it = doc.find("format");
  if (it != doc.end() && it->is_string() && it->get<std::string>() == "fleetsim-measurements") return true;
  return doc.contains("runs") && doc.contains("scenario");
}

Status ParseMeasurementSet(std::string_view text, const std::string& file, const std::string& split,
                           MeasurementSet* out) {
  json doc;
  FLEETSIM_RETURN_IF_ERROR(model_json::ParseDocument(text, file, &doc));
  const ObjectReader top(doc, file, "");
  FLEETSIM_RETURN_IF_ERROR(top.CheckKeys({"format", "version", "description", "seed", "scenario", "runs"}));
  FLEETSIM_RETURN_IF_ERROR(top.FormatAndVersion("fleetsim-measurements", 1));
  MeasurementSet set;
  set.file = file;
  if (top.Has("description")) FLEETSIM_RETURN_IF_ERROR(top.String("description", &set.description));
  if (top.Has("seed")) {
    int64_t seed = 0;
    FLEETSIM_RETURN_IF_ERROR(top.Int64("seed", Bound::kNonNegative, std::numeric_limits<int64_t>::max(), &seed));
    set.seed = static_cast<uint64_t>(seed);
  }
  ObjectReader scenario;
  FLEETSIM_RETURN_IF_ERROR(top.Object("scenario", &scenario));
  if (scenario.Has("traffic"))
    return scenario.Error("traffic", "a measured run's workload gives its traffic; leave traffic out");
  for (const char* key : {"warmup_s", "duration_s"})
    if (scenario.Has(key)) return scenario.Error(key, "a replay measures every request to the end; leave it out");
  auto runs_it = doc.find("runs");
  if (runs_it == doc.end()) return top.Error("runs", "missing required key");
  if (!runs_it->is_array() || runs_it->empty()) return top.Error("runs", "expected a non-empty array");
  const std::string base_dir = std::filesystem::path(file).parent_path().string();
  std::vector<std::string> ids;
  for (size_t i = 0; i < runs_it->size(); ++i) {
    const std::string path = "runs[" + std::to_string(i) + "]";
    const json& rj = (*runs_it)[i];
    if (!rj.is_object()) return Status::Invalid(file + ": " + path + ": expected an object");
    const ObjectReader r(rj, file, path + ".");
    FLEETSIM_RETURN_IF_ERROR(r.CheckKeys({"id", "split", "source", "set", "workload", "step", "observed", "notes"}));
    Measurement m;
    FLEETSIM_RETURN_IF_ERROR(r.String("id", &m.id));
    for (const std::string& seen : ids)
      if (seen == m.id) return r.Error("id", "\"" + m.id + "\" is used by an earlier run");
    ids.push_back(m.id);
    FLEETSIM_RETURN_IF_ERROR(r.String("split", &m.split));
    if (r.Has("notes")) {
      std::string notes;
      FLEETSIM_RETURN_IF_ERROR(r.String("notes", &notes));
    }
    // The citation: where the figures were published. A run without one is
    // not a measurement anybody can check.
    ObjectReader src;
    FLEETSIM_RETURN_IF_ERROR(r.Object("source", &src));
    FLEETSIM_RETURN_IF_ERROR(src.CheckKeys({"url", "title", "date", "engine_version", "gpu_detail", "quote"}));
    std::string url, title, date, version_text, quote;
    FLEETSIM_RETURN_IF_ERROR(src.String("url", &url));
    FLEETSIM_RETURN_IF_ERROR(src.String("title", &title));
    FLEETSIM_RETURN_IF_ERROR(src.String("date", &date));
    FLEETSIM_RETURN_IF_ERROR(src.String("quote", &quote));
    if (src.Has("engine_version")) FLEETSIM_RETURN_IF_ERROR(src.String("engine_version", &version_text));
    if (src.Has("gpu_detail")) {
      std::string detail;
      FLEETSIM_RETURN_IF_ERROR(src.String("gpu_detail", &detail));
    }
    m.citation = title + " (" + date + "), " + url + (version_text.empty() ? "" : "; " + version_text);
    m.date = date;
    m.engine_version = version_text;
    m.run.name = m.id;
    m.run.origin = file + ": " + path + " (" + m.id + ")";
    std::shared_ptr<ScenarioSpec> spec;
    FLEETSIM_RETURN_IF_ERROR(RunScenario(scenario.object(), r, file, base_dir, path, &spec));
    m.run.scenario = std::move(spec);
    if (r.Has("workload") == r.Has("step"))
      return Status::Invalid(file + ": " + path + ": give workload (requests a client sent) or step (a static "
                                                  "batch timed step by step), not " +
                             (r.Has("step") ? "both" : "neither"));
    if (r.Has("step")) {
      ObjectReader st;
      FLEETSIM_RETURN_IF_ERROR(r.Object("step", &st));
      FLEETSIM_RETURN_IF_ERROR(ReadStep(st, &m.run));
    } else {
      ObjectReader w;
      FLEETSIM_RETURN_IF_ERROR(r.Object("workload", &w));
      FLEETSIM_RETURN_IF_ERROR(ReadWorkload(w, file + ": " + path + ".workload", base_dir, set.seed, m.id, &m.run));
    }
    ObjectReader o;
    FLEETSIM_RETURN_IF_ERROR(r.Object("observed", &o));
    FLEETSIM_RETURN_IF_ERROR(ReadObservedFigures(o, file + ": " + path + ".observed", &m.run));
    // A step run's figures are its steps'; a workload's are its clients'.
    for (int f = 0; f < kNumFitMetrics; ++f) {
      const bool step_metric = f == kPrefillStepMetric || f == kDecodeStepMetric;
      if (m.run.observed.values[f] && step_metric != m.run.step.has_value())
        return o.Error(kFitMetrics[f], m.run.step ? "a step run gives prefill_step_ms and decode_step_ms only"
                                                  : "a step run's figure: give step, not workload, for it");
    }
    if (split.empty() || m.split == split) set.runs.push_back(std::move(m));
  }
  if (set.runs.empty()) return Status::Invalid(file + ": runs: no run has split \"" + split + "\"");
  *out = std::move(set);
  return Status::Ok();
}

Status LoadMeasurementSet(const std::string& path, const std::string& split, MeasurementSet* out) {
  std::string text;
  FLEETSIM_RETURN_IF_ERROR(ReadWholeFile(path, "measurement set", &text));
  return ParseMeasurementSet(text, path, split, out);
}

}  // namespace fleetsim

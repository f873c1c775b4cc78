// Scenario JSON parsing. nlohmann/json stays in this file: the rest of the
// program sees only ScenarioSpec.
#include "sim/scenario/parse.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/file.h"

namespace fleetsim {
namespace {

using nlohmann::json;

// The accepted keys of each object, by path ("[]" for array elements). The
// parser rejects keys outside these tables; ScenarioKeyPaths lists them.
struct KeyTable {
  const char* path;
  std::initializer_list<const char*> keys;
};
const KeyTable kTables[] = {
    {"", {"name", "description", "seed", "duration_s", "warmup_s", "model", "fleet", "traffic", "slo", "perf"}},
    {"fleet", {"router", "pools"}},
    {"fleet.pools[]",
     {"name", "model", "gpu", "replicas", "tp", "pp", "engine", "scheduler", "scheduler_options", "preemption",
      "swap_space_gib", "max_model_len", "prefix_caching", "max_num_batched_tokens", "max_num_seqs", "gpu_memory_utilization",
      "block_size", "pricing_class", "usd_per_gpu_hour"}},
    // The union of every registered scheduler's options; each scheduler
    // refuses the ones that are not its own.
    {"fleet.pools[].scheduler_options",
     {"watermark", "chunk_size", "reserve_request_length", "chunked_prefill_size", "max_prefill_tokens",
      "schedule_conservativeness", "init_new_token_ratio", "min_new_token_ratio", "new_token_ratio_decay_steps",
      "clip_max_new_tokens"}},
    {"traffic", {"trace", "generator", "max_requests", "max_arrival_s"}},
    {"traffic.trace", {"format", "path", "start_s", "end_s", "rate_scale", "prompt_tokens", "output_tokens", "lengths_csv"}},
    {"traffic.trace.prompt_tokens", {"dist", "value", "median", "sigma", "min", "max"}},
    {"traffic.trace.output_tokens", {"dist", "value", "median", "sigma", "min", "max"}},
    {"traffic.generator",
     {"arrival", "rate_per_s", "cv", "prompt_tokens", "output_tokens", "lengths_csv", "model", "shared_prefix",
      "sessions"}},
    {"traffic.generator.prompt_tokens", {"dist", "value", "median", "sigma", "min", "max"}},
    {"traffic.generator.output_tokens", {"dist", "value", "median", "sigma", "min", "max"}},
    {"traffic.generator.shared_prefix", {"groups", "tokens"}},
    {"traffic.generator.sessions", {"turns", "think_time_s", "max_context_tokens"}},
    {"slo", {"ttft_ms", "tpot_ms"}},
    {"perf",
     {"gemm_compute_efficiency", "gemm_memory_efficiency", "attention_compute_efficiency",
      "attention_memory_efficiency", "elementwise_memory_efficiency", "launch_overhead_us",
      "link_efficiency", "profile"}},
};

const KeyTable& TableFor(std::string_view path) {
  for (const KeyTable& t : kTables)
    if (path == t.path) return t;
  std::abort();  // every parsed object has a table
}

std::string Describe(const json& v) {
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

// A JSON object being read at `path` (display path, with indices) whose
// keys are checked against the table at `table_path`.
class Obj {
 public:
  Obj(const json& j, std::string path, std::string_view table_path, Status* err)
      : j_(j), path_(std::move(path)), err_(err) {
    if (!err_->ok()) return;
    if (!j.is_object()) {
      Fail(path_.empty() ? "" : path_, "expected an object, got " + Describe(j));
      return;
    }
    const KeyTable& t = TableFor(table_path);
    for (auto it = j.begin(); it != j.end(); ++it) {
      bool known = false;
      for (const char* k : t.keys) known = known || it.key() == k;
      if (!known) {
        std::string valid;
        for (const char* k : t.keys) valid += std::string(valid.empty() ? "" : ", ") + k;
        Fail(Join(it.key()), "unknown key (valid: " + valid + ")");
        return;
      }
    }
  }

  bool ok() const { return err_->ok(); }
  bool Has(const char* key) const { return ok() && j_.contains(key); }
  const json& At(const char* key) const { return j_.at(key); }
  std::string Join(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }

  void Fail(const std::string& where, const std::string& what) {
    if (!err_->ok()) return;
    *err_ = Status::Invalid(where.empty() ? what : where + ": " + what);
  }

  void String(const char* key, std::string* out, bool required = false) {
    if (!Has(key)) {
      if (required && ok()) Fail(Join(key), "required");
      return;
    }
    const json& v = At(key);
    if (!v.is_string() || v.get_ref<const std::string&>().empty()) {
      Fail(Join(key), "expected a non-empty string, got " + Describe(v));
      return;
    }
    *out = v.get<std::string>();
  }

  // An integer in [lo, hi].
  template <typename T>
  void Int(const char* key, T* out, int64_t lo, int64_t hi, bool required = false) {
    if (!Has(key)) {
      if (required && ok()) Fail(Join(key), "required");
      return;
    }
    const json& v = At(key);
    bool good = v.is_number_integer();
    int64_t x = 0;
    if (v.is_number_float()) {
      // 2.0 is an integer in JSON Schema's sense.
      const double d = v.get<double>();
      good = std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9.0e18;
      if (good) x = static_cast<int64_t>(d);
    } else if (good && v.is_number_unsigned()) {
      good = v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
      if (good) x = static_cast<int64_t>(v.get<uint64_t>());
    } else if (good) {
      x = v.get<int64_t>();
    }
    if (!good || x < lo || x > hi) {
      std::string range = lo == 1 ? "a positive integer" : lo == 0 ? "a non-negative integer" : "an integer";
      if (hi < std::numeric_limits<int64_t>::max()) range += " at most " + std::to_string(hi);
      Fail(Join(key), "expected " + range + ", got " + Describe(v));
      return;
    }
    *out = static_cast<T>(x);
  }

  void OptBool(const char* key, std::optional<bool>* out) {
    if (!Has(key)) return;
    const json& v = At(key);
    if (!v.is_boolean()) {
      Fail(Join(key), "expected true or false, got " + Describe(v));
      return;
    }
    *out = v.get<bool>();
  }

  template <typename T>
  void OptInt(const char* key, std::optional<T>* out, int64_t lo, int64_t hi) {
    if (!Has(key)) return;
    T v{};
    Int(key, &v, lo, hi);
    if (ok()) *out = v;
  }

  enum class Range { kPositive, kNonNegative, kFraction /* (0, 1] */ };
  void Number(const char* key, double* out, Range r, bool required = false) {
    if (!Has(key)) {
      if (required && ok()) Fail(Join(key), "required");
      return;
    }
    const json& v = At(key);
    double x = v.is_number() ? v.get<double>() : std::nan("");
    bool good = std::isfinite(x) && (r == Range::kPositive      ? x > 0
                                     : r == Range::kNonNegative ? x >= 0
                                                                : x > 0 && x <= 1);
    if (!good) {
      const char* what = r == Range::kPositive      ? "a positive number"
                         : r == Range::kNonNegative ? "a non-negative number"
                                                    : "a number in (0, 1]";
      Fail(Join(key), std::string("expected ") + what + ", got " + Describe(v));
      return;
    }
    *out = x;
  }
  void OptNumber(const char* key, std::optional<double>* out, Range r) {
    if (!Has(key)) return;
    double x = 0;
    Number(key, &x, r);
    if (ok()) *out = x;
  }

  // One of `choices`; returns its index or -1.
  int Choice(const char* key, std::initializer_list<const char*> choices, bool required) {
    std::string s;
    String(key, &s, required);
    if (!ok() || s.empty()) return -1;
    int i = 0;
    std::string valid;
    for (const char* c : choices) {
      if (s == c) return i;
      valid += std::string(valid.empty() ? "" : ", ") + c;
      ++i;
    }
    Fail(Join(key), "unknown value \"" + s + "\" (valid: " + valid + ")");
    return -1;
  }

 private:
  const json& j_;
  std::string path_;
  Status* err_;
};

std::string ResolvePath(const std::string& base_dir, const std::string& p) {
  std::filesystem::path path(p);
  if (path.is_absolute() || base_dir.empty()) return p;
  return (std::filesystem::path(base_dir) / path).lexically_normal().string();
}

// A length object under `gen`, whose key table is at `table_prefix` + key
// ("traffic.generator." or "traffic.trace.").
void ParseLength(Obj& gen, const char* table_prefix, const char* key, LengthSpec* out, Status* err) {
  if (!gen.Has(key)) return;
  const json& v = gen.At(key);
  const std::string path = gen.Join(key);
  const int64_t kMax = std::numeric_limits<int32_t>::max();
  if (v.is_number()) {  // shorthand for {"dist": "fixed", "value": n}
    const double d = v.get<double>();
    if (!(std::isfinite(d) && std::floor(d) == d && d >= 1 && d <= static_cast<double>(kMax))) {
      *err = Status::Invalid(path + ": expected a positive integer or a length object, got " + Describe(v));
      return;
    }
    out->kind = LengthSpec::Kind::kFixed;
    out->value = static_cast<int32_t>(d);
    return;
  }
  if (!v.is_object()) {
    *err = Status::Invalid(path + ": expected a positive integer or a length object, got " + Describe(v));
    return;
  }
  Obj o(v, path, std::string(table_prefix) + key, err);
  const int dist = o.Choice("dist", {"fixed", "lognormal", "uniform"}, true);
  // Every key present is type-checked, whatever the dist; a key the dist
  // does not use is an error rather than silently ignored.
  o.Int("value", &out->value, 1, kMax);
  o.Number("median", &out->median, Obj::Range::kPositive);
  o.Number("sigma", &out->sigma, Obj::Range::kNonNegative);
  o.Int("min", &out->min, 1, kMax);
  o.Int("max", &out->max, 1, kMax);
  if (!o.ok() || dist < 0) return;
  static const char* const kUses[3][5] = {{"value"}, {"median", "sigma", "min", "max"}, {"min", "max"}};
  static const char* const kDists[3] = {"fixed", "lognormal", "uniform"};
  for (const char* k : {"value", "median", "sigma", "min", "max"}) {
    bool used = false;
    for (const char* u : kUses[dist]) used = used || (u && std::string_view(u) == k);
    if (o.Has(k) && !used) {
      o.Fail(path + "." + k, std::string("not used by dist \"") + kDists[dist] + "\"");
      return;
    }
  }
  const char* const required[3][2] = {{"value", nullptr}, {"median", "sigma"}, {"min", "max"}};
  for (const char* k : required[dist])
    if (k && !o.Has(k)) {
      o.Fail(path + "." + k, "required");
      return;
    }
  out->kind = dist == 0 ? LengthSpec::Kind::kFixed
              : dist == 1 ? LengthSpec::Kind::kLogNormal
                          : LengthSpec::Kind::kUniform;
  if (out->min > out->max) o.Fail(path + ".min", "greater than max");
}

void ParseTraffic(Obj& top, const std::string& base_dir, ScenarioSpec* spec, Status* err) {
  if (!top.Has("traffic")) {
    top.Fail("traffic", "required");
    return;
  }
  Obj t(top.At("traffic"), "traffic", "traffic", err);
  TrafficSpec& ts = spec->traffic;
  t.Int("max_requests", &ts.max_requests, 1, std::numeric_limits<int64_t>::max());
  t.Number("max_arrival_s", &ts.max_arrival_s, Obj::Range::kPositive);
  const bool has_trace = t.Has("trace"), has_gen = t.Has("generator");
  if (t.ok() && has_trace == has_gen) {
    t.Fail("traffic", "expected exactly one of \"trace\" and \"generator\"");
    return;
  }
  if (has_trace) {
    ts.kind = TrafficSpec::Kind::kTrace;
    Obj tr(t.At("trace"), "traffic.trace", "traffic.trace", err);
    // In the order of TraceFormat.
    static constexpr TraceFormat kFormats[] = {TraceFormat::kAzure,     TraceFormat::kMooncake,
                                               TraceFormat::kCsv,       TraceFormat::kBurstGpt,
                                               TraceFormat::kSplitwise, TraceFormat::kServeGen};
    const int fmt = tr.Choice("format", {"azure", "mooncake", "csv", "burstgpt", "splitwise", "servegen"}, true);
    if (fmt >= 0) ts.format = kFormats[fmt];
    tr.String("path", &ts.path, true);
    ts.path = ResolvePath(base_dir, ts.path);
    tr.Number("start_s", &ts.start_s, Obj::Range::kNonNegative);
    tr.Number("end_s", &ts.end_s, Obj::Range::kPositive);
    tr.Number("rate_scale", &ts.rate_scale, Obj::Range::kPositive);
    if (tr.ok() && ts.end_s <= ts.start_s) tr.Fail("traffic.trace.end_s", "must be greater than start_s");
    // Lengths for a trace that has none of its own (ServeGen describes
    // arrivals only; its dataset files are used when these are absent).
    const bool has_lengths = tr.Has("prompt_tokens") || tr.Has("output_tokens") || tr.Has("lengths_csv");
    if (tr.ok() && has_lengths && ts.format != TraceFormat::kServeGen) {
      const char* key = tr.Has("lengths_csv") ? "lengths_csv" : tr.Has("prompt_tokens") ? "prompt_tokens" : "output_tokens";
      tr.Fail(std::string("traffic.trace.") + key, "only for format \"servegen\" (other traces carry their lengths)");
    }
    tr.String("lengths_csv", &ts.lengths_csv);
    if (!ts.lengths_csv.empty()) ts.lengths_csv = ResolvePath(base_dir, ts.lengths_csv);
    if (tr.ok() && has_lengths && ts.lengths_csv.empty() && !(tr.Has("prompt_tokens") && tr.Has("output_tokens")))
      tr.Fail("traffic.trace", "needs \"lengths_csv\" or both \"prompt_tokens\" and \"output_tokens\"");
    if (tr.ok() && !ts.lengths_csv.empty() && (tr.Has("prompt_tokens") || tr.Has("output_tokens")))
      tr.Fail("traffic.trace", "\"lengths_csv\" and \"prompt_tokens\"/\"output_tokens\" exclude each other");
    ParseLength(tr, "traffic.trace.", "prompt_tokens", &ts.prompt, err);
    ParseLength(tr, "traffic.trace.", "output_tokens", &ts.output, err);
    ts.trace_lengths = has_lengths;
  } else if (has_gen) {
    ts.kind = TrafficSpec::Kind::kGenerator;
    Obj g(t.At("generator"), "traffic.generator", "traffic.generator", err);
    const int arr = g.Choice("arrival", {"poisson", "gamma", "constant"}, true);
    ts.arrival = arr == 1 ? ArrivalProcess::kGamma : arr == 2 ? ArrivalProcess::kConstant : ArrivalProcess::kPoisson;
    g.Number("rate_per_s", &ts.rate_per_s, Obj::Range::kPositive, true);
    if (g.ok() && ts.rate_per_s < 1e-6)
      g.Fail("traffic.generator.rate_per_s", "must be at least 1e-06 (one request in 11.6 days)");
    g.Number("cv", &ts.cv, Obj::Range::kPositive);
    g.String("lengths_csv", &ts.lengths_csv);
    if (!ts.lengths_csv.empty()) ts.lengths_csv = ResolvePath(base_dir, ts.lengths_csv);
    g.String("model", &ts.model);
    const bool has_lengths = g.Has("prompt_tokens") || g.Has("output_tokens");
    if (g.ok() && ts.lengths_csv.empty() && !(g.Has("prompt_tokens") && g.Has("output_tokens")))
      g.Fail("traffic.generator", "needs \"lengths_csv\" or both \"prompt_tokens\" and \"output_tokens\"");
    if (g.ok() && !ts.lengths_csv.empty() && has_lengths)
      g.Fail("traffic.generator", "\"lengths_csv\" and \"prompt_tokens\"/\"output_tokens\" exclude each other");
    ParseLength(g, "traffic.generator.", "prompt_tokens", &ts.prompt, err);
    ParseLength(g, "traffic.generator.", "output_tokens", &ts.output, err);
    // Both optional; absent, the stream is exactly the plain generator's.
    // Whether the system prompt plus the longest prompt fits an int32 is
    // checked when the generator is built (a length CSV's longest row is
    // known only then).
    if (g.Has("shared_prefix")) {
      Obj sp(g.At("shared_prefix"), "traffic.generator.shared_prefix", "traffic.generator.shared_prefix", err);
      SharedPrefixSpec p;
      sp.Int("groups", &p.groups, 1, kMaxSharedPrefixGroups, true);
      sp.Int("tokens", &p.tokens, 1, kMaxSharedPrefixTokens, true);
      if (sp.ok()) ts.shared_prefix = p;
    }
    if (g.Has("sessions")) {
      Obj ss(g.At("sessions"), "traffic.generator.sessions", "traffic.generator.sessions", err);
      SessionSpec p;
      ss.Int("turns", &p.turns, 1, kMaxSessionTurns, true);
      ss.Number("think_time_s", &p.think_time_s, Obj::Range::kPositive, true);
      ss.Int("max_context_tokens", &p.max_context_tokens, 1, kMaxSessionContextTokens);
      if (ss.ok()) ts.sessions = p;
    }
    if (g.ok() && !t.Has("max_requests") && !t.Has("max_arrival_s") && !spec->duration_s)
      g.Fail("traffic", "a generator needs max_requests, max_arrival_s or the scenario's duration_s");
  }
}

void ParsePools(Obj& fleet, ScenarioSpec* spec, Status* err) {
  if (!fleet.Has("pools")) {
    fleet.Fail("fleet.pools", "required");
    return;
  }
  const json& arr = fleet.At("pools");
  if (!arr.is_array() || arr.empty()) {
    fleet.Fail("fleet.pools", "expected a non-empty array of pools");
    return;
  }
  for (size_t i = 0; i < arr.size() && err->ok(); ++i) {
    PoolSpec p;
    p.path = "fleet.pools[" + std::to_string(i) + "]";
    Obj o(arr[i], p.path, "fleet.pools[]", err);
    p.name = "pool" + std::to_string(i);
    o.String("name", &p.name);
    p.model = spec->model;
    o.String("model", &p.model);
    if (o.ok() && p.model.empty()) o.Fail(p.path + ".model", "required (or set the scenario's \"model\")");
    o.String("gpu", &p.gpu, true);
    o.Int("replicas", &p.replicas, 1, 100000);
    o.Int("tp", &p.tp, 1, 1024);
    o.Int("pp", &p.pp, 1, 1024);
    o.String("engine", &p.engine);
    o.String("scheduler", &p.scheduler);
    if (o.Has("scheduler_options")) {
      // Types and ranges as in the schema; which scheduler takes which
      // option is checked when the run is built.
      struct OptionRange {
        const char* name;
        bool integer;
        double lo, hi;
      };
      static const OptionRange kOptions[] = {
          {"watermark", false, 0, 0.5},
          {"chunk_size", true, 1, 1 << 24},
          {"reserve_request_length", true, 0, 1},
          {"chunked_prefill_size", true, 1, 1 << 30},
          {"max_prefill_tokens", true, 1, 1 << 30},
          {"schedule_conservativeness", false, 0.01, 100},
          {"init_new_token_ratio", false, 0, 1},
          {"min_new_token_ratio", false, 0, 1},
          {"new_token_ratio_decay_steps", true, 1, 1 << 30},
          {"clip_max_new_tokens", true, 1, 1 << 30},
      };
      Obj so(o.At("scheduler_options"), p.path + ".scheduler_options", "fleet.pools[].scheduler_options", err);
      for (const OptionRange& r : kOptions) {
        if (!so.Has(r.name)) continue;
        const json& v = so.At(r.name);
        const double x = v.is_number() ? v.get<double>() : std::nan("");
        const bool good = std::isfinite(x) && x >= r.lo && x <= r.hi && (!r.integer || std::floor(x) == x);
        if (!good) {
          char range[96];
          std::snprintf(range, sizeof range, "%s in [%g, %g]", r.integer ? "an integer" : "a number", r.lo, r.hi);
          so.Fail(so.Join(r.name), std::string("expected ") + range + ", got " + Describe(v));
          break;
        }
        p.scheduler_options[r.name] = x;
      }
    }
    const int pre = o.Choice("preemption", {"recompute", "swap"}, false);
    if (pre >= 0) p.preemption = pre == 0 ? "recompute" : "swap";
    o.Number("swap_space_gib", &p.swap_space_gib, Obj::Range::kNonNegative);
    o.OptInt("max_model_len", &p.max_model_len, 1, int64_t{1} << 30);
    o.OptBool("prefix_caching", &p.prefix_caching);
    o.OptInt("max_num_batched_tokens", &p.max_num_batched_tokens, 1, int64_t{1} << 30);
    o.OptInt("max_num_seqs", &p.max_num_seqs, 1, int64_t{1} << 30);
    o.Number("gpu_memory_utilization", &p.gpu_memory_utilization, Obj::Range::kFraction);
    o.Int("block_size", &p.block_size, 1, 1024);
    o.String("pricing_class", &p.pricing_class);
    o.OptNumber("usd_per_gpu_hour", &p.usd_per_gpu_hour, Obj::Range::kNonNegative);
    for (const PoolSpec& q : spec->pools)
      if (o.ok() && q.name == p.name) o.Fail(p.path + ".name", "duplicate pool name \"" + p.name + "\"");
    spec->pools.push_back(std::move(p));
  }
}

}  // namespace

Status ParseScenario(std::string_view text, const std::string& file, const std::string& base_dir,
                     ScenarioSpec* out) {
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    // e.what() reads "[json.exception.parse_error.101] parse error at line 3, column 7: ..."
    // (or out_of_range.406 for a number too large for a double).
    std::string what = e.what();
    size_t p = what.find("] ");
    return Status::Invalid(file + ": invalid JSON: " + (p == std::string::npos ? what : what.substr(p + 2)));
  }
  ScenarioSpec spec;
  spec.file = file;
  Status err;
  Obj top(j, "", "", &err);
  top.String("name", &spec.name);
  top.String("description", &spec.description);
  top.Int("seed", &spec.seed, 0, std::numeric_limits<int64_t>::max());
  top.OptNumber("duration_s", &spec.duration_s, Obj::Range::kPositive);
  top.Number("warmup_s", &spec.warmup_s, Obj::Range::kNonNegative);
  top.String("model", &spec.model);
  if (err.ok() && !top.Has("fleet")) top.Fail("fleet", "required");
  if (err.ok()) {
    Obj fleet(top.At("fleet"), "fleet", "fleet", &err);
    fleet.String("router", &spec.router);
    ParsePools(fleet, &spec, &err);
  }
  if (err.ok()) ParseTraffic(top, base_dir, &spec, &err);
  if (err.ok() && top.Has("slo")) {
    Obj slo(top.At("slo"), "slo", "slo", &err);
    slo.OptNumber("ttft_ms", &spec.ttft_slo_ms, Obj::Range::kPositive);
    slo.OptNumber("tpot_ms", &spec.tpot_slo_ms, Obj::Range::kPositive);
  }
  if (err.ok() && top.Has("perf")) {
    Obj perf(top.At("perf"), "perf", "perf", &err);
    RooflineOptions& r = spec.roofline;
    perf.Number("gemm_compute_efficiency", &r.gemm_compute_efficiency, Obj::Range::kFraction);
    perf.Number("gemm_memory_efficiency", &r.gemm_memory_efficiency, Obj::Range::kFraction);
    perf.Number("attention_compute_efficiency", &r.attention_compute_efficiency, Obj::Range::kFraction);
    perf.Number("attention_memory_efficiency", &r.attention_memory_efficiency, Obj::Range::kFraction);
    perf.Number("elementwise_memory_efficiency", &r.elementwise_memory_efficiency, Obj::Range::kFraction);
    perf.Number("launch_overhead_us", &r.launch_overhead_us, Obj::Range::kNonNegative);
    perf.Number("link_efficiency", &r.link_efficiency, Obj::Range::kFraction);
    perf.String("profile", &spec.perf_profile);
    if (!spec.perf_profile.empty()) spec.perf_profile = ResolvePath(base_dir, spec.perf_profile);
  }
  if (err.ok() && spec.duration_s && spec.warmup_s >= *spec.duration_s)
    err = Status::Invalid("warmup_s: must be less than duration_s");
  if (!err.ok()) return err.WithPrefix(file + ": ");
  *out = std::move(spec);
  return Status::Ok();
}

Status LoadScenarioFile(const std::string& path, ScenarioSpec* out) {
  std::string text;
  FLEETSIM_RETURN_IF_ERROR(ReadWholeFile(path, "scenario", &text));
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return ParseScenario(text, path, dir, out);
}

std::vector<std::string> ScenarioKeyPaths() {
  std::vector<std::string> out;
  for (const KeyTable& t : kTables)
    for (const char* k : t.keys) out.push_back(std::string(t.path) + (*t.path ? "." : "") + k);
  return out;
}

}  // namespace fleetsim

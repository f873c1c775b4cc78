#include "sim/metrics/collector.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

namespace fleetsim {


namespace {

// Linear interpolation between order statistics (numpy's default).
double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0.0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Distribution Describe(std::vector<double> v) {
  Distribution d;
  d.count = static_cast<int64_t>(v.size());
  if (v.empty()) return d;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  d.mean = sum / static_cast<double>(v.size());
  d.p50 = Percentile(v, 0.50);
  d.p90 = Percentile(v, 0.90);
  d.p95 = Percentile(v, 0.95);
  d.p99 = Percentile(v, 0.99);
  d.max = v.back();
  return d;
}

Distribution Describe(const LogHistogram& h) {
  Distribution d;
  d.count = h.count();
  if (h.count() == 0) return d;
  d.mean = h.mean() * 1e-6;
  d.p50 = h.Quantile(0.50) * 1e-6;
  d.p90 = h.Quantile(0.90) * 1e-6;
  d.p95 = h.Quantile(0.95) * 1e-6;
  d.p99 = h.Quantile(0.99) * 1e-6;
  d.max = static_cast<double>(h.max()) * 1e-6;
  return d;
}

// Rounds to 1 ns in milliseconds (6 decimals) so summaries stay readable.
double RoundMs(double ms) { return std::round(ms * 1e6) / 1e6; }
double Round6(double x) { return std::round(x * 1e6) / 1e6; }

Status OpenFile(BufferedFile& f, const std::string& path) {
  if (path.empty() || f.Open(path)) return Status::Ok();
  return Status::Invalid("cannot create \"" + path + "\": " + std::strerror(errno));
}

}  // namespace

MetricsCollector::MetricsCollector(const MetricsOptions& options) : options_(options) {}
MetricsCollector::~MetricsCollector() = default;

Status MetricsCollector::Open(const MetricsOptions& options, std::unique_ptr<MetricsCollector>* out) {
  std::unique_ptr<MetricsCollector> c(new MetricsCollector(options));
  FLEETSIM_RETURN_IF_ERROR(OpenFile(c->requests_, options.requests_csv));
  FLEETSIM_RETURN_IF_ERROR(OpenFile(c->timeseries_, options.timeseries_csv));
  FLEETSIM_RETURN_IF_ERROR(OpenFile(c->trace_, options.trace_json));
  if (c->requests_.is_open())
    c->requests_.out().Raw(
        "id,arrival_s,first_scheduled_s,first_token_s,finish_s,prompt_tokens,output_tokens,"
        "generated_tokens,replica,preemptions,status,reason,cached_tokens\n");
  if (c->timeseries_.is_open())
    c->timeseries_.out().Raw("t_s,replica,arrivals,queue_depth,running,kv_util,busy_frac\n");
  if (c->trace_.is_open()) {
    TextBuffer& t = c->trace_.out();
    t.Raw("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
    t.Raw("{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":\"replicas\"}}");
    t.Raw(",\n{\"ph\":\"M\",\"pid\":2,\"name\":\"process_name\",\"args\":{\"name\":\"requests\"}}");
    for (size_t i = 0; i < options.replica_names.size(); ++i) {
      t.Raw(",\n{\"ph\":\"M\",\"pid\":1,\"tid\":");
      t.Int(static_cast<int64_t>(i));
      t.Raw(",\"name\":\"thread_name\",\"args\":{\"name\":");
      t.JsonString(options.replica_names[i]);
      t.Raw("}}");
    }
    c->trace_first_ = false;
  }
  *out = std::move(c);
  return Status::Ok();
}

void MetricsCollector::OnArrival(const Request& r, int) {
  ++arrived_;
  last_arrival_ = std::max(last_arrival_, r.arrival);
}

void MetricsCollector::OnFinished(const RequestRecord& rec) {
  ++finished_;
  switch (rec.status) {
    case RequestStatus::kCompleted: ++completed_; break;
    case RequestStatus::kRejected: ++rejected_; break;
    case RequestStatus::kFailed: ++failed_; break;
    case RequestStatus::kUnfinished: ++unfinished_; break;
  }
  if (rec.status != RequestStatus::kCompleted) {
    auto it = std::find_if(reasons_.begin(), reasons_.end(),
                           [&](const auto& p) { return p.first == rec.reason; });
    if (it == reasons_.end()) {
      reasons_.emplace_back(std::string(rec.reason), 1);
    } else {
      ++it->second;
    }
  }

  if (requests_.is_open()) {
    TextBuffer& o = requests_.out();
    auto time_or_empty = [&](SimTime t) {
      if (t >= 0) o.Seconds(t);
      o.Char(',');
    };
    o.Int(static_cast<int64_t>(rec.id));
    o.Char(',');
    o.Seconds(rec.arrival);
    o.Char(',');
    time_or_empty(rec.first_scheduled);
    time_or_empty(rec.first_token);
    time_or_empty(rec.finish);
    o.Int(rec.prompt_tokens);
    o.Char(',');
    o.Int(rec.output_tokens);
    o.Char(',');
    o.Int(rec.generated_tokens);
    o.Char(',');
    o.Int(rec.replica);
    o.Char(',');
    o.Int(rec.preemptions);
    o.Char(',');
    o.Raw(RequestStatusName(rec.status));
    o.Char(',');
    o.Raw(rec.reason);
    o.Char(',');
    o.Int(rec.cached_tokens);
    o.Char('\n');
    requests_.MaybeFlush();
  }
  if (trace_.is_open() && rec.replica >= 0) {
    TextBuffer& t = trace_.out();
    auto event = [&](char ph, SimTime at) {
      t.Raw(",\n{\"ph\":\"");
      t.Char(ph);
      t.Raw("\",\"cat\":\"request\",\"name\":\"request\",\"pid\":2,\"tid\":");
      t.Int(rec.replica);
      t.Raw(",\"id\":");
      t.Int(static_cast<int64_t>(rec.id));
      t.Raw(",\"ts\":");
      t.Fixed(static_cast<double>(at) * 1e-3, 3);
    };
    event('b', rec.arrival);
    t.Raw(",\"args\":{\"prompt_tokens\":");
    t.Int(rec.prompt_tokens);
    t.Raw(",\"output_tokens\":");
    t.Int(rec.output_tokens);
    t.Raw(",\"cached_tokens\":");
    t.Int(rec.cached_tokens);
    t.Raw(",\"status\":\"");
    t.Raw(RequestStatusName(rec.status));
    t.Raw("\"}}");
    if (rec.first_token >= 0) {
      event('n', rec.first_token);
      t.Raw(",\"args\":{\"event\":\"first_token\"}}");
    }
    event('e', std::max(rec.finish, rec.arrival));
    t.Raw("}");
    trace_.MaybeFlush();
  }

  if (rec.arrival < options_.warmup) return;
  ++measured_;
  if (rec.status != RequestStatus::kCompleted) return;
  const double ttft = TimeToMillis(rec.first_token - rec.arrival);
  const double e2e = TimeToMillis(rec.finish - rec.arrival);
  ttft_ms_.push_back(ttft);
  e2e_ms_.push_back(e2e);
  queue_ms_.push_back(TimeToMillis(rec.first_scheduled - rec.arrival));
  double tpot = 0;
  if (rec.generated_tokens > 1) {
    tpot = TimeToMillis(rec.finish - rec.first_token) / (rec.generated_tokens - 1);
    tpot_ms_.push_back(tpot);
  } else {
    ++single_token_;
  }
  ++measured_completed_;
  out_tokens_ += rec.generated_tokens;
  in_tokens_ += rec.prompt_tokens;
  bool met = (!options_.ttft_slo_ms || ttft <= *options_.ttft_slo_ms) &&
             (!options_.tpot_slo_ms || rec.generated_tokens <= 1 || tpot <= *options_.tpot_slo_ms);
  if (met) ++met_slo_;
}

void MetricsCollector::OnTokenGaps(SimTime at, SimTime gap, int64_t count) {
  // Gaps are not tied to one request, so the warm-up cut is by time: a gap
  // counts if it ends at or after warm-up.
  if (at < options_.warmup) return;
  itl_.Add(gap, count);
}

void MetricsCollector::OnIteration(int replica, SimTime start, SimTime end, const BatchShape& s) {
  if (!trace_.is_open()) return;
  TextBuffer& t = trace_.out();
  t.Raw(",\n{\"ph\":\"X\",\"cat\":\"iteration\",\"name\":\"");
  t.Raw(s.prefill_tokens > 0 ? (s.decode_seqs > 0 ? "mixed" : "prefill") : "decode");
  t.Raw("\",\"pid\":1,\"tid\":");
  t.Int(replica);
  t.Raw(",\"ts\":");
  t.Fixed(static_cast<double>(start) * 1e-3, 3);
  t.Raw(",\"dur\":");
  t.Fixed(static_cast<double>(end - start) * 1e-3, 3);
  t.Raw(",\"args\":{\"prefill_seqs\":");
  t.Int(s.prefill_seqs);
  t.Raw(",\"prefill_tokens\":");
  t.Int(s.prefill_tokens);
  t.Raw(",\"decode_seqs\":");
  t.Int(s.decode_seqs);
  t.Raw(",\"decode_kv_tokens\":");
  t.Int(s.decode_kv_tokens);
  if (s.cached_tokens > 0) {
    t.Raw(",\"cached_tokens\":");
    t.Int(s.cached_tokens);
  }
  if (s.swap_in_tokens + s.swap_out_tokens > 0) {
    t.Raw(",\"swap_in_tokens\":");
    t.Int(s.swap_in_tokens);
    t.Raw(",\"swap_out_tokens\":");
    t.Int(s.swap_out_tokens);
  }
  t.Raw("}}");
  trace_.MaybeFlush();
}

void MetricsCollector::OnSample(const ReplicaSample& s) {
  const size_t second = static_cast<size_t>((s.t - 1) / kSecond);
  if (waiting_by_second_.size() <= second) waiting_by_second_.resize(second + 1, 0);
  waiting_by_second_[second] += s.waiting;
  if (!timeseries_.is_open()) return;
  TextBuffer& o = timeseries_.out();
  o.Seconds(s.t);
  o.Char(',');
  o.Int(s.replica);
  o.Char(',');
  o.Int(s.arrivals);
  o.Char(',');
  o.Int(s.waiting);
  o.Char(',');
  o.Int(s.running);
  o.Char(',');
  o.Fixed(s.kv_utilization, 4);
  o.Char(',');
  o.Fixed(s.interval > 0 ? static_cast<double>(s.busy) / static_cast<double>(s.interval) : 0.0, 4);
  o.Char('\n');
  timeseries_.MaybeFlush();
}

Summary MetricsCollector::Summarize(const RunFacts& facts) const {
  Summary s;
  s.arrived = arrived_;
  s.completed = completed_;
  s.rejected = rejected_;
  s.failed = failed_;
  s.unfinished = unfinished_;
  s.measured = measured_;
  s.single_token = single_token_;
  s.ttft = Describe(ttft_ms_);
  s.tpot = Describe(tpot_ms_);
  s.e2e = Describe(e2e_ms_);
  s.queue = Describe(queue_ms_);
  s.itl = Describe(itl_);
  for (Distribution* d : {&s.ttft, &s.tpot, &s.e2e, &s.queue, &s.itl}) {
    d->mean = RoundMs(d->mean);
    d->p50 = RoundMs(d->p50);
    d->p90 = RoundMs(d->p90);
    d->p95 = RoundMs(d->p95);
    d->p99 = RoundMs(d->p99);
    d->max = RoundMs(d->max);
  }
  const SimTime window = std::max<SimTime>(facts.end - options_.warmup, 0);
  s.window_s = TimeToSeconds(window);
  if (window > 0) {
    s.requests_per_s = Round6(static_cast<double>(measured_completed_) / s.window_s);
    s.output_tokens_per_s = Round6(static_cast<double>(out_tokens_) / s.window_s);
    s.input_tokens_per_s = Round6(static_cast<double>(in_tokens_) / s.window_s);
  }
  s.ttft_slo_ms = options_.ttft_slo_ms;
  s.tpot_slo_ms = options_.tpot_slo_ms;
  s.has_slo = options_.ttft_slo_ms || options_.tpot_slo_ms;
  if (s.has_slo) {
    s.attainment = measured_ ? Round6(static_cast<double>(met_slo_) / static_cast<double>(measured_)) : 0;
    s.goodput_rps = window > 0 ? Round6(static_cast<double>(met_slo_) / s.window_s) : 0;
  }
  // Cost over the window: every GPU of every pool is paid for, busy or not.
  double usd = 0;
  bool priced = true;
  for (const RunFacts::Pool& p : facts.pools) {
    const double hours = static_cast<double>(p.replicas) * p.gpus_per_replica * s.window_s / 3600.0;
    s.gpu_hours += hours;
    if (p.usd_per_gpu_hour) {
      usd += hours * *p.usd_per_gpu_hour;
    } else {
      priced = false;
      s.warnings.push_back("no price for pool \"" + p.name + "\": cost omitted");
    }
  }
  s.gpu_hours = Round6(s.gpu_hours);
  if (priced) {
    s.total_usd = Round6(usd);
    if (out_tokens_ > 0) s.usd_per_million_output_tokens = Round6(usd / static_cast<double>(out_tokens_) * 1e6);
  }
  s.events = facts.events;
  s.simulated_s = TimeToSeconds(facts.end);
  s.preemptions = facts.preemptions;
  s.prefix_caching = facts.prefix_caching;
  s.prefix_hit_tokens = facts.prefix_hit_tokens;
  s.prefix_evicted_blocks = facts.prefix_evicted_blocks;
  if (facts.prefix_prompt_tokens > 0)
    s.prefix_hit_rate =
        Round6(static_cast<double>(facts.prefix_hit_tokens) / static_cast<double>(facts.prefix_prompt_tokens));
  s.perf_sources = facts.perf_sources;
  s.reasons = reasons_;
  std::sort(s.reasons.begin(), s.reasons.end());

  // Overload: while requests keep arriving (from warm-up to the last
  // arrival; the drain afterwards says nothing), fit a line to the summed
  // waiting queue per second. A stable system's queue fluctuates around a
  // level, so the fitted rise over the window is near zero; an overloaded
  // one keeps growing, so the rise exceeds the queue's own mean level (a
  // queue growing linearly from empty rises by twice its mean). The +10
  // keeps a handful of queued requests from counting as overload, and the
  // last quarter must sit above the second.
  const size_t first = static_cast<size_t>(options_.warmup / kSecond);
  const size_t last = std::min(waiting_by_second_.size(), static_cast<size_t>(last_arrival_ / kSecond) + 1);
  if (last > first + 8) {
    const size_t n = last - first;
    auto mean_of = [&](size_t a, size_t b) {
      double sum = 0;
      for (size_t i = a; i < b; ++i) sum += static_cast<double>(waiting_by_second_[first + i]);
      return sum / static_cast<double>(b - a);
    };
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (size_t i = 0; i < n; ++i) {
      const double x = static_cast<double>(i), y = static_cast<double>(waiting_by_second_[first + i]);
      sx += x;
      sy += y;
      sxx += x * x;
      sxy += x * y;
    }
    const double dn = static_cast<double>(n);
    const double denom = dn * sxx - sx * sx;
    const double slope = denom > 0 ? (dn * sxy - sx * sy) / denom : 0;
    s.queue_growth_per_s = Round6(slope);
    const double rise = slope * dn;
    s.overloaded = rise > sy / dn + 10.0 && mean_of(3 * n / 4, n) > mean_of(n / 4, n / 2);
  }
  if (facts.hit_duration && unfinished_ > 0 && !s.overloaded) {
    s.warnings.push_back("the run stopped at duration_s with " + std::to_string(unfinished_) +
                         " requests unfinished");
  }
  if (arrived_ == 0) s.warnings.push_back("no request arrived");
  if (s.overloaded) s.warnings.push_back("overloaded: the waiting queue grows without bound");
  return s;
}

Status MetricsCollector::Close() {
  if (trace_.is_open()) trace_.out().Raw("\n]}\n");
  bool ok = requests_.Close();
  ok = timeseries_.Close() && ok;
  ok = trace_.Close() && ok;
  if (!ok) return Status::Invalid(std::string("writing outputs failed: ") + std::strerror(errno));
  return Status::Ok();
}

namespace {

void WriteDistribution(JsonWriter& w, const char* name, const Distribution& d) {
  w.Key(name).BeginObject();
  w.Key("count").Int(d.count);
  w.Key("mean").Double(d.mean);
  w.Key("p50").Double(d.p50);
  w.Key("p90").Double(d.p90);
  w.Key("p95").Double(d.p95);
  w.Key("p99").Double(d.p99);
  w.Key("max").Double(d.max);
  w.EndObject();
}

void OptionalDouble(JsonWriter& w, const char* key, const std::optional<double>& v) {
  w.Key(key);
  if (v) {
    w.Double(*v);
  } else {
    w.Null();
  }
}

}  // namespace

std::string SummaryToJson(const Summary& s) {
  JsonWriter w;
  w.BeginObject();
  w.Key("requests").BeginObject();
  w.Key("arrived").Int(s.arrived);
  w.Key("completed").Int(s.completed);
  w.Key("rejected").Int(s.rejected);
  w.Key("failed").Int(s.failed);
  w.Key("unfinished").Int(s.unfinished);
  w.Key("measured").Int(s.measured);
  w.Key("single_token").Int(s.single_token);
  w.Key("reasons").BeginObject();
  for (const auto& [reason, count] : s.reasons) w.Key(reason).Int(count);
  w.EndObject();
  w.EndObject();
  w.Key("latency_ms").BeginObject();
  WriteDistribution(w, "ttft", s.ttft);
  WriteDistribution(w, "tpot", s.tpot);
  WriteDistribution(w, "itl", s.itl);
  WriteDistribution(w, "e2e", s.e2e);
  WriteDistribution(w, "queue", s.queue);
  w.EndObject();
  w.Key("throughput").BeginObject();
  w.Key("window_s").Double(s.window_s);
  w.Key("requests_per_s").Double(s.requests_per_s);
  w.Key("output_tokens_per_s").Double(s.output_tokens_per_s);
  w.Key("input_tokens_per_s").Double(s.input_tokens_per_s);
  w.EndObject();
  if (s.has_slo) {
    w.Key("slo").BeginObject();
    OptionalDouble(w, "ttft_ms", s.ttft_slo_ms);
    OptionalDouble(w, "tpot_ms", s.tpot_slo_ms);
    w.Key("attainment").Double(s.attainment);
    w.Key("goodput_rps").Double(s.goodput_rps);
    w.EndObject();
  }
  if (s.prefix_caching) {
    w.Key("cache").BeginObject();
    w.Key("prefix_hit_rate").Double(s.prefix_hit_rate);
    w.Key("hit_tokens").Int(s.prefix_hit_tokens);
    w.Key("evicted_blocks").Int(s.prefix_evicted_blocks);
    w.EndObject();
  }
  w.Key("cost").BeginObject();
  w.Key("gpu_hours").Double(s.gpu_hours);
  OptionalDouble(w, "total_usd", s.total_usd);
  OptionalDouble(w, "usd_per_million_output_tokens", s.usd_per_million_output_tokens);
  w.EndObject();
  w.Key("sim").BeginObject();
  w.Key("events").Int(static_cast<int64_t>(s.events));
  w.Key("simulated_s").Double(s.simulated_s);
  w.Key("preemptions").Int(s.preemptions);
  w.Key("overloaded").Bool(s.overloaded);
  w.Key("queue_growth_per_s").Double(s.queue_growth_per_s);
  w.EndObject();
  w.Key("perf_sources").BeginObject();
  for (const auto& [kind, source] : s.perf_sources) w.Key(kind).String(source);
  w.EndObject();
  w.Key("warnings").BeginArray();
  for (const std::string& m : s.warnings) w.String(m);
  w.EndArray();
  w.EndObject();
  return w.Finish();
}

std::string FormatSummaryTable(const Summary& s) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line,
                "requests  arrived %lld  completed %lld  rejected %lld  failed %lld  unfinished %lld\n",
                static_cast<long long>(s.arrived), static_cast<long long>(s.completed),
                static_cast<long long>(s.rejected), static_cast<long long>(s.failed),
                static_cast<long long>(s.unfinished));
  out += line;
  out += "latency (ms)        mean        p50        p90        p99        max\n";
  auto row = [&](const char* name, const Distribution& d) {
    std::snprintf(line, sizeof line, "  %-8s %11.2f %10.2f %10.2f %10.2f %10.2f\n", name, d.mean, d.p50,
                  d.p90, d.p99, d.max);
    out += line;
  };
  row("TTFT", s.ttft);
  row("TPOT", s.tpot);
  row("ITL", s.itl);
  row("E2E", s.e2e);
  row("queue", s.queue);
  std::snprintf(line, sizeof line, "throughput  %.3f req/s  %.1f output tok/s  %.1f input tok/s  over %.1f s\n",
                s.requests_per_s, s.output_tokens_per_s, s.input_tokens_per_s, s.window_s);
  out += line;
 if (s.prefix_caching) {
    std::snprintf(line, sizeof line, "cache       prefix hit rate %.2f%%  %lld tokens  %lld blocks evicted\n",
                  s.prefix_hit_rate * 100, static_cast<long long>(s.prefix_hit_tokens),
                  static_cast<long long>(s.prefix_evicted_blocks));
    out += line;
  }
  if (s.has_slo) {
    std::snprintf(line, sizeof line, "SLO         attainment %.2f%%  goodput %.3f req/s\n", s.attainment * 100,
                  s.goodput_rps);
    out += line;
  }
  if (s.total_usd) {
    std::snprintf(line, sizeof line, "cost        %.3f GPU-hours  $%.2f  $%.4f per 1M output tokens\n",
                  s.gpu_hours, *s.total_usd,
                  s.usd_per_million_output_tokens ? *s.usd_per_million_output_tokens : 0.0);
  } else {
    std::snprintf(line, sizeof line, "cost        %.3f GPU-hours  (no price: cost omitted)\n", s.gpu_hours);
  }
  out += line;
  std::snprintf(line, sizeof line, "simulated   %.1f s  %llu events  %lld preemptions%s\n", s.simulated_s,
                static_cast<unsigned long long>(s.events), static_cast<long long>(s.preemptions),
                s.overloaded ? "  OVERLOADED" : "");
  out += line;
  for (const std::string& w : s.warnings) out += "warning: " + w + "\n";
  return out;
}

}  // namespace fleetsim

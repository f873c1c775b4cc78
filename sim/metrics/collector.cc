#include "sim/metrics/collector.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "base/percentile.h"

namespace fleetsim {

namespace {

constexpr std::string_view kTruncatedReason = "truncated_to_max_model_len";

Distribution Describe(std::vector<double> v) {
  Distribution d;
  d.count = static_cast<int64_t>(v.size());
  if (v.empty()) return d;
  const SampleSummary s = Summarize(&v);
  return {d.count, s.mean, s.p50, s.p90, s.p95, s.p99, s.max};
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

void MetricsCollector::Latencies::Add(double ms) {
  if (exact_) {
    ms_.push_back(ms);
  } else {
    ns_.Add(std::llround(std::max(ms, 0.0) * 1e6));
  }
}

void MetricsCollector::Latencies::ToHistogram() {
  if (!exact_) return;
  exact_ = false;
  for (double ms : ms_) ns_.Add(std::llround(std::max(ms, 0.0) * 1e6));
  std::vector<double>().swap(ms_);
}

Distribution MetricsCollector::Latencies::Describe() const {
  return exact_ ? fleetsim::Describe(ms_) : fleetsim::Describe(ns_);
}

MetricsCollector::MetricsCollector(const MetricsOptions& options) : options_(options), overload_(options.warmup) {}
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
    c->timeseries_.out().Raw("t_s,replica,arrivals,queue_depth,running,kv_util,busy_frac,state,usd_per_hour\n");
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
  }
  *out = std::move(c);
  return Status::Ok();
}

void MetricsCollector::OnArrival(const Request& r, int) {
  ++arrived_;
  if (last_arrival_ >= 0) max_gap_ = std::max(max_gap_, r.arrival - last_arrival_);
  last_arrival_ = std::max(last_arrival_, r.arrival);
  overload_.OnArrival(r.arrival);
  if (trace_cut_ < 0 && options_.trace_requests >= 0 && static_cast<int64_t>(r.id) >= options_.trace_requests)
    trace_cut_ = r.arrival;
}

void MetricsCollector::OnFinished(const RequestRecord& rec) {
  ++finished_;
  switch (rec.status) {
    case RequestStatus::kCompleted: ++completed_; break;
    case RequestStatus::kRejected: ++rejected_; break;
    case RequestStatus::kFailed: ++failed_; break;
    case RequestStatus::kUnfinished: ++unfinished_; break;
  }
  auto count_reason = [&](std::string_view reason) {
    auto it = std::find_if(reasons_.begin(), reasons_.end(), [&](const auto& p) { return p.first == reason; });
    if (it == reasons_.end()) {
      reasons_.emplace_back(std::string(reason), 1);
    } else {
      ++it->second;
    }
  };
  if (rec.status != RequestStatus::kCompleted) count_reason(rec.reason);
  if (rec.truncated) {
    ++truncated_;
    count_reason(kTruncatedReason);
  }
  if (rec.status != RequestStatus::kUnfinished) last_finish_ = std::max(last_finish_, rec.finish);
  if (rec.status == RequestStatus::kCompleted) {
    overload_.OnCompleted(rec.arrival, rec.finish, rec.first_scheduled - rec.arrival);
  } else if (rec.status == RequestStatus::kUnfinished) {
    overload_.OnUnscheduled(rec.arrival,
                            (rec.first_scheduled >= 0 ? rec.first_scheduled : rec.finish) - rec.arrival);
  } else {
    overload_.OnTurnedAway(rec.arrival);
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
    o.Raw(rec.status == RequestStatus::kCompleted && rec.truncated ? kTruncatedReason : rec.reason);
    o.Char(',');
    o.Int(rec.cached_tokens);
    o.Char('\n');
    requests_.MaybeFlush();
  }
  if (trace_.is_open() && rec.replica >= 0 &&
      (options_.trace_requests < 0 || static_cast<int64_t>(rec.id) < options_.trace_requests)) {
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

  const bool grouped = !by_class_.empty() || !by_tenant_.empty() || !by_model_.empty() || !by_region_.empty();
  if (!degraded_.empty() && rec.degraded < degraded_.size()) ++degraded_[rec.degraded];
  if (rec.arrival < options_.warmup) {
    if (grouped) CountGroups(rec, false, false, 0);
    return;
  }
  ++measured_;
  const bool in_fail = failure_windows_ && failure_windows_->Inside(rec.arrival);
  const bool in_restart = restart_windows_ && restart_windows_->Inside(rec.arrival);
  in_fail_ += in_fail;
  in_restart_ += in_restart;
  if (rec.status != RequestStatus::kCompleted) {
    if (grouped) CountGroups(rec, true, false, 0);
    return;
  }
  const double ttft = TimeToMillis(rec.first_token - rec.arrival);
  const double e2e = TimeToMillis(rec.finish - rec.arrival);
  if (measured_completed_ == options_.exact_latency_limit) {
    for (Latencies* l : {&ttft_, &tpot_, &e2e_, &queue_}) l->ToHistogram();
  }
  ttft_.Add(ttft);
  e2e_.Add(e2e);
  queue_.Add(TimeToMillis(rec.first_scheduled - rec.arrival));
  double tpot = 0;
  if (rec.generated_tokens > 1) {
    tpot = TimeToMillis(rec.finish - rec.first_token) / (rec.generated_tokens - 1);
    tpot_.Add(tpot);
  } else {
    ++single_token_;
  }
  ++measured_completed_;
  out_tokens_ += rec.generated_tokens;
  in_tokens_ += rec.prompt_tokens;
  bool met = (!options_.ttft_slo_ms || ttft <= *options_.ttft_slo_ms) &&
             (!options_.tpot_slo_ms || rec.generated_tokens <= 1 || tpot <= *options_.tpot_slo_ms);
  if (met) {
    ++met_slo_;
    in_fail_met_ += in_fail;
    in_restart_met_ += in_restart;
  }
  if (grouped)
    CountGroups(rec, true, met, rec.generated_tokens > 1 ? (rec.finish - rec.first_token) / (rec.generated_tokens - 1) : -1);
}

void MetricsCollector::SetGroups(GroupNames names) {
  groups_ = std::move(names);
  by_class_.assign(groups_.classes.size(), GroupStats{});
  by_tenant_.assign(groups_.tenants.size(), GroupStats{});
  by_model_.assign(groups_.models.size(), GroupStats{});
  by_region_.assign(groups_.regions.size(), GroupStats{});
  degraded_.assign(groups_.degrade_reasons.size(), 0);
}

void MetricsCollector::CountGroups(const RequestRecord& rec, bool measured, bool met, SimTime tpot_ns) {
  auto count = [&](GroupStats& g) {
    ++g.arrived;
    switch (rec.status) {
      case RequestStatus::kCompleted: ++g.completed; break;
      case RequestStatus::kRejected: ++g.rejected; break;
      case RequestStatus::kFailed: ++g.failed; break;
      case RequestStatus::kUnfinished: ++g.unfinished; break;
    }
    if (!measured) return;
    ++g.measured;
    g.met += met;
    if (rec.status != RequestStatus::kCompleted) return;
    g.ttft.Add(rec.first_token - rec.arrival);
    g.e2e.Add(rec.finish - rec.arrival);
    if (tpot_ns >= 0) g.tpot.Add(tpot_ns);
  };
  for (size_t c = 0; c < groups_.classes.size(); ++c)
    if (groups_.classes[c].first == rec.priority) count(by_class_[c]);
  if (rec.tenant >= 0 && static_cast<size_t>(rec.tenant) < by_tenant_.size()) count(by_tenant_[rec.tenant]);
  if (rec.model >= 0 && static_cast<size_t>(rec.model) < by_model_.size()) count(by_model_[rec.model]);
  if (rec.region >= 0 && static_cast<size_t>(rec.region) < by_region_.size()) count(by_region_[rec.region]);
}

void MetricsCollector::OnReplicaEvent(int replica, SimTime at, std::string_view event) {
  if (!trace_.is_open() || (trace_cut_ >= 0 && at >= trace_cut_)) return;
  TextBuffer& t = trace_.out();
  t.Raw(",\n{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"lifecycle\",\"name\":");
  t.JsonString(event);
  t.Raw(",\"pid\":1,\"tid\":");
  t.Int(replica);
  t.Raw(",\"ts\":");
  t.Fixed(static_cast<double>(at) * 1e-3, 3);
  t.Raw("}");
  trace_.MaybeFlush();
}

void MetricsCollector::OnTokenGaps(SimTime at, SimTime gap, int64_t count) {
  // Gaps are not tied to one request, so the warm-up cut is by time: a gap
  // counts if it ends at or after warm-up.
  if (at < options_.warmup) return;
  itl_.Add(gap, count);
}

void MetricsCollector::OnDecodeSteps(const DecodeStepRun& run) {
  // The steps ending before warm-up are left out, as OnTokenGaps would.
  int64_t lo = run.first, hi = run.count;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (run.End(mid) < options_.warmup) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  itl_.AddSteps([&run](int64_t i) { return run.End(i); }, lo, run.count, run.seqs, run.ascending);
}

void MetricsCollector::OnIteration(int replica, SimTime start, SimTime end, const BatchShape& s) {
  if (!trace_.is_open() || (trace_cut_ >= 0 && start >= trace_cut_)) return;
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
  o.Char(',');
  o.Raw(s.state);
  o.Char(',');
  if (s.usd_per_hour) o.Fixed(*s.usd_per_hour, 4);  // empty: unpriced
  o.Char('\n');
  timeseries_.MaybeFlush();
}

Summary MetricsCollector::Summarize(const RunFacts& facts) const {
  Summary s;
  s.identity = facts.identity;
  s.pools = facts.pools;
  for (const RunFacts::Pool& p : facts.pools) {
    s.fleet_replicas += p.replicas;
    s.fleet_gpus += static_cast<int64_t>(p.replicas) * p.gpus_per_replica;
  }
  s.arrived = arrived_;
  s.completed = completed_;
  s.rejected = rejected_;
  s.failed = failed_;
  s.unfinished = unfinished_;
  s.measured = measured_;
  s.single_token = single_token_;
  s.truncated = truncated_;
  s.ttft = ttft_.Describe();
  s.tpot = tpot_.Describe();
  s.e2e = e2e_.Describe();
  s.queue = queue_.Describe();
  s.itl = Describe(itl_);
  s.exact_percentiles = ttft_.exact();
  for (Distribution* d : {&s.ttft, &s.tpot, &s.e2e, &s.queue, &s.itl}) {
    for (std::optional<double>* v : {&d->mean, &d->p50, &d->p90, &d->p95, &d->p99, &d->max})
      if (*v) **v = RoundMs(**v);
  }
  auto undefined = [&](const char* what, const std::string& why) {
    s.warnings.push_back(std::string(what) + " undefined (null): " + why);
  };
  if (measured_ == 0) {
    undefined("latencies", arrived_ == 0 ? "no request arrived"
                                         : "no request arrived after warm-up (" +
                                               std::to_string(TimeToSeconds(options_.warmup)) + " s)");
  } else if (measured_completed_ == 0) {
    undefined("latencies", "none of the " + std::to_string(measured_) + " measured requests completed");
  } else if (s.tpot.count == 0) {
    undefined("TPOT", "every measured request produced a single token");
  }
  // The window runs from warm-up to the run's end: the last request to
  // leave, or duration_s when requests were cut off.
  const SimTime window = std::max<SimTime>(facts.end - options_.warmup, 0);
  s.window_s = TimeToSeconds(window);
  if (window > 0 && measured_ > 0) {
    s.requests_per_s = Round6(static_cast<double>(measured_completed_) / s.window_s);
    s.output_tokens_per_s = Round6(static_cast<double>(out_tokens_) / s.window_s);
    s.input_tokens_per_s = Round6(static_cast<double>(in_tokens_) / s.window_s);
  } else if (measured_ > 0) {
    undefined("throughput", options_.warmup > 0
                                ? "the measurement window is empty (the run ended at warm-up)"
                                : "the run took no simulated time (every request left the instant it arrived)");
  }
  s.ttft_slo_ms = options_.ttft_slo_ms;
  s.tpot_slo_ms = options_.tpot_slo_ms;
  s.has_slo = options_.ttft_slo_ms || options_.tpot_slo_ms;
  if (s.has_slo && measured_ > 0) {
    s.attainment = Round6(static_cast<double>(met_slo_) / static_cast<double>(measured_));
    if (window > 0) s.goodput_rps = Round6(static_cast<double>(met_slo_) / s.window_s);
  }
  if (facts.reliability) {
    s.reliability = facts.reliability;
    if (arrived_ > 0) s.availability_requests = Round6(static_cast<double>(completed_) / static_cast<double>(arrived_));
    s.measured_in_failures = in_fail_;
    s.measured_in_restarts = in_restart_;
    if (s.has_slo) {
      auto ratio = [](int64_t a, int64_t b) -> std::optional<double> {
        if (b <= 0) return std::nullopt;
        return Round6(static_cast<double>(a) / static_cast<double>(b));
      };
      s.attainment_in_failures = ratio(in_fail_met_, in_fail_);
      s.attainment_outside_failures = ratio(met_slo_ - in_fail_met_, measured_ - in_fail_);
      s.attainment_in_restarts = ratio(in_restart_met_, in_restart_);
    }
  }
  // Cost over the window: every GPU of every pool is paid for, busy or not.
  double usd_per_hour = 0;
  bool priced = true;
  for (const RunFacts::Pool& p : facts.pools) {
    const double gpus = static_cast<double>(p.replicas) * p.gpus_per_replica;
    s.gpu_hours += gpus * s.window_s / 3600.0;
    if (p.usd_per_gpu_hour) {
      usd_per_hour += gpus * *p.usd_per_gpu_hour;
    } else {
      priced = false;
      s.warnings.push_back("no price for pool \"" + p.name + "\": cost omitted");
    }
  }
  if (facts.gpu_ns) s.gpu_hours = static_cast<double>(*facts.gpu_ns / 3.6e12L);
  s.gpu_hours = Round6(s.gpu_hours);
  if (facts.busy_gpu_ns) s.busy_gpu_hours = Round6(static_cast<double>(*facts.busy_gpu_ns / 3.6e12L));
  if (facts.busy_gpu_ns && facts.gpu_ns && *facts.gpu_ns > 0)
    s.idle_share = Round6(static_cast<double>(1.0L - *facts.busy_gpu_ns / *facts.gpu_ns));
  for (const RunFacts::CostPart& p : facts.cost_parts) {
    Summary::CostPart c;
    c.pool = p.pool;
    c.pricing_class = p.pricing_class;
    c.gpu_hours = Round6(static_cast<double>(p.gpu_ns / 3.6e12L));
    c.busy_gpu_hours = Round6(static_cast<double>(p.busy_gpu_ns / 3.6e12L));
    if (p.usd_gpu_ns) c.usd = Round6(static_cast<double>(*p.usd_gpu_ns / 3.6e12L));
    s.cost_by_pool.push_back(std::move(c));
  }
  if (facts.transfers) {
    s.transfers = facts.transfers;
    s.transfers->bytes = Round6(s.transfers->bytes);
    s.transfers->latency_ms_p50 = Round6(s.transfers->latency_ms_p50);
    s.transfers->latency_ms_p99 = Round6(s.transfers->latency_ms_p99);
  }
  for (const auto& [name, f] : facts.link_busy_fraction) s.link_busy_fraction.emplace_back(name, Round6(f));
  if (facts.canary) {
    s.canary = facts.canary;
    for (CanaryStepReport& st : s.canary->steps) {
      st.start_s = Round6(st.start_s);
      st.end_s = Round6(st.end_s);
      for (CanaryStepReport::Side* side : {&st.canary, &st.baseline}) {
        side->error_rate = Round6(side->error_rate);
        if (side->ttft_p99_ms) side->ttft_p99_ms = Round6(*side->ttft_p99_ms);
        if (side->tpot_p99_ms) side->tpot_p99_ms = Round6(*side->tpot_p99_ms);
      }
    }
  }
  if (facts.autoscaling) {
    s.autoscaling = facts.autoscaling;
    s.autoscaling->replica_seconds = Round6(s.autoscaling->replica_seconds);
  }
  // A replica of a class with no price ran (a spot pool's fallback to an
  // unpriced on-demand): no cost.
  if (priced && facts.gpu_ns && !facts.usd_gpu_ns) {
    priced = false;
    s.warnings.push_back("cost undefined (null): a replica ran in a pricing class with no price");
  }
  if (priced && !std::isfinite(usd_per_hour)) {
    priced = false;
    s.warnings.push_back("cost undefined (null): the fleet's price per hour overflows");
  }
  if (priced) {
    // The integral of each replica's GPU time x its price, when the cluster
    // kept it; else the fleet's rate over the window.
    const double usd = facts.gpu_ns && facts.usd_gpu_ns ? static_cast<double>(*facts.usd_gpu_ns / 3.6e12L)
                                                        : usd_per_hour * s.window_s / 3600.0;
    // A scaled fleet's rate is its mean over the window; a fixed one's, the
    // rate of all its replicas.
    if (facts.autoscaling && s.window_s > 0) usd_per_hour = usd / (s.window_s / 3600.0);
    s.usd_per_hour = Round6(usd_per_hour);
    s.total_usd = Round6(usd);
    if (out_tokens_ > 0) s.usd_per_million_output_tokens = Round6(usd / static_cast<double>(out_tokens_) * 1e6);
    if (out_tokens_ + in_tokens_ > 0)
      s.usd_per_million_total_tokens = Round6(usd / static_cast<double>(out_tokens_ + in_tokens_) * 1e6);
    if (out_tokens_ == 0) undefined("cost per token", "no output token was produced in the window");
  }
  s.events = facts.events;
  s.simulated_s = TimeToSeconds(facts.end);
  if (last_arrival_ >= 0 && last_finish_ >= 0 && !facts.hit_duration)
    s.drain_s = TimeToSeconds(std::max<SimTime>(last_finish_ - last_arrival_, 0));
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

  s.overload = overload_.Judge();
  for (std::optional<double>* v : {&s.overload.completion_ratio, &s.overload.queue_p50_ms_q2,
                                   &s.overload.queue_p50_ms_q4})
    if (*v) **v = Round6(**v);
  s.overloaded = s.overload.overloaded;
  if (facts.hit_duration && unfinished_ > 0 && !s.overloaded) {
    s.warnings.push_back("the run stopped at duration_s with " + std::to_string(unfinished_) +
                         " requests unfinished");
  }
  if (arrived_ == 0) s.warnings.push_back("no request arrived");
  if (s.overloaded) s.warnings.push_back("overloaded: " + s.overload.reason);

  // Pools: GPU time over their pricing classes.
  for (const RunFacts::Pool& p : facts.pools) {
    Summary::PoolFigures f;
    f.name = p.name;
    f.replicas = p.replicas;
    long double gpu = 0, busy = 0;
    for (const RunFacts::CostPart& c : facts.cost_parts) {
      if (c.pool != p.name) continue;
      gpu += c.gpu_ns;
      busy += c.busy_gpu_ns;
    }
    f.gpu_hours = Round6(static_cast<double>(gpu / 3.6e12L));
    f.busy_gpu_hours = Round6(static_cast<double>(busy / 3.6e12L));
    if (gpu > 0) f.utilisation = Round6(static_cast<double>(busy / gpu));
    s.pool_figures.push_back(std::move(f));
  }
  // Routing: how evenly the replicas were kept busy.
  s.router = facts.router;
  if (!facts.replica_busy_fraction.empty()) {
    double mx = 0, sum = 0;
    for (double b : facts.replica_busy_fraction) {
      mx = std::max(mx, b);
      sum += b;
    }
    const double mean = sum / static_cast<double>(facts.replica_busy_fraction.size());
    s.busy_fraction_max = Round6(mx);
    s.busy_fraction_mean = Round6(mean);
    if (mean > 0) s.load_imbalance = Round6(mx / mean);
  }
  // Per-group figures.
  auto describe = [&](const std::string& name, const GroupStats& g) {
    GroupSummary out;
    out.name = name;
    out.arrived = g.arrived;
    out.completed = g.completed;
    out.rejected = g.rejected;
    out.failed = g.failed;
    out.unfinished = g.unfinished;
    out.measured = g.measured;
    for (auto [h, l] : {std::pair{&g.ttft, &out.ttft}, std::pair{&g.tpot, &out.tpot}, std::pair{&g.e2e, &out.e2e}}) {
      l->count = h->count();
      if (h->count() == 0) continue;
      l->mean = RoundMs(h->mean() * 1e-6);
      l->p50 = RoundMs(h->Quantile(0.50) * 1e-6);
      l->p90 = RoundMs(h->Quantile(0.90) * 1e-6);
      l->p99 = RoundMs(h->Quantile(0.99) * 1e-6);
    }
    if (s.has_slo && g.measured > 0) out.attainment = Round6(static_cast<double>(g.met) / static_cast<double>(g.measured));
    return out;
  };
  for (size_t i = 0; i < by_class_.size(); ++i) s.classes.push_back(describe(groups_.classes[i].second, by_class_[i]));
  for (size_t i = 0; i < by_tenant_.size(); ++i) s.tenants.push_back(describe(groups_.tenants[i], by_tenant_[i]));
  for (size_t i = 0; i < by_model_.size(); ++i) s.models.push_back(describe(groups_.models[i], by_model_[i]));
  for (size_t i = 0; i < by_region_.size(); ++i) s.regions.push_back(describe(groups_.regions[i], by_region_[i]));
  if (!degraded_.empty()) {
    s.has_degraded = true;
    for (size_t r = 1; r < degraded_.size(); ++r) {
      s.degraded += degraded_[r];
      s.degraded_by_reason.emplace_back(groups_.degrade_reasons[r], degraded_[r]);
    }
  }
  return s;
}

Status MetricsCollector::Close() {
  if (trace_.is_open()) trace_.out().Raw("\n]}\n");
  bool ok = requests_.Close();
  ok = timeseries_.Close() && ok;
  if (!options_.itl_csv.empty()) {
    BufferedFile itl;
    if (!itl.Open(options_.itl_csv))
      return Status::Invalid("cannot create \"" + options_.itl_csv + "\": " + std::strerror(errno));
    itl.out().Raw("low_ms,high_ms,count\n");
    itl_.ForEachBucket([&](int64_t lo, int64_t hi, int64_t n) {
      itl.out().Fixed(static_cast<double>(lo) / 1e6, 6);
      itl.out().Char(',');
      itl.out().Fixed(static_cast<double>(hi) / 1e6, 6);
      itl.out().Char(',');
      itl.out().Int(n);
      itl.out().Char('\n');
    });
    ok = itl.Close() && ok;
  }
  ok = trace_.Close() && ok;
  if (!ok) return Status::Invalid(std::string("writing outputs failed: ") + std::strerror(errno));
  return Status::Ok();
}

namespace {

void OptionalDouble(JsonWriter& w, const char* key, const std::optional<double>& v) {
  w.Key(key);
  if (v) {
    w.Double(*v);
  } else {
    w.Null();
  }
}

void WriteDistribution(JsonWriter& w, const char* name, const Distribution& d) {
  w.Key(name).BeginObject();
  w.Key("count").Int(d.count);
  OptionalDouble(w, "mean", d.mean);
  OptionalDouble(w, "p50", d.p50);
  OptionalDouble(w, "p90", d.p90);
  OptionalDouble(w, "p95", d.p95);
  OptionalDouble(w, "p99", d.p99);
  OptionalDouble(w, "max", d.max);
  w.EndObject();
}

}  // namespace

std::string SummaryToJson(const Summary& s) {
  JsonWriter w;
  w.BeginObject();
  w.Key("schema_version").Int(Summary::kSchemaVersion);
  w.Key("run").BeginObject();
  w.Key("scenario").String(s.identity.scenario);
  w.Key("scenario_sha256").String(s.identity.scenario_sha256);
  w.Key("inputs_sha256").String(s.identity.inputs_sha256);
  w.Key("seed").Int(static_cast<int64_t>(s.identity.seed));
  w.Key("fleetsim_version").String(s.identity.fleetsim_version);
  w.Key("overrides").BeginArray();
  for (const std::string& o : s.identity.overrides) w.String(o);
  w.EndArray();
  w.EndObject();
  w.Key("fleet").BeginObject();
  w.Key("pools").BeginArray();
  for (const RunFacts::Pool& p : s.pools) {
    w.BeginObject();
    w.Key("name").String(p.name);
    w.Key("model").String(p.model);
    w.Key("gpu").String(p.gpu);
    w.Key("replicas").Int(p.replicas);
    w.Key("tp").Int(p.tp);
    w.Key("pp").Int(p.pp);
    if (p.ep > 1) w.Key("ep").Int(p.ep);
    if (p.dp > 1) w.Key("dp").Int(p.dp);
    if (p.expert_load_skew != 1) w.Key("expert_load_skew").Double(p.expert_load_skew);
    if (p.redundant_experts > 0) w.Key("redundant_experts").Int(p.redundant_experts);
    if (!p.speculative.empty()) w.Key("speculative").String(p.speculative);
    w.Key("gpus").Int(static_cast<int64_t>(p.replicas) * p.gpus_per_replica);
    w.Key("scheduler").String(p.scheduler);
    w.Key("engine").String(p.engine);
    w.Key("async_scheduling").Bool(p.async_scheduling);
    OptionalDouble(w, "usd_per_gpu_hour", p.usd_per_gpu_hour);
    w.EndObject();
  }
  w.EndArray();
  w.Key("replicas").Int(s.fleet_replicas);
  w.Key("gpus").Int(s.fleet_gpus);
  w.EndObject();
  w.Key("requests").BeginObject();
  w.Key("arrived").Int(s.arrived);
  w.Key("completed").Int(s.completed);
  w.Key("rejected").Int(s.rejected);
  w.Key("failed").Int(s.failed);
  w.Key("unfinished").Int(s.unfinished);
  w.Key("measured").Int(s.measured);
  w.Key("single_token").Int(s.single_token);
  w.Key("truncated").Int(s.truncated);
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
  w.Key("percentiles").String(s.exact_percentiles ? "exact" : "log_histogram_0.4pct");
  w.EndObject();
  w.Key("throughput").BeginObject();
  w.Key("window_s").Double(s.window_s);
  OptionalDouble(w, "requests_per_s", s.requests_per_s);
  OptionalDouble(w, "output_tokens_per_s", s.output_tokens_per_s);
  OptionalDouble(w, "input_tokens_per_s", s.input_tokens_per_s);
  w.EndObject();
  if (s.has_slo) {
    w.Key("slo").BeginObject();
    OptionalDouble(w, "ttft_ms", s.ttft_slo_ms);
    OptionalDouble(w, "tpot_ms", s.tpot_slo_ms);
    OptionalDouble(w, "attainment", s.attainment);
    OptionalDouble(w, "goodput_rps", s.goodput_rps);
    if (s.reliability) {
      // Measured requests by when they arrived: while some replica was down
      // (from its failure until it was ready again), or not; and during a
      // rolling restart.
      OptionalDouble(w, "attainment_in_failure_windows", s.attainment_in_failures);
      OptionalDouble(w, "attainment_outside_failure_windows", s.attainment_outside_failures);
      w.Key("requests_in_failure_windows").Int(s.measured_in_failures);
      if (s.reliability->restarts > 0 || s.reliability->restart_s > 0) {
        OptionalDouble(w, "attainment_during_restarts", s.attainment_in_restarts);
        w.Key("requests_during_restarts").Int(s.measured_in_restarts);
      }
    }
    w.EndObject();
  }
  if (s.reliability) {
    const RunFacts::Reliability& r = *s.reliability;
    w.Key("failures").BeginObject();
    w.Key("events").Int(r.events);
    w.Key("replica_failures").Int(r.replica_failures);
    w.Key("by_cause").BeginObject();
    for (const auto& [cause, n] : r.by_cause) w.Key(cause).Int(n);
    w.EndObject();
    w.Key("requests_failed").Int(r.requests_failed);
    w.Key("requests_retried").Int(r.requests_retried);
    w.Key("retries").Int(r.retries);
    w.Key("partial_output_tokens").Int(r.partial_output_tokens);
    w.Key("detected").Int(r.detected);
    OptionalDouble(w, "detection_delay_s_mean", r.detection_delay_s_mean);
    w.Key("replica_downtime_s").Double(r.replica_downtime_s);
    w.EndObject();
    w.Key("availability").BeginObject();
    OptionalDouble(w, "requests", s.availability_requests);
    w.Key("capacity").Double(r.capacity);
    w.EndObject();
    if (r.restart_s > 0 || r.restarts > 0) {
      w.Key("restarts").BeginObject();
      w.Key("replicas_restarted").Int(r.restarts);
      w.Key("duration_s").Double(r.restart_s);
      w.Key("min_ready_replicas").Int(r.min_ready_during_restart);
      w.EndObject();
    }
  }
  if (s.prefix_caching) {
    w.Key("cache").BeginObject();
    w.Key("prefix_hit_rate").Double(s.prefix_hit_rate);
    w.Key("hit_tokens").Int(s.prefix_hit_tokens);
    w.Key("evicted_blocks").Int(s.prefix_evicted_blocks);
    w.EndObject();
  }
  w.Key("pools").BeginObject();
  for (const Summary::PoolFigures& p : s.pool_figures) {
    w.Key(p.name).BeginObject();
    w.Key("replicas").Int(p.replicas);
    w.Key("gpu_hours").Double(p.gpu_hours);
    w.Key("busy_gpu_hours").Double(p.busy_gpu_hours);
    OptionalDouble(w, "utilisation", p.utilisation);
    w.EndObject();
  }
  w.EndObject();
  w.Key("routing").BeginObject();
  w.Key("router").String(s.router);
  OptionalDouble(w, "load_imbalance", s.load_imbalance);
  OptionalDouble(w, "busy_fraction_max", s.busy_fraction_max);
  OptionalDouble(w, "busy_fraction_mean", s.busy_fraction_mean);
  w.EndObject();
  auto groups = [&](const char* key, const std::vector<GroupSummary>& gs) {
    if (gs.empty()) return;
    w.Key(key).BeginObject();
    for (const GroupSummary& g : gs) {
      w.Key(g.name).BeginObject();
      w.Key("requests").BeginObject();
      w.Key("arrived").Int(g.arrived);
      w.Key("completed").Int(g.completed);
      w.Key("rejected").Int(g.rejected);
      w.Key("failed").Int(g.failed);
      w.Key("unfinished").Int(g.unfinished);
      w.Key("measured").Int(g.measured);
      w.EndObject();
      w.Key("latency_ms").BeginObject();
      for (const auto& [name, l] : {std::pair<const char*, const GroupSummary::Latency*>{"ttft", &g.ttft},
                                    {"tpot", &g.tpot},
                                    {"e2e", &g.e2e}}) {
        w.Key(name).BeginObject();
        w.Key("count").Int(l->count);
        OptionalDouble(w, "mean", l->mean);
        OptionalDouble(w, "p50", l->p50);
        OptionalDouble(w, "p90", l->p90);
        OptionalDouble(w, "p99", l->p99);
        w.EndObject();
      }
      w.EndObject();
      OptionalDouble(w, "slo_attainment", g.attainment);
      w.EndObject();
    }
    w.EndObject();
  };
  groups("models", s.models);
  groups("classes", s.classes);
  groups("tenants", s.tenants);
  groups("regions", s.regions);
  if (s.has_degraded) {
    w.Key("degraded").BeginObject();
    w.Key("requests").Int(s.degraded);
    w.Key("by_reason").BeginObject();
    for (const auto& [reason, n] : s.degraded_by_reason) w.Key(reason).Int(n);
    w.EndObject();
    w.EndObject();
  }
  w.Key("cost").BeginObject();
  w.Key("gpu_hours").Double(s.gpu_hours);
  OptionalDouble(w, "busy_gpu_hours", s.busy_gpu_hours);
  OptionalDouble(w, "idle_share", s.idle_share);
  OptionalDouble(w, "usd_per_hour", s.usd_per_hour);
  OptionalDouble(w, "total_usd", s.total_usd);
  OptionalDouble(w, "usd_per_million_output_tokens", s.usd_per_million_output_tokens);
  OptionalDouble(w, "usd_per_million_total_tokens", s.usd_per_million_total_tokens);
  w.Key("by_pool").BeginArray();
  for (const Summary::CostPart& c : s.cost_by_pool) {
    w.BeginObject();
    w.Key("pool").String(c.pool);
    w.Key("pricing_class").String(c.pricing_class);
    w.Key("gpu_hours").Double(c.gpu_hours);
    w.Key("busy_gpu_hours").Double(c.busy_gpu_hours);
    OptionalDouble(w, "usd", c.usd);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  if (s.autoscaling) {
    const RunFacts::Autoscaling& a = *s.autoscaling;
    w.Key("autoscaling").BeginObject();
    w.Key("scale_ups").Int(a.scale_ups);
    w.Key("scale_downs").Int(a.scale_downs);
    w.Key("refused").Int(a.refused);
    w.Key("fallbacks").Int(a.fallbacks);
    w.Key("spot_reclaims").Int(a.spot_reclaims);
    w.Key("replicas_min").Int(a.replicas_min);
    w.Key("replicas_max").Int(a.replicas_max);
    w.Key("replica_seconds").Double(a.replica_seconds);
    w.EndObject();
  }
  if (s.transfers) {
    const RunFacts::Transfers& t = *s.transfers;
    w.Key("transfer").BeginObject();
    w.Key("count").Int(t.count);
    w.Key("bytes").Double(t.bytes);
    w.Key("latency_ms").BeginObject();
    w.Key("p50").Double(t.latency_ms_p50);
    w.Key("p99").Double(t.latency_ms_p99);
    w.EndObject();
    w.EndObject();
  }
  if (!s.link_busy_fraction.empty()) {
    w.Key("links").BeginObject();
    for (const auto& [name, f] : s.link_busy_fraction) {
      w.Key(name).BeginObject();
      w.Key("busy_fraction").Double(f);
      w.EndObject();
    }
    w.EndObject();
  }
  if (s.canary) {
    const CanaryReport& c = *s.canary;
    w.Key("canary").BeginObject();
    w.Key("pool").String(c.pool);
    w.Key("baseline").String(c.baseline);
    w.Key("outcome").String(c.outcome);
    w.Key("steps").BeginArray();
    for (const CanaryStepReport& st : c.steps) {
      w.BeginObject();
      w.Key("share").Double(st.share);
      w.Key("start_s").Double(st.start_s);
      w.Key("end_s").Double(st.end_s);
      for (const auto& [name, side] : {std::pair<const char*, const CanaryStepReport::Side*>{"canary", &st.canary},
                                       {"baseline", &st.baseline}}) {
        w.Key(name).BeginObject();
        w.Key("requests").Int(side->requests);
        w.Key("completed").Int(side->completed);
        w.Key("errors").Int(side->errors);
        w.Key("error_rate").Double(side->error_rate);
        OptionalDouble(w, "ttft_p99_ms", side->ttft_p99_ms);
        OptionalDouble(w, "tpot_p99_ms", side->tpot_p99_ms);
        w.EndObject();
      }
      w.Key("decision").String(st.decision);
      w.Key("reason").String(st.reason);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.Key("sim").BeginObject();
  w.Key("events").Int(static_cast<int64_t>(s.events));
  w.Key("simulated_s").Double(s.simulated_s);
  OptionalDouble(w, "drain_s", s.drain_s);
  w.Key("preemptions").Int(s.preemptions);
  w.Key("overloaded").Bool(s.overloaded);
  w.Key("overload").BeginObject();
  w.Key("judged").Bool(s.overload.judged);
  OptionalDouble(w, "completion_ratio", s.overload.completion_ratio);
  OptionalDouble(w, "queue_p50_ms_q2", s.overload.queue_p50_ms_q2);
  OptionalDouble(w, "queue_p50_ms_q4", s.overload.queue_p50_ms_q4);
  w.Key("reason").String(s.overload.reason);
  w.EndObject();
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
    if (d.count == 0) {
      std::snprintf(line, sizeof line, "  %-8s %11s %10s %10s %10s %10s\n", name, "-", "-", "-", "-", "-");
    } else {
      std::snprintf(line, sizeof line, "  %-8s %11.2f %10.2f %10.2f %10.2f %10.2f\n", name, *d.mean, *d.p50,
                    *d.p90, *d.p99, *d.max);
    }
    out += line;
  };
  row("TTFT", s.ttft);
  row("TPOT", s.tpot);
  row("ITL", s.itl);
  row("E2E", s.e2e);
  row("queue", s.queue);
  if (s.requests_per_s) {
    std::snprintf(line, sizeof line, "throughput  %.3f req/s  %.1f output tok/s  %.1f input tok/s  over %.3f s\n",
                  *s.requests_per_s, *s.output_tokens_per_s, *s.input_tokens_per_s, s.window_s);
  } else {
    std::snprintf(line, sizeof line, "throughput  - (undefined)  over %.3f s\n", s.window_s);
  }
  out += line;
 if (s.prefix_caching) {
    std::snprintf(line, sizeof line, "cache       prefix hit rate %.2f%%  %lld tokens  %lld blocks evicted\n",
                  s.prefix_hit_rate * 100, static_cast<long long>(s.prefix_hit_tokens),
                  static_cast<long long>(s.prefix_evicted_blocks));
    out += line;
  }
  if (s.has_slo && s.attainment) {
    std::snprintf(line, sizeof line, "SLO         attainment %.2f%%  goodput %.3f req/s\n", *s.attainment * 100,
                  s.goodput_rps.value_or(0.0));
    out += line;
  }
  if (s.reliability) {
    const RunFacts::Reliability& r = *s.reliability;
    std::snprintf(line, sizeof line,
                  "failures    %lld events  %lld replicas down  %lld requests failed  %lld retried  detection %.1f s "
                  "mean  downtime %.1f replica-s\n",
                  static_cast<long long>(r.events), static_cast<long long>(r.replica_failures),
                  static_cast<long long>(r.requests_failed), static_cast<long long>(r.requests_retried),
                  r.detection_delay_s_mean.value_or(0.0), r.replica_downtime_s);
    out += line;
    std::snprintf(line, sizeof line, "available   requests %.4f%%  capacity %.4f%%", s.availability_requests.value_or(1.0) * 100,
                  r.capacity * 100);
    out += line;
    if (s.attainment_in_failures) {
      std::snprintf(line, sizeof line, "  SLO attainment in failure windows %.2f%%, outside %.2f%%",
                    *s.attainment_in_failures * 100, s.attainment_outside_failures.value_or(0.0) * 100);
      out += line;
    }
    out += "\n";
  }
  if (s.total_usd) {
    std::snprintf(line, sizeof line, "cost        %.3f GPU-hours  $%.2f  $%.2f/h", s.gpu_hours, *s.total_usd,
                  *s.usd_per_hour);
    out += line;
    if (s.usd_per_million_output_tokens) {
      std::snprintf(line, sizeof line, "  $%.4f per 1M output tokens  $%.4f per 1M tokens",
                    *s.usd_per_million_output_tokens, *s.usd_per_million_total_tokens);
      out += line;
    }
    out += "\n";
  } else {
    std::snprintf(line, sizeof line, "cost        %.3f GPU-hours  (no price: cost omitted)\n", s.gpu_hours);
    out += line;
  }
  if (s.canary) {
    const CanaryReport& c = *s.canary;
    out += "canary      " + c.pool + " against " + c.baseline + ": " + c.outcome + "\n";
    auto ms = [](const std::optional<double>& v) {
      char b[32];
      if (!v) return std::string("-");
      std::snprintf(b, sizeof b, "%.1f", *v);
      return std::string(b);
    };
    for (const CanaryStepReport& st : c.steps) {
      std::snprintf(line, sizeof line,
                    "  %5.1f%%  %7.1f-%7.1f s  TTFT p99 %s vs %s ms  TPOT p99 %s vs %s ms  errors %.2f%% vs %.2f%%  "
                    "(%lld vs %lld requests)  %s%s%s\n",
                    st.share * 100, st.start_s, st.end_s, ms(st.canary.ttft_p99_ms).c_str(),
                    ms(st.baseline.ttft_p99_ms).c_str(), ms(st.canary.tpot_p99_ms).c_str(),
                    ms(st.baseline.tpot_p99_ms).c_str(), st.canary.error_rate * 100, st.baseline.error_rate * 100,
                    static_cast<long long>(st.canary.requests), static_cast<long long>(st.baseline.requests),
                    st.decision.c_str(), st.reason.empty() ? "" : ": ", st.reason.c_str());
      out += line;
    }
  }
  std::snprintf(line, sizeof line, "simulated   %.3f s  %llu events  %lld preemptions", s.simulated_s,
                static_cast<unsigned long long>(s.events), static_cast<long long>(s.preemptions));
  out += line;
  if (s.drain_s) {
    std::snprintf(line, sizeof line, "  drained %.3f s after the last arrival", *s.drain_s);
    out += line;
  }
  out += s.overloaded ? "  OVERLOADED\n" : "\n";
  for (const std::string& w : s.warnings) out += "warning: " + w + "\n";
  return out;
}

}  // namespace fleetsim

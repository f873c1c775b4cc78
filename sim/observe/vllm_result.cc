// vLLM's `bench serve --save-result` JSON (vllm/benchmarks/serve.py; the
// older benchmarks/benchmark_serving.py wrote the same keys). The result is
// flat: run settings (backend, model_id, request_rate, max_concurrency,
// burstiness), aggregates ({mean,median,std,pNN}_{ttft,tpot,itl,e2el}_ms,
// duration, completed, failed, throughputs) and, with --save-detailed only,
// parallel per-request arrays. `latencies` survives without --save-detailed
// but `start_times` does not, so that is what tells a detailed file.
#include <cstdio>
#include <limits>

#include "sim/observe/readers.h"

namespace fleetsim::observe_internal {
namespace {

Status ReadMode(const Where& w, const Json& doc, ObservedRun* run) {
  std::optional<int32_t> concurrency;
  if (const Json* c = Member(doc, "max_concurrency")) {
    int64_t n;
    FLEETSIM_RETURN_IF_ERROR(ReadInteger(w, *c, "max_concurrency", 1, std::numeric_limits<int32_t>::max(), &n));
    concurrency = static_cast<int32_t>(n);
  }
  run->max_concurrency = concurrency;
  if (const Json* ramp = Member(doc, "ramp_up_strategy")) {
    run->mode = LoadMode::kOpen;
    run->notes.push_back("request rate ramped (" + Shown(*ramp) + "), not constant");
    return Status::Ok();
  }
  const Json* rate = Member(doc, "request_rate");
  if (rate == nullptr) return Status::Ok();  // kUnknown
  if (rate->is_string()) {
    if (rate->get<std::string>() != "inf") {
      return w.Error("request_rate", "expected a number or \"inf\", got " + Shown(*rate));
    }
    // vLLM sends every request at once; with max_concurrency that is a
    // closed loop of that many clients.
    if (concurrency) {
      run->mode = LoadMode::kClosed;
    } else {
      run->mode = LoadMode::kOpen;
      run->request_rate_per_s = std::numeric_limits<double>::infinity();
    }
    return Status::Ok();
  }
  double r;
  FLEETSIM_RETURN_IF_ERROR(ReadNumber(w, *rate, "request_rate", &r));
  if (!(r > 0)) return w.Error("request_rate", "expected a rate > 0, got " + Shown(*rate));
  run->mode = LoadMode::kOpen;
  run->request_rate_per_s = r;
  std::optional<double> burstiness;
  FLEETSIM_RETURN_IF_ERROR(OptionalNumber(w, doc, "", "burstiness", &burstiness));
  if (burstiness && *burstiness != 1.0) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "gamma arrivals, burstiness %g (1 is Poisson)", *burstiness);
    run->notes.push_back(buf);
  }
  return Status::Ok();
}

Status ReadStats(const Where& w, const Json& doc, const char* metric, LatencyStats* s) {
  const std::string m = metric;
  FLEETSIM_RETURN_IF_ERROR(OptionalSeconds(w, doc, "", "mean_" + m + "_ms", 1e-3, &s->mean_s));
  FLEETSIM_RETURN_IF_ERROR(OptionalSeconds(w, doc, "", "median_" + m + "_ms", 1e-3, &s->median_s));
  if (!s->median_s) FLEETSIM_RETURN_IF_ERROR(OptionalSeconds(w, doc, "", "p50_" + m + "_ms", 1e-3, &s->median_s));
  FLEETSIM_RETURN_IF_ERROR(OptionalSeconds(w, doc, "", "p90_" + m + "_ms", 1e-3, &s->p90_s));
  return OptionalSeconds(w, doc, "", "p99_" + m + "_ms", 1e-3, &s->p99_s);
}

Status ReadAggregates(const Where& w, const Json& doc, ObservedAggregates* a) {
  FLEETSIM_RETURN_IF_ERROR(ReadStats(w, doc, "ttft", &a->ttft));
  FLEETSIM_RETURN_IF_ERROR(ReadStats(w, doc, "tpot", &a->tpot));
  FLEETSIM_RETURN_IF_ERROR(ReadStats(w, doc, "itl", &a->itl));
  FLEETSIM_RETURN_IF_ERROR(ReadStats(w, doc, "e2el", &a->e2e));
  FLEETSIM_RETURN_IF_ERROR(OptionalSeconds(w, doc, "", "duration", 1, &a->duration_s));
  FLEETSIM_RETURN_IF_ERROR(OptionalNumber(w, doc, "", "request_throughput", &a->request_throughput_per_s));
  FLEETSIM_RETURN_IF_ERROR(OptionalNumber(w, doc, "", "output_throughput", &a->output_throughput_tokens_per_s));
  for (auto [key, out] : {std::pair{"completed", &a->completed}, std::pair{"failed", &a->failed}}) {
    if (const Json* v = Member(doc, key)) {
      int64_t n;
      FLEETSIM_RETURN_IF_ERROR(ReadInteger(w, *v, key, 0, std::numeric_limits<int64_t>::max(), &n));
      *out = n;
    }
  }
  return Status::Ok();
}

// The per-request array `key`, which must have `n` entries.
Status Parallel(const Where& w, const Json& doc, const char* key, size_t n, const Json** out) {
  FLEETSIM_RETURN_IF_ERROR(Required(w, doc, "", key, out));
  FLEETSIM_RETURN_IF_ERROR(ExpectArray(w, **out, key));
  if ((*out)->size() != n) {
    return w.Error(key, "has " + std::to_string((*out)->size()) + " entries but input_lens has " +
                            std::to_string(n) + " (the per-request arrays are parallel)");
  }
  return Status::Ok();
}

Status ReadRequests(const Where& w, const Json& doc, ObservedRun* run) {
  const Json* input_lens;
  FLEETSIM_RETURN_IF_ERROR(Required(w, doc, "", "input_lens", &input_lens));
  FLEETSIM_RETURN_IF_ERROR(ExpectArray(w, *input_lens, "input_lens"));
  const size_t n = input_lens->size();
  const Json *output_lens, *ttfts, *itls, *starts;
  FLEETSIM_RETURN_IF_ERROR(Parallel(w, doc, "output_lens", n, &output_lens));
  FLEETSIM_RETURN_IF_ERROR(Parallel(w, doc, "ttfts", n, &ttfts));
  FLEETSIM_RETURN_IF_ERROR(Parallel(w, doc, "itls", n, &itls));
  FLEETSIM_RETURN_IF_ERROR(Parallel(w, doc, "start_times", n, &starts));
  const Json* latencies = nullptr;
  const Json* errors = nullptr;
  if (Member(doc, "latencies")) FLEETSIM_RETURN_IF_ERROR(Parallel(w, doc, "latencies", n, &latencies));
  if (Member(doc, "errors")) FLEETSIM_RETURN_IF_ERROR(Parallel(w, doc, "errors", n, &errors));
  if (errors == nullptr) run->notes.push_back("no errors array: a request with output_lens 0 counts as failed");

  run->requests.resize(n);
  for (size_t i = 0; i < n; ++i) {
    ObservedRequest& r = run->requests[i];
    FLEETSIM_RETURN_IF_ERROR(ReadSeconds(w, (*starts)[i], Index("start_times", i), 1, &r.start_s));
    int32_t out_len;
    FLEETSIM_RETURN_IF_ERROR(ReadTokens(w, (*output_lens)[i], Index("output_lens", i), 0, &out_len));
    if (errors != nullptr) {
      const Json& e = (*errors)[i];
      if (!e.is_string() && !e.is_null()) {
        return w.Error(Index("errors", i), "expected a string (empty when the request succeeded), got " + Shown(e));
      }
      r.ok = e.is_null() || e.get_ref<const std::string&>().empty();
    } else {
      r.ok = out_len > 0;
    }
    // A failed request keeps the prompt it was sent with; vLLM zeroes its
    // output length and times.
    FLEETSIM_RETURN_IF_ERROR(ReadTokens(w, (*input_lens)[i], Index("input_lens", i), r.ok ? 1 : 0, &r.input_tokens));
    if (!r.ok) continue;
    if (out_len < 1) {
      return w.Error(Index("output_lens", i), "expected a positive integer for a successful request, got 0");
    }
    r.output_tokens = out_len;
    double ttft;
    FLEETSIM_RETURN_IF_ERROR(ReadSeconds(w, (*ttfts)[i], Index("ttfts", i), 1, &ttft));
    r.ttft_s = ttft;
    const Json& gaps = (*itls)[i];
    const std::string gaps_path = Index("itls", i);
    FLEETSIM_RETURN_IF_ERROR(ExpectArray(w, gaps, gaps_path));
    r.itl_s.resize(gaps.size());
    double sum = 0;
    for (size_t k = 0; k < gaps.size(); ++k) {
      FLEETSIM_RETURN_IF_ERROR(ReadSeconds(w, gaps[k], Index(gaps_path, k), 1, &r.itl_s[k]));
      sum += r.itl_s[k];
    }
    double e2e = ttft + sum;  // what vLLM measures as latency
    if (latencies != nullptr) {
      FLEETSIM_RETURN_IF_ERROR(ReadSeconds(w, (*latencies)[i], Index("latencies", i), 1, &e2e));
      if (!TtftWithinE2e(ttft, e2e)) {
        return w.Error(Index("latencies", i), "shorter than ttfts[" + std::to_string(i) + "] (" +
                                                  Shown((*latencies)[i]) + " < " + Shown((*ttfts)[i]) + ")");
      }
    }
    r.e2e_s = e2e;
  }
  return Status::Ok();
}

}  // namespace

Status ReadVllmResult(const ReadContext& ctx, const Where& w, const Json& doc, ObservedRun* run) {
  FLEETSIM_RETURN_IF_ERROR(ExpectObject(w, doc, ""));
  run->format = ObservedFormat::kVllm;
  run->tool = "vllm bench serve";
  FLEETSIM_RETURN_IF_ERROR(OptionalString(w, doc, "", "model_id", &run->model));
  FLEETSIM_RETURN_IF_ERROR(OptionalString(w, doc, "", "backend", &run->backend));
  if (run->backend.empty()) FLEETSIM_RETURN_IF_ERROR(OptionalString(w, doc, "", "endpoint_type", &run->backend));
  FLEETSIM_RETURN_IF_ERROR(ReadMode(w, doc, run));
  FLEETSIM_RETURN_IF_ERROR(ReadAggregates(w, doc, &run->file_aggregates));

  if (Member(doc, "start_times") != nullptr) return ReadRequests(w, doc, run);
  if (Member(doc, "ttfts") != nullptr) {
    return WithoutPerRequestTiming(ctx, "per-request ttfts but no start_times (written by a vLLM that did not save them)",
                                   "rerun a current vllm bench serve with --save-result --save-detailed", run);
  }
  return WithoutPerRequestTiming(ctx, "no per-request timing (saved without --save-detailed)",
                                 "rerun vllm bench serve with --save-result --save-detailed", run);
}

}  // namespace fleetsim::observe_internal

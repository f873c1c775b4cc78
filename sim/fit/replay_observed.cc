#include "sim/fit/replay_observed.h"

#include <cmath>
#include <utility>

#include "sim/engine/time.h"
#include "sim/observe/observed_summary.h"

namespace fleetsim {

Status ReplayFromObserved(const ObservedRun& run, ReplayRun* out) {
  const std::string name = run.source_file + (run.run_label.empty() ? "" : " (" + run.run_label + ")");
  if (!run.per_request_timing || run.requests.empty())
    return Status::Invalid(name + ": no per-request timing to replay (read for its aggregates only); fit needs "
                                  "every request's send time and lengths");
  if (!run.input_tokens_recorded)
    return Status::Invalid(name + ": the file does not record prompt lengths (the server sent no usage); "
                                  "rerun the benchmark against a server that reports usage");
  ReplayRun r;
  r.name = name;
  if (run.mode == LoadMode::kClosed) {
    if (!run.max_concurrency || *run.max_concurrency < 1)
      return Status::Invalid(name + ": a closed-loop run without its concurrency");
    r.concurrency = *run.max_concurrency;
  }
  // Requests that failed produced nothing to replay; the rest keep their
  // order (sorted by send time) and are replayed open-loop at their send
  // times unless the clients were closed-loop.
  for (const ObservedRequest& q : run.requests) {
    if (!q.ok || q.output_tokens <= 0) continue;
    Request req;
    req.arrival = r.concurrency ? 0 : SecondsToTime(q.start_s);
    req.prompt_tokens = std::max<int32_t>(1, q.input_tokens);
    req.output_tokens = q.output_tokens;
    r.requests.push_back(req);
    r.ttft_ms.push_back(q.ttft_s ? *q.ttft_s * 1e3 : NAN);
    r.e2e_ms.push_back(q.e2e_s ? *q.e2e_s * 1e3 : NAN);
  }
  if (r.requests.empty()) return Status::Invalid(name + ": no completed request to replay");
  if (!r.requests.empty() && !r.concurrency) {
    const SimTime first = r.requests.front().arrival;
    for (Request& q : r.requests) q.arrival -= first;
  }
  const ObservedStats st = ComputeObservedStats(run);
  auto ms = [](const std::optional<double>& s) -> std::optional<double> {
    if (!s) return std::nullopt;
    return *s * 1e3;
  };
  r.observed.values[0] = ms(st.ttft.median_s);
  r.observed.values[1] = ms(st.ttft.p90_s);
  r.observed.values[2] = ms(st.tpot.median_s);
  r.observed.values[3] = ms(st.tpot.p90_s);
  r.observed.values[4] = ms(st.itl.median_s);
  r.observed.values[5] = ms(st.itl.p90_s);
  r.observed.values[6] = st.output_throughput_tokens_per_s;
  // The means and end-to-end figures (kFitMetrics 7 to 11) stay unset: the
  // per-request TTFT and end-to-end blocks already carry them, and more
  // figures per run would dilute those blocks, which pin the terms that
  // depend on a request's own length.

  *out = std::move(r);
  return Status::Ok();
}

}  // namespace fleetsim

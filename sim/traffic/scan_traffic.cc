#include "sim/traffic/scan_traffic.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "sim/traffic/trace_window.h"

namespace fleetsim {
namespace {

// Passes a stream through unchanged and keeps the figures of what passed.
class Tap final : public RequestSource {
 public:
  explicit Tap(std::unique_ptr<RequestSource> inner) : inner_(std::move(inner)) {}
  bool Next(Request* out) override {
    if (!inner_->Next(out)) return false;
    ++count_;
    last_ = out->arrival;
    return true;
  }
  const Status& status() const override { return inner_->status(); }
  int64_t skipped_rows() const override { return inner_->skipped_rows(); }
  int64_t count() const { return count_; }
  SimTime last() const { return last_; }

 private:
  std::unique_ptr<RequestSource> inner_;
  int64_t count_ = 0;
  SimTime last_ = 0;
};

double Rate(int64_t n, double span_s) { return span_s > 0 ? static_cast<double>(n) / span_s : 0; }

// Drains `src` into the run-stream half of *out.
void Drain(RequestSource& src, TrafficStats* out) {
  Request r;
  SimTime first = 0, last = 0;
  double prompt = 0, output = 0;
  int64_t n = 0;
  std::vector<int64_t> windows;  // arrivals per 10 minutes of simulated time
  constexpr SimTime kWindow = 600 * kSecond;
  while (src.Next(&r)) {
    if (n == 0) first = r.arrival;
    last = r.arrival;
    const size_t w = static_cast<size_t>(std::max<SimTime>(0, r.arrival) / kWindow);
    if (w < (size_t{1} << 24)) {
      if (windows.size() <= w) windows.resize(w + 1, 0);
      ++windows[w];
    }
    prompt += r.prompt_tokens;
    output += r.output_tokens;
    ++n;
  }
  out->requests = n;
  if (n == 0) return;
  out->first_arrival_s = TimeToSeconds(first);
  out->last_arrival_s = TimeToSeconds(last);
  out->span_s = TimeToSeconds(last - first);
  out->rate_per_s = Rate(n, out->span_s);
  out->mean_prompt_tokens = prompt / static_cast<double>(n);
  out->mean_output_tokens = output / static_cast<double>(n);
  for (size_t w = 0; w < windows.size(); ++w) {
    double& peak = out->peak_rate_by_hour[(w / 6) % 24];
    peak = std::max(peak, static_cast<double>(windows[w]) / 600.0);
  }
}

}  // namespace

Status ScanTraffic(const TrafficSpec& spec, Rng rng, TrafficStats* out) {
  *out = TrafficStats();
  if (spec.kind == TrafficSpec::Kind::kGenerator) {
    std::unique_ptr<RequestSource> src;
    FLEETSIM_RETURN_IF_ERROR(MakeRequestSource(spec, rng, &src));
    Drain(*src, out);
    FLEETSIM_RETURN_IF_ERROR(src->status());
    out->trace_rate_per_s = out->rate_per_s;
    out->trace_requests = out->requests;
    out->trace_span_s = out->last_arrival_s;
    out->trace_mean_rate_per_s = Rate(out->trace_requests, out->trace_span_s);
    return Status::Ok();
  }
  std::unique_ptr<RequestSource> reader;
  FLEETSIM_RETURN_IF_ERROR(OpenTraceReader(spec, rng, &reader));
  auto tap_owner = std::make_unique<Tap>(std::move(reader));
  Tap* tap = tap_owner.get();
  TraceWindow window(std::move(tap_owner), TraceWindowOptionsFor(spec));
  Drain(window, out);
  FLEETSIM_RETURN_IF_ERROR(window.status());
  out->trace_rate_per_s = out->rate_per_s / spec.rate_scale;
  // The window stops reading at its end; read the rest of the trace.
  Request r;
  while (tap->Next(&r)) {
  }
  FLEETSIM_RETURN_IF_ERROR(tap->status());
  out->trace_requests = tap->count();
  out->trace_span_s = TimeToSeconds(tap->last());
  out->trace_mean_rate_per_s = Rate(out->trace_requests, out->trace_span_s);
  out->skipped_rows = tap->skipped_rows();
  return Status::Ok();
}

}  // namespace fleetsim

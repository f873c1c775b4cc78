// MakeRequestSource: validates a TrafficSpec and assembles the stream, a trace
// reader wrapped in a TraceWindow, or a GeneratorSource.
#include "sim/traffic/traffic_spec.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "base/file.h"
#include "sim/traffic/azure_trace.h"
#include "sim/traffic/burstgpt_trace.h"
#include "sim/traffic/csv_trace.h"
#include "sim/traffic/generator_source.h"
#include "sim/traffic/mooncake_trace.h"
#include "sim/traffic/servegen_trace.h"
#include "sim/traffic/splitwise_trace.h"
#include "sim/traffic/text_fields.h"
#include "sim/traffic/trace_window.h"

namespace fleetsim {
namespace {

// Seconds to SimTime for limits; kTimeNever at or beyond the range (covers
// +infinity, the "no limit" default).
SimTime LimitToTime(double s) { return s < 9.2e9 ? SecondsToTime(s) : kTimeNever; }

Status ValidateTraceSpec(const TrafficSpec& spec) {
  if (spec.path.empty()) return Status::Invalid("traffic.path: expected a trace file name");
  if (!std::isfinite(spec.start_s) || spec.start_s < 0) {
    return Status::Invalid("traffic.start_s: expected a finite number >= 0, got " +
                           FormatNumber(spec.start_s));
  }
  if (std::isnan(spec.end_s) || spec.end_s < spec.start_s) {
    return Status::Invalid("traffic.end_s: expected a number >= start_s (" +
                           FormatNumber(spec.start_s) + "), got " + FormatNumber(spec.end_s));
  }
  if (!(spec.rate_scale > 0) || !std::isfinite(spec.rate_scale)) {
    return Status::Invalid("traffic.rate_scale: expected a positive number, got " +
                           FormatNumber(spec.rate_scale));
  }
  if (spec.max_requests < 0) {
    return Status::Invalid("traffic.max_requests: expected >= 0, got " +
                           std::to_string(spec.max_requests));
  }
  if (std::isnan(spec.max_arrival_s) || spec.max_arrival_s < 0) {
    return Status::Invalid("traffic.max_arrival_s: expected >= 0, got " +
                           FormatNumber(spec.max_arrival_s));
  }
  return Status::Ok();
}

Status OpenTraceReaderChecked(const TrafficSpec& spec, Rng rng, std::unique_ptr<RequestSource>* out) {
  switch (spec.format) {
    case TraceFormat::kAzure:
      FLEETSIM_RETURN_IF_ERROR(AzureTraceReader::Open(spec.path, out));
      break;
    case TraceFormat::kMooncake:
      FLEETSIM_RETURN_IF_ERROR(MooncakeTraceReader::Open(spec.path, out));
      break;
    case TraceFormat::kCsv:
      FLEETSIM_RETURN_IF_ERROR(CsvTraceReader::Open(spec.path, out));
      break;
    case TraceFormat::kBurstGpt:
      FLEETSIM_RETURN_IF_ERROR(BurstGptTraceReader::Open(spec.path, out));
      break;
    case TraceFormat::kSplitwise:
      FLEETSIM_RETURN_IF_ERROR(SplitwiseTraceReader::Open(spec.path, out));
      break;
    case TraceFormat::kServeGen:
      FLEETSIM_RETURN_IF_ERROR(ServeGenTraceSource::Open(spec, rng, out));
      break;
  }
  return Status::Ok();
}

// kList: the given requests in order, ids renumbered, arrivals divided by
// rate_scale (exactly 1 leaves them untouched), within the limits.
class ListSource final : public RequestSource {
 public:
  ListSource(std::shared_ptr<const std::vector<Request>> requests, double rate_scale, SimTime max_arrival,
             int64_t max_requests)
      : requests_(std::move(requests)), rate_scale_(rate_scale), max_arrival_(max_arrival),
        max_requests_(max_requests) {}
  bool Next(Request* out) override {
    if (next_ >= requests_->size() || static_cast<int64_t>(next_) >= max_requests_) return false;
    const Request& r = (*requests_)[next_];
    if (r.arrival < last_in_ || r.prompt_tokens <= 0 || r.output_tokens <= 0) {
      status_ = Status::Invalid("traffic: request " + std::to_string(next_) +
                                " arrives before the one ahead of it or has no tokens");
      return false;
    }
    const double scaled = static_cast<double>(r.arrival) / rate_scale_;
    if (rate_scale_ != 1.0 && !(scaled < 9.2e18)) {
      status_ = Status::Invalid("traffic: request " + std::to_string(next_) + " arrives beyond 292 years once its "
                                "arrival is divided by rate_scale " + std::to_string(rate_scale_));
      return false;
    }
    const SimTime arrival = rate_scale_ == 1.0 ? r.arrival : static_cast<SimTime>(std::llround(scaled));
    if (arrival >= max_arrival_) return false;
    last_in_ = r.arrival;
    *out = r;
    out->arrival = arrival;
    out->id = next_++;
    return true;
  }
  const Status& status() const override { return status_; }

 private:
  std::shared_ptr<const std::vector<Request>> requests_;
  double rate_scale_;
  SimTime max_arrival_;
  int64_t max_requests_;
  size_t next_ = 0;
  SimTime last_in_ = 0;
  Status status_;
};

}  // namespace

Status OpenTraceReader(const TrafficSpec& spec, Rng rng, std::unique_ptr<RequestSource>* out) {
  FLEETSIM_RETURN_IF_ERROR(ValidateTraceSpec(spec));
  return OpenTraceReaderChecked(spec, rng, out);
}

TraceWindowOptions TraceWindowOptionsFor(const TrafficSpec& spec) {
  TraceWindowOptions w;
  w.start = LimitToTime(spec.start_s);
  w.end = LimitToTime(spec.end_s);
  if (w.start > w.end) w.start = w.end;  // start_s huge: an empty window
  w.rate_scale = spec.rate_scale;
  w.max_requests = spec.max_requests;
  w.max_arrival = LimitToTime(spec.max_arrival_s);
  return w;
}

Status MakeRequestSource(const TrafficSpec& spec, Rng rng, std::unique_ptr<RequestSource>* out) {
  switch (spec.kind) {
    case TrafficSpec::Kind::kTrace: {
      std::unique_ptr<RequestSource> reader;
      FLEETSIM_RETURN_IF_ERROR(OpenTraceReader(spec, rng, &reader));
      *out = std::make_unique<TraceWindow>(std::move(reader), TraceWindowOptionsFor(spec));
      return Status::Ok();
    }
    case TrafficSpec::Kind::kGenerator:
      return GeneratorSource::Make(spec, rng, out);
    case TrafficSpec::Kind::kList: {
      if (!spec.requests) return Status::Invalid("traffic: no requests given");
      if (!(spec.rate_scale > 0) || !std::isfinite(spec.rate_scale))
        return Status::Invalid("traffic: rate_scale must be a positive number");
      *out = std::make_unique<ListSource>(spec.requests, spec.rate_scale, LimitToTime(spec.max_arrival_s),
                                          spec.max_requests);
      return Status::Ok();
    }
  }
  return Status::Invalid("traffic: unknown kind");
}

Status CheckTrafficInputs(const TrafficSpec& spec) {
  if (spec.kind == TrafficSpec::Kind::kTrace) {
    if (spec.format == TraceFormat::kServeGen) {
      FLEETSIM_RETURN_IF_ERROR(ServeGenTraceSource::CheckInputs(spec));
    } else {
      FLEETSIM_RETURN_IF_ERROR(CheckRegularFile(spec.path, "trace").WithPrefix("traffic.trace.path: "));
    }
  }
  if (!spec.lengths_csv.empty()) {
    const char* key = spec.kind == TrafficSpec::Kind::kTrace ? "traffic.trace.lengths_csv: "
                                                             : "traffic.generator.lengths_csv: ";
    FLEETSIM_RETURN_IF_ERROR(CheckRegularFile(spec.lengths_csv, "length CSV").WithPrefix(key));
  }
  return Status::Ok();
}

TrafficMix::TrafficMix(std::vector<TrafficSpec::MixEntry> mix, Rng rng)
    : mix_(std::move(mix)), rng_(rng), salt_(rng_.NextU64()) {
  double sum = 0;
  for (const TrafficSpec::MixEntry& m : mix_) cumulative_.push_back(sum += m.weight);
}

void TrafficMix::Apply(Request* req) {
  if (mix_.empty()) return;
  double u;
  if (req->session_id >= 0) {
    // A session's turns draw the same entry: a hash of its id.
    uint64_t x = static_cast<uint64_t>(req->session_id) ^ salt_;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    x ^= x >> 31;
    u = static_cast<double>(x >> 11) * 0x1.0p-53;
  } else {
    u = rng_.Uniform();
  }
  const double at = u * cumulative_.back();
  size_t i = static_cast<size_t>(std::upper_bound(cumulative_.begin(), cumulative_.end(), at) - cumulative_.begin());
  if (i >= mix_.size()) i = mix_.size() - 1;
  const TrafficSpec::MixEntry& m = mix_[i];
  if (req->tenant.empty()) req->tenant = m.tenant;
  if (req->model.empty()) req->model = m.model;
  if (req->location.empty()) req->location = m.location;
  if (req->priority == 0 && m.priority) req->priority = *m.priority;
}

}  // namespace fleetsim

#include "sim/traffic/generator_source.h"

#include <cmath>
#include <limits>
#include <utility>

#include "sim/traffic/text_fields.h"

namespace fleetsim {
namespace {

// A fixed length that Validate accepts; stands in for the samplers when a
// length table supplies the lengths instead.
LengthSpec Placeholder() {
  LengthSpec s;
  s.kind = LengthSpec::Kind::kFixed;
  s.value = 1;
  return s;
}

// max_arrival_s as SimTime; kTimeNever when it is beyond the range.
SimTime ArrivalLimit(double s) {
  return s < 9.2e9 ? SecondsToTime(s) : kTimeNever;
}

}  // namespace

Status GeneratorSource::Make(const TrafficSpec& spec, Rng rng,
                             std::unique_ptr<RequestSource>* out) {
  FLEETSIM_RETURN_IF_ERROR(ArrivalTimes::Validate(spec.arrival, spec.rate_per_s, spec.cv, "traffic"));
  std::unique_ptr<LengthTable> table;
  if (!spec.lengths_csv.empty()) {
    FLEETSIM_RETURN_IF_ERROR(LengthTable::Load(spec.lengths_csv, &table));
  } else {
    FLEETSIM_RETURN_IF_ERROR(LengthSampler::Validate(spec.prompt, "traffic.prompt"));
    FLEETSIM_RETURN_IF_ERROR(LengthSampler::Validate(spec.output, "traffic.output"));
  }
  if (spec.max_requests < 0) {
    return Status::Invalid("traffic.max_requests: expected >= 0, got " +
                           std::to_string(spec.max_requests));
  }
  if (std::isnan(spec.max_arrival_s) || spec.max_arrival_s < 0) {
    return Status::Invalid("traffic.max_arrival_s: expected >= 0, got " +
                           FormatNumber(spec.max_arrival_s));
  }
  if (spec.max_requests == std::numeric_limits<int64_t>::max() &&
      !std::isfinite(spec.max_arrival_s)) {
    return Status::Invalid(
        "traffic: a generator needs max_requests or max_arrival_s, or it never ends");
  }
  // Two sub-streams, drawn in a fixed order from the given one.
  Rng gaps(rng.NextU64());
  Rng lengths(rng.NextU64());
  out->reset(new GeneratorSource(spec, gaps, lengths, std::move(table)));
  return Status::Ok();
}

GeneratorSource::GeneratorSource(const TrafficSpec& spec, Rng gaps, Rng lengths,
                                 std::unique_ptr<const LengthTable> table)
    : arrivals_(spec.arrival, spec.rate_per_s, spec.cv, gaps),
      length_rng_(lengths),
      prompt_(table ? Placeholder() : spec.prompt),
      output_(table ? Placeholder() : spec.output),
      table_(std::move(table)),
      model_(spec.model),
      max_requests_(spec.max_requests),
      max_arrival_(ArrivalLimit(spec.max_arrival_s)) {}

bool GeneratorSource::Next(Request* out) {
  if (done_) return false;
  if (emitted_ >= max_requests_) {
    done_ = true;
    return false;
  }
  const SimTime at = arrivals_.Next();
  if (at >= max_arrival_ || at == kTimeNever) {
    done_ = true;
    return false;
  }
  out->id = static_cast<uint64_t>(emitted_++);
  out->arrival = at;
  if (table_) {
    const LengthTable::Row& r = table_->Sample(length_rng_);
    out->prompt_tokens = r.prompt_tokens;
    out->output_tokens = r.output_tokens;
  } else {
    out->prompt_tokens = prompt_.Sample(length_rng_);
    out->output_tokens = output_.Sample(length_rng_);
  }
  out->priority = 0;
  out->session_id = -1;
  if (model_.empty()) {
    out->model.clear();
  } else {
    out->model = model_;
  }
  out->prefix_blocks.clear();
  out->prefix_block_tokens = 0;
  return true;
}

}  // namespace fleetsim

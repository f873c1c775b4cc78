#include "sim/traffic/length_sampler.h"

#include <cmath>
#include <string>

#include "sim/traffic/text_fields.h"

namespace fleetsim {

Status LengthSampler::Validate(const LengthSpec& spec, std::string_view where) {
  const std::string w(where);
  switch (spec.kind) {
    case LengthSpec::Kind::kFixed:
      if (spec.value < 1) {
        return Status::Invalid(w + ".value: expected a positive token count, got " +
                               std::to_string(spec.value));
      }
      return Status::Ok();
    case LengthSpec::Kind::kLogNormal:
      if (!(spec.median > 0) || !std::isfinite(spec.median)) {
        return Status::Invalid(w + ".median: expected a positive number, got " +
                               FormatNumber(spec.median));
      }
      if (!(spec.sigma >= 0) || !std::isfinite(spec.sigma)) {
        return Status::Invalid(w + ".sigma: expected a non-negative number, got " +
                               FormatNumber(spec.sigma));
      }
      break;
    case LengthSpec::Kind::kUniform:
      break;
  }
  if (spec.min < 1) {
    return Status::Invalid(w + ".min: expected a positive token count, got " +
                           std::to_string(spec.min));
  }
  if (spec.max < spec.min) {
    return Status::Invalid(w + ".max: expected at least min (" + std::to_string(spec.min) +
                           "), got " + std::to_string(spec.max));
  }
  return Status::Ok();
}

LengthSampler::LengthSampler(const LengthSpec& spec) : spec_(spec) {
  FLEETSIM_CHECK(Validate(spec, "").ok());
  if (spec_.kind == LengthSpec::Kind::kLogNormal) mu_ = std::log(spec_.median);
}

int32_t LengthSampler::Sample(Rng& rng) const {
  switch (spec_.kind) {
    case LengthSpec::Kind::kFixed:
      return spec_.value;
    case LengthSpec::Kind::kLogNormal: {
      double x = rng.LogNormal(mu_, spec_.sigma);
      const double lo = spec_.min;
      const double hi = spec_.max;
      if (!(x >= lo)) x = lo;  // also catches NaN
      if (x > hi) x = hi;
      return static_cast<int32_t>(std::llround(x));
    }
    case LengthSpec::Kind::kUniform: {
      const uint64_t span = static_cast<uint64_t>(spec_.max) - static_cast<uint64_t>(spec_.min) + 1;
      return spec_.min + static_cast<int32_t>(rng.Below(span));
    }
  }
  FLEETSIM_CHECK(false);
  return 0;
}

}  // namespace fleetsim

#include "sim/traffic/arrival_times.h"

#include <cmath>
#include <string>

#include "sim/traffic/text_fields.h"

namespace fleetsim {
namespace {

// Largest double that safely converts to SimTime.
constexpr double kMaxNs = 9.2e18;

}  // namespace

Status ArrivalTimes::Validate(ArrivalProcess process, double rate_per_s, double cv,
                              std::string_view where) {
  const std::string w(where);
  if (!(rate_per_s > 0) || !std::isfinite(rate_per_s)) {
    return Status::Invalid(w + ".rate_per_s: expected a positive number, got " + FormatNumber(rate_per_s));
  }
  if (process == ArrivalProcess::kGamma && (!(cv > 0) || !std::isfinite(cv))) {
    return Status::Invalid(w + ".cv: expected a positive number for gamma arrivals, got " + FormatNumber(cv));
  }
  return Status::Ok();
}

ArrivalTimes::ArrivalTimes(ArrivalProcess process, double rate_per_s, double cv, Rng rng)
    : process_(process), rate_per_s_(rate_per_s), mean_gap_s_(1.0 / rate_per_s), rng_(rng) {
  FLEETSIM_CHECK(rate_per_s > 0 && std::isfinite(rate_per_s));
  if (process_ == ArrivalProcess::kGamma) {
    FLEETSIM_CHECK(cv > 0 && std::isfinite(cv));
    gamma_shape_ = 1.0 / (cv * cv);
    gamma_scale_s_ = cv * cv / rate_per_s;
  }
}

SimTime ArrivalTimes::Next() {
  if (now_ == kTimeNever) return kTimeNever;
  double gap_s = 0;
  switch (process_) {
    case ArrivalProcess::kConstant: {
      const double ns = static_cast<double>(index_) * 1e9 / rate_per_s_;
      ++index_;
      now_ = ns < kMaxNs ? static_cast<SimTime>(std::llround(ns)) : kTimeNever;
      return now_;
    }
    case ArrivalProcess::kPoisson:
      gap_s = rng_.Exponential(mean_gap_s_);
      break;
    case ArrivalProcess::kGamma:
      gap_s = rng_.Gamma(gamma_shape_, gamma_scale_s_);
      break;
  }
  const double gap_ns = gap_s * 1e9;
  if (!(gap_ns < kMaxNs - static_cast<double>(now_))) {
    now_ = kTimeNever;
  } else {
    now_ += static_cast<SimTime>(std::llround(gap_ns));
  }
  return now_;
}

}  // namespace fleetsim

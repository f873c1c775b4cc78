// ArrivalTimes: the arrival instants of a generated workload, one per Next.
//
//   kPoisson  : exponential gaps of mean 1/rate.
//   kGamma    : gamma gaps with mean 1/rate and coefficient of variation cv
//               (shape 1/cv^2, scale cv^2/rate); cv = 1 is Poisson, cv > 1
//               burstier, cv < 1 more regular.
//   kConstant : arrival i at exactly round(i * 1e9 / rate) ns, computed from
//               i rather than accumulated, so there is no drift.
//
// The renewal processes (Poisson, Gamma) start at 0 and the first arrival
// comes after one gap, so their expected count in [0, T) is rate * T; the
// constant process has its first arrival at 0 (also rate * T in [0, T)).
// Gaps are rounded to the nanosecond one by one.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/status.h"
#include "sim/engine/rng.h"
#include "sim/engine/time.h"
#include "sim/traffic/traffic_spec.h"

namespace fleetsim {

class ArrivalTimes {
 public:
  // Checks rate (> 0, finite) and, for kGamma, cv (> 0, finite). `where`
  // prefixes the field names in messages ("traffic").
  static Status Validate(ArrivalProcess process, double rate_per_s, double cv,
                         std::string_view where);

  // REQUIRES: Validate(process, rate_per_s, cv) is ok.
  ArrivalTimes(ArrivalProcess process, double rate_per_s, double cv, Rng rng);

  // The next arrival in ns, non-decreasing; kTimeNever once arrivals run
  // past the range of SimTime (a very low rate over a very long run).
  SimTime Next();

 private:
  ArrivalProcess process_;
  double rate_per_s_;
  double mean_gap_s_;
  double gamma_shape_ = 0;
  double gamma_scale_s_ = 0;
  Rng rng_;
  SimTime now_ = 0;
  uint64_t index_ = 0;  // kConstant: the index of the next arrival
};

}  // namespace fleetsim

// LengthSampler: draws one token count from a LengthSpec (fixed, lognormal,
// uniform). Sample() does no allocation and uses only fleetsim::Rng, so the
// draws are the same on every compiler and standard library.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/status.h"
#include "sim/engine/rng.h"
#include "sim/traffic/traffic_spec.h"

namespace fleetsim {

class LengthSampler {
 public:
  // Checks the spec: kFixed value >= 1; kLogNormal median > 0, sigma >= 0,
  // both finite; kLogNormal and kUniform 1 <= min <= max. `where` names the
  // spec in messages ("traffic.prompt").
  static Status Validate(const LengthSpec& spec, std::string_view where);

  // REQUIRES: Validate(spec) is ok.
  explicit LengthSampler(const LengthSpec& spec);

  // kFixed: value. kLogNormal: exp(N(log median, sigma)) clamped to
  // [min, max], rounded to the nearest integer. kUniform: an integer in
  // [min, max], each equally likely. Always >= 1.
  int32_t Sample(Rng& rng) const;

 private:
  LengthSpec spec_;
  double mu_ = 0;  // kLogNormal: log(median)
};

}  // namespace fleetsim

// GeneratorSource: a synthetic workload. Arrival instants come from an
// ArrivalTimes process; (prompt, output) lengths from two LengthSamplers or,
// when the spec names a length CSV, from one row of a LengthTable drawn
// uniformly. The stream stops at max_requests or before max_arrival_s,
// whichever comes first.
//
// Random streams: the given Rng seeds two sub-streams, one for the gaps and
// one for the lengths (prompt drawn before output), so changing the length
// distribution leaves arrival times unchanged and vice versa.
//
// Next() is cheap: no allocation beyond the Request's own fields (the model
// name is copied into out->model, which reuses its capacity), no strings
// built, one or two Rng draws per quantity.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "sim/engine/rng.h"
#include "sim/traffic/arrival_times.h"
#include "sim/traffic/length_sampler.h"
#include "sim/traffic/length_table.h"
#include "sim/traffic/source.h"
#include "sim/traffic/traffic_spec.h"

namespace fleetsim {

class GeneratorSource final : public RequestSource {
 public:
  // Validates the generator fields of `spec` (errors name them as
  // "traffic.<field>") and loads its length CSV, if any. A generator needs
  // max_requests or a finite max_arrival_s, or it would never end.
  static Status Make(const TrafficSpec& spec, Rng rng, std::unique_ptr<RequestSource>* out);

  bool Next(Request* out) override;
  const Status& status() const override { return status_; }

 private:
  GeneratorSource(const TrafficSpec& spec, Rng gaps, Rng lengths,
                  std::unique_ptr<const LengthTable> table);

  ArrivalTimes arrivals_;
  Rng length_rng_;
  LengthSampler prompt_;
  LengthSampler output_;
  std::unique_ptr<const LengthTable> table_;  // when set, prompt_/output_ are unused
  std::string model_;
  int64_t max_requests_;
  SimTime max_arrival_;  // exclusive
  int64_t emitted_ = 0;
  bool done_ = false;
  Status status_;  // always ok: a validated generator cannot fail mid-stream
};

}  // namespace fleetsim

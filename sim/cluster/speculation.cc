#include "sim/cluster/speculation.h"

#include <algorithm>
#include <cmath>

#include "sim/engine/rng.h"

namespace fleetsim {

SpeculativePlan PlanSpeculation(const SpeculationOptions& o, uint64_t request_id, int32_t decode_tokens) {
  Rng rng = Rng::ForStream(o.seed, request_id, "speculative");
  SpeculativePlan plan;
  plan.alpha = o.acceptance_mean;
  if (o.concentration > 0 && o.acceptance_mean > 0 && o.acceptance_mean < 1) {
    const double a = rng.Gamma(o.acceptance_mean * o.concentration, 1.0);
    const double b = rng.Gamma((1 - o.acceptance_mean) * o.concentration, 1.0);
    plan.alpha = a + b > 0 ? a / (a + b) : o.acceptance_mean;
  }
  for (int32_t left = decode_tokens; left > 0; ++plan.steps) {
    int accepted = 0;
    while (accepted < o.k && rng.Uniform() < plan.alpha) ++accepted;
    left -= std::min(left, accepted + 1);
  }
  return plan;
}

int64_t SpecExtraQ(const Request& req) {
  if (req.spec_output <= 1 || req.output_tokens <= 1) return 0;
  const double per_step = static_cast<double>(req.spec_output - 1) / (req.output_tokens - 1) - 1;
  return std::llround(per_step * (1 << kSpecExtraShift));
}

}  // namespace fleetsim

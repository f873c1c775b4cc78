#include "kernels/cpu/rope.h"

#include <cmath>

#include "kernels/cpu/elements.h"

namespace fleetsim::kernels {

Status CpuRope(const RopeArgs& a) {
  FLEETSIM_RETURN_IF_ERROR(ValidateRopeArgs(a));
  const int64_t half = a.head_dim / 2;
  for (int64_t t = 0; t < a.num_tokens; ++t) {
    const double pos = static_cast<double>(a.positions[t]);
    for (int64_t i = 0; i < half; ++i) {
      // The angle in double (see RopeArgs); cos and sin then rounded to fp32.
      const double inv_freq = std::pow(a.theta, -2.0 * static_cast<double>(i) / static_cast<double>(a.head_dim));
      const double angle = pos * inv_freq;
      const float c = static_cast<float>(std::cos(angle));
      const float s = static_cast<float>(std::sin(angle));
      for (int64_t h = 0; h < a.num_heads; ++h) {
        const int64_t base = t * a.x_stride + h * a.head_dim;
        const float x1 = LoadElement(a.x, a.dtype, base + i);
        const float x2 = LoadElement(a.x, a.dtype, base + i + half);
        StoreElement(a.x, a.dtype, base + i, x1 * c - x2 * s);
        StoreElement(a.x, a.dtype, base + i + half, x2 * c + x1 * s);
      }
    }
  }
  return Status::Ok();
}

}  // namespace fleetsim::kernels

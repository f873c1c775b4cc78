#include "kernels/cpu/rms_norm.h"

#include <cmath>
#include <vector>

#include "kernels/cpu/elements.h"

namespace fleetsim::kernels {

Status CpuRmsNorm(const RmsNormArgs& a) {
  FLEETSIM_RETURN_IF_ERROR(ValidateRmsNormArgs(a));
  std::vector<float> row(static_cast<size_t>(a.hidden));
  for (int64_t r = 0; r < a.rows; ++r) {
    // Read the whole row first: out may be x.
    float sum_sq = 0.0f;
    for (int64_t i = 0; i < a.hidden; ++i) {
      row[i] = LoadElement(a.x, a.dtype, r * a.x_stride + i);
      sum_sq += row[i] * row[i];
    }
    const float inv_rms = 1.0f / std::sqrt(sum_sq / static_cast<float>(a.hidden) + a.eps);
    for (int64_t i = 0; i < a.hidden; ++i) {
      StoreElement(a.out, a.dtype, r * a.out_stride + i,
                   row[i] * inv_rms * LoadElement(a.weight, a.dtype, i));
    }
  }
  return Status::Ok();
}

}  // namespace fleetsim::kernels

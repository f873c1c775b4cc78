#include "kernels/cpu/silu_mul.h"

#include <cmath>

#include "kernels/cpu/elements.h"

namespace fleetsim::kernels {

Status CpuSiluMul(const SiluMulArgs& a) {
  FLEETSIM_RETURN_IF_ERROR(ValidateSiluMulArgs(a));
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t i = 0; i < a.width; ++i) {
      const float g = LoadElement(a.gate, a.dtype, r * a.gate_stride + i);
      const float u = LoadElement(a.up, a.dtype, r * a.up_stride + i);
      const float silu = g / (1.0f + std::exp(-g));
      StoreElement(a.out, a.dtype, r * a.out_stride + i, silu * u);
    }
  }
  return Status::Ok();
}

}  // namespace fleetsim::kernels

#include "kernels/cpu/residual_add.h"

#include "kernels/cpu/elements.h"

namespace fleetsim::kernels {

Status CpuResidualAdd(const ResidualAddArgs& a) {
  FLEETSIM_RETURN_IF_ERROR(ValidateResidualAddArgs(a));
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t i = 0; i < a.width; ++i) {
      const float x = LoadElement(a.a, a.dtype, r * a.a_stride + i);
      const float y = LoadElement(a.b, a.dtype, r * a.b_stride + i);
      StoreElement(a.out, a.dtype, r * a.out_stride + i, x + y);
    }
  }
  return Status::Ok();
}

}  // namespace fleetsim::kernels

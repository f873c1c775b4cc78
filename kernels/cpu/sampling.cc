#include "kernels/cpu/sampling.h"

#include <cstring>

#include "kernels/cpu/elements.h"

namespace fleetsim::kernels {

Status CpuKvCacheWrite(const KvCacheWriteArgs& a) {
  FLEETSIM_RETURN_IF_ERROR(ValidateKvCacheWriteArgs(a));
  const size_t elem = DTypeSize(a.dtype);
  const int64_t row = a.num_kv_heads * a.head_dim;
  const size_t row_bytes = static_cast<size_t>(row) * elem;
  for (int64_t t = 0; t < a.num_tokens; ++t) {
    const int64_t slot = a.slots[t];
    if (slot < 0) continue;
    if (slot >= a.num_slots)
      return Status::Invalid("kv_cache_write: slots[" + std::to_string(t) + "]=" + std::to_string(slot) +
                             " is not below num_slots=" + std::to_string(a.num_slots));
    std::memcpy(static_cast<unsigned char*>(a.k_cache) + static_cast<size_t>(slot * row) * elem,
                static_cast<const unsigned char*>(a.k) + static_cast<size_t>(t * a.k_stride) * elem, row_bytes);
    std::memcpy(static_cast<unsigned char*>(a.v_cache) + static_cast<size_t>(slot * row) * elem,
                static_cast<const unsigned char*>(a.v) + static_cast<size_t>(t * a.v_stride) * elem, row_bytes);
  }
  return Status::Ok();
}

Status CpuArgmax(const ArgmaxArgs& a) {
  FLEETSIM_RETURN_IF_ERROR(ValidateArgmaxArgs(a));
  for (int64_t r = 0; r < a.rows; ++r) {
    int32_t best = 0;
    float best_v = 0;
    bool found = false;
    for (int64_t i = 0; i < a.width; ++i) {
      const float v = LoadElement(a.x, a.dtype, r * a.x_stride + i);
      if (v != v) continue;  // NaN
      if (!found || v > best_v) {
        best = static_cast<int32_t>(i);
        best_v = v;
        found = true;
      }
    }
    a.out[r] = best;
  }
  return Status::Ok();
}

}  // namespace fleetsim::kernels

// Element access for the CPU reference ops: read one stored element as fp32
// and store an fp32 value rounded (to nearest even) to the storage type.
// Written for clarity, not speed: the references are judged by being
// obviously right.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/backend.h"
#include "kernels/cpu/half.h"

namespace fleetsim::kernels {

inline float LoadElement(const void* base, DType t, int64_t i) {
  if (t == DType::kFp32) {
    float f;
    std::memcpy(&f, static_cast<const unsigned char*>(base) + i * 4, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, static_cast<const unsigned char*>(base) + i * 2, 2);
  return t == DType::kFp16 ? HalfToFloat(h) : Bf16ToFloat(h);
}

inline void StoreElement(void* base, DType t, int64_t i, float v) {
  if (t == DType::kFp32) {
    std::memcpy(static_cast<unsigned char*>(base) + i * 4, &v, 4);
    return;
  }
  const uint16_t h = t == DType::kFp16 ? FloatToHalf(v) : FloatToBf16(v);
  std::memcpy(static_cast<unsigned char*>(base) + i * 2, &h, 2);
}

}  // namespace fleetsim::kernels

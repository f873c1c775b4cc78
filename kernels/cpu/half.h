// 16-bit float formats stored as uint16_t, converted to and from fp32.
//
//  bf16: 1 sign, 8 exponent, 7 mantissa bits: the top half of an fp32, same
//        range, 8 bits of precision.
//  fp16: IEEE binary16: 1 sign, 5 exponent, 10 mantissa bits; largest finite
//        65504, subnormals down to 2^-24.
//
// Narrowing rounds to nearest, ties to even, like the GPU's cvt.rn and like
// cuBLAS's output rounding, so "cpu" and "cuda" store the same bits for the
// same fp32 value. Overflow gives ±inf, NaN stays NaN (quiet), signed zeros
// keep their sign. Widening is exact.
//
// These are written bit by bit rather than relying on compiler _Float16 or
// __bf16 support, which GCC 12 and clang 14 do not share.
#pragma once

#include <cstdint>
#include <cstring>

namespace fleetsim::kernels {

inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float BitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline float Bf16ToFloat(uint16_t h) { return BitsToFloat(static_cast<uint32_t>(h) << 16); }

inline uint16_t FloatToBf16(float f) {
  uint32_t u = FloatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    // NaN: truncating could clear every mantissa bit and make it inf, so
    // force the quiet bit.
    return static_cast<uint16_t>((u >> 16) | 0x0040u);
  }
  // Adding 0x7fff rounds up when the dropped 16 bits exceed half; the extra
  // 1 for an odd kept bit turns the exact half into round-to-even. A carry
  // out of the mantissa bumps the exponent, which is the right answer (up to
  // inf for values past the largest finite bf16).
  const uint32_t lsb = (u >> 16) & 1u;
  u += 0x7fffu + lsb;
  return static_cast<uint16_t>(u >> 16);
}

inline float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    // Zero or subnormal: mant · 2^-24, exact in fp32.
    const float mag = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return BitsToFloat(FloatBits(mag) | sign);
  }
  if (exp == 0x1fu) return BitsToFloat(sign | 0x7f800000u | (mant << 13));  // inf, NaN
  return BitsToFloat(sign | ((exp + 112u) << 23) | (mant << 13));           // rebias 15 → 127
}

inline uint16_t FloatToHalf(float f) {
  const uint32_t u = FloatBits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t x = u & 0x7fffffffu;
  if (x >= 0x7f800000u) {  // inf or NaN; NaN keeps its top payload bits and stays quiet
    return static_cast<uint16_t>(sign | 0x7c00u | (x > 0x7f800000u ? 0x0200u | ((x >> 13) & 0x3ffu) : 0u));
  }
  // 65520 = 0x477ff000 is halfway between 65504 (odd mantissa) and 65536,
  // so it and everything above rounds to inf.
  if (x >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (x >= 0x38800000u) {
    // Normal fp16 (|f| >= 2^-14): same round-to-even trick as bf16 on the 13
    // dropped bits, then rebias the exponent from 127 to 15.
    const uint32_t lsb = (x >> 13) & 1u;
    x += 0x0fffu + lsb;
    return static_cast<uint16_t>(sign | ((x - (112u << 23)) >> 13));
  }
  // Subnormal fp16: the result is round(|f| / 2^-24). |f| <= 2^-25 is at
  // most half the smallest subnormal and rounds (ties to even) to zero.
  if (x <= 0x33000000u) return sign;
  const uint32_t exp = x >> 23;                     // 102..112 here
  const uint32_t mant = (x & 0x7fffffu) | 0x800000u;  // with the implicit bit
  const uint32_t shift = 126u - exp;                // 14..24
  uint32_t q = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (q & 1u))) ++q;  // may carry into the smallest normal: still right
  return static_cast<uint16_t>(sign | q);
}

}  // namespace fleetsim::kernels

// Shared by the CUDA op files (CUDA sources only): storage types, their fp32
// conversions, block reductions, and the dtype → template dispatch of the
// launchers.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "base/status.h"
#include "kernels/backend.h"

namespace fleetsim::kernels {

// Widening is exact; narrowing rounds to nearest even, as the CPU's half.h.
__device__ __forceinline__ float ToFloat(float v) { return v; }
__device__ __forceinline__ float ToFloat(__half v) { return __half2float(v); }
__device__ __forceinline__ float ToFloat(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T FromFloat(float v);
template <>
__device__ __forceinline__ float FromFloat<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half FromFloat<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 FromFloat<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// Sum / max of one value per thread over a block of kThreads (a multiple of
// 32), returned to every thread. Starts and ends with __syncthreads, so a
// caller may reuse shared memory around it freely.
template <int kThreads>
__device__ float BlockSum(float v) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps only");
  __shared__ float partial[kThreads / 32];
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  __syncthreads();
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < kThreads / 32; ++w) total += partial[w];
  __syncthreads();
  return total;
}

template <int kThreads>
__device__ float BlockMax(float v) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps only");
  __shared__ float partial[kThreads / 32];
  for (int off = 16; off > 0; off /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  __syncthreads();
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  float m = partial[0];
  for (int w = 1; w < kThreads / 32; ++w) m = fmaxf(m, partial[w]);
  __syncthreads();
  return m;
}

template <typename T>
struct TypeTag {
  using type = T;
};

// Calls fn(TypeTag<T>{}) with T the CUDA storage type of `dtype`.
template <typename Fn>
Status DispatchDType(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFp32:
      return fn(TypeTag<float>{});
    case DType::kFp16:
      return fn(TypeTag<__half>{});
    case DType::kBf16:
      return fn(TypeTag<__nv_bfloat16>{});
  }
  return Status::Invalid("unknown kernels::DType");
}

// Blocks for a grid-stride elementwise kernel over n items: enough to fill
// the GPU several times over, never more than the items need.
inline unsigned ElementwiseBlocks(int64_t n, int threads) {
  const int64_t needed = (n + threads - 1) / threads;
  const int64_t cap = 65536;
  return static_cast<unsigned>(needed < cap ? needed : cap);
}

}  // namespace fleetsim::kernels

// RMSNorm: out[r] = x[r] / sqrt(mean(x[r]²) + eps) ⊙ weight (contract:
// RmsNormArgs in kernels/backend.h).
//
// Why: every Llama-family layer runs it twice (before attention and before
// the MLP) plus once before the LM head. It is memory-bound: it reads the
// row (twice here), the weight, and writes the row; 2·hidden·bytes per token
// of traffic against ~3·hidden FLOPs, so its time is bandwidth.
//
// Kernel: one block of 256 threads per row. Pass 1: each thread sums the
// squares of a strided slice in fp32, a block reduction (warp shuffles, then
// one value per warp through shared memory) gives the mean square. Pass 2:
// each thread scales and writes its slice. In place is safe: a thread reads
// element i before it writes element i, and no other thread touches i.
//
// A tuned kernel (vLLM's, FlashInfer's) keeps the row in registers or shared
// memory to read it once, uses 128-bit vector loads, and fuses the residual
// add in front (fused_add_rms_norm), saving a full round trip of the
// hidden state.
#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elements.cuh"
#include "kernels/cuda/launchers.h"

namespace fleetsim::kernels {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void RmsNormKernel(const T* __restrict__ x, const T* __restrict__ weight, T* out,
                              int64_t hidden, int64_t x_stride, int64_t out_stride, float eps) {
  const int64_t row = blockIdx.x;
  const T* xr = x + row * x_stride;
  T* outr = out + row * out_stride;
  float sum_sq = 0.0f;
  for (int64_t i = threadIdx.x; i < hidden; i += kThreads) {
    const float v = ToFloat(xr[i]);
    sum_sq += v * v;
  }
  sum_sq = BlockSum<kThreads>(sum_sq);
  const float inv_rms = rsqrtf(sum_sq / static_cast<float>(hidden) + eps);
  for (int64_t i = threadIdx.x; i < hidden; i += kThreads) {
    outr[i] = FromFloat<T>(ToFloat(xr[i]) * inv_rms * ToFloat(weight[i]));
  }
}

}  // namespace

Status LaunchRmsNorm(cudaStream_t stream, const RmsNormArgs& a) {
  FLEETSIM_RETURN_IF_ERROR(ValidateRmsNormArgs(a));
  if (a.rows == 0) return Status::Ok();
  if (a.rows > INT32_MAX) {
    return Status::Invalid("rms_norm: rows=" + std::to_string(a.rows) + " exceeds the grid limit 2^31-1");
  }
  return DispatchDType(a.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    RmsNormKernel<T><<<static_cast<unsigned>(a.rows), kThreads, 0, stream>>>(
        static_cast<const T*>(a.x), static_cast<const T*>(a.weight), static_cast<T*>(a.out), a.hidden,
        a.x_stride, a.out_stride, a.eps);
    FLEETSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::Ok();
  });
}

}  // namespace fleetsim::kernels

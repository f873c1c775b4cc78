// Residual add: out = a + b elementwise (contract: ResidualAddArgs in
// kernels/backend.h).
//
// Why: the two residual connections of every transformer layer. Memory-bound:
// three rows of traffic per token for one add per element.
//
// Kernel: a grid-stride loop over rows·width elements, fp32 add, one
// rounding to the storage type. In place is safe (same thread reads and
// writes an element).
//
// A tuned implementation does not run this alone: it fuses the add into the
// following RMSNorm (vLLM's fused_add_rms_norm) or into the epilogue of the
// preceding GEMM.
#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elements.cuh"
#include "kernels/cuda/launchers.h"

namespace fleetsim::kernels {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void ResidualAddKernel(const T* a, const T* b, T* out, int64_t rows, int64_t width,
                                  int64_t a_stride, int64_t b_stride, int64_t out_stride) {
  const int64_t n = rows * width;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = idx / width, i = idx % width;
    out[r * out_stride + i] = FromFloat<T>(ToFloat(a[r * a_stride + i]) + ToFloat(b[r * b_stride + i]));
  }
}

}  // namespace

Status LaunchResidualAdd(cudaStream_t stream, const ResidualAddArgs& a) {
  FLEETSIM_RETURN_IF_ERROR(ValidateResidualAddArgs(a));
  const int64_t n = a.rows * a.width;
  if (n == 0) return Status::Ok();
  return DispatchDType(a.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    ResidualAddKernel<T><<<ElementwiseBlocks(n, kThreads), kThreads, 0, stream>>>(
        static_cast<const T*>(a.a), static_cast<const T*>(a.b), static_cast<T*>(a.out), a.rows, a.width,
        a.a_stride, a.b_stride, a.out_stride);
    FLEETSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::Ok();
  });
}

}  // namespace fleetsim::kernels

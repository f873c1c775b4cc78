// SiLU-gated activation: out = silu(gate) ⊙ up, silu(g) = g / (1 + e^-g)
// (contract: SiluMulArgs in kernels/backend.h).
//
// Why: the middle of every SwiGLU MLP (Llama, Mistral, Qwen), between the
// fused gate/up projection and the down projection. Purely memory-bound:
// three intermediate-size rows of traffic per token, a few FLOPs each.
//
// Kernel: a grid-stride loop over rows·width elements, one element per
// thread per step, fp32 math with expf (not the __expf intrinsic, so the
// result tracks the CPU reference to an ulp or two). In place is safe since
// each element is read and written by the same thread.
//
// A tuned kernel vectorises to 128-bit loads of the two halves of the fused
// gate|up buffer, or fuses the activation into the epilogue of the gate/up
// GEMM so the intermediate never round-trips through memory.
#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elements.cuh"
#include "kernels/cuda/launchers.h"

namespace fleetsim::kernels {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void SiluMulKernel(const T* gate, const T* up, T* out, int64_t rows, int64_t width,
                              int64_t gate_stride, int64_t up_stride, int64_t out_stride) {
  const int64_t n = rows * width;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = idx / width, i = idx % width;
    const float g = ToFloat(gate[r * gate_stride + i]);
    const float u = ToFloat(up[r * up_stride + i]);
    out[r * out_stride + i] = FromFloat<T>(g / (1.0f + expf(-g)) * u);
  }
}

}  // namespace

Status LaunchSiluMul(cudaStream_t stream, const SiluMulArgs& a) {
  FLEETSIM_RETURN_IF_ERROR(ValidateSiluMulArgs(a));
  const int64_t n = a.rows * a.width;
  if (n == 0) return Status::Ok();
  return DispatchDType(a.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    SiluMulKernel<T><<<ElementwiseBlocks(n, kThreads), kThreads, 0, stream>>>(
        static_cast<const T*>(a.gate), static_cast<const T*>(a.up), static_cast<T*>(a.out), a.rows,
        a.width, a.gate_stride, a.up_stride, a.out_stride);
    FLEETSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::Ok();
  });
}

}  // namespace fleetsim::kernels

// Rotary position embedding, Llama "rotate half" convention, in place
// (contract: RopeArgs in kernels/backend.h).
//
// Why: applied to Q and K of every attention layer before the scores (and
// before K enters the KV cache). Memory-bound: the Q and K rows are read and
// written once.
//
// Kernel: a grid-stride loop over (token, head, i) triples, i < head_dim/2;
// each thread rotates the pair (x[i], x[i + head_dim/2]) of one head, reading
// both before writing both, so in place is race-free. The angle
// position·θ^(-2i/head_dim) and its cos/sin are computed in double, as the
// CPU reference does, so the two agree to fp32 rounding even at positions in
// the hundreds of thousands (an fp32 angle would be off by ~0.01 rad there).
//
// A tuned kernel (vLLM, FlashInfer) reads cos/sin from a precomputed
// [max_position, head_dim/2] cache instead of evaluating transcendental
// functions, vectorises the loads, rotates Q and K in one launch, and is
// often fused into the attention kernel's Q/K load.
#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elements.cuh"
#include "kernels/cuda/launchers.h"

namespace fleetsim::kernels {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void RopeKernel(const int32_t* positions, T* x, int64_t num_tokens, int64_t num_heads,
                           int64_t head_dim, int64_t x_stride, double theta) {
  const int64_t half = head_dim / 2;
  const int64_t n = num_tokens * num_heads * half;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = idx % half;
    const int64_t h = (idx / half) % num_heads;
    const int64_t t = idx / (half * num_heads);
    const double angle = static_cast<double>(positions[t]) *
                         pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
    const float c = static_cast<float>(cos(angle));
    const float s = static_cast<float>(sin(angle));
    T* head = x + t * x_stride + h * head_dim;
    const float x1 = ToFloat(head[i]);
    const float x2 = ToFloat(head[i + half]);
    head[i] = FromFloat<T>(x1 * c - x2 * s);
    head[i + half] = FromFloat<T>(x2 * c + x1 * s);
  }
}

}  // namespace

Status LaunchRope(cudaStream_t stream, const RopeArgs& a) {
  FLEETSIM_RETURN_IF_ERROR(ValidateRopeArgs(a));
  const int64_t n = a.num_tokens * a.num_heads * (a.head_dim / 2);
  if (n == 0) return Status::Ok();
  return DispatchDType(a.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    RopeKernel<T><<<ElementwiseBlocks(n, kThreads), kThreads, 0, stream>>>(
        a.positions, static_cast<T*>(a.x), a.num_tokens, a.num_heads, a.head_dim, a.x_stride, a.theta);
    FLEETSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::Ok();
  });
}

}  // namespace fleetsim::kernels

// The ops live mode adds to a forward pass (contracts: KvCacheWriteArgs and
// ArgmaxArgs in kernels/backend.h).
//
// KV cache write (vLLM's reshape_and_cache): a grid-stride copy over
// num_tokens · num_kv_heads · head_dim elements, each thread moving one
// element of K and one of V as bits. A slot of -1 (padding) is skipped; a
// slot past num_slots is skipped too (the GPU cannot report it without a
// sync; the CPU reference answers it with a Status).
//
// Argmax (greedy sampling): one block per row, each thread scanning a
// strided share of the row and keeping its best (value, lowest column),
// then a shared-memory tree reduction that keeps the lower column on ties,
// so the result equals the CPU's scan. NaNs are never chosen.
#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elements.cuh"
#include "kernels/cuda/launchers.h"

namespace fleetsim::kernels {
namespace {

constexpr int kThreads = 256;

template <typename Bits>
__global__ void KvCacheWriteKernel(const Bits* k, const Bits* v, Bits* k_cache, Bits* v_cache, const int32_t* slots,
                                   int64_t num_tokens, int64_t row, int64_t k_stride, int64_t v_stride,
                                   int64_t num_slots) {
  const int64_t n = num_tokens * row;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = idx / row, i = idx % row;
    const int64_t slot = slots[t];
    if (slot < 0 || slot >= num_slots) continue;
    k_cache[slot * row + i] = k[t * k_stride + i];
    v_cache[slot * row + i] = v[t * v_stride + i];
  }
}

template <typename Bits>
Status LaunchWrite(cudaStream_t stream, const KvCacheWriteArgs& a) {
  const int64_t row = a.num_kv_heads * a.head_dim;
  const int64_t n = a.num_tokens * row;
  KvCacheWriteKernel<Bits><<<ElementwiseBlocks(n, kThreads), kThreads, 0, stream>>>(
      static_cast<const Bits*>(a.k), static_cast<const Bits*>(a.v), static_cast<Bits*>(a.k_cache),
      static_cast<Bits*>(a.v_cache), a.slots, a.num_tokens, row, a.k_stride, a.v_stride, a.num_slots);
  FLEETSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::Ok();
}

// Whether (v, i) beats (best_v, best_i): larger, or equal at a lower column;
// an empty best (best_i < 0) loses to anything.
__device__ __forceinline__ bool Better(float v, int32_t i, float best_v, int32_t best_i) {
  if (i < 0) return false;
  if (best_i < 0) return true;
  return v > best_v || (v == best_v && i < best_i);
}

template <typename T>
__global__ void ArgmaxKernel(const T* x, int64_t width, int64_t stride, int32_t* out) {
  __shared__ float vals[kThreads];
  __shared__ int32_t cols[kThreads];
  const T* row = x + static_cast<int64_t>(blockIdx.x) * stride;
  float best_v = 0.0f;
  int32_t best_i = -1;
  for (int64_t i = threadIdx.x; i < width; i += kThreads) {
    const float v = ToFloat(row[i]);
    if (v != v) continue;  // NaN
    if (Better(v, static_cast<int32_t>(i), best_v, best_i)) {
      best_v = v;
      best_i = static_cast<int32_t>(i);
    }
  }
  vals[threadIdx.x] = best_v;
  cols[threadIdx.x] = best_i;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half &&
        Better(vals[threadIdx.x + half], cols[threadIdx.x + half], vals[threadIdx.x], cols[threadIdx.x])) {
      vals[threadIdx.x] = vals[threadIdx.x + half];
      cols[threadIdx.x] = cols[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = cols[0] < 0 ? 0 : cols[0];
}

}  // namespace

Status LaunchKvCacheWrite(cudaStream_t stream, const KvCacheWriteArgs& a) {
  FLEETSIM_RETURN_IF_ERROR(ValidateKvCacheWriteArgs(a));
  if (a.num_tokens == 0) return Status::Ok();
  return DTypeSize(a.dtype) == 4 ? LaunchWrite<uint32_t>(stream, a) : LaunchWrite<uint16_t>(stream, a);
}

Status LaunchArgmax(cudaStream_t stream, const ArgmaxArgs& a) {
  FLEETSIM_RETURN_IF_ERROR(ValidateArgmaxArgs(a));
  if (a.rows == 0) return Status::Ok();
  if (a.rows > 2147483647) return Status::Invalid("argmax: rows=" + std::to_string(a.rows) + " exceeds the grid");
  return DispatchDType(a.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    ArgmaxKernel<T><<<static_cast<unsigned>(a.rows), kThreads, 0, stream>>>(static_cast<const T*>(a.x), a.width,
                                                                             a.x_stride, a.out);
    FLEETSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::Ok();
  });
}

}  // namespace fleetsim::kernels

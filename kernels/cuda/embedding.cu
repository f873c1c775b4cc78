// Embedding lookup: out[t] = table[token_ids[t]] (contract: EmbeddingArgs in
// kernels/backend.h).
//
// Why: the first op of every forward pass. A gather: hidden·bytes read and
// written per token, no arithmetic; its time is latency and bandwidth.
//
// Kernel: a grid-stride loop over num_tokens·hidden elements; each thread
// copies one element's bits (as a 2- or 4-byte integer, so fp16/bf16 pass
// through unchanged). An id outside [0, vocab_size) writes zeros, as the
// contract says; the kernel cannot report it without a host sync.
//
// A tuned kernel copies whole rows with 128-bit vector loads, one warp per
// token, and under tensor parallelism looks up a vocabulary shard and
// zero-fills foreign ids before an all-reduce.
#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elements.cuh"
#include "kernels/cuda/launchers.h"

namespace fleetsim::kernels {
namespace {

constexpr int kThreads = 256;

// Bits is uint32_t for fp32 and uint16_t for fp16/bf16: a copy, no rounding.
template <typename Bits>
__global__ void EmbeddingKernel(const int32_t* token_ids, const Bits* table, Bits* out,
                                int64_t num_tokens, int64_t vocab_size, int64_t hidden,
                                int64_t out_stride) {
  const int64_t n = num_tokens * hidden;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = idx / hidden, i = idx % hidden;
    const int64_t id = token_ids[t];
    out[t * out_stride + i] = (id >= 0 && id < vocab_size) ? table[id * hidden + i] : Bits{0};
  }
}

template <typename Bits>
Status Launch(cudaStream_t stream, const EmbeddingArgs& a) {
  const int64_t n = a.num_tokens * a.hidden;
  EmbeddingKernel<Bits><<<ElementwiseBlocks(n, kThreads), kThreads, 0, stream>>>(
      a.token_ids, static_cast<const Bits*>(a.table), static_cast<Bits*>(a.out), a.num_tokens,
      a.vocab_size, a.hidden, a.out_stride);
  FLEETSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::Ok();
}

}  // namespace

Status LaunchEmbedding(cudaStream_t stream, const EmbeddingArgs& a) {
  FLEETSIM_RETURN_IF_ERROR(ValidateEmbeddingArgs(a));
  if (a.num_tokens == 0) return Status::Ok();
  return DTypeSize(a.dtype) == 4 ? Launch<uint32_t>(stream, a) : Launch<uint16_t>(stream, a);
}

}  // namespace fleetsim::kernels

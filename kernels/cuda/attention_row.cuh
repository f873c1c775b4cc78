// The per-row attention kernel body shared by attention_prefill.cu and
// attention_decode.cu (CUDA sources only): one thread block computes the
// output of one (query row, head) over n keys, given where each key lives.
//
// Algorithm (online softmax over tiles of kAttnThreads keys, as in
// FlashAttention's outer loop, but one query row per block):
//   for each tile: thread j computes the score of key j (a dot product over
//   head_dim, q held in shared memory) → block max → new running max m' →
//   rescale the accumulators by e^(m − m') → p_j = e^(s_j − m') into shared
//   memory → running sum l = l·e^(m − m') + Σp_j → each thread adds
//   Σ_j p_j·v_j[d] for the output dimensions d it owns.
//   out[d] = acc[d] / l.
// Scores, exponentials and accumulators are fp32; the max is subtracted
// before every exponential, so nothing overflows.
#pragma once

#include <cstdint>

#include "kernels/cuda/elements.cuh"

namespace fleetsim::kernels {

constexpr int kAttnThreads = 128;
// Output dimensions per thread: head_dim <= kAttnThreads·kAttnMaxDimsPerThread.
constexpr int kAttnMaxDimsPerThread = 4;
constexpr int kAttnMaxHeadDim = kAttnThreads * kAttnMaxDimsPerThread;

// Where the keys are: key j of the row is row key_row(j) of K and of V, and
// its head slice starts at column kv_col of that row. key_row is a functor
// (the token index for prefill, the cache slot for decode). Requires
// blockDim.x == kAttnThreads and dynamic shared memory of head_dim floats.
template <typename T, typename KeyRow>
__device__ void AttendOneRow(const T* __restrict__ q, const T* __restrict__ k,
                             const T* __restrict__ v, T* __restrict__ out, int64_t n_keys,
                             int head_dim, float scale, int64_t k_stride, int64_t v_stride,
                             int64_t kv_col, KeyRow key_row) {
  extern __shared__ float q_shared[];  // head_dim
  __shared__ float probs[kAttnThreads];
  __shared__ int64_t rows[kAttnThreads];
  const int tid = threadIdx.x;
  for (int d = tid; d < head_dim; d += kAttnThreads) q_shared[d] = ToFloat(q[d]);
  __syncthreads();

  float acc[kAttnMaxDimsPerThread];
  for (int i = 0; i < kAttnMaxDimsPerThread; ++i) acc[i] = 0.0f;
  float running_max = -INFINITY;
  float running_sum = 0.0f;

  for (int64_t tile = 0; tile < n_keys; tile += kAttnThreads) {
    const int64_t j = tile + tid;
    const int tile_len = static_cast<int>(n_keys - tile < kAttnThreads ? n_keys - tile : kAttnThreads);
    float score = -INFINITY;
    if (j < n_keys) {
      const int64_t row = key_row(j);
      rows[tid] = row;
      const T* key = k + row * k_stride + kv_col;
      float dot = 0.0f;
      for (int d = 0; d < head_dim; ++d) dot += q_shared[d] * ToFloat(key[d]);
      score = dot * scale;
    }
    // At least one key in the tile, so the tile max is finite.
    const float new_max = fmaxf(running_max, BlockMax<kAttnThreads>(score));
    const float correction = expf(running_max - new_max);  // 0 on the first tile
    const float p = j < n_keys ? expf(score - new_max) : 0.0f;
    probs[tid] = p;
    // BlockSum starts and ends with a barrier: probs and rows are visible after.
    running_sum = running_sum * correction + BlockSum<kAttnThreads>(p);
    running_max = new_max;
    for (int i = 0; i < kAttnMaxDimsPerThread; ++i) {
      const int d = tid + i * kAttnThreads;
      if (d >= head_dim) break;
      float a = acc[i] * correction;
      for (int jj = 0; jj < tile_len; ++jj) a += probs[jj] * ToFloat(v[rows[jj] * v_stride + kv_col + d]);
      acc[i] = a;
    }
    __syncthreads();  // before the next tile overwrites probs and rows
  }
  for (int i = 0; i < kAttnMaxDimsPerThread; ++i) {
    const int d = tid + i * kAttnThreads;
    if (d >= head_dim) break;
    out[d] = FromFloat<T>(n_keys == 0 ? 0.0f : acc[i] / running_sum);
  }
}

}  // namespace fleetsim::kernels

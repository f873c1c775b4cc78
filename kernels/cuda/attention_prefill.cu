// Causal grouped-query attention over packed prompt tokens ("varlen"
// prefill; contract: AttentionPrefillArgs in kernels/backend.h).
//
// Why: the attention half of a prefill step. Its FLOPs grow with the square
// of the prompt (≈ 2·T²·head_dim·heads for a causal T-token prompt), so at
// long prompts it rivals the linear layers and decides time-to-first-token.
//
// Kernel: the simple per-row one. Grid (num_tokens, num_heads), one block of
// 128 threads per (query token, query head); the block finds its sequence by
// binary search in seq_starts and runs AttendOneRow (attention_row.cuh) over
// the keys from the sequence start up to and including its own position,
// reading K/V head h / (num_heads / num_kv_heads). Each K/V row is re-read by
// every query row that sees it: O(T²) global traffic, fine for correctness,
// far from the roofline.
//
// A tuned kernel (FlashAttention-2/3, FlashInfer) tiles queries as well as
// keys: a block loads a tile of 64–128 query rows, streams K/V tiles through
// shared memory once per query tile, computes QKᵀ and PV with tensor cores
// (wgmma + TMA on Hopper), keeps the whole GQA group of heads in one block
// so K/V are loaded once per group, skips fully masked tiles, and overlaps
// loads with math through warp specialisation.
#include <cstdint>
#include <string>

#include "kernels/cuda/attention_row.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launchers.h"

namespace fleetsim::kernels {
namespace {

// Key j of a sequence starting at token `begin` is token begin + j.
struct PackedKeyRow {
  int64_t begin;
  __device__ int64_t operator()(int64_t j) const { return begin + j; }
};

template <typename T>
__global__ void AttentionPrefillKernel(const int32_t* seq_starts, int64_t num_seqs, const T* q,
                                       const T* k, const T* v, T* out, int group, int head_dim,
                                       int64_t q_stride, int64_t k_stride, int64_t v_stride,
                                       int64_t out_stride, float scale) {
  const int64_t t = blockIdx.x;
  const int h = blockIdx.y;
  // The last sequence whose start is <= t: empty sequences share their start
  // with the next one, and the last of them owns t.
  int64_t lo = 0, hi = num_seqs - 1;
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    if (seq_starts[mid] <= t) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  const int64_t begin = seq_starts[lo];
  const int64_t kv_col = static_cast<int64_t>(h / group) * head_dim;
  AttendOneRow(q + t * q_stride + static_cast<int64_t>(h) * head_dim, k, v,
               out + t * out_stride + static_cast<int64_t>(h) * head_dim, t - begin + 1, head_dim,
               scale, k_stride, v_stride, kv_col, PackedKeyRow{begin});
}

}  // namespace

Status LaunchAttentionPrefill(cudaStream_t stream, const AttentionPrefillArgs& a) {
  FLEETSIM_RETURN_IF_ERROR(ValidateAttentionPrefillArgs(a));
  if (a.head_dim > kAttnMaxHeadDim) {
    return Status::Invalid("attention_prefill: head_dim=" + std::to_string(a.head_dim) +
                           " exceeds the CUDA kernel's limit " + std::to_string(kAttnMaxHeadDim));
  }
  if (a.num_heads > 65535) {
    return Status::Invalid("attention_prefill: num_heads=" + std::to_string(a.num_heads) +
                           " exceeds the grid's y limit 65535");
  }
  if (a.num_tokens == 0) return Status::Ok();
  const dim3 grid(static_cast<unsigned>(a.num_tokens), static_cast<unsigned>(a.num_heads));
  const size_t shared = static_cast<size_t>(a.head_dim) * sizeof(float);
  const float scale = 1.0f / sqrtf(static_cast<float>(a.head_dim));
  return DispatchDType(a.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    AttentionPrefillKernel<T><<<grid, kAttnThreads, shared, stream>>>(
        a.seq_starts, a.num_seqs, static_cast<const T*>(a.q), static_cast<const T*>(a.k),
        static_cast<const T*>(a.v), static_cast<T*>(a.out), static_cast<int>(a.num_heads / a.num_kv_heads),
        static_cast<int>(a.head_dim), a.q_stride, a.k_stride, a.v_stride, a.out_stride, scale);
    FLEETSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::Ok();
  });
}

}  // namespace fleetsim::kernels

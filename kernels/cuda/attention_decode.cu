// One decode step of grouped-query attention over a paged KV cache
// (contract: AttentionDecodeArgs in kernels/backend.h).
//
// Why: the attention of every decode step. One query row per sequence reads
// the sequence's whole K/V history, so it is memory-bound:
// 2·context·kv_heads·head_dim·bytes per sequence per layer, which is what
// makes long-context decode slow and what the KV-cache model of fleetsim
// must price.
//
// Kernel: grid (num_seqs, num_heads), one block of 128 threads per
// (sequence, query head), running AttendOneRow (attention_row.cuh) over the
// sequence's context_lens[s] tokens; token t is fetched through the block
// table (block block_tables[s][t / block_size], slot t % block_size).
// A sequence with no context writes zeros.
//
// A tuned kernel (vLLM PagedAttention v2, FlashInfer's decode, FlashDecoding)
// handles the whole GQA group of query heads in one block so each K/V block
// is read once per group instead of once per query head, has each warp load
// whole 16-byte K/V vectors coalesced across a block, splits long contexts
// across several blocks (split-K) and merges their partial softmaxes in a
// second kernel so a small batch still fills the GPU, and pipelines cache
// blocks through shared memory with cp.async/TMA.
#include <cstdint>
#include <string>

#include "kernels/cuda/attention_row.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launchers.h"

namespace fleetsim::kernels {
namespace {

// Key j of a sequence is cache slot block_table[j / block_size]·block_size
// + j % block_size.
struct PagedKeyRow {
  const int32_t* block_table;  // this sequence's row
  int64_t block_size;
  __device__ int64_t operator()(int64_t j) const {
    return static_cast<int64_t>(block_table[j / block_size]) * block_size + j % block_size;
  }
};

template <typename T>
__global__ void AttentionDecodeKernel(const T* q, const T* k_cache, const T* v_cache,
                                      const int32_t* block_tables, const int32_t* context_lens,
                                      T* out, int group, int head_dim, int64_t num_kv_heads,
                                      int64_t block_size, int64_t q_stride, int64_t out_stride,
                                      int64_t block_table_stride, float scale) {
  const int64_t s = blockIdx.x;
  const int h = blockIdx.y;
  const int64_t slot_elems = num_kv_heads * head_dim;  // the row stride of a cache slot
  const int64_t kv_col = static_cast<int64_t>(h / group) * head_dim;
  AttendOneRow(q + s * q_stride + static_cast<int64_t>(h) * head_dim, k_cache, v_cache,
               out + s * out_stride + static_cast<int64_t>(h) * head_dim,
               static_cast<int64_t>(context_lens[s]), head_dim, scale, slot_elems, slot_elems, kv_col,
               PagedKeyRow{block_tables + s * block_table_stride, block_size});
}

}  // namespace

Status LaunchAttentionDecode(cudaStream_t stream, const AttentionDecodeArgs& a) {
  FLEETSIM_RETURN_IF_ERROR(ValidateAttentionDecodeArgs(a));
  if (a.head_dim > kAttnMaxHeadDim) {
    return Status::Invalid("attention_decode: head_dim=" + std::to_string(a.head_dim) +
                           " exceeds the CUDA kernel's limit " + std::to_string(kAttnMaxHeadDim));
  }
  if (a.num_heads > 65535) {
    return Status::Invalid("attention_decode: num_heads=" + std::to_string(a.num_heads) +
                           " exceeds the grid's y limit 65535");
  }
  if (a.num_seqs > INT32_MAX) {
    return Status::Invalid("attention_decode: num_seqs=" + std::to_string(a.num_seqs) +
                           " exceeds the grid limit 2^31-1");
  }
  if (a.num_seqs == 0) return Status::Ok();
  const dim3 grid(static_cast<unsigned>(a.num_seqs), static_cast<unsigned>(a.num_heads));
  const size_t shared = static_cast<size_t>(a.head_dim) * sizeof(float);
  const float scale = 1.0f / sqrtf(static_cast<float>(a.head_dim));
  return DispatchDType(a.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    AttentionDecodeKernel<T><<<grid, kAttnThreads, shared, stream>>>(
        static_cast<const T*>(a.q), static_cast<const T*>(a.k_cache), static_cast<const T*>(a.v_cache),
        a.block_tables, a.context_lens, static_cast<T*>(a.out),
        static_cast<int>(a.num_heads / a.num_kv_heads), static_cast<int>(a.head_dim), a.num_kv_heads,
        a.block_size, a.q_stride, a.out_stride, a.block_table_stride, scale);
    FLEETSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::Ok();
  });
}

}  // namespace fleetsim::kernels

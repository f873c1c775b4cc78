// The reference gathers each sequence's keys through its block table and then
// applies the textbook formula, exactly as the prefill reference does for the
// last row of a sequence.
#include "kernels/cpu/attention_decode.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/elements.h"

namespace fleetsim::kernels {

Status CpuAttentionDecode(const AttentionDecodeArgs& a) {
  FLEETSIM_RETURN_IF_ERROR(ValidateAttentionDecodeArgs(a));
  const int64_t group = a.num_heads / a.num_kv_heads;
  const int64_t slot_elems = a.num_kv_heads * a.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(a.head_dim));
  std::vector<float> q(static_cast<size_t>(a.head_dim));
  std::vector<float> acc(static_cast<size_t>(a.head_dim));
  std::vector<float> scores;
  std::vector<int64_t> slot;  // cache slot of each context token
  for (int64_t s = 0; s < a.num_seqs; ++s) {
    const int64_t n = a.context_lens[s];
    slot.resize(static_cast<size_t>(n));
    for (int64_t t = 0; t < n; ++t) {
      const int64_t block = a.block_tables[s * a.block_table_stride + t / a.block_size];
      slot[t] = block * a.block_size + t % a.block_size;
    }
    for (int64_t h = 0; h < a.num_heads; ++h) {
      const int64_t kvh = h / group;
      for (int64_t d = 0; d < a.head_dim; ++d) {
        q[d] = LoadElement(a.q, a.dtype, s * a.q_stride + h * a.head_dim + d);
      }
      scores.assign(static_cast<size_t>(n), 0.0f);
      float max_score = -INFINITY;
      for (int64_t j = 0; j < n; ++j) {
        const int64_t k_base = slot[j] * slot_elems + kvh * a.head_dim;
        float dot = 0.0f;
        for (int64_t d = 0; d < a.head_dim; ++d) dot += q[d] * LoadElement(a.k_cache, a.dtype, k_base + d);
        scores[j] = dot * scale;
        max_score = std::max(max_score, scores[j]);
      }
      float denom = 0.0f;
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = 0; j < n; ++j) {
        const float w = std::exp(scores[j] - max_score);
        denom += w;
        const int64_t v_base = slot[j] * slot_elems + kvh * a.head_dim;
        for (int64_t d = 0; d < a.head_dim; ++d) acc[d] += w * LoadElement(a.v_cache, a.dtype, v_base + d);
      }
      for (int64_t d = 0; d < a.head_dim; ++d) {
        // An empty context has no weights: the contract says zeros.
        const float v = n == 0 ? 0.0f : acc[d] / denom;
        StoreElement(a.out, a.dtype, s * a.out_stride + h * a.head_dim + d, v);
      }
    }
  }
  return Status::Ok();
}

}  // namespace fleetsim::kernels

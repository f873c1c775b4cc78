// The reference is the textbook formula, one query row at a time: all scores,
// their maximum, the exponentials, the normalised weighted sum of V. O(T²)
// memory per row is fine for a reference.
#include "kernels/cpu/attention_prefill.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/elements.h"

namespace fleetsim::kernels {

Status CpuAttentionPrefill(const AttentionPrefillArgs& a) {
  FLEETSIM_RETURN_IF_ERROR(ValidateAttentionPrefillArgs(a));
  const int64_t group = a.num_heads / a.num_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(a.head_dim));
  std::vector<float> q(static_cast<size_t>(a.head_dim));
  std::vector<float> acc(static_cast<size_t>(a.head_dim));
  std::vector<float> scores;
  for (int64_t s = 0; s < a.num_seqs; ++s) {
    const int64_t begin = a.seq_starts[s];
    const int64_t end = a.seq_starts[s + 1];
    for (int64_t t = begin; t < end; ++t) {
      for (int64_t h = 0; h < a.num_heads; ++h) {
        const int64_t kvh = h / group;
        for (int64_t d = 0; d < a.head_dim; ++d) {
          q[d] = LoadElement(a.q, a.dtype, t * a.q_stride + h * a.head_dim + d);
        }
        // Causal: query t sees keys begin..t of its own sequence.
        const int64_t n = t - begin + 1;
        scores.assign(static_cast<size_t>(n), 0.0f);
        float max_score = -INFINITY;
        for (int64_t j = 0; j < n; ++j) {
          const int64_t k_base = (begin + j) * a.k_stride + kvh * a.head_dim;
          float dot = 0.0f;
          for (int64_t d = 0; d < a.head_dim; ++d) dot += q[d] * LoadElement(a.k, a.dtype, k_base + d);
          scores[j] = dot * scale;
          max_score = std::max(max_score, scores[j]);
        }
        float denom = 0.0f;
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int64_t j = 0; j < n; ++j) {
          const float w = std::exp(scores[j] - max_score);
          denom += w;
          const int64_t v_base = (begin + j) * a.v_stride + kvh * a.head_dim;
          for (int64_t d = 0; d < a.head_dim; ++d) acc[d] += w * LoadElement(a.v, a.dtype, v_base + d);
        }
        for (int64_t d = 0; d < a.head_dim; ++d) {
          StoreElement(a.out, a.dtype, t * a.out_stride + h * a.head_dim + d, acc[d] / denom);
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace fleetsim::kernels

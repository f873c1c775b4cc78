#include "model/model_spec.h"

#include <algorithm>
#include <cmath>

#include "base/status.h"

namespace fleetsim {

// Counts every matrix and norm vector of a Llama-style decoder:
//   embedding            vocab x hidden
//   lm_head              vocab x hidden (absent when tied to the embedding)
//   per layer:
//     QKV projection     hidden x (heads + 2 kv_heads) x head_dim
//     output projection  heads x head_dim x hidden
//     gated MLP          3 x hidden x intermediate, once per expert for MoE
//     MoE router         hidden x experts
//     two RMSNorms       2 x hidden
//   final RMSNorm        hidden
// With multi-head latent attention the QKV and output projections are
// replaced by (DeepSeek-V3's modelling code, r = rope dim, n = nope dim):
//     q_a  hidden x q_lora_rank, its norm q_lora_rank,
//     q_b  q_lora_rank x heads x (n + r)   (or hidden x heads x (n + r)
//                                           without q_lora_rank)
//     kv_a hidden x (kv_lora_rank + r), its norm kv_lora_rank,
//     kv_b kv_lora_rank x heads x (n + v_head_dim)
//     o    heads x v_head_dim x hidden
// and with DeepSeek-style MoE the first dense_layers layers have one MLP of
// dense_intermediate, the others (experts + shared_experts) MLPs of
// intermediate and the router.
// Biases (Qwen2's q/k/v bias, DeepSeek's router score bias) and rotary
// tables are ignored: they are a fraction of a per mille of the total.
int64_t ModelSpec::ParamCount() const {
  const int64_t h = hidden;
  int64_t attention = 0;
  if (mla) {
    const int64_t qk = int64_t{mla->qk_nope_head_dim} + mla->qk_rope_head_dim;
    const int64_t q = mla->q_lora_rank > 0
                          ? h * mla->q_lora_rank + mla->q_lora_rank + int64_t{mla->q_lora_rank} * heads * qk
                          : h * heads * qk;
    const int64_t kv = h * (int64_t{mla->kv_lora_rank} + mla->qk_rope_head_dim) + mla->kv_lora_rank +
                       int64_t{mla->kv_lora_rank} * heads * (mla->qk_nope_head_dim + mla->v_head_dim);
    attention = q + kv + int64_t{heads} * mla->v_head_dim * h;
  } else {
    attention = h * (heads + 2 * static_cast<int64_t>(kv_heads)) * head_dim +  // QKV
                static_cast<int64_t>(heads) * head_dim * h;                   // O
  }
  const int64_t norms = 2 * h;
  const int64_t mlp_copies = is_moe() ? experts + shared_experts : 1;
  const int64_t sparse_mlp = 3 * h * intermediate * mlp_copies + (is_moe() ? h * experts : 0);
  const int64_t dense_mlp = 3 * h * dense_intermediate;
  const int64_t layers_total = (attention + norms) * layers + sparse_mlp * (layers - dense_layers) +
                               dense_mlp * dense_layers;
  return EmbeddingParamCount() + layers_total + h;
}

int64_t ModelSpec::EmbeddingParamCount() const {
  const int64_t embedding = static_cast<int64_t>(vocab) * hidden;
  return tied_embeddings ? embedding : 2 * embedding;
}

// The embedding and lm_head in embedding_dtype (the weight dtype unless a
// quantised checkpoint keeps them in bf16), every other tensor in
// weight_dtype, and each quantisation group's scale and zero point. Norms
// and routers of quantised checkpoints stay in bf16 too; they are under a
// per mille of the weights and are counted in weight_dtype.
int64_t ModelSpec::WeightBytes() const {
  const int64_t embedding = EmbeddingParamCount();
  const int64_t routed = RoutedExpertParamCount();
  const int64_t rest = ParamCount() - embedding - routed;
  const double bytes = static_cast<double>(embedding) * DTypeBytes(embedding_dtype.value_or(weight_dtype)) +
                       static_cast<double>(rest) * WeightBytesPerParam() +
                       static_cast<double>(routed) * ExpertBytesPerParam();
  return std::llround(bytes);
}

double ModelSpec::WeightBytesPerParam() const {
  return DTypeBytes(weight_dtype) + (quant_group_size > 0 ? quant_group_bytes / quant_group_size : 0.0);
}

double ModelSpec::ExpertBytesPerParam() const {
  if (!expert_weight_dtype) return WeightBytesPerParam();
  return DTypeBytes(*expert_weight_dtype) +
         (expert_quant_group_size > 0 ? expert_quant_group_bytes / expert_quant_group_size : 0.0);
}

int64_t ModelSpec::RoutedExpertParamCount() const {
  if (!is_moe()) return 0;
  return 3 * int64_t{hidden} * intermediate * experts * moe_layers();
}

int64_t ModelSpec::KvBytesPerToken() const {
  if (kv_bytes_per_token_override) return *kv_bytes_per_token_override;
  if (mla) {
    const double latent = static_cast<double>(layers) * (mla->kv_lora_rank + mla->qk_rope_head_dim);
    return std::llround(latent * DTypeBytes(kv_dtype));
  }
  const double elements = 2.0 * layers * kv_heads * head_dim;  // K and V
  return std::llround(elements * DTypeBytes(kv_dtype));
}

ModelSpec::ExpertLoad ModelSpec::ExpectedExpertLoad(double tokens) const {
  FLEETSIM_CHECK(is_moe());
  const double e = experts, k = experts_top_k;
  ExpertLoad load;
  load.touched = e * (1.0 - std::pow(1.0 - k / e, tokens));
  load.rows_each = std::max(1.0, tokens * k / load.touched);
  return load;
}

}  // namespace fleetsim

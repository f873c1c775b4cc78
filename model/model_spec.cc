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
// Biases (Qwen2's q/k/v bias) and rotary tables are ignored: they are a
// fraction of a per mille of the total.
int64_t ModelSpec::ParamCount() const {
  const int64_t h = hidden;
  const int64_t embedding = static_cast<int64_t>(vocab) * h;
  const int64_t lm_head = tied_embeddings ? 0 : embedding;
  const int64_t qkv = h * (heads + 2 * static_cast<int64_t>(kv_heads)) * head_dim;
  const int64_t o = static_cast<int64_t>(heads) * head_dim * h;
  const int64_t mlp_copies = is_moe() ? experts : 1;
  const int64_t mlp = 3 * h * intermediate * mlp_copies;
  const int64_t router = is_moe() ? h * experts : 0;
  const int64_t norms = 2 * h;
  const int64_t per_layer = qkv + o + mlp + router + norms;
  return embedding + lm_head + per_layer * layers + h;
}

// Every tensor in weight_dtype. Real quantised checkpoints usually keep the
// embedding and norms in bf16; the difference is a few percent at most for
// the models in the zoo and is ignored.
int64_t ModelSpec::WeightBytes() const {
  return std::llround(static_cast<double>(ParamCount()) * DTypeBytes(weight_dtype));
}

int64_t ModelSpec::KvBytesPerToken() const {
  if (kv_bytes_per_token_override) return *kv_bytes_per_token_override;
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

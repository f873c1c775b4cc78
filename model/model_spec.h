// ModelSpec: a decoder-only transformer's architecture, as data (model/zoo/).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "model/dtype.h"

namespace fleetsim {

struct ModelSpec {
  std::string name;            // "Llama-3.1-8B"
  std::string source;          // where the figures come from (config.json URL)
  std::string hf_repo;         // the Hugging Face repository an engine loads ("" unknown): launch lines
  int layers = 0;
  int hidden = 0;              // model dimension
  int heads = 0;               // query heads
  int kv_heads = 0;            // key/value heads (GQA when < heads)
  int head_dim = 0;
  int intermediate = 0;        // MLP inner dimension (per expert for MoE)
  int vocab = 0;
  int max_model_len = 0;       // context limit: prompt + output tokens
  int experts = 0;             // 0 for dense models
  int experts_top_k = 0;       // experts per token (MoE only)
  bool tied_embeddings = false;  // lm_head shares the embedding matrix
  DType weight_dtype = DType::kBf16;
  DType kv_dtype = DType::kBf16;
  DType compute_dtype = DType::kBf16;
  // Overrides the derived KV bytes per token (latent-attention models such
  // as DeepSeek's MLA store a compressed KV the formula cannot derive).
  std::optional<int64_t> kv_bytes_per_token_override;

  // Multi-head latent attention (DeepSeek-V2/V3): queries and KV pass
  // through low-rank projections and the KV cache holds, per token and
  // layer, one latent of kv_lora_rank + qk_rope_head_dim elements shared by
  // all heads (576 for DeepSeek-V3) instead of K and V per KV head. Absent
  // for ordinary attention. `heads` still counts query heads; `head_dim` is
  // qk_nope_head_dim + qk_rope_head_dim.
  struct Mla {
    int q_lora_rank = 0;  // 0: queries projected directly from hidden
    int kv_lora_rank = 0;
    int qk_nope_head_dim = 0;
    int qk_rope_head_dim = 0;
    int v_head_dim = 0;
  };
  std::optional<Mla> mla;
  // DeepSeek-style MoE: the first `dense_layers` layers have one dense MLP
  // of `dense_intermediate` columns; every other layer has `experts` routed
  // experts plus `shared_experts` experts every token passes, all of
  // `intermediate` columns. 0, 0, 0 for Mixtral-style MoE and dense models.
  int dense_layers = 0;
  int dense_intermediate = 0;
  int shared_experts = 0;

  // Quantised checkpoints keep the embedding and lm_head unquantised
  // (AWQ, GPTQ, FP8 as vLLM loads them); unset means weight_dtype.
  std::optional<DType> embedding_dtype;
  // Qwen3's per-head RMSNorm of queries and keys before rotary (q_norm,
  // k_norm): two more elementwise kernels per layer.
  bool qk_norm = false;
  // Group-wise quantisation (AWQ, GPTQ, FP8 block scales): every
  // quant_group_size weights of the quantised matrices carry
  // quant_group_bytes of scale and zero point. 0, 0: none.
  int64_t quant_group_size = 0;
  double quant_group_bytes = 0;

  bool is_moe() const { return experts > 0; }
  // All weights, in bytes: embeddings and lm_head in embedding_dtype, the
  // rest in weight_dtype, plus the quantisation groups' scales.
  int64_t WeightBytes() const;
  // embedding + lm_head (unless tied), in parameters.
  int64_t EmbeddingParamCount() const;
  // K and V of one token across all layers, in bytes (MLA: the latent).
  int64_t KvBytesPerToken() const;
  int64_t ParamCount() const;

  // MoE: the experts a layer reads for `tokens` tokens each routed to
  // experts_top_k of `experts` uniformly, in expectation
  // E(1 - (1 - k/E)^T), and the rows each of them multiplies (their share
  // of the T·k routed rows, at least 1). The profile and fitted sources
  // and the calibrator's per-layer sums share it; the roofline evaluates the
  // same formula from a precomputed log. REQUIRES: is_moe().
  struct ExpertLoad {
    double touched = 0;
    double rows_each = 0;
  };
  ExpertLoad ExpectedExpertLoad(double tokens) const;
};

}  // namespace fleetsim

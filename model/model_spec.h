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
  // The precision the linear layers' products run in, whose tensor-core
  // peak bounds them: fp8 for FP8 checkpoints that quantise activations
  // too (W8A8: vLLM's fp8 method, DeepSeek-V3's block-scaled FP8 run by
  // DeepGEMM). Unset: compute_dtype (weight-only quantisation dequantises
  // to it). Activations stay compute_dtype in memory either way.
  std::optional<DType> gemm_dtype;
  DType GemmDType() const { return gemm_dtype.value_or(compute_dtype); }
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
  // Multi-token prediction modules (DeepSeek-V3's num_nextn_predict_layers):
  // each one decoder layer of the model's shape, shared embedding and
  // lm_head. Loaded only to speculate (speculative.method "mtp"), so not in
  // WeightBytes().
  int mtp_layers = 0;
  // Layers of the MoE kind (dense_layers lead the stack), 0 for a dense model.
  int moe_layers() const { return is_moe() ? layers - dense_layers : 0; }

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
  // Checkpoints that quantise the routed experts alone (gpt-oss: MXFP4
  // experts, fp4 values with one e8m0 scale byte per 32; attention, router,
  // embedding and lm_head in bf16): the experts' dtype and group scales.
  // Unset: weight_dtype and quant_group_*.
  std::optional<DType> expert_weight_dtype;
  int64_t expert_quant_group_size = 0;
  double expert_quant_group_bytes = 0;

  // Sliding-window attention (Mistral's sliding_window; gpt-oss's
  // layer_types, every other layer): sliding_layers of the layers attend to
  // the last sliding_window tokens only. 0, 0: every layer attends to the
  // whole context. Their KV is a window per running sequence (MemoryPlan's
  // sliding_window_reserve_bytes); at least one layer keeps the whole
  // context.
  int sliding_window = 0;
  int sliding_layers = 0;
  // Attention sinks (gpt-oss): one learned logit per head joins each
  // softmax's denominator. Read so the config is not refused; its cost (one
  // value per head and query) is nothing beside the attention's.
  bool attention_sinks = false;

  bool is_moe() const { return experts > 0; }
  // All weights, in bytes: embeddings and lm_head in embedding_dtype, the
  // routed experts in ExpertBytesPerParam, the rest in weight_dtype, plus
  // the quantisation groups' scales.
  int64_t WeightBytes() const;
  // Bytes per parameter of the quantised matrices (weight_dtype and its
  // group scales) and of the routed experts' (expert_weight_dtype and its
  // scales where set, else the same).
  double WeightBytesPerParam() const;
  double ExpertBytesPerParam() const;
  // The routed experts' matrices: 3 x hidden x intermediate x experts per
  // MoE layer (shared experts and routers not included).
  int64_t RoutedExpertParamCount() const;
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

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

  bool is_moe() const { return experts > 0; }
  // All weights, in bytes: embeddings, lm_head, every layer and expert.
  int64_t WeightBytes() const;
  // K and V of one token across all layers, in bytes.
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

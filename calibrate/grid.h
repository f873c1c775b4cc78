// The shapes `fleetsim calibrate` times for one model: what a replica of
// that model runs per GPU of each tensor-parallel degree, over the tokens
// per iteration, prompt lengths and decode batches a serving engine sees.
//
// Two sizes: "quick" (powers of two, a few minutes for an 8B model on one
// GPU) and "full" (also the midpoints 3·2^k, longer contexts, and generic
// GEMM shapes beyond the model's own so the fitted GEMM model has more
// weight shapes to transfer from). The grid is capped by the backend: the
// CPU backend's attention is a plain reference, so its prompt lengths and
// decode batches stop lower (the caps are in GridLimits).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "calibrate/measure.h"
#include "model/model_spec.h"

namespace fleetsim::calibrate {

enum class GridSize { kQuick, kFull };

// "quick" / "full"; anything else is a Status naming both.
Status ParseGridSize(const std::string& name, GridSize* out);
const char* GridSizeName(GridSize size);

// One matrix product of a layer, per GPU: y (tokens × n) = x (tokens × k) W.
struct LayerGemm {
  std::string name;  // "qkv", "o", "gate_up", "down", "router", "lm_head"
  int64_t n = 0, k = 0;
  // An MoE expert's product: it runs once per touched expert on the rows
  // routed to that expert, not on all tokens (calibrate.cc sums it with the
  // roofline's expected-touched-experts formula).
  bool expert = false;
};

// Everything one GPU of a tp shard runs per layer.
struct ShardShapes {
  int tp = 1;
  int64_t heads = 0, kv_heads = 0, head_dim = 0;  // attention heads on this GPU
  int64_t hidden = 0, intermediate = 0;            // intermediate: this GPU's MLP columns
  int64_t vocab = 0;
  std::vector<LayerGemm> gemms;  // per layer (qkv, o, gate_up, down)
  LayerGemm lm_head;             // once per iteration, rows = sampled sequences
};

struct GridLimits {
  int64_t max_tokens = 8192;        // largest tokens per iteration (GEMM rows)
  int64_t max_prefill_len = 8192;   // longest prompt timed for prefill attention
  int64_t max_decode_kv_tokens = int64_t{1} << 20;  // seqs × context cap for decode attention
};

// The limits for a backend: "cpu" stops at 1024 tokens, 512-token prompts
// and 2^15 decode KV tokens (its attention is a scalar reference); "cuda"
// at 8192 tokens, 8192-token prompts and 2^20 KV tokens.
GridLimits DefaultLimits(const std::string& backend);

struct Grid {
  GridSize size = GridSize::kQuick;
  kernels::DType dtype = kernels::DType::kBf16;
  std::vector<int64_t> tokens;      // GEMM rows and elementwise tokens, increasing
  std::vector<ShardShapes> shards;  // one per tp, in the order asked
  // Generic GEMM weights (n, k) beyond the model's own (full grid only).
  std::vector<std::pair<int64_t, int64_t>> extra_gemms;
  std::vector<PrefillShape> prefill;  // per tp shard's heads: see MakeGrid
  std::vector<DecodeShape> decode;
};

// Builds the grid for `model` at each tp of `tps` (>= 1, dividing the
// model's heads; each is checked and a bad one is a Status naming it).
// Attention shapes use the first tp's heads (attention cost is per head, so
// the fitted curve carries it to the other degrees).
Status MakeGrid(const ModelSpec& model, const std::vector<int>& tps, GridSize size, const GridLimits& limits,
                Grid* out);

}  // namespace fleetsim::calibrate

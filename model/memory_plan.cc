// How one GPU of a replica spends its memory.
//
// Weights are split evenly over the tp x pp GPUs of the shard. Tensor
// parallelism splits every matrix, the embedding and lm_head included (vLLM
// shards both by vocabulary rows); pipeline parallelism splits the layers.
// In a real pipeline the first stage also holds the embedding and the last
// the lm_head, so those stages carry slightly more than the even share; for
// the zoo's models that is under 2% of a stage and is ignored.
//
// Activation reserve, per GPU, for T = max_num_batched_tokens tokens in
// compute dtype (bytes c), with this GPU's heads h, KV heads g, MLP columns
// i (ShardDims) and top-k experts per token k (1 for a dense model):
//
//   layer  = T * c * (2*hidden           residual stream + normed input
//                     + (h + 2g)*head_dim QKV projection output
//                     + h*head_dim        attention output
//                     + 3*k*i             gate and up outputs + SiLU*up product
//                     + (k-1)*hidden)     MoE: tokens copied to their experts
//   logits = min(T, 256) * vocab * 4      fp32 logits of the sampled rows
//   fixed  = 1 GiB                        CUDA context, cuBLAS and attention
//                                         workspaces, CUDA graphs, NCCL buffers
//   reserve = layer + logits + fixed
//
// `layer` sums every tensor one layer holds at its peak rather than tracking
// lifetimes, so it slightly overstates the live set: a deliberate margin,
// since running out of activation memory kills a replica while a few hundred
// MiB less KV cache only costs some batch size. vLLM measures this term by
// running a dummy forward pass; the formula stands in for that measurement.
// 256 sampled rows is vLLM's default max_num_seqs on smaller GPUs (DOMAIN.md);
// the 1 GiB allowance is an estimate (vLLM logs show roughly 0.5 GiB of
// non-torch memory and a few hundred MiB of CUDA graphs on H100).
#include "model/memory_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "model/shard_dims.h"

namespace fleetsim {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr int64_t kFixedReserveBytes = int64_t{1} << 30;  // see the file comment
constexpr int64_t kSampledRowsReserved = 256;
constexpr int64_t kLogitBytes = 4;  // fp32

std::string Gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f GiB", static_cast<double>(bytes) / kGiB);
  return buf;
}

std::string ShardName(const ShardPlan& shard) {
  std::string s = "tp=" + std::to_string(shard.tp) + " pp=" + std::to_string(shard.pp);
  if (shard.ep != 1) s += " ep=" + std::to_string(shard.ep);
  if (shard.dp != 1) s += " dp=" + std::to_string(shard.dp);
  return s;
}

}  // namespace

Status CheckShardPlan(const ModelSpec& model, const ShardPlan& shard) {
  const std::string who = model.name + " with " + ShardName(shard) + ": ";
  if (shard.tp < 1 || shard.pp < 1 || shard.ep < 1 || shard.dp < 1) {
    return Status::Invalid(who + "tp, pp, ep and dp must be at least 1");
  }
  if (shard.ep > 1 && shard.ep != shard.tp * shard.dp) {
    return Status::Invalid(who + "ep must be tp x dp (the experts spread over every GPU of a stage)");
  }
  if (shard.dp > 1 && shard.ep == 1) {
    return Status::Invalid(who + "data-parallel attention (dp > 1) needs expert parallelism");
  }
  if (model.heads % shard.tp != 0) {
    return Status::Infeasible(who + "tp must divide the " + std::to_string(model.heads) +
                           " attention heads");
  }
  if (model.kv_heads % shard.tp != 0 && shard.tp % model.kv_heads != 0) {
    return Status::Infeasible(who + "tp and the " + std::to_string(model.kv_heads) +
                           " KV heads must divide one another");
  }
  if (shard.pp > model.layers) {
    return Status::Infeasible(who + "pp exceeds the " + std::to_string(model.layers) + " layers");
  }
  if (!model.is_moe() && shard.ep != 1) {
    return Status::Invalid(who + "ep must be 1 for a dense model");
  }
  if (model.is_moe() && model.experts % shard.ep != 0) {
    return Status::Infeasible(who + "ep must divide the " + std::to_string(model.experts) + " experts");
  }
  return Status::Ok();
}

int64_t ExpertWeightBytes(const ModelSpec& model) {
  if (!model.is_moe()) return 0;
  return std::llround(static_cast<double>(model.RoutedExpertParamCount()) * model.ExpertBytesPerParam());
}

int64_t KvBytesPerTokenPerGpu(const ModelSpec& model, const ShardPlan& shard) {
  const ShardDims d = LocalDims(model, shard);
  if (model.kv_bytes_per_token_override) {
    const int64_t whole = *model.kv_bytes_per_token_override;
    return (whole * d.layers + model.layers - 1) / model.layers;
  }
  if (model.mla) {
    // One latent per token and layer, shared by all heads: every
    // tensor-parallel GPU keeps it whole (as vLLM's MLA backends do).
    const double latent = static_cast<double>(d.layers) * (model.mla->kv_lora_rank + model.mla->qk_rope_head_dim);
    return std::llround(latent * DTypeBytes(model.kv_dtype));
  }
  const double elements = 2.0 * d.layers * d.kv_heads * model.head_dim;  // K and V
  return std::llround(elements * DTypeBytes(model.kv_dtype));
}

int64_t ActivationReserveBytes(const ModelSpec& model, const ShardPlan& shard,
                               int64_t max_num_batched_tokens) {
  const ShardDims d = LocalDims(model, shard);
  const int64_t k = model.is_moe() ? model.experts_top_k : 1;
  const int64_t per_token_elements =
      2 * int64_t{model.hidden} + (int64_t{d.heads} + 2 * d.kv_heads) * model.head_dim +
      int64_t{d.heads} * model.head_dim + 3 * k * d.intermediate + (k - 1) * model.hidden;
  const double layer =
      static_cast<double>(max_num_batched_tokens) * per_token_elements * DTypeBytes(model.compute_dtype);
  const int64_t logits =
      std::min(max_num_batched_tokens, kSampledRowsReserved) * model.vocab * kLogitBytes;
  return std::llround(layer) + logits + kFixedReserveBytes;
}

Status PlanMemory(const ModelSpec& model, const GpuSpec& gpu, const ShardPlan& shard,
                  const MemoryOptions& options, MemoryPlan* out) {
  FLEETSIM_RETURN_IF_ERROR(CheckShardPlan(model, shard));
  if (!(options.gpu_memory_utilization > 0 && options.gpu_memory_utilization <= 1)) {
    return Status::Invalid("gpu_memory_utilization: expected a fraction in (0, 1]");
  }
  if (options.block_size < 1) return Status::Invalid("block_size: expected a positive integer");
  if (options.max_num_batched_tokens < 1) {
    return Status::Invalid("max_num_batched_tokens: expected a positive integer");
  }

  MemoryPlan plan;
  plan.block_size = options.block_size;
  plan.budget_bytes_per_gpu = static_cast<int64_t>(
      static_cast<double>(gpu.memory_bytes()) * options.gpu_memory_utilization);
  const int64_t gpus = shard.gpus();
  if (shard.ep > 1) {
    // Experts split ep ways; everything else tp ways (each data-parallel
    // rank holds its own copy), and both pp ways.
    const int64_t expert = ExpertWeightBytes(model);
    const int64_t rest = model.WeightBytes() - expert;
    // Redundant copies (an EPLB balancer's) add their weights across the group.
    const int64_t copies = std::llround(static_cast<double>(expert) *
                                        (1.0 + static_cast<double>(options.redundant_experts) / model.experts));
    const int64_t per_stage_gpu = (copies + shard.ep - 1) / shard.ep + (rest + shard.tp - 1) / shard.tp;
    plan.weight_bytes_per_gpu = (per_stage_gpu + shard.pp - 1) / shard.pp + options.proposer_weight_bytes_per_gpu;
  } else {
    plan.weight_bytes_per_gpu = (model.WeightBytes() + gpus - 1) / gpus + options.proposer_weight_bytes_per_gpu;
  }
  plan.activation_reserve_bytes =
      ActivationReserveBytes(model, shard, options.max_num_batched_tokens);
  const int64_t all_layers_kv = KvBytesPerTokenPerGpu(model, shard);
  const int64_t proposer_kv = options.proposer_kv_bytes_per_token_per_gpu;
  // Sliding-window layers: their share of a token's KV, and the window + one
  // block of it a running sequence keeps at most.
  int64_t sliding = 0, window_kv_per_seq = 0;
  if (model.sliding_layers > 0) {
    sliding = std::llround(static_cast<double>(all_layers_kv) * model.sliding_layers / model.layers);
    const int64_t window_tokens = std::min<int64_t>(model.sliding_window, model.max_model_len) + options.block_size;
    window_kv_per_seq = window_tokens * sliding;
  }
  plan.kv_bytes_per_token_per_gpu = all_layers_kv - sliding + proposer_kv;

  // The engine refuses to start unless one sequence of the full context fits.
  const int64_t one_sequence_kv = int64_t{model.max_model_len} * plan.kv_bytes_per_token_per_gpu + window_kv_per_seq;
  const int64_t needed =
      plan.weight_bytes_per_gpu + one_sequence_kv + plan.activation_reserve_bytes;
  if (needed > plan.budget_bytes_per_gpu) {
    char util[16];
    std::snprintf(util, sizeof(util), "%.2f", options.gpu_memory_utilization);
    return Status::Infeasible(
        model.name + " does not fit on " + gpu.name + " with " + ShardName(shard) + ": needs " +
        Gib(needed) + " per GPU (weights " + Gib(plan.weight_bytes_per_gpu) + " + KV of one " +
        std::to_string(model.max_model_len) + "-token sequence " + Gib(one_sequence_kv) +
        " + activation reserve " + Gib(plan.activation_reserve_bytes) + ") but the budget is " +
        Gib(plan.budget_bytes_per_gpu) + " (" + std::to_string(gpu.memory_mib) + " MiB x " + util +
        " gpu_memory_utilization)");
  }
  const int64_t free_bytes = plan.budget_bytes_per_gpu - plan.weight_bytes_per_gpu - plan.activation_reserve_bytes;
  const int64_t block = options.block_size;
  plan.kv_bytes_per_gpu = free_bytes;
  if (sliding > 0) {
    // Two accountings, each an upper bound on what the sliding layers
    // hold: every token at every layer (exact while contexts stay within
    // the window), or the full layers per token beside a window for each of
    // max_num_seqs sequences (exact when every one passes it). The cache
    // holds at least what the larger of the two token counts says: a small
    // window (gpt-oss's 128) takes the second, a large one for many
    // sequences (Llama 4's 8192-token chunks) the first.
    const int64_t reserve = options.max_num_seqs * window_kv_per_seq;
    const int64_t windowed_tokens = std::max<int64_t>(0, free_bytes - reserve) / plan.kv_bytes_per_token_per_gpu;
    const int64_t whole_tokens = free_bytes / (all_layers_kv + proposer_kv);
    if (windowed_tokens >= whole_tokens) {
      plan.sliding_window_reserve_bytes = reserve;
      plan.kv_bytes_per_gpu = free_bytes - reserve;
    } else {
      plan.kv_bytes_per_token_per_gpu = all_layers_kv + proposer_kv;
    }
  }
  // Each data-parallel rank keeps its own requests' KV: dp caches of this size.
  plan.kv_blocks = shard.dp * (plan.kv_bytes_per_gpu / (block * plan.kv_bytes_per_token_per_gpu));
  if (plan.kv_blocks == 0)
    return Status::Infeasible(model.name + " on " + gpu.name + " with " + ShardName(shard) + ": " +
                              Gib(plan.kv_bytes_per_gpu) + " per GPU left for the KV cache holds no block of " +
                              std::to_string(block) + " tokens");
  *out = plan;
  return Status::Ok();
}

}  // namespace fleetsim

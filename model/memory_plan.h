// MemoryPlan: how a replica's GPU memory divides into weights, activation
// reserve and KV cache, and whether the model fits at all.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "model/hardware.h"
#include "model/model_spec.h"
#include "model/shard_plan.h"

namespace fleetsim {

struct MemoryOptions {
  double gpu_memory_utilization = 0.9;  // fraction of usable memory the engine may take (vLLM's flag)
  int block_size = 16;                  // tokens per KV block
  int64_t max_num_batched_tokens = 8192;  // sizes the activation reserve
  // A speculative proposer's share of each GPU (a draft model, or an EAGLE
  // head): its weights, and its KV per token, kept for every token the
  // target keeps (vLLM allocates the proposer's KV layers beside the
  // target's in one cache).
  int64_t proposer_weight_bytes_per_gpu = 0;
  int64_t proposer_kv_bytes_per_token_per_gpu = 0;
  // The engine's running-sequence limit: a model's sliding-window layers
  // keep a window of KV per running sequence (see MemoryPlan).
  int64_t max_num_seqs = 256;
  // Expert copies a balancer adds across the ep GPUs (RooflineOptions).
  int redundant_experts = 0;
};

struct MemoryPlan {
  int64_t budget_bytes_per_gpu = 0;        // usable memory x utilization
  int64_t weight_bytes_per_gpu = 0;        // this GPU's shard of the weights
  int64_t activation_reserve_bytes = 0;    // per GPU, see ActivationReserveBytes
  // This GPU's share of one token's KV in the layers that keep the whole
  // context (all layers but sliding-window ones).
  int64_t kv_bytes_per_token_per_gpu = 0;
  // Sliding-window layers (ModelSpec::sliding_layers) keep at most window +
  // one block of tokens per sequence, as vLLM's hybrid KV cache manager and
  // SGLang's SWA pool allocate them: reserved for max_num_seqs sequences,
  // beside the blocks of the full layers; or, where that leaves fewer
  // tokens (a large window), 0, with every layer's KV counted per token
  // (kv_bytes_per_token_per_gpu then holds all layers).
  int64_t sliding_window_reserve_bytes = 0;
  int64_t kv_bytes_per_gpu = 0;            // what is left for the KV cache
  // Blocks per replica: each GPU of a stage holds its share of every block,
  // and each data-parallel rank (dp) its own blocks.
  int64_t kv_blocks = 0;
  int block_size = 0;                      // tokens per KV block (copied from MemoryOptions)
  int64_t kv_tokens() const { return kv_blocks * block_size; }
};

// Whether `shard` can split `model`: tp, pp, ep >= 1; tp divides heads;
// kv_heads and tp divide one another (KV heads are split, or replicated when
// tp > kv_heads); pp <= layers; ep is 1 for a dense model and divides
// experts for MoE. The error names the model and the offending figure.
Status CheckShardPlan(const ModelSpec& model, const ShardPlan& shard);

// The routed experts' weights of every layer, in bytes (0 for a dense
// model): what expert parallelism splits ep ways.
int64_t ExpertWeightBytes(const ModelSpec& model);

// This GPU's share of one token's KV, in bytes: K and V of the layers of the
// largest pipeline stage, for this GPU's KV heads (ShardDims). A model with
// kv_bytes_per_token_override or MLA (latent attention) keeps its compressed
// KV whole on every tensor-parallel GPU, so only pp divides it.
// REQUIRES: CheckShardPlan(model, shard).ok().
int64_t KvBytesPerTokenPerGpu(const ModelSpec& model, const ShardPlan& shard);

// Peak activation memory of one forward pass over max_num_batched_tokens
// tokens on one GPU of the shard, in bytes. See memory_plan.cc for the formula.
int64_t ActivationReserveBytes(const ModelSpec& model, const ShardPlan& shard,
                               int64_t max_num_batched_tokens);

// Computes the plan. Fails when CheckShardPlan fails, when an option is out
// of range, and, with both figures in the message, when weights
// + KV for one max_model_len sequence + activation reserve exceed the budget
// of one GPU of the shard.
Status PlanMemory(const ModelSpec& model, const GpuSpec& gpu, const ShardPlan& shard,
                  const MemoryOptions& options, MemoryPlan* out);

}  // namespace fleetsim

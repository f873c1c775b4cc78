// The per-GPU dimensions of one layer under a ShardPlan, shared by the
// memory plan, the roofline model and the calibrator's shape grid
// (calibrate/grid.h) so all three split a model the same way.
#pragma once

#include "model/model_spec.h"
#include "model/shard_plan.h"

namespace fleetsim {

struct ShardDims {
  int heads = 0;         // query heads on this GPU: heads / tp
  // KV heads on this GPU: kv_heads / tp, or 1 when tp > kv_heads (each KV
  // head is then replicated on tp / kv_heads GPUs, as vLLM does).
  int kv_heads = 0;
  int intermediate = 0;  // MLP columns on this GPU (per expert): ceil(intermediate / tp)
  int layers = 0;        // layers of the largest pipeline stage: ceil(layers / pp)
};

// REQUIRES: CheckShardPlan(model, shard).ok() (memory_plan.h).
inline ShardDims LocalDims(const ModelSpec& model, const ShardPlan& shard) {
  ShardDims d;
  d.heads = model.heads / shard.tp;
  d.kv_heads = (model.kv_heads + shard.tp - 1) / shard.tp;
  d.intermediate = (model.intermediate + shard.tp - 1) / shard.tp;
  d.layers = shard.stage_layers > 0 ? shard.stage_layers : (model.layers + shard.pp - 1) / shard.pp;
  return d;
}

}  // namespace fleetsim

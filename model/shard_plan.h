// ShardPlan: how one replica splits its model over GPUs.
#pragma once

namespace fleetsim {

struct ShardPlan {
  int tp = 1;  // tensor parallel: heads and MLP columns split tp ways
  int pp = 1;  // pipeline parallel: layers split pp ways
  int ep = 1;  // expert parallel (MoE)
  // Layers of the largest pipeline stage; 0: ceil(layers / pp), what
  // vLLM's default split gives.
  int stage_layers = 0;
  int gpus() const { return tp * pp; }
};

}  // namespace fleetsim

// ShardPlan: how one replica splits its model over GPUs.
#pragma once

namespace fleetsim {

struct ShardPlan {
  int tp = 1;  // tensor parallel: heads and MLP columns split tp ways
  int pp = 1;  // pipeline parallel: layers split pp ways
  // Expert parallel (MoE): each expert whole on one of ep GPUs, E / ep of
  // them per GPU, as vLLM's --enable-expert-parallel places them over its
  // tp x dp GPUs. ep = tp x dp when ep > 1.
  int ep = 1;
  // Data-parallel attention ranks (with ep > 1; vLLM's --data-parallel-size):
  // each rank of tp GPUs runs attention and the dense layers for its share
  // of the batch, and the MoE layers exchange tokens between ranks by
  // all-to-all. A replica then runs tp x dp x pp GPUs.
  int dp = 1;
  // Layers of the largest pipeline stage; 0: ceil(layers / pp), what
  // vLLM's default split gives.
  int stage_layers = 0;
  int gpus() const { return tp * dp * pp; }
};

}  // namespace fleetsim

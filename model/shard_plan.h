// ShardPlan: how one replica splits its model over GPUs.
#pragma once

namespace fleetsim {

struct ShardPlan {
  int tp = 1;  // tensor parallel: heads and MLP columns split tp ways
  int pp = 1;  // pipeline parallel: layers split pp ways
  int ep = 1;  // expert parallel (MoE)
  int gpus() const { return tp * pp; }
};

}  // namespace fleetsim

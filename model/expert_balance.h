// Expert-parallel load balance: how much busier than the mean the busiest
// GPU of an expert-parallel group is, given how often each expert is
// routed to, under static placement or an EPLB-style balancer with
// redundant experts (deepseek-ai/EPLB; DeepSeek-V3 section 3.4: "redundant
// experts", 32 of them in the prefill of their inference system). The
// roofline waits for that GPU (RooflineOptions::expert_load_skew).
#pragma once

#include <optional>
#include <vector>

namespace fleetsim {

struct ExpertBalance {
  double skew = 1;       // busiest GPU's routed tokens over the mean (>= 1)
  int slots_per_gpu = 0;  // expert copies each GPU holds: (experts + redundant) / ep
};

// `loads`: each expert's share of the routed tokens, any positive scale
// (a router log's counts, or ZipfLoads). Without a balancer (`redundant`
// unset) experts [g E/ep, (g+1) E/ep) sit on GPU g, as vLLM and SGLang place
// them by default. With one, `*redundant` extra copies go one at a time to
// the expert with the highest load per copy (its load then splits evenly
// over its copies), and the copies are packed, heaviest first, onto the
// least-loaded GPU with a free slot, every GPU taking slots_per_gpu.
// REQUIRES: ep >= 1 divides loads.size() + redundant (and loads.size()
// when redundant is unset); each load >= 0, their sum > 0.
ExpertBalance BalanceExperts(const std::vector<double>& loads, int ep, std::optional<int> redundant);

// Expert popularity falling as a power of its rank, load_i = 1 / (i+1)^s
// (s = 0: uniform), shuffled over expert ids by a fixed permutation so that
// a static placement does not find the hottest experts side by side.
std::vector<double> ZipfLoads(int experts, double s);

}  // namespace fleetsim

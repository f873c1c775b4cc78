#include "model/expert_balance.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <queue>

#include "base/status.h"

namespace fleetsim {

ExpertBalance BalanceExperts(const std::vector<double>& loads, int ep, std::optional<int> redundant) {
  const int experts = static_cast<int>(loads.size());
  const int copies = experts + redundant.value_or(0);
  FLEETSIM_CHECK(ep >= 1 && experts >= 1 && copies % ep == 0 && (!redundant || *redundant >= 0));
  const double total = std::accumulate(loads.begin(), loads.end(), 0.0);
  FLEETSIM_CHECK(total > 0);
  ExpertBalance out;
  out.slots_per_gpu = copies / ep;
  const double mean = total / ep;
  std::vector<double> gpu(ep, 0.0);
  if (!redundant) {
    for (int e = 0; e < experts; ++e) gpu[e / out.slots_per_gpu] += loads[e];
    out.skew = *std::max_element(gpu.begin(), gpu.end()) / mean;
    return out;
  }
  // Replicate: each extra copy to the expert with the most load per copy
  // (ties to the lower id, for a deterministic result).
  std::vector<int> replicas(experts, 1);
  auto per_copy = [&](int e) { return loads[e] / replicas[e]; };
  auto lighter = [&](int a, int b) { return per_copy(a) != per_copy(b) ? per_copy(a) < per_copy(b) : a > b; };
  std::priority_queue<int, std::vector<int>, decltype(lighter)> heaviest(lighter);
  for (int e = 0; e < experts; ++e) heaviest.push(e);
  for (int r = 0; r < *redundant; ++r) {
    const int e = heaviest.top();
    heaviest.pop();
    ++replicas[e];
    heaviest.push(e);
  }
  // Pack: heaviest copy first onto the least-loaded GPU with a free slot.
  std::vector<std::pair<double, int>> items;  // (load, expert)
  items.reserve(copies);
  for (int e = 0; e < experts; ++e)
    for (int c = 0; c < replicas[e]; ++c) items.emplace_back(per_copy(e), e);
  std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<int> used(ep, 0);
  for (const auto& [load, expert] : items) {
    int best = -1;
    for (int g = 0; g < ep; ++g)
      if (used[g] < out.slots_per_gpu && (best < 0 || gpu[g] < gpu[best])) best = g;
    gpu[best] += load;
    ++used[best];
  }
  out.skew = *std::max_element(gpu.begin(), gpu.end()) / mean;
  return out;
}

std::vector<double> ZipfLoads(int experts, double s) {
  FLEETSIM_CHECK(experts >= 1 && s >= 0);
  // A fixed permutation of the ranks: a multiplicative step coprime with
  // the count (the first of 37, 41, 43, ... that is).
  int64_t step = 37;
  while (std::gcd(step, static_cast<int64_t>(experts)) != 1) step += 2;
  std::vector<double> loads(experts);
  for (int rank = 0; rank < experts; ++rank)
    loads[(rank * step) % experts] = 1.0 / std::pow(rank + 1.0, s);
  return loads;
}

}  // namespace fleetsim

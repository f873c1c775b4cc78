// Percentiles of a sample by linear interpolation between order
// statistics: numpy's default (np.percentile, method "linear"), so figures
// fleetsim computes line up with those vLLM's and GenAI-Perf's benchmark
// clients print from the same sample.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace fleetsim {

// REQUIRES: `sorted` is non-empty and ascending; 0 <= q <= 1.
inline double Percentile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

// The figures a latency table shows of a sample.
struct SampleSummary {
  double mean = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, max = 0;
};

// REQUIRES: `v` is non-empty. Sorts it.
inline SampleSummary Summarize(std::vector<double>* v) {
  std::sort(v->begin(), v->end());
  double sum = 0;
  for (double x : *v) sum += x;
  SampleSummary s;
  s.mean = sum / static_cast<double>(v->size());
  s.p50 = Percentile(*v, 0.50);
  s.p90 = Percentile(*v, 0.90);
  s.p95 = Percentile(*v, 0.95);
  s.p99 = Percentile(*v, 0.99);
  s.max = v->back();
  return s;
}

}  // namespace fleetsim

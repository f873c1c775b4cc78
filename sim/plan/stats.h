// Replication statistics: the mean of R per-run values and its two-sided
// 95% Student-t interval, mean ± t(0.975, R-1)·s/√R.
#pragma once

#include <vector>

namespace fleetsim {

// t(0.975, df): a table for df <= 30, a Cornish-Fisher expansion beyond
// (within 1e-4 of the exact quantile there).
double StudentT975(int df);

struct Interval {
  int n = 0;              // finite values used
  double mean = 0;
  double half_width = 0;  // NaN when n < 2
  double lo = 0, hi = 0;  // mean ∓ half_width; both the mean when n < 2
};
// Over the finite values of `values`; n = 0 (mean NaN) when there are none.
Interval MeanInterval(const std::vector<double>& values);

}  // namespace fleetsim

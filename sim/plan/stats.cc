#include "sim/plan/stats.h"

#include <cmath>

namespace fleetsim {

double StudentT975(int df) {
  // Two-sided 95% quantiles of Student's t, df = 1..30 (any statistics table).
  static const double kTable[31] = {0,      12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646,
                                    2.3060, 2.2622,  2.2281, 2.2010, 2.1788, 2.1604, 2.1448, 2.1314,
                                    2.1199, 2.1098,  2.1009, 2.0930, 2.0860, 2.0796, 2.0739, 2.0687,
                                    2.0639, 2.0595,  2.0555, 2.0518, 2.0484, 2.0452, 2.0423};
  if (df < 1) return std::nan("");
  if (df <= 30) return kTable[df];
  const double z = 1.959963984540054, n = df;
  const double z3 = z * z * z, z5 = z3 * z * z;
  return z + (z3 + z) / (4 * n) + (5 * z5 + 16 * z3 + 3 * z) / (96 * n * n);
}

Interval MeanInterval(const std::vector<double>& values) {
  Interval iv;
  double sum = 0;
  for (double v : values)
    if (std::isfinite(v)) {
      sum += v;
      ++iv.n;
    }
  if (iv.n == 0) {
    iv.mean = iv.lo = iv.hi = iv.half_width = std::nan("");
    return iv;
  }
  iv.mean = sum / iv.n;
  iv.lo = iv.hi = iv.mean;
  iv.half_width = std::nan("");
  if (iv.n < 2) return iv;
  double ss = 0;
  for (double v : values)
    if (std::isfinite(v)) ss += (v - iv.mean) * (v - iv.mean);
  const double s = std::sqrt(ss / (iv.n - 1));
  iv.half_width = StudentT975(iv.n - 1) * s / std::sqrt(static_cast<double>(iv.n));
  iv.lo = iv.mean - iv.half_width;
  iv.hi = iv.mean + iv.half_width;
  return iv;
}

}  // namespace fleetsim

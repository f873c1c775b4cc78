// FittedCurve: an operator's time fitted over many measured shapes, so that
// it can be evaluated at shapes nobody measured (another model's GEMMs,
// another hidden size). Written by the calibrator's fitter
// (calibrate/fit.h), stored in profiles (model/profile.h, "fits"), read by
// ProfilePerfModel as the "fitted" source.
//
// The form: an operator's time is a fixed cost plus its "scale" (the size
// of the operand that does not change the kernel's efficiency, e.g. N·K for
// a GEMM's weight) times a per-unit cost g that depends on its "size" (the
// dimension that does, e.g. the M rows of a GEMM):
//
//   ns(size, scale) = fixed_ns + scale · g(size)
//
// g is piecewise-linear in size through (knots[i], values[i]), with knots
// placed log-spaced over the measured sizes:
//   - below the first knot g is the first knot's value (fewer rows than
//     measured cost no less per unit: the kernel is memory-bound there);
//   - above the last knot g grows in proportion to size,
//     g(s) = values.back() · s / knots.back(): the roofline-shaped tail,
//     where the work (and the time) grows linearly with the size.
//
// An optional per-count term keeps apart two things a single size would
// merge: decode attention reads `size` = KV tokens, but also does work per
// sequence (loading its query, writing its output, merging split-KV
// partials), so 64 sequences of 64 tokens cost more than 1 of 4096:
//
//   ns(size, scale, count) = fixed_ns + scale · (per_count · count + g(size))
//
// With count_var empty the form has no such term (per_count is 0).
//
// "profile" versus "fitted": a profile curve (ProfileCurve) replays the
// medians measured for one model's exact shapes and is only used for that
// model; a fitted curve is a model over all measured shapes of a kind, used
// for any shape, and carries its cross-validated error.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace fleetsim {

struct FittedCurve {
  std::string size_var;    // what "size" is, e.g. "m" (documentation only)
  std::string scale_var;   // what "scale" is, e.g. "n*k"
  double fixed_ns = 0;     // >= 0
  std::vector<double> knots;   // sizes, strictly increasing, > 0
  std::vector<double> values;  // g at each knot, ns per unit of scale, >= 0
  std::string count_var;       // what "count" is, e.g. "seqs"; "" when the form has no per-count term
  double per_count = 0;        // ns per count per unit of scale, >= 0; 0 when count_var is ""
  // Cross-validation of the fit (calibrate/fit.h): relative errors
  // |predicted - measured| / measured on held-out samples.
  std::string cv_method;         // e.g. "leave-one-shape-out over 12 shapes"
  double cv_median_rel_error = 0;
  double cv_p90_rel_error = 0;
  int samples = 0;               // measurements fitted

  bool empty() const { return knots.empty(); }

  // O(log knots), no allocation. REQUIRES: !empty().
  double PerUnit(double size) const {
    if (size <= knots.front()) return values.front();
    if (size >= knots.back()) return values.back() * size / knots.back();
    const size_t hi = static_cast<size_t>(std::upper_bound(knots.begin(), knots.end(), size) - knots.begin());
    const size_t lo = hi - 1;
    const double t = (size - knots[lo]) / (knots[hi] - knots[lo]);
    return values[lo] + t * (values[hi] - values[lo]);
  }
  // `count` matters only for a curve with a per-count term (count_var set).
  double Predict(double size, double scale, double count = 0) const {
    return fixed_ns + scale * (per_count * count + PerUnit(size));
  }

  bool operator==(const FittedCurve& o) const {
    return size_var == o.size_var && scale_var == o.scale_var && fixed_ns == o.fixed_ns && knots == o.knots &&
           values == o.values && count_var == o.count_var && per_count == o.per_count && cv_method == o.cv_method &&
           cv_median_rel_error == o.cv_median_rel_error && cv_p90_rel_error == o.cv_p90_rel_error &&
           samples == o.samples;
  }
};

}  // namespace fleetsim

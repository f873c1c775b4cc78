// Fitting measured kernel times to a FittedCurve (model/fitted_curve.h),
// and cross-validating the fit, so that a profile can time shapes nobody
// measured and say how wrong it expects to be.
//
// The form (see fitted_curve.h): ns = fixed_ns + scale · g(size), g
// piecewise-linear in size through knots, constant below the first knot,
// proportional to size above the last (the roofline tail). For a GEMM,
// size = m (rows: they change the kernel's efficiency) and scale = n·k (the
// weight: the work per row grows with it and the efficiency hardly does).
// Optionally (FitOptions::count_var) a per-count term fitted jointly,
// ns = fixed_ns + scale · (per_count · count + g(size)): for decode
// attention size = KV tokens and count = sequences, so that a batch of many
// short contexts and one long context of the same KV tokens are told apart.
//
// Method:
//   - Knots: the distinct measured sizes, all of them when there are at
//     most max_knots; otherwise max_knots targets log-spaced from the
//     smallest to the largest size, each snapped to the measured size
//     nearest in log (duplicates dropped). A knot therefore always sits on
//     measured data, so no knot's coefficient is unconstrained.
//   - Least squares with Eigen: one row per sample, unknowns fixed_ns and
//     g at each knot (the model is linear in them), every row divided by
//     the measured ns so that the fit minimises relative error (plus
//     per_count when the form has it); a decode
//     GEMM of 30 µs matters as much as a prefill GEMM of 30 ms. Columns are
//     scaled to unit norm and solved by a rank-revealing complete
//     orthogonal decomposition: when the data cannot separate fixed_ns from
//     g (one scale only), the minimum-norm solution is taken.
//   - Non-negativity (fixed_ns >= 0, values >= 0) by an active-set loop:
//     while a coefficient is negative, the most negative (compared in the
//     unit-norm column scaling, i.e. by its contribution to the relative
//     residual; ties to the lower index) is clamped to 0, its column
//     dropped, and the rest refitted. Columns never come back, so the loop
//     ends after at most (knots + 1) solves.
//   - Cross-validation: with >= 3 distinct groups, leave-one-group-out (each
//     group predicted by a fit on all the others: the error for a shape the
//     calibration never saw, e.g. another model's GEMM weight); otherwise
//     k-fold over sizes (fold f holds out the f-th, (f+folds)-th, ... of the
//     sorted distinct sizes), which measures interpolation between knots.
//
// Determinism: samples are sorted into a canonical order first, so the same
// samples in any order give bit-identical results. No randomness.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "model/fitted_curve.h"

namespace fleetsim::calibrate {

// One measurement. size and scale are in the units of the operator's shape
// variables (e.g. rows and elements), ns its measured (median) time.
struct FitSample {
  double size = 0;   // > 0, finite: the efficiency-changing dimension, e.g. m
  double scale = 0;  // > 0, finite: the work multiplier, e.g. n·k
  double ns = 0;     // > 0, finite: measured time, nanoseconds
  // Shape family (e.g. one (n, k) GEMM weight): samples of one group are held
  // out together by leave-one-group-out cross-validation. Any int; only
  // equality matters.
  int group = 0;
  // >= 0, finite: the count of the per-count term (e.g. sequences), used
  // only when FitOptions::count_var is set; must be 0 otherwise.
  double count = 0;
};

struct FitOptions {
  // Most knots of g. More knots follow the measured curve more closely
  // (down to one per measured size) but fit noise and cost one unknown
  // each. >= 1.
  int max_knots = 12;
  // Folds of the k-fold over sizes used when there are fewer than
  // min_groups_for_group_cv groups: fold f holds out every size_folds-th
  // distinct size starting at the f-th. >= 2.
  int size_folds = 4;
  // Distinct groups needed for leave-one-group-out cross-validation. >= 2
  // (with 2 groups each fold extrapolates from a single shape, which says
  // little; hence the default 3).
  int min_groups_for_group_cv = 3;
  // Name of FitSample::count (e.g. "seqs"). Non-empty: the per-count term
  // is fitted jointly with the rest (one more unknown, non-negative like the
  // others). Empty: the form has none, and every count must be 0.
  std::string count_var;
};

// Fits *out (every field is set: size_var, scale_var, count_var, fixed_ns,
// knots, values, per_count, cv_*, samples) to `samples` as described above;
// size_var and scale_var name the variables (documentation only, e.g. "m",
// "n*k"), count_var is options.count_var.
// Errors (Status::Invalid, *out untouched): no samples; a size, scale or ns
// that is not finite and > 0, or a count that is not finite and >= 0 (or
// not 0 without count_var) (the message names the sample index and field);
// options out of range.
Status FitScaled(const std::vector<FitSample>& samples, const FitOptions& options, const std::string& size_var,
                 const std::string& scale_var, FittedCurve* out);

// One held-out prediction of the cross-validation.
struct HeldOut {
  double measured_ns = 0;
  double predicted_ns = 0;  // by a fit that did not see this sample's fold
  int group = 0;
};

// Runs the cross-validation FitScaled uses and returns every held-out
// prediction (one per sample in a fold; samples sorted by group, then size,
// scale, ns) in *out and a one-line description of the method in *method,
// e.g. "leave-one-group-out over 6 groups". With fewer than 2 distinct sizes
// and too few groups no fold can be formed: *out is empty and *method says
// so. Same errors as FitScaled.
Status CrossValidate(const std::vector<FitSample>& samples, const FitOptions& options, std::vector<HeldOut>* out,
                     std::string* method);

// The q-quantile (0 <= q <= 1) of `sorted` by linear interpolation between
// order statistics, as the cross-validation summarises its errors.
// REQUIRES: sorted ascending, non-empty.
double Quantile(const std::vector<double>& sorted, double q);

}  // namespace fleetsim::calibrate

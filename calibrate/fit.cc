// The fitter of calibrate/fit.h. The header states the method; this file
// keeps to it and adds only the numerical details.
#include "calibrate/fit.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace fleetsim::calibrate {
namespace {

// Relative pivot threshold of the rank-revealing solve: with unit-norm
// columns, a direction whose pivot is below 1e-10 of the largest is treated
// as not determined by the data (e.g. fixed_ns when every sample has one
// scale, where fixed_ns and a shift of g are the same column up to
// rounding).
constexpr double kRankThreshold = 1e-10;

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

Status Validate(const std::vector<FitSample>& samples, const FitOptions& options) {
  if (options.max_knots < 1) {
    return Status::Invalid("fit: max_knots must be >= 1, got " + std::to_string(options.max_knots));
  }
  if (options.size_folds < 2) {
    return Status::Invalid("fit: size_folds must be >= 2, got " + std::to_string(options.size_folds));
  }
  if (options.min_groups_for_group_cv < 2) {
    return Status::Invalid("fit: min_groups_for_group_cv must be >= 2, got " +
                           std::to_string(options.min_groups_for_group_cv));
  }
  if (samples.empty()) return Status::Invalid("fit: no samples");
  for (size_t i = 0; i < samples.size(); ++i) {
    const FitSample& s = samples[i];
    const std::pair<const char*, double> fields[] = {{"size", s.size}, {"scale", s.scale}, {"ns", s.ns}};
    for (const auto& [name, v] : fields) {
      if (!std::isfinite(v) || v <= 0) {
        return Status::Invalid("fit: sample " + std::to_string(i) + ": " + name + " must be finite and > 0, got " +
                               Num(v));
      }
    }
    if (!std::isfinite(s.count) || s.count < 0) {
      return Status::Invalid("fit: sample " + std::to_string(i) + ": count must be finite and >= 0, got " +
                             Num(s.count));
    }
    if (options.count_var.empty() && s.count != 0) {
      return Status::Invalid("fit: sample " + std::to_string(i) + ": count " + Num(s.count) +
                             " given, but the form has no per-count term (FitOptions::count_var is empty)");
    }
  }
  return Status::Ok();
}

// The canonical order every computation below runs in, so that results do
// not depend on the caller's order.
std::vector<FitSample> Canonical(const std::vector<FitSample>& samples) {
  std::vector<FitSample> sorted = samples;
  std::sort(sorted.begin(), sorted.end(), [](const FitSample& a, const FitSample& b) {
    return std::tie(a.group, a.size, a.scale, a.count, a.ns) < std::tie(b.group, b.size, b.scale, b.count, b.ns);
  });
  return sorted;
}

std::vector<double> DistinctSizes(const std::vector<FitSample>& samples) {
  std::vector<double> sizes;
  sizes.reserve(samples.size());
  for (const FitSample& s : samples) sizes.push_back(s.size);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

// Knots as fit.h describes. REQUIRES: sizes sorted, distinct, non-empty.
std::vector<double> PlaceKnots(const std::vector<double>& sizes, int max_knots) {
  if (sizes.size() <= static_cast<size_t>(max_knots)) return sizes;
  if (max_knots == 1) return {sizes.front()};
  const double lo = std::log(sizes.front());
  const double hi = std::log(sizes.back());
  std::vector<double> knots;
  for (int i = 0; i < max_knots; ++i) {
    const double target = lo + (hi - lo) * i / (max_knots - 1);
    // The measured size nearest to exp(target) in log; ties to the smaller.
    const auto above = std::lower_bound(sizes.begin(), sizes.end(), std::exp(target));
    double pick;
    if (above == sizes.begin()) {
      pick = *above;
    } else if (above == sizes.end()) {
      pick = sizes.back();
    } else {
      const double below = *(above - 1);
      pick = (std::log(*above) - target < target - std::log(below)) ? *above : below;
    }
    if (knots.empty() || pick > knots.back()) knots.push_back(pick);
  }
  // The ends are exact: exp(log(x)) may round away from x.
  knots.front() = sizes.front();
  knots.back() = sizes.back();
  return knots;
}

// Coefficients of g's knot values at `size`: g(size) = Σ basis[j]·values[j],
// the same function FittedCurve::PerUnit evaluates.
void Basis(const std::vector<double>& knots, double size, std::vector<double>* basis) {
  basis->assign(knots.size(), 0.0);
  if (size <= knots.front()) {
    (*basis)[0] = 1;
  } else if (size >= knots.back()) {
    basis->back() = size / knots.back();
  } else {
    const size_t hi = static_cast<size_t>(std::upper_bound(knots.begin(), knots.end(), size) - knots.begin());
    const size_t lo = hi - 1;
    const double t = (size - knots[lo]) / (knots[hi] - knots[lo]);
    (*basis)[lo] = 1 - t;
    (*basis)[hi] = t;
  }
}

// Fits fixed_ns, knots, values and per_count (not the cv fields) to
// `samples`, which are valid and in canonical order.
void FitCurve(const std::vector<FitSample>& samples, const FitOptions& options, FittedCurve* out) {
  FLEETSIM_CHECK(!samples.empty());
  const std::vector<double> knots = PlaceKnots(DistinctSizes(samples), options.max_knots);
  const bool with_count = !options.count_var.empty();
  const Eigen::Index rows = static_cast<Eigen::Index>(samples.size());
  // Column 0: fixed_ns; 1..knots: g at each knot; last, with a count term:
  // per_count.
  const Eigen::Index cols = static_cast<Eigen::Index>(knots.size()) + 1 + (with_count ? 1 : 0);

  // Weighted system: row i divided by ns_i, so the target is 1 and the
  // residual is the relative error.
  Eigen::MatrixXd a(rows, cols);
  std::vector<double> basis;
  for (Eigen::Index i = 0; i < rows; ++i) {
    const FitSample& s = samples[static_cast<size_t>(i)];
    const double w = 1.0 / s.ns;
    a(i, 0) = w;
    Basis(knots, s.size, &basis);
    for (size_t j = 0; j < basis.size(); ++j) a(i, static_cast<Eigen::Index>(j) + 1) = s.scale * basis[j] * w;
    if (with_count) a(i, cols - 1) = s.scale * s.count * w;
  }
  const Eigen::VectorXd b = Eigen::VectorXd::Ones(rows);

  std::vector<double> norm(static_cast<size_t>(cols));
  std::vector<Eigen::Index> active;
  for (Eigen::Index c = 0; c < cols; ++c) {
    norm[static_cast<size_t>(c)] = a.col(c).norm();
    // Every knot column has data (knots sit on measured sizes); the count
    // column is empty when every count is 0, and is then left at 0.
    if (norm[static_cast<size_t>(c)] > 0) {
      a.col(c) /= norm[static_cast<size_t>(c)];
      active.push_back(c);
    }
  }

  std::vector<double> coef(static_cast<size_t>(cols), 0.0);  // in unit-norm scaling
  while (!active.empty()) {
    Eigen::MatrixXd sub(rows, static_cast<Eigen::Index>(active.size()));
    for (size_t j = 0; j < active.size(); ++j) sub.col(static_cast<Eigen::Index>(j)) = a.col(active[j]);
    Eigen::CompleteOrthogonalDecomposition<Eigen::MatrixXd> cod;
    cod.setThreshold(kRankThreshold);
    cod.compute(sub);
    const Eigen::VectorXd x = cod.solve(b);
    size_t worst = active.size();
    for (size_t j = 0; j < active.size(); ++j) {
      if (x(static_cast<Eigen::Index>(j)) < 0 &&
          (worst == active.size() || x(static_cast<Eigen::Index>(j)) < x(static_cast<Eigen::Index>(worst)))) {
        worst = j;
      }
    }
    if (worst == active.size()) {
      for (size_t j = 0; j < active.size(); ++j) coef[static_cast<size_t>(active[j])] = x(static_cast<Eigen::Index>(j));
      break;
    }
    active.erase(active.begin() + static_cast<std::ptrdiff_t>(worst));
  }

  // Back to ns and ns per unit; a clamped or dropped column (and a -0.0
  // from the solve) becomes exactly +0.
  auto unscale = [&](size_t c) { return coef[c] != 0 ? coef[c] / norm[c] : 0.0; };
  out->knots = knots;
  out->fixed_ns = unscale(0);
  out->values.resize(knots.size());
  for (size_t j = 0; j < knots.size(); ++j) out->values[j] = unscale(j + 1);
  out->count_var = options.count_var;
  out->per_count = with_count ? unscale(static_cast<size_t>(cols) - 1) : 0.0;
}

// CrossValidate on valid samples in canonical order.
void CrossValidateCanonical(const std::vector<FitSample>& samples, const FitOptions& options,
                            std::vector<HeldOut>* out, std::string* method) {
  // fold[i]: the fold that holds sample i out, or -1 when none does.
  std::vector<int> fold(samples.size(), -1);
  int folds = 0;
  std::map<int, int> group_index;  // group -> fold, groups ascending
  for (const FitSample& s : samples) group_index.emplace(s.group, 0);
  const std::vector<double> sizes = DistinctSizes(samples);
  if (group_index.size() >= static_cast<size_t>(options.min_groups_for_group_cv)) {
    for (auto& [group, index] : group_index) index = folds++;
    for (size_t i = 0; i < samples.size(); ++i) fold[i] = group_index.at(samples[i].group);
    *method = "leave-one-group-out over " + std::to_string(folds) + " groups";
  } else if (sizes.size() >= 2) {
    folds = std::min<int>(options.size_folds, static_cast<int>(sizes.size()));
    for (size_t i = 0; i < samples.size(); ++i) {
      const size_t rank =
          static_cast<size_t>(std::lower_bound(sizes.begin(), sizes.end(), samples[i].size) - sizes.begin());
      fold[i] = static_cast<int>(rank % static_cast<size_t>(folds));
    }
    *method = std::to_string(folds) + "-fold over " + std::to_string(sizes.size()) +
              " distinct sizes (each fold holds out 1 size in " + std::to_string(folds) + ", rotating; " +
              std::to_string(group_index.size()) + " group(s), fewer than the " +
              std::to_string(options.min_groups_for_group_cv) + " leave-one-group-out needs)";
  } else {
    *method = "none: 1 distinct size and " + std::to_string(group_index.size()) +
              " groups, too few to hold any out";
  }

  std::vector<double> predicted(samples.size(), 0.0);
  for (int f = 0; f < folds; ++f) {
    std::vector<FitSample> train;
    for (size_t i = 0; i < samples.size(); ++i) {
      if (fold[i] != f) train.push_back(samples[i]);
    }
    FLEETSIM_CHECK(!train.empty());
    FittedCurve curve;
    FitCurve(train, options, &curve);
    for (size_t i = 0; i < samples.size(); ++i) {
      if (fold[i] == f) predicted[i] = curve.Predict(samples[i].size, samples[i].scale, samples[i].count);
    }
  }
  out->clear();
  for (size_t i = 0; i < samples.size(); ++i) {
    if (fold[i] >= 0) out->push_back(HeldOut{samples[i].ns, predicted[i], samples[i].group});
  }
}

}  // namespace

double Quantile(const std::vector<double>& sorted, double q) {
  FLEETSIM_CHECK(!sorted.empty());
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

Status CrossValidate(const std::vector<FitSample>& samples, const FitOptions& options, std::vector<HeldOut>* out,
                     std::string* method) {
  FLEETSIM_RETURN_IF_ERROR(Validate(samples, options));
  CrossValidateCanonical(Canonical(samples), options, out, method);
  return Status::Ok();
}

Status FitScaled(const std::vector<FitSample>& samples, const FitOptions& options, const std::string& size_var,
                 const std::string& scale_var, FittedCurve* out) {
  FLEETSIM_RETURN_IF_ERROR(Validate(samples, options));
  const std::vector<FitSample> sorted = Canonical(samples);
  FittedCurve curve;
  curve.size_var = size_var;
  curve.scale_var = scale_var;
  curve.samples = static_cast<int>(sorted.size());
  FitCurve(sorted, options, &curve);

  std::vector<HeldOut> held_out;
  CrossValidateCanonical(sorted, options, &held_out, &curve.cv_method);
  if (!held_out.empty()) {
    std::vector<double> errors;
    errors.reserve(held_out.size());
    for (const HeldOut& h : held_out) errors.push_back(std::abs(h.predicted_ns - h.measured_ns) / h.measured_ns);
    std::sort(errors.begin(), errors.end());
    curve.cv_median_rel_error = Quantile(errors, 0.5);
    curve.cv_p90_rel_error = Quantile(errors, 0.9);
  }
  *out = std::move(curve);
  return Status::Ok();
}

}  // namespace fleetsim::calibrate

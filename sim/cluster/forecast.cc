// Forecasters: constant, ARIMA(p,d,0) by conditional least squares, and a
// local-linear-trend Kalman filter (sim/cluster/forecast.h).
#include "sim/cluster/forecast.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fleetsim {

namespace {

// What a forecaster stores of an observation.
double Clean(double value) {
  if (!std::isfinite(value) || value < 0) return 0;
  return value;
}

// Solves the k x k system a x = b (row-major a, k <= 5) by Gaussian
// elimination with partial pivoting. A pivot that vanishes leaves its
// unknown 0 (the caller adds a small ridge, so that happens only for a
// column of zeros).
std::vector<double> Solve(std::vector<double> a, std::vector<double> b, int k) {
  std::vector<int> pivot_of(k, -1);
  for (int col = 0; col < k; ++col) {
    int best = col;
    for (int r = col + 1; r < k; ++r)
      if (std::abs(a[r * k + col]) > std::abs(a[best * k + col])) best = r;
    if (best != col) {
      for (int c = 0; c < k; ++c) std::swap(a[col * k + c], a[best * k + c]);
      std::swap(b[col], b[best]);
    }
    const double p = a[col * k + col];
    if (!(std::abs(p) > 1e-300)) continue;
    for (int r = col + 1; r < k; ++r) {
      const double f = a[r * k + col] / p;
      if (f == 0) continue;
      for (int c = col; c < k; ++c) a[r * k + c] -= f * a[col * k + c];
      b[r] -= f * b[col];
    }
  }
  std::vector<double> x(k, 0.0);
  for (int row = k - 1; row >= 0; --row) {
    const double p = a[row * k + row];
    if (!(std::abs(p) > 1e-300)) continue;
    double s = b[row];
    for (int c = row + 1; c < k; ++c) s -= a[row * k + c] * x[c];
    x[row] = s / p;
  }
  return x;
}

}  // namespace

void ConstantForecaster::Observe(double value) { last_ = Clean(value); }

// ---------------------------------------------------------------- ARIMA

void ArimaForecaster::Observe(double value) {
  points_.push_back(Clean(value));
  while (static_cast<int>(points_.size()) > std::max(1, options_.window)) points_.pop_front();
}

double ArimaForecaster::Predict() const {
  Order unused;
  return Fit(&unused);
}

ArimaForecaster::Order ArimaForecaster::ChosenOrder() const {
  Order order;
  Fit(&order);
  return order;
}

double ArimaForecaster::Fit(Order* order) const {
  *order = Order{};
  const int n = static_cast<int>(points_.size());
  if (n == 0) return 0;
  const double last = points_.back();
  if (n < std::max(2, options_.min_points)) return last;
  double scale = 0;
  bool all_equal = true;
  for (double v : points_) {
    scale = std::max(scale, std::abs(v));
    if (v != points_.front()) all_equal = false;
  }
  if (all_equal || !(scale > 0)) return last;

  // Work on y / scale, so the fit's conditioning and the SSR floor do not
  // depend on the series' units.
  std::vector<double> y(points_.begin(), points_.end());
  for (double& v : y) v /= scale;

  // The largest p with at least 2k + 1 targets (k = p + 1) for every
  // candidate: n - (p + 1) >= 2 (p + 1) + 1.
  int max_p = std::max(0, options_.max_p);
  while (max_p > 0 && n < 3 * max_p + 4) --max_p;
  if (n < 4) return last;
  const int t0 = max_p + 1;  // first target index, common to all candidates
  const int m = n - t0;

  // The one-step sum of squared errors is floored (relative to the scaled
  // series) so that an exact fit has a finite AIC.
  constexpr double kSsrFloor = 1e-12;
  double best_aic = std::numeric_limits<double>::infinity();
  double best_forecast = last;

  // ARIMA(0,1,0) without drift: the random walk, next = last.
  {
    double ssr = 0;
    for (int t = t0; t < n; ++t) ssr += (y[t] - y[t - 1]) * (y[t] - y[t - 1]);
    const double aic = m * std::log(ssr / m + kSsrFloor);
    if (aic < best_aic) {
      best_aic = aic;
      best_forecast = y[n - 1];
      *order = Order{0, 1, false};
    }
  }

  // u: the series (d = 0) or its first differences (d = 1, u[0] unused).
  std::vector<double> u(n);
  for (int p = 0; p <= max_p; ++p) {
    for (int d = 0; d <= 1; ++d) {
      for (int t = 0; t < n; ++t) u[t] = d == 0 ? y[t] : (t == 0 ? 0.0 : y[t] - y[t - 1]);
      const int k = p + 1;  // intercept + p lags
      // Normal equations over the targets t0..n-1: rows [1, u[t-1], ..., u[t-p]].
      std::vector<double> xtx(k * k, 0.0), xty(k, 0.0), row(k);
      for (int t = t0; t < n; ++t) {
        row[0] = 1;
        for (int i = 1; i <= p; ++i) row[i] = u[t - i];
        for (int a = 0; a < k; ++a) {
          xty[a] += row[a] * u[t];
          for (int b = 0; b < k; ++b) xtx[a * k + b] += row[a] * row[b];
        }
      }
      // A small ridge keeps collinear lags (an exact trend) solvable.
      double diag = 0;
      for (int a = 0; a < k; ++a) diag = std::max(diag, xtx[a * k + a]);
      for (int a = 0; a < k; ++a) xtx[a * k + a] += 1e-10 * diag;
      const std::vector<double> beta = Solve(xtx, xty, k);
      double ssr = 0;
      for (int t = t0; t < n; ++t) {
        double fit = beta[0];
        for (int i = 1; i <= p; ++i) fit += beta[i] * u[t - i];
        ssr += (u[t] - fit) * (u[t] - fit);
      }
      const double aic = m * std::log(ssr / m + kSsrFloor) + 2.0 * k;
      double next = beta[0];
      for (int i = 1; i <= p; ++i) next += beta[i] * u[n - i];
      if (d == 1) next += y[n - 1];
      if (std::isfinite(aic) && std::isfinite(next) && aic < best_aic) {
        best_aic = aic;
        best_forecast = next;
        *order = Order{p, d, true};
      }
    }
  }
  const double forecast = best_forecast * scale;
  if (!std::isfinite(forecast)) return last;
  return std::max(0.0, forecast);
}

// ---------------------------------------------------------------- Kalman

void KalmanForecaster::Observe(double value) {
  const double z = Clean(value);
  last_ = z;
  if (observed_++ == 0) {
    level_ = z;
    trend_ = 0;
    p00_ = p11_ = options_.p0;
    p01_ = 0;
    return;
  }
  // Predict: x = F x, P = F P F' + Q with F = [[1, 1], [0, 1]].
  level_ += trend_;
  const double q00 = p00_ + 2 * p01_ + p11_ + options_.q_level;
  const double q01 = p01_ + p11_;
  const double q11 = p11_ + options_.q_trend;
  // Update with z = level + v.
  const double s = q00 + options_.r;
  const double k0 = q00 / s, k1 = q01 / s;
  const double innovation = z - level_;
  level_ += k0 * innovation;
  trend_ += k1 * innovation;
  p00_ = (1 - k0) * q00;
  p01_ = (1 - k0) * q01;
  p11_ = q11 - k1 * q01;
}

double KalmanForecaster::Predict() const {
  if (observed_ < std::max(1, options_.min_points)) return last_;
  const double next = level_ + trend_;
  if (!std::isfinite(next)) return last_;
  return std::max(0.0, next);
}

// ---------------------------------------------------------------- factory

std::vector<std::string> ForecasterNames() { return {"constant", "arima", "kalman"}; }

Status MakeForecaster(const std::string& name, const std::string& path, std::unique_ptr<Forecaster>* out) {
  if (name == "constant") {
    *out = std::make_unique<ConstantForecaster>();
  } else if (name == "arima") {
    *out = std::make_unique<ArimaForecaster>();
  } else if (name == "kalman") {
    *out = std::make_unique<KalmanForecaster>();
  } else {
    std::string known;
    for (const std::string& n : ForecasterNames()) known += (known.empty() ? "" : ", ") + n;
    return Status::Invalid(path + ": unknown forecaster \"" + name + "\" (known: " + known + ")");
  }
  return Status::Ok();
}

}  // namespace fleetsim

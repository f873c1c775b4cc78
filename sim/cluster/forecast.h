// Forecasters of a scalar series, one value per step (for the `slo_driven`
// autoscaler: the requests, mean prompt and mean output length of each
// adjustment interval). They follow the load predictors of NVIDIA Dynamo's
// SLA planner (components/planner/src/dynamo/planner/utils/load_predictor.py):
// `constant`, `arima` and `kalman` (its `prophet` has no counterpart here).
//
// Common rules, as Dynamo's BasePredictor: a value that is not finite is
// observed as 0, and a negative one as 0 (the series are counts and means
// of token counts); a forecast is never negative; with nothing observed the
// forecast is 0. Everything is deterministic: no random numbers, no
// iteration whose order depends on addresses.
//
// Differences from Dynamo: Dynamo skips a leading run of zeros (the idle
// period after deployment) and can fit log1p(y) (load_predictor_log1p);
// these do neither.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace fleetsim {

class Forecaster {
 public:
  virtual ~Forecaster() = default;
  // The series' next value.
  virtual void Observe(double value) = 0;
  // The forecast of the value after the last observed; >= 0.
  virtual double Predict() const = 0;
};

// next = last observed (Dynamo's ConstantPredictor).
class ConstantForecaster final : public Forecaster {
 public:
  void Observe(double value) override;
  double Predict() const override { return last_; }

 private:
  double last_ = 0;
};

// ARIMA(p, d, 0) refitted at every Predict over the last `window` points
// (Dynamo fits pmdarima.auto_arima, which searches p, d and q by unit-root
// test and AIC, with an MLE fit). Here the search is the cheap part of it:
// d in {0, 1} and p in 0..max_p, each with an intercept (a drift when
// d = 1), plus the random walk ARIMA(0,1,0) without drift; each fitted by
// conditional least squares (exact for AR terms: ordinary least squares on
// the lags) over the same target points, so that their sums of squared
// one-step errors, all in the series' own units, compare; the candidate of
// least AIC = m ln(SSR/m) + 2k wins (ties: fewer parameters). No MA terms:
// they need an iterative fit. p is also capped so that the targets number
// at least 2k + 1 for k = p + 1 parameters.
// Fewer than min_points points: the last value (Dynamo's
// minimum_data_points = 5). All points equal: that value (as Dynamo, which
// special-cases it because pmdarima predicts 0 there).
class ArimaForecaster final : public Forecaster {
 public:
  struct Options {
    // Dynamo's SLAPlannerDefaults.load_prediction_window_size (defaults.py).
    int window = 50;
    int min_points = 5;  // ARIMAPredictor's minimum_data_points
    int max_p = 3;       // pmdarima's auto_arima searches p <= 5; 3 keeps fits small
  };
  ArimaForecaster() : ArimaForecaster(Options{}) {}
  explicit ArimaForecaster(const Options& options) : options_(options) {}

  void Observe(double value) override;
  double Predict() const override;

  // The order Predict last chose would need state; this recomputes it:
  // {p, d, with_intercept}. {-1, -1, false} when no model is fitted (too few
  // points, or all equal). For tests and reports.
  struct Order {
    int p = -1;
    int d = -1;
    bool intercept = false;
  };
  Order ChosenOrder() const;

 private:
  double Fit(Order* order) const;

  Options options_;
  std::deque<double> points_;
};

// A local-linear-trend Kalman filter (Dynamo's KalmanPredictor):
//   level_t = level_{t-1} + trend_{t-1} + w,  w ~ N(0, q_level)
//   trend_t = trend_{t-1} + u,                u ~ N(0, q_trend)
//   z_t     = level_t + v,                    v ~ N(0, r)
// The first observation sets the level (trend 0, covariance p0 * I); each
// later one is a predict step then an update. The forecast is the
// predicted level, level + trend. Defaults: Dynamo's kalman_q_level 1.0,
// kalman_q_trend 0.1, kalman_r 10.0, kalman_min_points 5 (PlannerDefaults
// in components/planner/src/dynamo/planner/defaults.py) and its initial
// covariance 1000 * I (load_predictor.py). Fewer than min_points
// observations: the last value.
class KalmanForecaster final : public Forecaster {
 public:
  struct Options {
    double q_level = 1.0;
    double q_trend = 0.1;
    double r = 10.0;
    double p0 = 1000.0;
    int min_points = 5;
  };
  KalmanForecaster() : KalmanForecaster(Options{}) {}
  explicit KalmanForecaster(const Options& options) : options_(options) {}

  void Observe(double value) override;
  double Predict() const override;

  double level() const { return level_; }
  double trend() const { return trend_; }

 private:
  Options options_;
  int observed_ = 0;
  double last_ = 0;
  double level_ = 0, trend_ = 0;
  double p00_ = 0, p01_ = 0, p11_ = 0;  // the state covariance (symmetric)
};

// "constant", "arima", "kalman".
std::vector<std::string> ForecasterNames();

// The forecaster called `name` with its defaults; an unknown name is an
// error naming `path` (the spec's field, e.g.
// "fleet.pools[0].autoscaler.forecaster").
Status MakeForecaster(const std::string& name, const std::string& path, std::unique_ptr<Forecaster>* out);

}  // namespace fleetsim

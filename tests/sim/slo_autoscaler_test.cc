// The forecasters (sim/cluster/forecast.h) on synthetic series, and the
// `slo_driven` autoscaler's sizing against a fake pool and a fake replica
// capacity whose answers are computed by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "sim/cluster/autoscaler.h"
#include "sim/cluster/forecast.h"

namespace fleetsim {
namespace {

// ------------------------------------------------------------ forecasters

std::unique_ptr<Forecaster> Make(const std::string& name) {
  std::unique_ptr<Forecaster> f;
  const Status st = MakeForecaster(name, "x.forecaster", &f);
  EXPECT_TRUE(st.ok()) << st.message();
  return f;
}

// Uniform noise in [-a, a] from a fixed seed (mt19937's output is fixed by
// the standard; the distributions are not, so none is used).
struct Noise {
  std::mt19937 gen{12345};
  double operator()(double a) { return a * (2.0 * (gen() / 4294967295.0) - 1.0); }
};

// Mean squared one-step error of `f` on `series`, counting from `from`.
double OneStepMse(Forecaster& f, const std::vector<double>& series, size_t from) {
  double sum = 0;
  int n = 0;
  for (size_t t = 0; t < series.size(); ++t) {
    if (t >= from) {
      const double e = f.Predict() - series[t];
      sum += e * e;
      ++n;
    }
    f.Observe(series[t]);
  }
  return sum / n;
}

TEST(Forecast, ConstantReturnsTheLastValue) {
  auto f = Make("constant");
  EXPECT_EQ(f->Predict(), 0);
  f->Observe(3);
  f->Observe(7.5);
  EXPECT_EQ(f->Predict(), 7.5);
  f->Observe(-4);  // a count cannot be negative: observed as 0
  EXPECT_EQ(f->Predict(), 0);
  f->Observe(std::nan(""));
  EXPECT_EQ(f->Predict(), 0);
}

TEST(Forecast, KalmanTracksALinearRamp) {
  auto f = Make("kalman");
  std::vector<double> errors;
  for (int t = 0; t < 20; ++t) {
    const double y = 100 + 10.0 * t;
    if (t >= 5) errors.push_back(std::abs(f->Predict() - y));
    f->Observe(y);
  }
  // After a few steps the trend is learnt: the one-step error shrinks to
  // well under one step of the ramp.
  EXPECT_LT(errors[0], 0.5);  // five observations in
  EXPECT_LT(errors.back(), 0.01);
  EXPECT_NEAR(f->Predict(), 300, 0.01);
}

TEST(Forecast, KalmanDefaultsAreDynamos) {
  const KalmanForecaster::Options o;
  EXPECT_EQ(o.q_level, 1.0);
  EXPECT_EQ(o.q_trend, 0.1);
  EXPECT_EQ(o.r, 10.0);
  EXPECT_EQ(o.min_points, 5);
  EXPECT_EQ(o.p0, 1000.0);
}

TEST(Forecast, KalmanAndArimaReturnTheLastValueBeforeMinPoints) {
  for (const char* name : {"kalman", "arima"}) {
    auto f = Make(name);
    for (double v : {10.0, 20.0, 30.0, 40.0}) {
      f->Observe(v);
      EXPECT_EQ(f->Predict(), v) << name;
    }
    f->Observe(50);
    EXPECT_GT(f->Predict(), 50) << name << " extrapolates once it has 5 points";
  }
}

TEST(Forecast, ArimaExtrapolatesAnExactTrendWithDrift) {
  ArimaForecaster f;
  for (int t = 0; t < 12; ++t) f.Observe(50 + 4.0 * t);
  EXPECT_NEAR(f.Predict(), 50 + 4.0 * 12, 1e-6);
  const ArimaForecaster::Order o = f.ChosenOrder();
  EXPECT_EQ(o.d, 1);
  EXPECT_EQ(o.p, 0);
  EXPECT_TRUE(o.intercept);
}

TEST(Forecast, ArimaOfAConstantSeriesIsThatValue) {
  ArimaForecaster f;
  for (int t = 0; t < 10; ++t) f.Observe(42);
  EXPECT_EQ(f.Predict(), 42);
  EXPECT_EQ(f.ChosenOrder().d, -1);
}

TEST(Forecast, ArimaBeatsConstantOnANoisyTrend) {
  Noise noise;
  std::vector<double> y;
  for (int t = 0; t < 80; ++t) y.push_back(200 + 5.0 * t + noise(2.0));
  auto arima = Make("arima");
  auto constant = Make("constant");
  const double a = OneStepMse(*arima, y, 10), c = OneStepMse(*constant, y, 10);
  // Constant lags one step of the trend (error ~5); ARIMA only the noise.
  EXPECT_LT(a, 0.5 * c) << "arima " << a << " constant " << c;
}

TEST(Forecast, ArimaBeatsConstantOnAnArSeries) {
  Noise noise;
  std::vector<double> y;
  double x = 100;
  for (int t = 0; t < 300; ++t) {
    x = 100 + 0.3 * (x - 100) + noise(20.0);
    y.push_back(x);
  }
  auto arima = Make("arima");
  auto constant = Make("constant");
  const double a = OneStepMse(*arima, y, 20), c = OneStepMse(*constant, y, 20);
  // The best predictor's MSE is the noise's; constant's is 2 / (1 + phi) =
  // 1.54 times that.
  EXPECT_LT(a, 0.85 * c) << "arima " << a << " constant " << c;
}

TEST(Forecast, KalmanBeatsConstantOnANoisyTrend) {
  Noise noise;
  std::vector<double> y;
  for (int t = 0; t < 80; ++t) y.push_back(200 + 5.0 * t + noise(2.0));
  auto kalman = Make("kalman");
  auto constant = Make("constant");
  EXPECT_LT(OneStepMse(*kalman, y, 10), 0.5 * OneStepMse(*constant, y, 10));
}

TEST(Forecast, ForecastsAreNeverNegative) {
  for (const std::string& name : ForecasterNames()) {
    auto f = Make(name);
    for (int t = 0; t <= 10; ++t) {
      f->Observe(std::max(0.0, 100 - 12.0 * t));  // falls to 0 and stays
      EXPECT_GE(f->Predict(), 0) << name << " at " << t;
    }
    auto g = Make(name);
    for (int t = 0; t < 8; ++t) g->Observe(100 - 12.0 * t);  // still falling
    g->Observe(0);
    EXPECT_GE(g->Predict(), 0) << name;
  }
}

TEST(Forecast, Deterministic) {
  Noise noise;
  std::vector<double> y;
  for (int t = 0; t < 60; ++t) y.push_back(50 + 20 * std::sin(t / 5.0) + noise(5.0));
  for (const std::string& name : ForecasterNames()) {
    auto a = Make(name), b = Make(name);
    for (double v : y) {
      a->Observe(v);
      b->Observe(v);
      EXPECT_EQ(a->Predict(), b->Predict()) << name;  // bit for bit
    }
    EXPECT_EQ(a->Predict(), a->Predict()) << name << ": Predict changes nothing";
  }
}

TEST(Forecast, ArimaKeepsItsWindow) {
  // Only the last 50 points are fitted: a level shift long ago is forgotten.
  ArimaForecaster f;
  for (int t = 0; t < 100; ++t) f.Observe(t < 40 ? 1000 : 10 + (t % 2));
  EXPECT_NEAR(f.Predict(), 10.5, 1.0);
}

TEST(Forecast, UnknownForecasterIsAnError) {
  std::unique_ptr<Forecaster> f;
  const Status st = MakeForecaster("prophet", "fleet.pools[0].autoscaler.forecaster", &f);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(),
            "fleet.pools[0].autoscaler.forecaster: unknown forecaster \"prophet\" (known: constant, arima, kalman)");
  EXPECT_EQ(f, nullptr);
}

// ------------------------------------------------------------ slo_driven

// A pool whose every window is `load`.
class FakePool final : public PoolSignals {
 public:
  WindowLoad load;
  int ready_ = 1, desired_ = 1;
  mutable SimTime last_window = 0;

  SimTime now() const override { return 0; }
  int ready() const override { return ready_; }
  int starting() const override { return 0; }
  int desired() const override { return desired_; }
  std::optional<double> Total(ScalingMetric, SimTime) const override { return std::nullopt; }
  std::optional<double> PerReplica(ScalingMetric, SimTime) const override { return std::nullopt; }
  std::optional<double> Percentile(ScalingMetric, double, SimTime) const override { return std::nullopt; }
  WindowLoad Load(SimTime window) const override {
    last_window = window;
    return load;
  }
};

// Prefill takes isl / 10 ms; a decode step 20 ms at any batch; a replica
// sustains `base` requests per second at a TTFT of 500 ms and a TPOT of
// 50 ms, proportionally less for tighter targets (the tighter of the two
// counts). Records its last question.
class FakeCapacity final : public ReplicaCapacity {
 public:
  double base = 2;
  mutable std::optional<double> asked_ttft, asked_tpot;
  mutable double asked_isl = -1, asked_osl = -1;
  mutable int asked_batch = -1;

  double PrefillMs(double isl) const override { return isl / 10; }
  double DecodeStepMs(int batch, double) const override {
    asked_batch = batch;
    return 20;
  }
  double MaxRequestsPerS(double isl, double osl, std::optional<double> ttft_ms,
                         std::optional<double> tpot_ms) const override {
    asked_isl = isl;
    asked_osl = osl;
    asked_ttft = ttft_ms;
    asked_tpot = tpot_ms;
    double f = 1e9;
    if (ttft_ms) f = std::min(f, *ttft_ms / 500);
    if (tpot_ms) f = std::min(f, *tpot_ms / 50);
    return base * f;
  }
};

// 10 requests per second over a 180 s window; prompts of 1000 tokens,
// outputs of 100; TTFT and TPOT exactly as the capacity model expects (no
// correction).
WindowLoad SteadyLoad(double rate = 10) {
  WindowLoad w;
  w.seconds = 180;
  w.arrivals = static_cast<int64_t>(rate * 180);
  w.finished = w.arrivals;
  w.mean_input_tokens = 1000;
  w.mean_output_tokens = 100;
  w.mean_ttft_ms = 100;  // = PrefillMs(1000)
  w.mean_tpot_ms = 20;   // = DecodeStepMs
  return w;
}

AutoscalerSpec Spec(int min = 1, int max = 100) {
  AutoscalerSpec s;
  s.path = "fleet.pools[0].autoscaler";
  s.policy = "slo_driven";
  s.min_replicas = min;
  s.max_replicas = max;
  return s;
}

struct Rig {
  FakeCapacity capacity;
  FakePool pool;
  AutoscalerContext context;
  Rig() {
    context.capacity = &capacity;
    context.ttft_slo_ms = 500;
    context.tpot_slo_ms = 50;
    pool.load = SteadyLoad();
  }
  Status Build(const AutoscalerSpec& spec, std::unique_ptr<Autoscaler>* out) {
    AutoscalerRegistry registry;
    RegisterSloDrivenAutoscaler(&registry);
    const AutoscalerRegistry::Entry* e = registry.Find("slo_driven");
    EXPECT_NE(e, nullptr);
    EXPECT_FALSE(e->description.empty());
    EXPECT_EQ(e->description.find('\n'), std::string::npos);
    return e->factory(spec, context, out);
  }
  std::unique_ptr<Autoscaler> MustBuild(const AutoscalerSpec& spec) {
    std::unique_ptr<Autoscaler> a;
    const Status st = Build(spec, &a);
    EXPECT_TRUE(st.ok()) << st.message();
    return a;
  }
  std::string Error(const AutoscalerSpec& spec) {
    std::unique_ptr<Autoscaler> a;
    const Status st = Build(spec, &a);
    EXPECT_FALSE(st.ok());
    return st.message();
  }
};

TEST(SloDriven, DefaultsAreDynamos) {
  Rig rig;
  auto a = rig.MustBuild(Spec());
  EXPECT_EQ(a->period(), 180 * kSecond);       // adjustment_interval
  EXPECT_EQ(a->metric_delay(), 10 * kSecond);  // the frontend's scrape interval
}

TEST(SloDriven, SizesForTheLoad) {
  // 10 req/s at 2 req/s per replica: 5.
  Rig rig;
  auto a = rig.MustBuild(Spec());
  EXPECT_EQ(a->Decide(rig.pool), 5);
  EXPECT_EQ(rig.pool.last_window, 180 * kSecond);
  EXPECT_EQ(rig.capacity.asked_isl, 1000);
  EXPECT_EQ(rig.capacity.asked_osl, 100);
  EXPECT_EQ(rig.capacity.asked_ttft, 500);
  EXPECT_EQ(rig.capacity.asked_tpot, 50);
  // 11 req/s: 5.5, rounded up.
  rig.pool.load = SteadyLoad(11);
  EXPECT_EQ(a->Decide(rig.pool), 6);
}

TEST(SloDriven, DecodeCorrectionTightensTheTpotTarget) {
  // TPOT observed twice what the model expects: the target is halved, so is
  // each replica's capacity, and the pool doubles.
  Rig rig;
  rig.pool.load.mean_tpot_ms = 40;
  auto a = rig.MustBuild(Spec());
  EXPECT_EQ(a->Decide(rig.pool), 10);
  EXPECT_EQ(rig.capacity.asked_tpot, 25);
  EXPECT_EQ(rig.capacity.asked_ttft, 500);
}

TEST(SloDriven, DecodeCorrectionUsesLittlesLawForTheBatch) {
  // 10 req/s, each lasting 100 ms + 99 x 20 ms = 2.08 s, over 4 replicas:
  // 5.2 in flight each, a batch of 5.
  Rig rig;
  rig.pool.ready_ = 4;
  auto a = rig.MustBuild(Spec());
  a->Decide(rig.pool);
  EXPECT_EQ(rig.capacity.asked_batch, 5);
}

TEST(SloDriven, PrefillCorrectionTightensTheTtftTarget) {
  Rig rig;
  rig.pool.load.mean_ttft_ms = 200;  // twice PrefillMs(1000)
  auto a = rig.MustBuild(Spec());
  EXPECT_EQ(a->Decide(rig.pool), 10);
  EXPECT_EQ(rig.capacity.asked_ttft, 250);
}

TEST(SloDriven, CorrectionsAreClamped) {
  Rig rig;
  rig.pool.load.mean_ttft_ms = 100 * 1000;  // 1000 times the model: clamped to 10
  rig.pool.load.mean_tpot_ms = 0.2;         // 1/100 of the model: clamped to 0.1
  auto a = rig.MustBuild(Spec());
  a->Decide(rig.pool);
  EXPECT_DOUBLE_EQ(*rig.capacity.asked_ttft, 50);
  EXPECT_DOUBLE_EQ(*rig.capacity.asked_tpot, 500);
}

TEST(SloDriven, CorrectionsStayWhenNothingFinished) {
  Rig rig;
  rig.pool.load.mean_tpot_ms = 40;
  auto a = rig.MustBuild(Spec());
  EXPECT_EQ(a->Decide(rig.pool), 10);
  // Requests arrive but none finished in this window: no new correction,
  // ISL and OSL as forecast before.
  rig.pool.load.finished = 0;
  rig.pool.load.mean_input_tokens = rig.pool.load.mean_output_tokens = 0;
  rig.pool.load.mean_ttft_ms = rig.pool.load.mean_tpot_ms = 0;
  EXPECT_EQ(a->Decide(rig.pool), 10);
  EXPECT_EQ(rig.capacity.asked_isl, 1000);
  EXPECT_EQ(rig.capacity.asked_tpot, 25);
}

TEST(SloDriven, NoCorrectionOption) {
  Rig rig;
  rig.pool.load.mean_tpot_ms = 40;
  AutoscalerSpec s = Spec();
  s.options["no_correction"] = 1;
  auto a = rig.MustBuild(s);
  EXPECT_EQ(a->Decide(rig.pool), 5);
}

TEST(SloDriven, OptionsOverrideTheScenarioTargets) {
  Rig rig;
  AutoscalerSpec s = Spec();
  s.options["ttft_ms"] = 1000;
  auto a = rig.MustBuild(s);
  a->Decide(rig.pool);
  EXPECT_EQ(rig.capacity.asked_ttft, 1000);
  EXPECT_EQ(rig.capacity.asked_tpot, 50);
}

TEST(SloDriven, OneTargetIsEnough) {
  Rig rig;
  rig.context.ttft_slo_ms.reset();
  auto a = rig.MustBuild(Spec());
  EXPECT_EQ(a->Decide(rig.pool), 5);
  EXPECT_FALSE(rig.capacity.asked_ttft.has_value());
  EXPECT_EQ(rig.capacity.asked_tpot, 50);
}

TEST(SloDriven, Bounds) {
  Rig rig;
  auto capped = rig.MustBuild(Spec(1, 3));
  EXPECT_EQ(capped->Decide(rig.pool), 3);
  auto floored = rig.MustBuild(Spec(7, 20));
  EXPECT_EQ(floored->Decide(rig.pool), 7);
  // A load far beyond the bound does not overflow.
  rig.pool.load.arrivals = int64_t{1} << 60;
  auto big = rig.MustBuild(Spec(1, 50));
  EXPECT_EQ(big->Decide(rig.pool), 50);
}

TEST(SloDriven, NoCapacityMeansMaxReplicas) {
  Rig rig;
  rig.capacity.base = 0;  // the targets cannot be met at all
  auto a = rig.MustBuild(Spec(1, 12));
  EXPECT_EQ(a->Decide(rig.pool), 12);
}

TEST(SloDriven, IdlePoolGoesToMin) {
  Rig rig;
  rig.pool.load = WindowLoad{};
  rig.pool.load.seconds = 180;
  auto zero = rig.MustBuild(Spec(0, 10));
  EXPECT_EQ(zero->Decide(rig.pool), 0);
  auto one = rig.MustBuild(Spec(1, 10));
  EXPECT_EQ(one->Decide(rig.pool), 1);
  // Traffic, then none: back to 0.
  Rig busy;
  auto a = busy.MustBuild(Spec(0, 10));
  EXPECT_EQ(a->Decide(busy.pool), 5);
  busy.pool.load = WindowLoad{};
  busy.pool.load.seconds = 180;
  EXPECT_EQ(a->Decide(busy.pool), 0);
}

TEST(SloDriven, KeepsItsTargetUntilARequestFinishes) {
  Rig rig;
  rig.pool.load.finished = 0;
  rig.pool.desired_ = 4;
  auto a = rig.MustBuild(Spec());
  EXPECT_EQ(a->Decide(rig.pool), 4);
}

TEST(SloDriven, AShortWindowCountsAsAWholeInterval) {
  Rig rig;
  rig.pool.load.seconds = 90;
  rig.pool.load.arrivals = 900;  // still 10 req/s
  auto a = rig.MustBuild(Spec());
  EXPECT_EQ(a->Decide(rig.pool), 5);
}

TEST(SloDriven, ForecastersLookAhead) {
  // Load rising by 2 req/s per interval: constant sizes for the last
  // interval (12 req/s: 6), ARIMA and Kalman for the next (14: 7).
  auto run = [](const std::string& forecaster) {
    Rig rig;
    AutoscalerSpec s = Spec();
    s.forecaster = forecaster;
    auto a = rig.MustBuild(s);
    int n = 0;
    for (int rate = 2; rate <= 12; rate += 2) {
      rig.pool.load = SteadyLoad(rate);
      n = a->Decide(rig.pool);
    }
    return n;
  };
  EXPECT_EQ(run("constant"), 6);
  EXPECT_EQ(run("arima"), 7);
  EXPECT_EQ(run("kalman"), 7);
}

TEST(SloDriven, OptionsAndDelay) {
  Rig rig;
  AutoscalerSpec s = Spec();
  s.options["adjustment_interval_s"] = 60;
  s.metric_delay_s = 30;
  auto a = rig.MustBuild(s);
  EXPECT_EQ(a->period(), 60 * kSecond);
  EXPECT_EQ(a->metric_delay(), 30 * kSecond);
  // The window is one interval; 10 req/s over 180 s counted as 1800 per
  // 60 s interval would be 30 req/s: the count is scaled to the interval.
  EXPECT_EQ(a->Decide(rig.pool), 5);
  EXPECT_EQ(rig.pool.last_window, 60 * kSecond);
}

TEST(SloDriven, FactoryErrors) {
  Rig rig;
  {
    AutoscalerSpec s = Spec();
    s.options["sync_period_s"] = 15;
    EXPECT_EQ(rig.Error(s),
              "fleet.pools[0].autoscaler.options.sync_period_s: not an option of autoscaler \"slo_driven\" (its "
              "options: adjustment_interval_s, ttft_ms, tpot_ms, no_correction)");
  }
  {
    AutoscalerSpec s = Spec();
    s.options["adjustment_interval_s"] = 0;
    EXPECT_NE(rig.Error(s).find("fleet.pools[0].autoscaler.options.adjustment_interval_s: "), std::string::npos);
  }
  {
    AutoscalerSpec s = Spec();
    s.options["ttft_ms"] = -5;
    EXPECT_NE(rig.Error(s).find("fleet.pools[0].autoscaler.options.ttft_ms: must be positive"), std::string::npos);
  }
  {
    AutoscalerSpec s = Spec();
    s.options["no_correction"] = 0.5;
    EXPECT_NE(rig.Error(s).find("options.no_correction: must be 0 or 1"), std::string::npos);
  }
  {
    AutoscalerSpec s = Spec();
    s.forecaster = "prophet";
    EXPECT_EQ(rig.Error(s),
              "fleet.pools[0].autoscaler.forecaster: unknown forecaster \"prophet\" (known: constant, arima, kalman)");
  }
  {
    AutoscalerSpec s = Spec();
    s.metric_delay_s = -1;
    EXPECT_NE(rig.Error(s).find("fleet.pools[0].autoscaler.metric_delay_s: "), std::string::npos);
  }
  {
    AutoscalerSpec s = Spec();
    s.target = 3;
    EXPECT_NE(rig.Error(s).find("fleet.pools[0].autoscaler.target: "), std::string::npos);
  }
  {
    Rig none;
    none.context.ttft_slo_ms.reset();
    none.context.tpot_slo_ms.reset();
    EXPECT_NE(none.Error(Spec()).find("needs a latency target"), std::string::npos);
    // An option alone is a target.
    AutoscalerSpec s = Spec();
    s.options["tpot_ms"] = 40;
    std::unique_ptr<Autoscaler> a;
    EXPECT_TRUE(none.Build(s, &a).ok());
  }
  {
    Rig blind;
    blind.context.capacity = nullptr;
    EXPECT_NE(blind.Error(Spec()).find("needs the pool's replica capacity"), std::string::npos);
  }
}

}  // namespace
}  // namespace fleetsim

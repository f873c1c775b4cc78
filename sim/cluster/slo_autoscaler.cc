// The `slo_driven` autoscaler (sim/cluster/autoscaler.h).
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sim/cluster/autoscaler.h"
#include "sim/cluster/forecast.h"

namespace fleetsim {

namespace {

constexpr const char* kPolicy = "slo_driven";

// NVIDIA Dynamo's SLA planner (components/planner/src/dynamo/planner/utils/
// planner_core.py, its throughput-based mode): every adjustment interval it
// reads the interval's request count, mean input (ISL) and output (OSL)
// length and mean TTFT and ITL from Prometheus; feeds the three series to
// load predictors (sim/cluster/forecast.h); corrects its performance model
// by the ratio of observed to expected latency,
//   p_correction = observed TTFT / expected TTFT(ISL)            (idle prefill)
//   d_correction = observed ITL / expected ITL(concurrency, ISL + OSL / 2)
// (concurrency per replica by Little's law: requests per second x request
// duration / replicas); and sizes the pool for the predicted load:
//   replicas = ceil(predicted count / interval / per-replica capacity),
// the capacity being what one replica sustains at the predicted ISL and OSL
// while meeting TTFT target / p_correction and TPOT target / d_correction.
//
// Simplifications:
// - Dynamo sizes prefill and decode workers apart (disaggregated serving).
//   Pools here are aggregated (prefill and decode on the same replicas)
//   until disaggregation arrives, so one count is computed, from one
//   capacity that meets both targets (ReplicaCapacity::MaxRequestsPerS).
// - Both corrections act through the targets. Dynamo divides the ITL target
//   by d_correction as here, but applies p_correction (as min(1, p)) to the
//   predicted prefill throughput instead of the TTFT target.
// - Dynamo takes the request duration from Prometheus; here it is
//   TTFT + (OSL - 1) x TPOT of the window's finished requests.
// - Correction factors are computed only from windows in which requests
//   finished (else the last ones stay), and clamped to
//   [kMinCorrection, kMaxCorrection] so that one odd window (a burst of
//   queueing, a stall) cannot drive the targets to nothing or to infinity.
//   Dynamo does not clamp them.
// - Dynamo skips an interval with no finished requests. Here the request
//   count is observed even then (0 when nothing arrived), so an idle pool is
//   forecast idle and, with min_replicas 0, goes to 0; ISL and OSL are
//   observed only from windows with finished requests. Until one has been
//   seen the pool keeps its current target.
// - Dynamo's GPU budget (max_gpu_budget) is the pool's max_replicas.
class SloDrivenAutoscaler final : public Autoscaler {
 public:
  struct Options {
    // BasePlannerDefaults.adjustment_interval = 180 s
    // (components/planner/src/dynamo/planner/defaults.py).
    double adjustment_interval_s = 180;
    // The planner queries Prometheus, which scrapes Dynamo's frontend every
    // 10 s (deploy/metrics/prometheus.yml, job dynamo-frontend): its data
    // are up to one scrape late.
    double metric_delay_s = 10;
    // Overrides of the scenario's SLOs (Dynamo's --ttft / --itl, defaults
    // 500 ms / 50 ms there; here the scenario's targets, and no default).
    std::optional<double> ttft_ms;
    std::optional<double> tpot_ms;
    // Dynamo's --no-correction (default false: corrections applied).
    bool no_correction = false;
  };
  static constexpr double kMinCorrection = 0.1;
  static constexpr double kMaxCorrection = 10.0;

  SloDrivenAutoscaler(const AutoscalerSpec& spec, const ReplicaCapacity* capacity, const Options& options,
                      std::unique_ptr<Forecaster> requests, std::unique_ptr<Forecaster> isl,
                      std::unique_ptr<Forecaster> osl)
      : min_(spec.min_replicas),
        max_(spec.max_replicas),
        capacity_(capacity),
        options_(options),
        requests_(std::move(requests)),
        isl_(std::move(isl)),
        osl_(std::move(osl)) {}

  SimTime period() const override { return SecondsToTime(options_.adjustment_interval_s); }
  SimTime metric_delay() const override { return SecondsToTime(options_.metric_delay_s); }

  int Decide(const PoolSignals& signals) override {
    const double interval_s = options_.adjustment_interval_s;
    const WindowLoad load = signals.Load(period());
    if (load.seconds > 0) {
      // Requests per adjustment interval (a window cut short at the start
      // of the run is scaled up to a whole one).
      requests_->Observe(static_cast<double>(load.arrivals) * interval_s / load.seconds);
      if (load.finished > 0) {
        isl_->Observe(load.mean_input_tokens);
        osl_->Observe(load.mean_output_tokens);
        seen_shape_ = true;
        if (!options_.no_correction) Correct(load, signals.ready());
      }
    }
    const double count = requests_->Predict();
    if (!(count > 0)) return Clamp(0);
    if (!seen_shape_) return Clamp(signals.desired());
    const double isl = isl_->Predict();
    const double osl = osl_->Predict();
    std::optional<double> ttft, tpot;
    if (options_.ttft_ms) ttft = *options_.ttft_ms / p_correction_;
    if (options_.tpot_ms) tpot = *options_.tpot_ms / d_correction_;
    const double per_replica = capacity_->MaxRequestsPerS(isl, osl, ttft, tpot);
    if (!(per_replica > 0) || !std::isfinite(per_replica)) return max_;
    const double needed = count / interval_s / per_replica;
    // A hair of tolerance so that 10 / 2 stays 5 through rounding.
    if (!(needed - 1e-9 < static_cast<double>(max_))) return max_;
    return Clamp(static_cast<int>(std::ceil(needed - 1e-9)));
  }

  double p_correction() const { return p_correction_; }
  double d_correction() const { return d_correction_; }

 private:
  int Clamp(int n) const { return std::clamp(n, min_, max_); }

  void Correct(const WindowLoad& load, int ready) {
    if (load.mean_ttft_ms > 0) {
      const double expected = capacity_->PrefillMs(load.mean_input_tokens);
      if (expected > 0 && std::isfinite(expected))
        p_correction_ = std::clamp(load.mean_ttft_ms / expected, kMinCorrection, kMaxCorrection);
    }
    if (load.mean_tpot_ms > 0 && load.seconds > 0) {
      // Little's law: requests in flight per replica = arrival rate x
      // request duration / replicas.
      const double duration_s =
          (load.mean_ttft_ms + std::max(0.0, load.mean_output_tokens - 1) * load.mean_tpot_ms) / 1000.0;
      const double in_flight = static_cast<double>(load.arrivals) / load.seconds * duration_s / std::max(1, ready);
      const int batch = static_cast<int>(std::clamp(std::round(in_flight), 1.0, 1e6));
      const double expected = capacity_->DecodeStepMs(batch, load.mean_input_tokens + load.mean_output_tokens / 2);
      if (expected > 0 && std::isfinite(expected))
        d_correction_ = std::clamp(load.mean_tpot_ms / expected, kMinCorrection, kMaxCorrection);
    }
  }

  int min_, max_;
  const ReplicaCapacity* capacity_;
  Options options_;
  std::unique_ptr<Forecaster> requests_, isl_, osl_;
  bool seen_shape_ = false;
  double p_correction_ = 1.0;
  double d_correction_ = 1.0;
};

Status Make(const AutoscalerSpec& spec, const AutoscalerContext& context, std::unique_ptr<Autoscaler>* out) {
  static constexpr std::string_view kKeys[] = {"adjustment_interval_s", "ttft_ms", "tpot_ms", "no_correction"};
  const std::string where = spec.path + ".options.";
  SloDrivenAutoscaler::Options o;
  for (const auto& [key, value] : spec.options) {
    if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys)) {
      std::string valid;
      for (std::string_view k : kKeys) valid += (valid.empty() ? "" : ", ") + std::string(k);
      return Status::Invalid(where + key + ": not an option of autoscaler \"" + kPolicy + "\" (its options: " + valid +
                             ")");
    }
    if (!std::isfinite(value))
      return Status::Invalid(where + key + ": must be a finite number");
    if (key == "adjustment_interval_s") {
      // At least the sampling interval; at most a year (a period that fits).
      if (value < 1 || value > 365 * 86400.0)
        return Status::Invalid(where + key + ": must be between 1 and 31536000 seconds");
      o.adjustment_interval_s = value;
    } else if (key == "ttft_ms" || key == "tpot_ms") {
      if (!(value > 0)) return Status::Invalid(where + key + ": must be positive (milliseconds)");
      (key == "ttft_ms" ? o.ttft_ms : o.tpot_ms) = value;
    } else if (key == "no_correction") {
      if (value != 0 && value != 1) return Status::Invalid(where + key + ": must be 0 or 1");
      o.no_correction = value == 1;
    }
  }
  if (spec.metric_delay_s) {
    if (!std::isfinite(*spec.metric_delay_s) || *spec.metric_delay_s < 0 || *spec.metric_delay_s > 365 * 86400.0)
      return Status::Invalid(spec.path + ".metric_delay_s: must be between 0 and 31536000 seconds");
    o.metric_delay_s = *spec.metric_delay_s;
  }
  if (spec.metric || spec.target)
    return Status::Invalid(spec.path + (spec.metric ? ".metric" : ".target") + ": autoscaler \"" + kPolicy +
                           "\" sizes the pool from latency targets, not a metric (set options.ttft_ms / "
                           "options.tpot_ms, or the scenario's SLOs)");
  if (!spec.schedule.empty())
    return Status::Invalid(spec.path + ".schedule: only autoscaler \"scheduled\" reads a schedule");
  if (spec.min_replicas < 0 || spec.max_replicas < spec.min_replicas)
    return Status::Invalid(spec.path + ": needs 0 <= min_replicas <= max_replicas (got " +
                           std::to_string(spec.min_replicas) + " and " + std::to_string(spec.max_replicas) + ")");
  if (!o.ttft_ms) o.ttft_ms = context.ttft_slo_ms;
  if (!o.tpot_ms) o.tpot_ms = context.tpot_slo_ms;
  if (o.ttft_ms && !(*o.ttft_ms > 0)) return Status::Invalid(spec.path + ": the TTFT SLO must be positive");
  if (o.tpot_ms && !(*o.tpot_ms > 0)) return Status::Invalid(spec.path + ": the TPOT SLO must be positive");
  if (!o.ttft_ms && !o.tpot_ms)
    return Status::Invalid(spec.path + ": autoscaler \"" + kPolicy +
                           "\" needs a latency target: the scenario's TTFT or TPOT SLO, or options.ttft_ms / "
                           "options.tpot_ms");
  if (context.capacity == nullptr)
    return Status::Invalid(spec.path + ": autoscaler \"" + kPolicy +
                           "\" needs the pool's replica capacity (its performance model), which this pool lacks");
  std::unique_ptr<Forecaster> requests, isl, osl;
  const std::string fpath = spec.path + ".forecaster";
  FLEETSIM_RETURN_IF_ERROR(MakeForecaster(spec.forecaster, fpath, &requests));
  FLEETSIM_RETURN_IF_ERROR(MakeForecaster(spec.forecaster, fpath, &isl));
  FLEETSIM_RETURN_IF_ERROR(MakeForecaster(spec.forecaster, fpath, &osl));
  *out = std::make_unique<SloDrivenAutoscaler>(spec, context.capacity, o, std::move(requests), std::move(isl),
                                               std::move(osl));
  return Status::Ok();
}

}  // namespace

void RegisterSloDrivenAutoscaler(AutoscalerRegistry* registry) {
  registry->Add(kPolicy,
                "NVIDIA Dynamo's SLA planner: every adjustment_interval_s (180) forecasts requests, ISL and OSL "
                "(forecaster constant, arima or kalman) and sizes the pool to meet the TTFT/TPOT targets, "
                "corrected by observed / expected latency",
                Make);
}

}  // namespace fleetsim

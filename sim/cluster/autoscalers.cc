// Built-in autoscalers: hpa (Kubernetes), kpa (Knative), target_ongoing
// (Ray Serve) and scheduled (a daily profile). Each follows its production
// controller's decision rule step by step, in the real code's order, from
// the metrics PoolSignals gives it; the comments say where the model is
// coarser than the original. Every Decide is deterministic: the same
// signals in the same order give the same answers.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <initializer_list>
#include <limits>
#include <string_view>

#include "sim/cluster/autoscaler.h"

namespace fleetsim {

const char* ScalingMetricName(ScalingMetric m) {
  switch (m) {
    case ScalingMetric::kConcurrency: return "concurrency";
    case ScalingMetric::kQueueDepth: return "queue_depth";
    case ScalingMetric::kKvUtilization: return "kv_utilization";
    case ScalingMetric::kTokensPerS: return "tokens_per_s";
    case ScalingMetric::kTtftMs: return "ttft_ms";
    case ScalingMetric::kTpotMs: return "tpot_ms";
  }
  return "concurrency";
}

std::optional<ScalingMetric> ParseScalingMetric(const std::string& name) {
  for (ScalingMetric m : {ScalingMetric::kConcurrency, ScalingMetric::kQueueDepth, ScalingMetric::kKvUtilization,
                          ScalingMetric::kTokensPerS, ScalingMetric::kTtftMs, ScalingMetric::kTpotMs})
    if (name == ScalingMetricName(m)) return m;
  return std::nullopt;
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

int Clamp(const AutoscalerSpec& spec, int64_t n) {
  return static_cast<int>(std::clamp<int64_t>(n, spec.min_replicas, spec.max_replicas));
}

// A count from a non-negative double, saturating far beyond any pool (the
// value may be huge when a target is tiny).
int64_t CeilCount(double x) { return x >= 1e9 ? int64_t{1000000000} : static_cast<int64_t>(std::ceil(x)); }
int64_t FloorCount(double x) { return x >= 1e9 ? int64_t{1000000000} : static_cast<int64_t>(std::floor(x)); }

// The allowed range of one option.
struct Range {
  double lo = 0;
  double hi = kInf;
  bool lo_open = false;  // lo itself refused
  bool hi_open = false;
  bool whole = false;  // a whole number
};
constexpr Range kPositive{0, kInf, true, false, false};
constexpr Range kNonNegative{0, kInf, false, false, false};
// How often a policy decides: at least a millisecond (a period that rounds
// to no time at all would never let the clock move).
constexpr Range kPeriod{1e-3, 1e7, false, false, false};

// Reads spec.options for one policy: each Read names a key the policy knows
// and checks its value; Finish refuses the keys nobody read and returns the
// first error met.
class OptionReader {
 public:
  explicit OptionReader(const AutoscalerSpec& spec) : spec_(spec) {}

  // Leaves *value (the policy's default) when the key is absent.
  void Read(std::string_view key, Range r, double* value) {
    known_.emplace_back(key);
    auto it = spec_.options.find(key);
    if (it == spec_.options.end() || !status_.ok()) return;
    const double v = it->second;
    const bool ok = std::isfinite(v) && (r.lo_open ? v > r.lo : v >= r.lo) && (r.hi_open ? v < r.hi : v <= r.hi) &&
                    (!r.whole || v == std::floor(v));
    if (!ok) {
      const std::string hi = r.hi == kInf ? "inf)" : Num(r.hi) + (r.hi_open ? ")" : "]");
      const std::string want = std::string(r.whole ? "a whole number" : "a number") + " in " +
                               (r.lo_open ? "(" : "[") + Num(r.lo) + ", " + hi;
      status_ = Status::Invalid(spec_.path + ".options." + std::string(key) + ": expected " + want + ", got " + Num(v));
      return;
    }
    *value = v;
  }
  void Read(std::string_view key, Range r, std::optional<double>* value) {
    double v = value->value_or(0);
    const bool given = spec_.options.count(key) > 0;
    Read(key, r, &v);
    if (given) *value = v;
  }
  bool Given(std::string_view key) const { return spec_.options.count(key) > 0; }

  Status Finish() const {
    if (!status_.ok()) return status_;
    for (const auto& [key, value] : spec_.options) {
      if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
      std::string valid;
      for (const std::string& k : known_) valid += (valid.empty() ? "" : ", ") + k;
      return Status::Invalid(spec_.path + ".options." + key + ": not an option of autoscaler \"" + spec_.policy +
                             "\" (its options: " + (valid.empty() ? "none" : valid) + ")");
    }
    return Status::Ok();
  }

 private:
  const AutoscalerSpec& spec_;
  std::vector<std::string> known_;
  Status status_;
};

// The checks every metric-driven policy shares: the metric is one it scales
// on, the target (when given) is a positive number, the delay is not
// negative, and no schedule is given (only `scheduled` reads one).
Status CheckCommon(const AutoscalerSpec& spec, std::initializer_list<ScalingMetric> metrics) {
  if (spec.metric && std::find(metrics.begin(), metrics.end(), *spec.metric) == metrics.end()) {
    std::string valid;
    for (ScalingMetric m : metrics) valid += (valid.empty() ? "" : ", ") + std::string(ScalingMetricName(m));
    return Status::Invalid(spec.path + ".metric: autoscaler \"" + spec.policy + "\" does not scale on \"" +
                           ScalingMetricName(*spec.metric) + "\" (it takes: " + valid + ")");
  }
  if (spec.target && !(std::isfinite(*spec.target) && *spec.target > 0))
    return Status::Invalid(spec.path + ".target: expected a positive number, got " + Num(*spec.target));
  if (spec.metric_delay_s && !(std::isfinite(*spec.metric_delay_s) && *spec.metric_delay_s >= 0))
    return Status::Invalid(spec.path + ".metric_delay_s: expected a number of seconds >= 0, got " +
                           Num(*spec.metric_delay_s));
  if (!spec.schedule.empty())
    return Status::Invalid(spec.path + ".schedule: only the \"scheduled\" autoscaler reads a schedule, not \"" +
                           spec.policy + "\"");
  return Status::Ok();
}

// spec.target, or the policy's default for its metric; metrics with no
// default need one.
Status TargetOf(const AutoscalerSpec& spec, ScalingMetric metric, std::optional<double> fallback, double* target) {
  if (spec.target) {
    *target = *spec.target;
  } else if (fallback) {
    *target = *fallback;
  } else {
    return Status::Invalid(spec.path + ".target: required when autoscaler \"" + spec.policy + "\" scales on \"" +
                           ScalingMetricName(metric) + "\" (it has a default only for concurrency)");
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// hpa: the Kubernetes HorizontalPodAutoscaler (kubernetes/kubernetes,
// pkg/controller/podautoscaler/horizontal.go and replica_calculator.go),
// with the autoscaling/v2 default behavior, scaling on one per-pod metric.
// Each sync:
//  1. currentReplicas is the scale target's spec (the pool's desired count);
//     outside [min, max] it is clamped and nothing else happens.
//  2. calcPlainMetricReplicas: usageRatio = per-pod metric / target. Within
//     the tolerance (|1 - ratio| <= 0.1) the recommendation is
//     currentReplicas; else ceil(ratio * ready pods). Pods still starting
//     are unready pods: on a scale-up they count as using 0 (the ratio is
//     recomputed over ready + starting; a result in the tolerance, or one
//     that crosses 1, keeps currentReplicas); on a scale-down they are left
//     out.
//  3. stabilizeRecommendationWithBehaviors: the result is currentReplicas
//     moved toward the recommendation but no lower than the highest
//     recommendation of the scale-down stabilisation window (300 s) and no
//     higher than the lowest of the scale-up window (0 s); the raw
//     recommendation is recorded.
//  4. convertDesiredReplicasWithBehaviorRate: scale-up to at most
//     max(periodStart + 4 pods, ceil(periodStart * 2)) per 15 s (the two
//     default policies, selectPolicy Max), scale-down to at least
//     int(periodStart * 0) (100% per 15 s), where periodStart is
//     currentReplicas less the scale events of the policy's period; then
//     [min, max].
// Simplified: one metric (no max over several); a metric with no sample
// (no ready replica reported one) keeps currentReplicas, as the HPA does
// when metrics fail; missing-pod handling does not arise (a ready replica
// always has a gauge). fleetsim extension: with no ready replica (the HPA
// has no pod to average over, and minReplicas 0 is an alpha gate), load
// waiting for the pool (metric total > 0) asks for
// max(1, ceil(total / target)) replicas (latency and KV metrics: 1) and
// never fewer than currentReplicas; no load keeps currentReplicas.
class HpaAutoscaler final : public Autoscaler {
 public:
  struct Options {
    // Sync period (--horizontal-pod-autoscaler-sync-period, default 15 s);
    // also the metric window. Seconds.
    double sync_period_s = 15;
    // No change while |1 - usageRatio| is at most this
    // (--horizontal-pod-autoscaler-tolerance, default 0.1).
    double tolerance = 0.1;
    // behavior.scaleDown.stabilizationWindowSeconds (default 300 s,
    // --horizontal-pod-autoscaler-downscale-stabilization): a scale-down
    // goes no lower than the highest recommendation in this window.
    double downscale_stabilization_s = 300;
    // behavior.scaleUp.stabilizationWindowSeconds (default 0 s).
    double upscale_stabilization_s = 0;
    // The default scaleUp policies, selectPolicy Max: add up to
    // scale_up_pods (4) or scale_up_percent (100 %) of the replicas at the
    // start of each scale_up_period_s (15 s), whichever is more.
    double scale_up_pods = 4;
    double scale_up_percent = 100;
    double scale_up_period_s = 15;
    // The default scaleDown policy: remove up to 100 % per 15 s.
    double scale_down_percent = 100;
    double scale_down_period_s = 15;
    // The metric and its target per replica. The target default (16
    // requests held per replica) is fleetsim's, not Kubernetes' (which has
    // none for custom metrics).
    ScalingMetric metric = ScalingMetric::kConcurrency;
    double target = 16;
    // metrics-server's scrape resolution (--metric-resolution, default 15 s).
    double metric_delay_s = 15;
  };

  HpaAutoscaler(const AutoscalerSpec& spec, const Options& o) : spec_(spec), o_(o) {}

  SimTime period() const override { return SecondsToTime(o_.sync_period_s); }
  SimTime metric_delay() const override { return SecondsToTime(o_.metric_delay_s); }

  int Decide(const PoolSignals& s) override {
    const SimTime now = s.now();
    const int current = s.desired();
    // reconcileAutoscaler: out-of-bounds counts are clamped first.
    if (current > spec_.max_replicas || current < spec_.min_replicas) return Clamp(spec_, current);
    const int64_t recommended = Recommend(s, current);
    const int64_t stabilized = Stabilize(now, current, recommended);
    const int64_t limited = LimitRate(now, current, stabilized);
    if (limited != current) events_.push_back({now, limited - current});
    return Clamp(spec_, limited);
  }

 private:
  struct Event {
    SimTime at;
    int64_t value;  // a recommendation, or a change of replicas
  };

  // replica_calculator.go, calcPlainMetricReplicas.
  int64_t Recommend(const PoolSignals& s, int current) const {
    const SimTime window = period();
    const int ready = s.ready();
    if (ready == 0) {
      const bool summable = !IsLatencyMetric(o_.metric) && o_.metric != ScalingMetric::kKvUtilization;
      const std::optional<double> total = s.Total(summable ? o_.metric : ScalingMetric::kConcurrency, window);
      if (!total || !(*total > 0)) return current;
      const int64_t want = summable ? std::max<int64_t>(1, CeilCount(*total / o_.target)) : 1;
      return std::max<int64_t>(current, want);
    }
    // A latency's per-replica value is its mean over the window; the KV
    // gauge's Total is already the mean over replicas.
    const bool mean = IsLatencyMetric(o_.metric) || o_.metric == ScalingMetric::kKvUtilization;
    const std::optional<double> usage = mean ? s.Total(o_.metric, window) : s.PerReplica(o_.metric, window);
    if (!usage) return current;
    const double ratio = *usage / o_.target;
    const int starting = s.starting();
    if (starting > 0 && ratio > 1.0) {
      // scaleUpWithUnready: the starting replicas count as using nothing.
      const double new_ratio = ratio * ready / (ready + starting);
      if (std::abs(1.0 - new_ratio) <= o_.tolerance || new_ratio < 1.0) return current;
      // ceil(new_ratio * (ready + starting)), i.e. the same total over the target.
      const int64_t n = CeilCount(ratio * ready);
      return n < current ? current : n;
    }
    if (std::abs(1.0 - ratio) <= o_.tolerance) return current;
    return CeilCount(ratio * ready);
  }

  // horizontal.go, stabilizeRecommendationWithBehaviors. A recommendation
  // counts while its time is after now - window.
  int64_t Stabilize(SimTime now, int current, int64_t recommended) {
    const SimTime up_cutoff = now - SecondsToTime(o_.upscale_stabilization_s);
    const SimTime down_cutoff = now - SecondsToTime(o_.downscale_stabilization_s);
    int64_t up = recommended, down = recommended;
    for (const Event& r : recommendations_) {
      if (r.at > up_cutoff) up = std::min(up, r.value);
      if (r.at > down_cutoff) down = std::max(down, r.value);
    }
    int64_t result = current;
    if (result < up) result = up;
    if (result > down) result = down;
    recommendations_.push_back({now, recommended});
    const SimTime oldest = std::min(up_cutoff, down_cutoff);
    while (!recommendations_.empty() && recommendations_.front().at <= oldest) recommendations_.pop_front();
    return result;
  }

  // horizontal.go, convertDesiredReplicasWithBehaviorRate with
  // calculateScale{Up,Down}LimitWithBehaviors.
  int64_t LimitRate(SimTime now, int current, int64_t desired) {
    const SimTime longest = SecondsToTime(std::max(o_.scale_up_period_s, o_.scale_down_period_s));
    while (!events_.empty() && events_.front().at <= now - longest) events_.pop_front();
    // periodStartReplicas: the replicas before the changes of the last `period_s`.
    auto period_start = [&](double period_s) {
      int64_t change = 0;
      for (const Event& e : events_)
        if (e.at > now - SecondsToTime(period_s)) change += e.value;
      return current - change;
    };
    if (desired > current) {
      const int64_t up_start = period_start(o_.scale_up_period_s);
      int64_t limit = std::max(up_start + static_cast<int64_t>(o_.scale_up_pods),
                               CeilCount(up_start * (1 + o_.scale_up_percent / 100)));
      limit = std::max<int64_t>(limit, current);
      return std::min<int64_t>(desired, std::min<int64_t>(limit, spec_.max_replicas));
    }
    if (desired < current) {
      const int64_t down_start = period_start(o_.scale_down_period_s);
      int64_t limit = static_cast<int64_t>(down_start * (1 - o_.scale_down_percent / 100));
      limit = std::min<int64_t>(limit, current);
      return std::max<int64_t>(desired, std::max<int64_t>(limit, spec_.min_replicas));
    }
    return desired;
  }

  AutoscalerSpec spec_;
  Options o_;
  std::deque<Event> recommendations_;  // raw recommendations, oldest first
  std::deque<Event> events_;           // scale events (signed changes), oldest first
};

Status MakeHpa(const AutoscalerSpec& spec, const AutoscalerContext&, std::unique_ptr<Autoscaler>* out) {
  FLEETSIM_RETURN_IF_ERROR(CheckCommon(
      spec, {ScalingMetric::kConcurrency, ScalingMetric::kQueueDepth, ScalingMetric::kKvUtilization,
             ScalingMetric::kTokensPerS, ScalingMetric::kTtftMs, ScalingMetric::kTpotMs}));
  HpaAutoscaler::Options o;
  OptionReader r(spec);
  r.Read("sync_period_s", kPeriod, &o.sync_period_s);
  r.Read("tolerance", Range{0, 1, false, true}, &o.tolerance);
  r.Read("downscale_stabilization_s", Range{0, 3600}, &o.downscale_stabilization_s);
  r.Read("upscale_stabilization_s", Range{0, 3600}, &o.upscale_stabilization_s);
  r.Read("scale_up_pods", Range{0, kInf, false, false, true}, &o.scale_up_pods);
  r.Read("scale_up_percent", kNonNegative, &o.scale_up_percent);
  r.Read("scale_up_period_s", Range{0, 1800, true}, &o.scale_up_period_s);
  r.Read("scale_down_percent", Range{0, 100}, &o.scale_down_percent);
  r.Read("scale_down_period_s", Range{0, 1800, true}, &o.scale_down_period_s);
  FLEETSIM_RETURN_IF_ERROR(r.Finish());
  o.metric = spec.metric.value_or(o.metric);
  FLEETSIM_RETURN_IF_ERROR(
      TargetOf(spec, o.metric, o.metric == ScalingMetric::kConcurrency ? std::optional(o.target) : std::nullopt,
               &o.target));
  o.metric_delay_s = spec.metric_delay_s.value_or(o.metric_delay_s);
  *out = std::make_unique<HpaAutoscaler>(spec, o);
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// kpa: the Knative Pod Autoscaler (knative/serving; the decider is
// pkg/autoscaler/scaling/autoscaler.go Scale, its defaults
// pkg/autoscaler/config/config.go, the target
// pkg/reconciler/autoscaling/resources/target.go, scale to zero
// pkg/reconciler/autoscaling/kpa/scaler.go). Every tick (2 s):
//  1. readyPodsCount = max(1, ready).
//  2. observed stable / panic values: the pool's total of the metric
//     averaged over the stable window (60 s) and the panic window (10 % of
//     it, 6 s). No data: no decision (the desired count stays).
//  3. maxScaleUp = ceil(1000 * readyPodsCount), maxScaleDown =
//     floor(readyPodsCount / 2) (the revision is taken as reachable).
//  4. desiredStable = clamp(ceil(stable / target), maxScaleDown, maxScaleUp),
//     desiredPanic likewise.
//  5. Panic when ceil(panic / target) / readyPodsCount >= 2 (200 %); each
//     tick over the threshold restarts the panic clock; panic ends at the
//     first tick under it more than a stable window after the clock.
//  6. In panic the count is max(desiredStable, desiredPanic) but never
//     below the highest count of this panic (no scale-down in panic).
//  7. scale-down-delay (default 0, off): the highest count of that window.
//  8. The reconciler applies [min, max], then the scale-to-zero rule.
// A new Knative autoscaler starts in panic when more than one pod is ready
// (so a restart does not scale down on empty history); this one starts so
// when initial_replicas > 1.
// Scale to zero as modelled: the decider reaches 0 only when the stable
// window saw no load and at most one replica is ready (maxScaleDown). The
// reconciler then marks the revision inactive, puts the activator in the
// path and scales to zero once that has held for the grace period (30 s);
// here the pool keeps one replica until 0 has been wanted at every tick of
// the grace period, and any non-zero answer restarts the clock. Knative's
// extra waits (the revision active for a stable window, activator probes,
// scale-to-zero-pod-retention-period 0) are not modelled, nor the excess
// burst capacity (it steers the activator, not the replica count).
class KpaAutoscaler final : public Autoscaler {
 public:
  struct Options {
    // The decider's tick (pkg/autoscaler/scaling/multiscaler.go,
    // tickInterval 2 s). Seconds.
    double tick_s = 2;
    // The per-pod target: container_concurrency * target_utilization
    // (container-concurrency-target-default 100 when the revision sets no
    // containerConcurrency, container-concurrency-target-percentage 70 %):
    // 70 requests held per replica. spec.target replaces the product.
    double container_concurrency = 100;
    double target_utilization = 0.7;
    // stable-window (60 s; Knative allows 6 s to 1 h).
    double stable_window_s = 60;
    // panic-window-percentage (10 %: a 6 s panic window; Knative allows 1..100).
    double panic_window_percentage = 10;
    // panic-threshold-percentage (200 %; Knative allows 110..1000).
    double panic_threshold_percentage = 200;
    // max-scale-up-rate (1000) and max-scale-down-rate (2): at most
    // ceil(rate * ready) replicas, at least floor(ready / rate). Both > 1.
    double max_scale_up_rate = 1000;
    double max_scale_down_rate = 2;
    // scale-to-zero-grace-period (30 s): how long zero must be wanted
    // before the last replica goes.
    double scale_to_zero_grace_s = 30;
    // scale-down-delay (0 s: off; at most 1 h): a scale-down waits until the
    // lower count has been wanted for this long.
    double scale_down_delay_s = 0;
    ScalingMetric metric = ScalingMetric::kConcurrency;
    double target = 70;  // set by the factory from the above or spec.target
    // The autoscaler scrapes the queue-proxies every second
    // (pkg/autoscaler/metrics/collector.go, scrapeTickInterval).
    double metric_delay_s = 1;
  };

  KpaAutoscaler(const AutoscalerSpec& spec, const Options& o) : spec_(spec), o_(o) {
    if (spec.initial_replicas > 1) {
      panic_since_ = 0;
      max_panic_pods_ = spec.initial_replicas;
    }
  }

  SimTime period() const override { return SecondsToTime(o_.tick_s); }
  SimTime metric_delay() const override { return SecondsToTime(o_.metric_delay_s); }
  SimTime longest_window() const override { return SecondsToTime(std::max(o_.stable_window_s, o_.tick_s)); }

  int Decide(const PoolSignals& s) override {
    const SimTime now = s.now();
    const int current = s.desired();
    const double ready = std::max(1, s.ready());
    const SimTime stable_window = SecondsToTime(o_.stable_window_s);
    const std::optional<double> stable = s.Total(o_.metric, stable_window);
    const std::optional<double> panic =
        s.Total(o_.metric, SecondsToTime(o_.stable_window_s * o_.panic_window_percentage / 100));
    if (!stable || !panic) return Clamp(spec_, current);

    const int64_t max_up = CeilCount(o_.max_scale_up_rate * ready);
    const int64_t max_down = FloorCount(ready / o_.max_scale_down_rate);
    const int64_t dspc = CeilCount(*stable / o_.target);
    const int64_t dppc = CeilCount(*panic / o_.target);
    const int64_t desired_stable = std::min(std::max(dspc, max_down), max_up);
    const int64_t desired_panic = std::min(std::max(dppc, max_down), max_up);

    const bool over = static_cast<double>(dppc) / ready >= o_.panic_threshold_percentage / 100;
    if (over) {
      panic_since_ = now;  // start panicking, or extend the panic
    } else if (panic_since_ && *panic_since_ + stable_window < now) {
      panic_since_.reset();
      max_panic_pods_ = 0;
    }
    int64_t desired = desired_stable;
    if (panic_since_) {
      desired = std::max(desired, desired_panic);
      max_panic_pods_ = std::max(max_panic_pods_, desired);
      desired = max_panic_pods_;
    }

    if (o_.scale_down_delay_s > 0) {
      const SimTime cutoff = now - SecondsToTime(o_.scale_down_delay_s);
      while (!delay_window_.empty() && delay_window_.front().first <= cutoff) delay_window_.pop_front();
      delay_window_.emplace_back(now, desired);
      for (const auto& [at, n] : delay_window_) desired = std::max(desired, n);
    }

    // The reconciler: bounds, then scale to zero after the grace period.
    const int bounded = Clamp(spec_, desired);
    if (bounded != 0 || current == 0) {
      zero_since_.reset();
      return bounded;
    }
    if (!zero_since_) zero_since_ = now;
    return now - *zero_since_ >= SecondsToTime(o_.scale_to_zero_grace_s) ? 0 : Clamp(spec_, 1);
  }

 private:
  AutoscalerSpec spec_;
  Options o_;
  std::optional<SimTime> panic_since_;  // the panic clock (panicTime)
  int64_t max_panic_pods_ = 0;          // the highest count of this panic
  std::deque<std::pair<SimTime, int64_t>> delay_window_;
  std::optional<SimTime> zero_since_;  // first tick of the current run wanting 0
};

Status MakeKpa(const AutoscalerSpec& spec, const AutoscalerContext&, std::unique_ptr<Autoscaler>* out) {
  FLEETSIM_RETURN_IF_ERROR(
      CheckCommon(spec, {ScalingMetric::kConcurrency, ScalingMetric::kQueueDepth, ScalingMetric::kTokensPerS}));
  KpaAutoscaler::Options o;
  OptionReader r(spec);
  r.Read("tick_s", kPeriod, &o.tick_s);
  r.Read("container_concurrency", Range{0, 1000, true}, &o.container_concurrency);
  r.Read("target_utilization", Range{0, 1, true}, &o.target_utilization);
  r.Read("stable_window_s", Range{6, 3600}, &o.stable_window_s);
  r.Read("panic_window_percentage", Range{1, 100}, &o.panic_window_percentage);
  r.Read("panic_threshold_percentage", Range{110, 1000}, &o.panic_threshold_percentage);
  r.Read("max_scale_up_rate", Range{1, kInf, true}, &o.max_scale_up_rate);
  r.Read("max_scale_down_rate", Range{1, kInf, true}, &o.max_scale_down_rate);
  r.Read("scale_to_zero_grace_s", kPositive, &o.scale_to_zero_grace_s);
  r.Read("scale_down_delay_s", Range{0, 3600}, &o.scale_down_delay_s);
  FLEETSIM_RETURN_IF_ERROR(r.Finish());
  if (spec.target && (r.Given("container_concurrency") || r.Given("target_utilization")))
    return Status::Invalid(spec.path +
                           ".target: give either target or options.container_concurrency/target_utilization "
                           "(the target replaces their product)");
  o.metric = spec.metric.value_or(o.metric);
  const double knative_target = std::max(0.01, o.container_concurrency * o.target_utilization);
  FLEETSIM_RETURN_IF_ERROR(TargetOf(
      spec, o.metric, o.metric == ScalingMetric::kConcurrency ? std::optional(knative_target) : std::nullopt,
      &o.target));
  o.metric_delay_s = spec.metric_delay_s.value_or(o.metric_delay_s);
  *out = std::make_unique<KpaAutoscaler>(spec, o);
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// target_ongoing: Ray Serve's default autoscaling policy
// (ray-project/ray, python/ray/serve/autoscaling_policy.py,
// replica_queue_length_autoscaling_policy wrapped by
// _apply_autoscaling_config; defaults from python/ray/serve/config.py
// AutoscalingConfig). Each control-loop step:
//  1. Cold start: with no running replica, any request held asks for
//     max(ceil(upscaling_factor), current target) at once (no delay); none
//     keeps the target.
//  2. desired = running * (total ongoing / (target_ongoing_requests *
//     running)), the total averaged over look_back_period_s (30 s).
//  3. _apply_scaling_factors: ceil(running + factor * (desired - running))
//     with upscaling_factor / downscaling_factor (1.0); a scale-down stuck
//     at `running` by the factor goes down by one.
//  4. Bounds [min, max].
//  5. _apply_delay_logic against the current target: a scale-up is applied
//     once it has been the decision for more than upscale_delay_s / period
//     consecutive steps (so after upscale_delay_s); a scale-down likewise
//     with downscale_delay_s, or downscale_to_zero_delay_s (unset: the
//     downscale delay) for 1 -> 0, and never below 1 otherwise. A step
//     with no change resets the count; a change of direction restarts it.
// Simplified: Ray's loop runs every 0.1 s (CONTROL_LOOP_INTERVAL_S); here
// every second (option period_s), and the delays count steps of that
// period. A window with no sample keeps the target and the count.
class TargetOngoingAutoscaler final : public Autoscaler {
 public:
  struct Options {
    // The control loop's period (Ray: 0.1 s; coarser here). Seconds.
    double period_s = 1;
    ScalingMetric metric = ScalingMetric::kConcurrency;
    // target_ongoing_requests per replica (Ray's default 2).
    double target = 2;
    // look_back_period_s: the averaging window (30 s).
    double look_back_period_s = 30;
    // upscaling_factor / downscaling_factor (Ray's smoothing_factor 1.0):
    // the gain applied to the gap between desired and running.
    double upscaling_factor = 1;
    double downscaling_factor = 1;
    // upscale_delay_s (30 s) and downscale_delay_s (600 s): how long a
    // decision must hold before it is applied.
    double upscale_delay_s = 30;
    double downscale_delay_s = 600;
    // downscale_to_zero_delay_s: the delay of 1 -> 0 (unset: downscale_delay_s).
    std::optional<double> downscale_to_zero_delay_s;
    // metrics_interval_s (10 s): how often replicas and handles push metrics.
    double metric_delay_s = 10;
  };

  TargetOngoingAutoscaler(const AutoscalerSpec& spec, const Options& o) : spec_(spec), o_(o) {}

  SimTime period() const override { return SecondsToTime(o_.period_s); }
  SimTime metric_delay() const override { return SecondsToTime(o_.metric_delay_s); }
  SimTime longest_window() const override { return SecondsToTime(std::max(o_.look_back_period_s, o_.period_s)); }

  int Decide(const PoolSignals& s) override {
    const int target_num = s.desired();
    const int running = s.ready();
    const std::optional<double> total = s.Total(o_.metric, SecondsToTime(o_.look_back_period_s));
    if (running == 0) {  // _get_cold_start_scale_up_replicas
      if (total && *total > 0) return Clamp(spec_, std::max<int64_t>(CeilCount(o_.upscaling_factor), target_num));
      return Clamp(spec_, target_num);
    }
    if (!total) return Clamp(spec_, target_num);
    const double desired = running * (*total / (o_.target * running));
    // _apply_scaling_factors
    const double delta = desired - running;
    int64_t scaled =
        CeilCount(std::max(0.0, running + (delta > 0 ? o_.upscaling_factor : o_.downscaling_factor) * delta));
    if (CeilCount(desired) < running && scaled == running) --scaled;
    return Delay(Clamp(spec_, scaled), target_num);
  }

 private:
  // _apply_delay_logic. Delays count whole periods: int(delay / period).
  int Delay(int desired, int target_num) {
    auto steps = [&](double delay_s) { return SecondsToTime(delay_s) / period(); };
    int decision = target_num;
    if (desired > target_num) {
      if (counter_ < 0) counter_ = 0;
      ++counter_;
      if (counter_ > steps(o_.upscale_delay_s)) {
        counter_ = 0;
        decision = desired;
      }
    } else if (desired < target_num) {
      if (counter_ > 0) counter_ = 0;
      --counter_;
      const bool to_zero = target_num == 1;
      const double delay_s =
          to_zero ? o_.downscale_to_zero_delay_s.value_or(o_.downscale_delay_s) : o_.downscale_delay_s;
      if (!to_zero) desired = std::max(1, desired);
      if (counter_ < -steps(delay_s)) {
        counter_ = 0;
        decision = desired;
      }
    } else {
      counter_ = 0;
    }
    return Clamp(spec_, decision);
  }

  AutoscalerSpec spec_;
  Options o_;
  int64_t counter_ = 0;  // consecutive decisions: > 0 up, < 0 down
};

Status MakeTargetOngoing(const AutoscalerSpec& spec, const AutoscalerContext&, std::unique_ptr<Autoscaler>* out) {
  FLEETSIM_RETURN_IF_ERROR(CheckCommon(spec, {ScalingMetric::kConcurrency, ScalingMetric::kQueueDepth}));
  TargetOngoingAutoscaler::Options o;
  OptionReader r(spec);
  r.Read("period_s", kPeriod, &o.period_s);
  r.Read("look_back_period_s", Range{1e-3, 86400}, &o.look_back_period_s);
  r.Read("upscaling_factor", kPositive, &o.upscaling_factor);
  r.Read("downscaling_factor", kPositive, &o.downscaling_factor);
  r.Read("upscale_delay_s", kNonNegative, &o.upscale_delay_s);
  r.Read("downscale_delay_s", kNonNegative, &o.downscale_delay_s);
  r.Read("downscale_to_zero_delay_s", kNonNegative, &o.downscale_to_zero_delay_s);
  FLEETSIM_RETURN_IF_ERROR(r.Finish());
  o.metric = spec.metric.value_or(o.metric);
  o.target = spec.target.value_or(o.target);
  o.metric_delay_s = spec.metric_delay_s.value_or(o.metric_delay_s);
  *out = std::make_unique<TargetOngoingAutoscaler>(spec, o);
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// scheduled: a daily profile, as a cron-driven scaler would set it (e.g.
// KEDA's cron scaler or a CronJob patching replicas). At time t the count is
// the entry of the latest hour <= t mod 24 h; before the first entry of the
// day, the last entry (from the day before) holds. Reads no metric.
class ScheduledAutoscaler final : public Autoscaler {
 public:
  struct Options {
    // How often the profile is applied. Seconds.
    double period_s = 60;
  };

  ScheduledAutoscaler(const AutoscalerSpec& spec, const Options& o) : spec_(spec), o_(o) {
    for (const auto& [hour, replicas] : spec.schedule) starts_.emplace_back(SecondsToTime(hour * 3600), replicas);
  }

  SimTime period() const override { return SecondsToTime(o_.period_s); }
  SimTime metric_delay() const override { return 0; }

  int Decide(const PoolSignals& s) override {
    constexpr SimTime kDay = 24 * 3600 * kSecond;
    const SimTime of_day = ((s.now() % kDay) + kDay) % kDay;
    int replicas = starts_.back().second;
    for (const auto& [start, n] : starts_)
      if (start <= of_day) replicas = n;
    return Clamp(spec_, replicas);
  }

 private:
  AutoscalerSpec spec_;
  Options o_;
  std::vector<std::pair<SimTime, int>> starts_;  // (time of day, replicas), in order
};

Status MakeScheduled(const AutoscalerSpec& spec, const AutoscalerContext&, std::unique_ptr<Autoscaler>* out) {
  const char* unused = spec.metric           ? "metric"
                       : spec.target         ? "target"
                       : spec.metric_delay_s ? "metric_delay_s"
                                             : nullptr;
  if (unused)
    return Status::Invalid(spec.path + "." + unused + ": the \"scheduled\" autoscaler reads no metric (it follows "
                           "its schedule)");
  if (spec.schedule.empty())
    return Status::Invalid(spec.path + ".schedule: the \"scheduled\" autoscaler needs at least one (hour, replicas) "
                           "entry");
  for (size_t i = 0; i < spec.schedule.size(); ++i) {
    const auto& [hour, replicas] = spec.schedule[i];
    const std::string at = spec.path + ".schedule[" + std::to_string(i) + "]";
    if (!(hour >= 0 && hour < 24)) return Status::Invalid(at + ": hour must be in [0, 24), got " + Num(hour));
    if (replicas < 0) return Status::Invalid(at + ": replicas must be >= 0, got " + std::to_string(replicas));
    if (i > 0 && !(hour > spec.schedule[i - 1].first))
      return Status::Invalid(spec.path + ".schedule: hours must increase, but entry " + std::to_string(i) + " (" +
                             Num(hour) + ") follows " + Num(spec.schedule[i - 1].first));
  }
  ScheduledAutoscaler::Options o;
  OptionReader r(spec);
  r.Read("period_s", kPeriod, &o.period_s);
  FLEETSIM_RETURN_IF_ERROR(r.Finish());
  *out = std::make_unique<ScheduledAutoscaler>(spec, o);
  return Status::Ok();
}

}  // namespace

void RegisterBuiltinAutoscalers(AutoscalerRegistry* registry) {
  registry->Add("hpa",
                "Kubernetes HPA (podautoscaler/horizontal.go): every 15 s, ceil(ready x metric/target) outside a "
                "10% tolerance, 300 s scale-down stabilisation, scale-up at most max(2x, +4) per 15 s",
                MakeHpa);
  registry->Add("kpa",
                "Knative KPA (autoscaler/scaling/autoscaler.go): every 2 s, concurrency over a 60 s stable and 6 s "
                "panic window against 70 per replica, panic at 200%, at most halves per tick, scale to zero",
                MakeKpa);
  registry->Add("target_ongoing",
                "Ray Serve default policy (serve/autoscaling_policy.py): 2 ongoing requests per replica over 30 s, "
                "scale-up after 30 s and scale-down after 600 s of the same decision",
                MakeTargetOngoing);
  registry->Add("scheduled",
                "a daily profile: schedule of (hour of day, replicas), the latest hour <= time of day (wrapping at "
                "midnight), applied every 60 s",
                MakeScheduled);
}

}  // namespace fleetsim

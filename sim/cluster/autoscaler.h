// Autoscalers: per pool, a controller that reads the pool's metrics (as its
// production counterpart would read them: sampled, averaged over a window,
// reported late) and sets the pool's desired replica count. Registered by
// name like the other policies; each implementation's header comment names
// the production controller it follows, and its Options struct holds that
// controller's defaults.
//
// The Cluster owns the mechanics (sim/cluster/cluster.h): it samples the
// pool every PoolSignals::kSampleInterval, calls Decide every period(),
// clamps the answer to the pool's bounds, and starts (cold start, or a warm
// worker) or drains replicas to reach it. A scale-up may be refused when the
// GPU type is unavailable in the pool's pricing class (a capacity limit);
// the controller sees it as replicas that never come.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "sim/cluster/registry.h"
#include "sim/engine/time.h"

namespace fleetsim {

// Signals an autoscaler may use.
enum class ScalingMetric {
  kConcurrency,    // requests held (queued, running, or buffered for the pool)
  kQueueDepth,     // requests waiting for a batch slot (or buffered)
  kKvUtilization,  // KV cache blocks in use, 0..1
  kTokensPerS,     // prompt + output tokens of requests finished, per second
  kTtftMs,         // time to first token of requests finished (a latency)
  kTpotMs,         // time per output token of requests finished (a latency)
};
// "concurrency", "queue_depth", "kv_utilization", "tokens_per_s", "ttft_ms",
// "tpot_ms".
const char* ScalingMetricName(ScalingMetric m);
std::optional<ScalingMetric> ParseScalingMetric(const std::string& name);
inline bool IsLatencyMetric(ScalingMetric m) { return m == ScalingMetric::kTtftMs || m == ScalingMetric::kTpotMs; }

// The load a pool saw over a window.
struct WindowLoad {
  double seconds = 0;            // the window's length
  int64_t arrivals = 0;          // requests that arrived for the pool
  int64_t finished = 0;          // requests it completed
  double mean_input_tokens = 0;  // of those completed (0 when none)
  double mean_output_tokens = 0;
  double mean_ttft_ms = 0;       // of those completed (0 when none)
  double mean_tpot_ms = 0;       // of those completed with two tokens or more (0 when none)
};

// One pool as its autoscaler sees it. Replica counts are the controller's
// own knowledge (no delay); metrics are delayed by the autoscaler's
// metric_delay_s: a window of length w covers [now - delay - w, now - delay].
class PoolSignals {
 public:
  // Samples of the replicas' gauges are taken this often.
  static constexpr SimTime kSampleInterval = kSecond;

  virtual ~PoolSignals() = default;
  virtual SimTime now() const = 0;
  virtual int ready() const = 0;     // replicas serving now
  virtual int starting() const = 0;  // replicas provisioning or starting (taking no traffic yet)
  virtual int desired() const = 0;   // the pool's current target
  // The gauge `m` summed over the pool's ready replicas (kKvUtilization:
  // averaged over them), averaged over the samples in the window; unset
  // when the window holds no sample. For latencies and tokens/s: over the
  // requests finished in the window.
  virtual std::optional<double> Total(ScalingMetric m, SimTime window) const = 0;
  // The same per ready replica (the mean over samples of total / ready,
  // samples with no replica ready left out), as Kubernetes averages a
  // metric over its ready pods. Latencies: the mean.
  virtual std::optional<double> PerReplica(ScalingMetric m, SimTime window) const = 0;
  // The q-quantile (0..1) of a latency metric over requests finished in the
  // window; unset when none finished.
  virtual std::optional<double> Percentile(ScalingMetric latency, double q, SimTime window) const = 0;
  virtual WindowLoad Load(SimTime window) const = 0;
};

// What the fleet knows of one replica of the pool (from the simulator's own
// performance model), for autoscalers that size a pool from capacity.
class ReplicaCapacity {
 public:
  virtual ~ReplicaCapacity() = default;
  // Time to first token of one prompt of `isl` tokens on an idle replica, ms.
  virtual double PrefillMs(double isl) const = 0;
  // One decode iteration of `batch` sequences at `context` tokens each, ms.
  virtual double DecodeStepMs(int batch, double context) const = 0;
  // The most requests per second one replica sustains with prompts of `isl`
  // and outputs of `osl` tokens while meeting a TTFT of `ttft_ms` and a
  // TPOT of `tpot_ms` (either unset: no such target); 0 if it cannot meet
  // them at all.
  virtual double MaxRequestsPerS(double isl, double osl, std::optional<double> ttft_ms,
                                 std::optional<double> tpot_ms) const = 0;
};

// A pool's autoscaler as the scenario gives it (fleet.pools[i].autoscaler).
struct AutoscalerSpec {
  std::string path;     // "fleet.pools[0].autoscaler", for messages
  std::string policy;   // registry name
  int min_replicas = 1;
  int max_replicas = 1;
  int initial_replicas = 1;  // ready at time 0
  // Idle warm workers kept beside the serving ones: weights loaded, taking
  // no traffic, ready in warm_start_s; a scale-up takes them first, and the
  // pool replaces each one used (with a cold start).
  int warm_pool = 0;
  // The signal the policy scales on and its target per replica; unset:
  // the policy's default.
  std::optional<ScalingMetric> metric;
  std::optional<double> target;
  // How late the metrics reach the controller; unset: the policy's default.
  std::optional<double> metric_delay_s;
  // Policy-specific numeric options (each policy's factory refuses keys it
  // does not know), e.g. "sync_period_s".
  std::map<std::string, double, std::less<>> options;
  // `scheduled`: (hour of day 0..24, replicas) from that hour on, in hour
  // order; the last entry wraps around midnight.
  std::vector<std::pair<double, int>> schedule;
  // `slo_driven`: "constant", "arima" or "kalman".
  std::string forecaster = "constant";
};

// What a factory gets beyond the spec.
struct AutoscalerContext {
  const ReplicaCapacity* capacity = nullptr;  // outlives the autoscaler
  std::optional<double> ttft_slo_ms;          // the scenario's targets
  std::optional<double> tpot_slo_ms;
};

class Autoscaler {
 public:
  virtual ~Autoscaler() = default;
  // Decide runs every period(), from the first period after time 0.
  virtual SimTime period() const = 0;
  // How late the metrics reach it (what PoolSignals applies).
  virtual SimTime metric_delay() const = 0;
  // The longest window it asks PoolSignals for: the monitor keeps that
  // much history (behind the delay).
  virtual SimTime longest_window() const { return period(); }
  // The desired replica count now, within [min_replicas, max_replicas] of
  // its spec.
  virtual int Decide(const PoolSignals& signals) = 0;
};

using AutoscalerFactory =
    std::function<Status(const AutoscalerSpec& spec, const AutoscalerContext& context, std::unique_ptr<Autoscaler>* out)>;
using AutoscalerRegistry = Registry<AutoscalerFactory>;

// hpa, kpa, target_ongoing, scheduled (sim/cluster/autoscalers.cc) and
// slo_driven (sim/cluster/slo_autoscaler.cc).
void RegisterBuiltinAutoscalers(AutoscalerRegistry* registry);
void RegisterSloDrivenAutoscaler(AutoscalerRegistry* registry);

}  // namespace fleetsim

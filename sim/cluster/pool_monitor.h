// PoolMonitor: one pool's metrics pipeline, as an autoscaler reads it
// (PoolSignals). The Cluster feeds it a sample of the pool's gauges every
// PoolSignals::kSampleInterval and every request the pool finishes; queries
// see them `delay` late, over a window ending at now - delay. Samples and
// requests older than the longest window asked for (`retention`) are
// dropped, so memory is bounded by the window, not the run.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>

#include "sim/cluster/autoscaler.h"

namespace fleetsim {

class PoolMonitor final : public PoolSignals {
 public:
  // The pool's gauges at one instant.
  struct Gauges {
    int ready = 0;
    double concurrency = 0;
    double queue_depth = 0;
    double kv_utilization_sum = 0;  // summed over the ready replicas
  };
  PoolMonitor(SimTime delay, SimTime retention) : delay_(delay), retention_(retention) {}

  // A sample at `t` (non-decreasing), with the requests that arrived for
  // the pool since the previous one.
  void AddSample(SimTime t, const Gauges& g, int64_t arrivals);
  // A request the pool completed at `t`; tpot_ms < 0: it had one token.
  void AddFinished(SimTime t, double ttft_ms, double tpot_ms, int32_t input_tokens, int32_t output_tokens);
  // What the controller knows of its replicas at `now`.
  void SetNow(SimTime now, int ready, int starting, int desired);

  SimTime now() const override { return now_; }
  int ready() const override { return ready_; }
  int starting() const override { return starting_; }
  int desired() const override { return desired_; }
  std::optional<double> Total(ScalingMetric m, SimTime window) const override;
  std::optional<double> PerReplica(ScalingMetric m, SimTime window) const override;
  std::optional<double> Percentile(ScalingMetric latency, double q, SimTime window) const override;
  WindowLoad Load(SimTime window) const override;

 private:
  struct Sample {
    SimTime t;
    Gauges g;
    int64_t arrivals;
  };
  struct Finished {
    SimTime t;
    float ttft_ms, tpot_ms;
    int32_t input_tokens, output_tokens;
  };
  static double Gauge(const Sample& s, ScalingMetric m);
  // [first, last) of the window's samples / requests: t in (hi - w, hi].
  template <typename T>
  static std::pair<size_t, size_t> Range(const std::deque<T>& q, SimTime hi, SimTime window);
  void Trim();

  SimTime delay_, retention_;
  SimTime now_ = 0;
  int ready_ = 0, starting_ = 0, desired_ = 0;
  std::deque<Sample> samples_;
  std::deque<Finished> finished_;
};

}  // namespace fleetsim

#include "sim/cluster/pool_monitor.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace fleetsim {

void PoolMonitor::AddSample(SimTime t, const Gauges& g, int64_t arrivals) {
  samples_.push_back({t, g, arrivals});
  Trim();
}

void PoolMonitor::AddFinished(SimTime t, double ttft_ms, double tpot_ms, int32_t input_tokens, int32_t output_tokens) {
  finished_.push_back({t, static_cast<float>(ttft_ms), static_cast<float>(tpot_ms), input_tokens, output_tokens});
}

void PoolMonitor::SetNow(SimTime now, int ready, int starting, int desired) {
  now_ = now;
  ready_ = ready;
  starting_ = starting;
  desired_ = desired;
  Trim();
}

void PoolMonitor::Trim() {
  const SimTime oldest = std::max(now_, samples_.empty() ? now_ : samples_.back().t) - delay_ - retention_;
  while (!samples_.empty() && samples_.front().t < oldest) samples_.pop_front();
  while (!finished_.empty() && finished_.front().t < oldest) finished_.pop_front();
}

template <typename T>
std::pair<size_t, size_t> PoolMonitor::Range(const std::deque<T>& q, SimTime hi, SimTime window) {
  auto cmp = [](const T& x, SimTime t) { return x.t <= t; };
  const size_t last = std::lower_bound(q.begin(), q.end(), hi, cmp) - q.begin();
  const size_t first = std::lower_bound(q.begin(), q.end(), hi - window, cmp) - q.begin();
  return {first, last};
}

double PoolMonitor::Gauge(const Sample& s, ScalingMetric m) {
  switch (m) {
    case ScalingMetric::kConcurrency: return s.g.concurrency;
    case ScalingMetric::kQueueDepth: return s.g.queue_depth;
    case ScalingMetric::kKvUtilization: return s.g.ready > 0 ? s.g.kv_utilization_sum / s.g.ready : 0.0;
    default: return 0;
  }
}

std::optional<double> PoolMonitor::Total(ScalingMetric m, SimTime window) const {
  const SimTime hi = now_ - delay_;
  if (IsLatencyMetric(m)) return PerReplica(m, window);
  if (m == ScalingMetric::kTokensPerS) {
    const auto [a, b] = Range(finished_, hi, window);
    double tokens = 0;
    for (size_t k = a; k < b; ++k) tokens += finished_[k].input_tokens + finished_[k].output_tokens;
    const auto [sa, sb] = Range(samples_, hi, window);
    if (sa == sb && a == b) return std::nullopt;
    return tokens / TimeToSeconds(window);
  }
  const auto [a, b] = Range(samples_, hi, window);
  if (a == b) return std::nullopt;
  double sum = 0;
  for (size_t k = a; k < b; ++k) sum += Gauge(samples_[k], m);
  return sum / static_cast<double>(b - a);
}

std::optional<double> PoolMonitor::PerReplica(ScalingMetric m, SimTime window) const {
  const SimTime hi = now_ - delay_;
  if (IsLatencyMetric(m)) {
    const auto [a, b] = Range(finished_, hi, window);
    double sum = 0;
    int64_t n = 0;
    for (size_t k = a; k < b; ++k) {
      const double v = m == ScalingMetric::kTtftMs ? finished_[k].ttft_ms : finished_[k].tpot_ms;
      if (v < 0) continue;
      sum += v;
      ++n;
    }
    if (n == 0) return std::nullopt;
    return sum / static_cast<double>(n);
  }
  const auto [a, b] = Range(samples_, hi, window);
  double sum = 0, ready = 0;
  int64_t n = 0;
  for (size_t k = a; k < b; ++k) {
    if (samples_[k].g.ready == 0) continue;
    sum += m == ScalingMetric::kKvUtilization ? Gauge(samples_[k], m) : Gauge(samples_[k], m) / samples_[k].g.ready;
    ready += samples_[k].g.ready;
    ++n;
  }
  if (n == 0) return std::nullopt;
  if (m == ScalingMetric::kTokensPerS) {
    const std::optional<double> total = Total(m, window);
    if (!total) return std::nullopt;
    return *total / (ready / static_cast<double>(n));
  }
  return sum / static_cast<double>(n);
}

std::optional<double> PoolMonitor::Percentile(ScalingMetric latency, double q, SimTime window) const {
  if (!IsLatencyMetric(latency)) return std::nullopt;
  const auto [a, b] = Range(finished_, now_ - delay_, window);
  std::vector<float> v;
  v.reserve(b - a);
  for (size_t k = a; k < b; ++k) {
    const float x = latency == ScalingMetric::kTtftMs ? finished_[k].ttft_ms : finished_[k].tpot_ms;
    if (x >= 0) v.push_back(x);
  }
  if (v.empty()) return std::nullopt;
  // Nearest rank.
  const size_t rank = std::min(v.size() - 1, static_cast<size_t>(std::max(0.0, std::ceil(q * v.size()) - 1)));
  std::nth_element(v.begin(), v.begin() + rank, v.end());
  return v[rank];
}

WindowLoad PoolMonitor::Load(SimTime window) const {
  const SimTime hi = now_ - delay_;
  WindowLoad w;
  w.seconds = TimeToSeconds(window);
  const auto [sa, sb] = Range(samples_, hi, window);
  for (size_t k = sa; k < sb; ++k) w.arrivals += samples_[k].arrivals;
  const auto [a, b] = Range(finished_, hi, window);
  double in = 0, out = 0, ttft = 0, tpot = 0;
  int64_t tpot_n = 0;
  for (size_t k = a; k < b; ++k) {
    in += finished_[k].input_tokens;
    out += finished_[k].output_tokens;
    ttft += finished_[k].ttft_ms;
    if (finished_[k].tpot_ms >= 0) {
      tpot += finished_[k].tpot_ms;
      ++tpot_n;
    }
  }
  w.finished = static_cast<int64_t>(b - a);
  if (w.finished > 0) {
    const double n = static_cast<double>(w.finished);
    w.mean_input_tokens = in / n;
    w.mean_output_tokens = out / n;
    w.mean_ttft_ms = ttft / n;
  }
  if (tpot_n > 0) w.mean_tpot_ms = tpot / static_cast<double>(tpot_n);
  return w;
}

}  // namespace fleetsim

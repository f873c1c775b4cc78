#include "sim/metrics/overload.h"

#include <algorithm>
#include <cmath>

#include "base/status.h"

namespace fleetsim {

void CoarseHistogram::Add(SimTime ns) {
  const int b = ns <= 1 ? 0 : std::min(kBuckets - 1, static_cast<int>(4.0 * std::log2(static_cast<double>(ns))));
  ++counts_[b];
  ++count_;
}

void CoarseHistogram::Merge(const CoarseHistogram& other) {
  for (int b = 0; b < kBuckets; ++b) counts_[b] += other.counts_[b];
  count_ += other.count_;
}

double CoarseHistogram::Median() const {
  if (count_ == 0) return 0;
  const int64_t rank = (count_ + 1) / 2;
  int64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += counts_[b];
    if (seen >= rank) return std::exp2((b + 0.5) / 4.0);
  }
  return std::exp2(kBuckets / 4.0);
}

OverloadMonitor::Bin& OverloadMonitor::At(SimTime t) {
  FLEETSIM_CHECK(t >= warmup_);
  while ((t - warmup_) / width_ >= kBins) {
    // Halve the resolution: bin i takes old bins 2i and 2i+1.
    for (int i = 0; i < kBins / 2; ++i) {
      Bin merged = std::move(bins_[2 * i]);
      Bin& other = bins_[2 * i + 1];
      merged.arrivals += other.arrivals;
      merged.completions += other.completions;
      merged.queue.Merge(other.queue);
      merged.service.Merge(other.service);
      bins_[i] = std::move(merged);
    }
    for (int i = kBins / 2; i < kBins; ++i) bins_[i] = Bin();
    width_ *= 2;
  }
  return bins_[static_cast<size_t>((t - warmup_) / width_)];
}

void OverloadMonitor::OnArrival(SimTime at) {
  if (at < warmup_) return;
  ++At(at).arrivals;
  ++arrivals_;
  last_arrival_ = std::max(last_arrival_, at);
  completions_at_last_arrival_ = completions_;
}

void OverloadMonitor::OnCompleted(SimTime arrival, SimTime finish, SimTime queue_delay) {
  // Only requests that arrived after warm-up: the arrivals they are
  // compared with start there too, and a backlog left from warm-up must not
  // count as keeping pace.
  if (arrival < warmup_) return;
  ++At(finish).completions;
  ++completions_;
  Bin& b = At(arrival);
  queue_delay = std::max<SimTime>(queue_delay, 0);
  b.queue.Add(queue_delay);
  b.service.Add(std::max<SimTime>(finish - arrival - queue_delay, 0));
}

void OverloadMonitor::OnUnscheduled(SimTime arrival, SimTime waited) {
  if (arrival < warmup_) return;
  At(arrival).queue.Add(std::max<SimTime>(waited, 0));
}

void OverloadMonitor::OnTurnedAway(SimTime arrival) {
  if (arrival < warmup_) return;
  --At(arrival).arrivals;
  --arrivals_;
}

OverloadVerdict OverloadMonitor::Judge() const {
  OverloadVerdict v;
  const SimTime window = last_arrival_ - warmup_;
  if (arrivals_ < kMinArrivals || window <= 0) {
    v.reason = "not judged: fewer than " + std::to_string(kMinArrivals) + " arrivals after warm-up";
    return v;
  }
  // Quarter of a bin: by its midpoint within [0, window).
  auto quarter = [&](int b) {
    const double mid = (static_cast<double>(b) + 0.5) * static_cast<double>(width_);
    return std::min(3, static_cast<int>(4.0 * mid / static_cast<double>(window)));
  };
  const int used = static_cast<int>(std::min<SimTime>(window / width_ + 1, kBins));
  CoarseHistogram q1_service, q2_queue, q4_queue;
  for (int b = 0; b < used; ++b) {
    const int q = quarter(b);
    if (q == 0) q1_service.Merge(bins_[b].service);
    if (q == 1) q2_queue.Merge(bins_[b].queue);
    if (q == 3) q4_queue.Merge(bins_[b].queue);
  }
  // (a) What arrived up to (last arrival - lag) should have completed by
  // the last arrival; the partial bin counts pro rata. The lag is the time a
  // request is served once scheduled (the first quarter's median of
  // end-to-end minus queueing delay): what a stable fleet needs to finish
  // what arrived. End-to-end latency itself would grow with the very
  // overload being judged, and shrink the horizon until nothing is judged.
  const SimTime lag = q1_service.count() > 0 ? static_cast<SimTime>(q1_service.Median()) : 0;
  const SimTime horizon = window - lag;
  double expected = 0;
  for (int b = 0; b < used && horizon > 0; ++b) {
    const SimTime lo = b * width_, hi = lo + width_;
    if (hi <= horizon) {
      expected += static_cast<double>(bins_[b].arrivals);
    } else if (lo < horizon) {
      expected += static_cast<double>(bins_[b].arrivals) * static_cast<double>(horizon - lo) /
                  static_cast<double>(width_);
    }
  }
  v.judged = true;
  if (expected >= static_cast<double>(kMinArrivals) / 2) {
    v.completion_ratio = std::min(1.0, static_cast<double>(completions_at_last_arrival_) / expected);
    if (*v.completion_ratio < 0.95) {
      v.overloaded = true;
      char buf[160];
      std::snprintf(buf, sizeof buf, "completions kept pace with only %.1f%% of arrivals over the arrival window",
                    100 * *v.completion_ratio);
      v.reason = buf;
    }
  }
  // (b) Queueing delay growing across the window.
  constexpr int64_t kMinPerQuarter = 20;
  if (q2_queue.count() >= kMinPerQuarter && q4_queue.count() >= kMinPerQuarter) {
    v.queue_p50_ms_q2 = q2_queue.Median() * 1e-6;
    v.queue_p50_ms_q4 = q4_queue.Median() * 1e-6;
    if (*v.queue_p50_ms_q4 > 2 * *v.queue_p50_ms_q2 && *v.queue_p50_ms_q4 > 1000.0) {
      char buf[200];
      std::snprintf(buf, sizeof buf,
                    "median queueing delay grew from %.0f ms (second quarter of arrivals) to %.0f ms (last quarter)",
                    *v.queue_p50_ms_q2, *v.queue_p50_ms_q4);
      v.reason += std::string(v.overloaded ? "; " : "") + buf;
      v.overloaded = true;
    }
  }
  return v;
}

}  // namespace fleetsim

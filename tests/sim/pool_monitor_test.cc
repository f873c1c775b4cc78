// PoolMonitor: what an autoscaler reads of its pool. Every query covers the
// window (now - delay - window, now - delay]: a sample or request exactly at
// the window's far edge is out, one exactly at its near edge is in; anything
// older than the retention (behind now - delay) is dropped. Each expected
// value is added up by hand from the samples fed in.
#include <gtest/gtest.h>

#include <optional>

#include "sim/cluster/pool_monitor.h"

namespace fleetsim {
namespace {

SimTime S(double seconds) { return SecondsToTime(seconds); }

// Samples at 1 s, 2 s, ..., `last` s: at t seconds the pool held t requests
// (t / 2 waiting) on `ready` replicas at 0.25 KV utilisation each, and t
// requests arrived since the previous sample.
void Feed(PoolMonitor& m, int first, int last, int ready = 2) {
  for (int t = first; t <= last; ++t) {
    PoolMonitor::Gauges g;
    g.ready = ready;
    g.concurrency = t;
    g.queue_depth = t / 2.0;
    g.kv_utilization_sum = 0.25 * ready;
    m.AddSample(S(t), g, t);
  }
}

TEST(PoolMonitor, WindowEndsAtNowAndIncludesItsNearEdgeOnly) {
  PoolMonitor m(0, S(900));
  Feed(m, 1, 10);
  m.SetNow(S(10), 2, 1, 3);
  EXPECT_EQ(m.now(), S(10));
  EXPECT_EQ(m.ready(), 2);
  EXPECT_EQ(m.starting(), 1);
  EXPECT_EQ(m.desired(), 3);
  // (7, 10]: the samples at 8, 9, 10 (the one at 7 is out).
  EXPECT_DOUBLE_EQ(*m.Total(ScalingMetric::kConcurrency, S(3)), 9.0);
  EXPECT_DOUBLE_EQ(*m.PerReplica(ScalingMetric::kConcurrency, S(3)), 4.5);
  EXPECT_DOUBLE_EQ(*m.Total(ScalingMetric::kQueueDepth, S(3)), 4.5);
  // KV utilisation is a mean over the replicas, total or per replica.
  EXPECT_DOUBLE_EQ(*m.Total(ScalingMetric::kKvUtilization, S(3)), 0.25);
  EXPECT_DOUBLE_EQ(*m.PerReplica(ScalingMetric::kKvUtilization, S(3)), 0.25);
  // A window of less than a sample interval holds just the sample at now.
  EXPECT_DOUBLE_EQ(*m.Total(ScalingMetric::kConcurrency, S(0.5)), 10.0);
  // The whole history: (0, 10].
  EXPECT_DOUBLE_EQ(*m.Total(ScalingMetric::kConcurrency, S(60)), 5.5);
  // Between two samples: (10.5 - 1, 10.5] holds only the sample at 10.
  m.SetNow(S(10.5), 2, 0, 3);
  EXPECT_DOUBLE_EQ(*m.Total(ScalingMetric::kConcurrency, S(1)), 10.0);
  // Past the last sample: nothing in the window.
  m.SetNow(S(20), 2, 0, 3);
  EXPECT_FALSE(m.Total(ScalingMetric::kConcurrency, S(5)).has_value());
  EXPECT_FALSE(m.PerReplica(ScalingMetric::kConcurrency, S(5)).has_value());
}

TEST(PoolMonitor, DelayShiftsTheWindowBack) {
  PoolMonitor m(S(2), S(900));
  Feed(m, 1, 10);
  m.SetNow(S(10), 2, 0, 2);
  // (5, 8]: 6, 7, 8.
  EXPECT_DOUBLE_EQ(*m.Total(ScalingMetric::kConcurrency, S(3)), 7.0);
  EXPECT_DOUBLE_EQ(*m.PerReplica(ScalingMetric::kConcurrency, S(3)), 3.5);
  const WindowLoad load = m.Load(S(3));
  EXPECT_DOUBLE_EQ(load.seconds, 3.0);
  EXPECT_EQ(load.arrivals, 6 + 7 + 8);
  // A delay longer than the history: nothing yet.
  PoolMonitor late(S(15), S(900));
  Feed(late, 1, 10);
  late.SetNow(S(10), 2, 0, 2);
  EXPECT_FALSE(late.Total(ScalingMetric::kConcurrency, S(60)).has_value());
  EXPECT_EQ(late.Load(S(60)).arrivals, 0);
}

TEST(PoolMonitor, PerReplicaLeavesOutSamplesWithNoReplicaReady) {
  PoolMonitor m(0, S(900));
  Feed(m, 1, 2, /*ready=*/0);   // 1, 2 on no replica
  Feed(m, 3, 4, /*ready=*/2);   // 3, 4 on two
  Feed(m, 5, 5, /*ready=*/1);   // 5 on one
  m.SetNow(S(5), 1, 0, 1);
  // Total: every sample in (0, 5].
  EXPECT_DOUBLE_EQ(*m.Total(ScalingMetric::kConcurrency, S(5)), 3.0);
  // Per replica: (3/2 + 4/2 + 5/1) / 3.
  EXPECT_DOUBLE_EQ(*m.PerReplica(ScalingMetric::kConcurrency, S(5)), (1.5 + 2 + 5) / 3);
  // Only unready samples in the window: no per-replica value.
  m.SetNow(S(2), 0, 0, 1);
  EXPECT_DOUBLE_EQ(*m.Total(ScalingMetric::kConcurrency, S(2)), 1.5);
  EXPECT_FALSE(m.PerReplica(ScalingMetric::kConcurrency, S(2)).has_value());
  // KV utilisation of a sample with no replica ready is 0 in the total.
  EXPECT_DOUBLE_EQ(*m.Total(ScalingMetric::kKvUtilization, S(2)), 0.0);
}

TEST(PoolMonitor, LatenciesMeansAndNearestRankPercentiles) {
  PoolMonitor m(S(1), S(900));
  Feed(m, 1, 20);
  // ttft 10, 20, 30, 40 ms (tpot 1, 2, 3, and one single-token request)
  // finished at 5, 6, 7, 8 s; and one at exactly 3 s, one at 9 s.
  m.AddFinished(S(3), 1000, 100, 1, 1);
  m.AddFinished(S(5), 10, 1, 100, 10);
  m.AddFinished(S(6), 20, 2, 200, 20);
  m.AddFinished(S(7), 30, 3, 300, 30);
  m.AddFinished(S(8), 40, -1, 400, 1);
  m.AddFinished(S(9), 5000, 500, 1, 1);
  m.SetNow(S(9), 2, 0, 2);
  // (3, 8]: the four at 5..8; the one at 3 is out, the one at 9 too late.
  const SimTime w = S(5);
  EXPECT_DOUBLE_EQ(*m.PerReplica(ScalingMetric::kTtftMs, w), 25.0);
  EXPECT_DOUBLE_EQ(*m.Total(ScalingMetric::kTtftMs, w), 25.0);  // latencies: the mean either way
  EXPECT_DOUBLE_EQ(*m.PerReplica(ScalingMetric::kTpotMs, w), 2.0);  // the single-token one left out
  EXPECT_DOUBLE_EQ(*m.Percentile(ScalingMetric::kTtftMs, 0.5, w), 20.0);
  EXPECT_DOUBLE_EQ(*m.Percentile(ScalingMetric::kTtftMs, 0.9, w), 40.0);
  EXPECT_DOUBLE_EQ(*m.Percentile(ScalingMetric::kTtftMs, 0.0, w), 10.0);
  EXPECT_DOUBLE_EQ(*m.Percentile(ScalingMetric::kTtftMs, 1.0, w), 40.0);
  EXPECT_DOUBLE_EQ(*m.Percentile(ScalingMetric::kTpotMs, 1.0, w), 3.0);
  EXPECT_FALSE(m.Percentile(ScalingMetric::kConcurrency, 0.5, w).has_value());
  // Tokens per second: (110 + 220 + 330 + 401) over 5 s; per replica over
  // the 2 ready.
  EXPECT_DOUBLE_EQ(*m.Total(ScalingMetric::kTokensPerS, w), 1061.0 / 5);
  EXPECT_DOUBLE_EQ(*m.PerReplica(ScalingMetric::kTokensPerS, w), 1061.0 / 5 / 2);
  const WindowLoad load = m.Load(w);
  EXPECT_EQ(load.finished, 4);
  EXPECT_EQ(load.arrivals, 4 + 5 + 6 + 7 + 8);
  EXPECT_DOUBLE_EQ(load.mean_input_tokens, 250.0);
  EXPECT_DOUBLE_EQ(load.mean_output_tokens, 61.0 / 4);
  EXPECT_DOUBLE_EQ(load.mean_ttft_ms, 25.0);
  EXPECT_DOUBLE_EQ(load.mean_tpot_ms, 2.0);
  // A window with samples but no request finished: 0 tokens/s, no latency.
  m.SetNow(S(20), 2, 0, 2);
  EXPECT_DOUBLE_EQ(*m.Total(ScalingMetric::kTokensPerS, S(5)), 0.0);
  EXPECT_FALSE(m.PerReplica(ScalingMetric::kTtftMs, S(5)).has_value());
  EXPECT_FALSE(m.Percentile(ScalingMetric::kTtftMs, 0.5, S(5)).has_value());
  EXPECT_EQ(m.Load(S(5)).finished, 0);
  EXPECT_DOUBLE_EQ(m.Load(S(5)).mean_ttft_ms, 0.0);
  // Neither samples nor requests: unset.
  PoolMonitor empty(0, S(900));
  empty.SetNow(S(10), 0, 0, 0);
  EXPECT_FALSE(empty.Total(ScalingMetric::kTokensPerS, S(5)).has_value());
}

TEST(PoolMonitor, RetentionDropsWhatIsOlderThanTheLongestWindowBehindTheDelay) {
  // Retention 5 s, delay 2 s: at 20 s, what is at or after 13 s stays.
  PoolMonitor m(S(2), S(5));
  Feed(m, 1, 20);
  for (int t = 1; t <= 20; ++t) m.AddFinished(S(t), t, -1, t, 1);
  m.SetNow(S(20), 2, 0, 2);
  // Within the retention, every window is whole: (13, 18].
  EXPECT_DOUBLE_EQ(*m.Total(ScalingMetric::kConcurrency, S(5)), 16.0);
  EXPECT_EQ(m.Load(S(5)).arrivals, 14 + 15 + 16 + 17 + 18);
  EXPECT_EQ(m.Load(S(5)).finished, 5);
  // A longer window sees only what was kept: (8, 18] holds 13..18 only.
  EXPECT_DOUBLE_EQ(*m.Total(ScalingMetric::kConcurrency, S(10)), (13 + 14 + 15 + 16 + 17 + 18) / 6.0);
  EXPECT_EQ(m.Load(S(10)).arrivals, 13 + 14 + 15 + 16 + 17 + 18);
  EXPECT_EQ(m.Load(S(10)).finished, 6);
  EXPECT_DOUBLE_EQ(*m.PerReplica(ScalingMetric::kTtftMs, S(10)), (13 + 14 + 15 + 16 + 17 + 18) / 6.0);
  // Without trimming, the same long window holds 9..18.
  PoolMonitor keep(S(2), S(900));
  Feed(keep, 1, 20);
  keep.SetNow(S(20), 2, 0, 2);
  EXPECT_DOUBLE_EQ(*keep.Total(ScalingMetric::kConcurrency, S(10)), 13.5);
  // A later sample trims by its own time: at 30 s, 23 s and after stay.
  Feed(m, 21, 30);
  m.SetNow(S(30), 2, 0, 2);
  EXPECT_DOUBLE_EQ(*m.Total(ScalingMetric::kConcurrency, S(60)), (23 + 24 + 25 + 26 + 27 + 28) / 6.0);
  // Requests are trimmed with the samples (those at 13..20 are gone).
  EXPECT_EQ(m.Load(S(60)).finished, 0);
  EXPECT_FALSE(m.Percentile(ScalingMetric::kTtftMs, 0.5, S(60)).has_value());
}

}  // namespace
}  // namespace fleetsim

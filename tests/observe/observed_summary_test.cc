// What `fleetsim observe` computes and prints (observed_summary.cc), checked
// against figures worked out by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/observe/observed_summary.h"
#include "tests/observe/test_util.h"

namespace fleetsim::observe_test {
namespace {

TEST(ObserveSummary, StatsOfTheFiveRequestsByHand) {
  std::vector<ObservedRun> runs = ReadExample("requests.csv");
  const ObservedStats st = ComputeObservedStats(runs[0]);
  EXPECT_EQ(st.requests, 5);
  EXPECT_EQ(st.ok, 4);
  EXPECT_EQ(st.failed, 1);
  EXPECT_DOUBLE_EQ(st.span_s, 1.0);
  EXPECT_DOUBLE_EQ(*st.sent_rate_per_s, 4.0);
  EXPECT_EQ(st.max_in_flight, 1);
  // TTFTs 40, 50, 55, 60 ms: median 52.5; p90 at rank 2.7: 55 + 0.7 * 5.
  EXPECT_NEAR(*st.ttft.median_s, 0.0525, 1e-12);
  EXPECT_NEAR(*st.ttft.p90_s, 0.0585, 1e-12);
  // TPOT (e2e - ttft) / (out - 1): 11, 12.5, 10, 20 ms.
  EXPECT_NEAR(*st.tpot.mean_s, 0.013375, 1e-12);
  EXPECT_NEAR(*st.tpot.median_s, 0.01175, 1e-12);
  // Ten gaps; median of 9,10,10,10,11,11,12,12,13,20 ms is 11.
  EXPECT_NEAR(*st.itl.median_s, 0.011, 1e-12);
  EXPECT_NEAR(*st.window_s, 1.075, 1e-12);
  EXPECT_NEAR(*st.request_throughput_per_s, 4 / 1.075, 1e-12);
  EXPECT_NEAR(*st.output_throughput_tokens_per_s, 14 / 1.075, 1e-12);
  EXPECT_DOUBLE_EQ(*st.mean_input_tokens, (128 + 256 + 64 + 200) / 4.0);
  EXPECT_EQ(st.max_output_tokens, 5);
}

TEST(ObserveSummary, CountsRequestsInFlight) {
  ObservedRun run;
  for (double start : {0.0, 0.1, 0.2, 1.0}) {
    ObservedRequest r;
    r.start_s = start;
    r.input_tokens = r.output_tokens = 1;
    r.e2e_s = 0.5;
    run.requests.push_back(r);
  }
  run.requests.back().e2e_s = 0.0;
  // [0, .5), [.1, .6), [.2, .7) overlap; [1, 1) is momentary.
  EXPECT_EQ(ComputeObservedStats(run).max_in_flight, 3);
}

TEST(ObserveSummary, PrintsBothColumnsOnOneScreen) {
  std::vector<ObservedRun> runs = ReadExample("aiperf/profile_export.jsonl");
  const std::string text = FormatObservedRun(runs[0]);
  EXPECT_NE(text.find("load      closed loop, concurrency 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("requests  5 (4 ok, 1 failed), sent over 1.000 s at 4 req/s, at most 1 in flight\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  TTFT    52.50    58.50    59.85     52.50    58.50    59.85\n"), std::string::npos) << text;
  int lines = 0;
  for (char c : text) lines += c == '\n';
  EXPECT_LE(lines, 24);
}

TEST(ObserveSummary, TableHasALinePerRun) {
  std::vector<ObservedRun> runs = ReadExample("guidellm/benchmarks.json");
  const std::string text = FormatObservedRunTable(runs);
  EXPECT_NE(text.find("    1  benchmarks[1]    open loop at 4 req/s"), std::string::npos) << text;
  int lines = 0;
  for (char c : text) lines += c == '\n';
  EXPECT_EQ(lines, 4);
}

}  // namespace
}  // namespace fleetsim::observe_test

#include "sim/traffic/scan_traffic.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "tests/traffic/test_util.h"

namespace fleetsim {
namespace {

using testing_traffic::DataPath;

TrafficSpec Trace(TraceFormat format, const std::string& path) {
  TrafficSpec s;
  s.kind = TrafficSpec::Kind::kTrace;
  s.format = format;
  s.path = path;
  return s;
}

TEST(ScanTraffic, WholeTraceFiguresMatchTheFile) {
  // plain.csv: arrivals 0.5, 0.75, 1.000000001, 2.0 s -> 0 .. 1.5 s.
  TrafficStats st;
  Status s = ScanTraffic(Trace(TraceFormat::kCsv, DataPath("plain.csv")), Rng(1), &st);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(st.requests, 4);
  EXPECT_EQ(st.trace_requests, 4);
  EXPECT_DOUBLE_EQ(st.first_arrival_s, 0);
  EXPECT_DOUBLE_EQ(st.last_arrival_s, 1.5);
  EXPECT_DOUBLE_EQ(st.span_s, 1.5);
  EXPECT_DOUBLE_EQ(st.rate_per_s, 4 / 1.5);
  EXPECT_DOUBLE_EQ(st.trace_rate_per_s, 4 / 1.5);
  EXPECT_DOUBLE_EQ(st.trace_mean_rate_per_s, 4 / 1.5);
  EXPECT_DOUBLE_EQ(st.mean_prompt_tokens, 25);  // 10, 20, 30, 40
  EXPECT_DOUBLE_EQ(st.mean_output_tokens, 2.5);
}

TEST(ScanTraffic, WindowAndRateScaleApplyAsInARun) {
  // Mooncake sample: trace times 0, 0, 5.999, 9, 12 s. Window [5, 12),
  // twice as fast: 0.4995 s and 2 s.
  TrafficSpec spec = Trace(TraceFormat::kMooncake, DataPath("mooncake_sample.jsonl"));
  spec.start_s = 5;
  spec.end_s = 12;
  spec.rate_scale = 2;
  TrafficStats st;
  ASSERT_TRUE(ScanTraffic(spec, Rng(1), &st).ok());
  EXPECT_EQ(st.requests, 2);
  EXPECT_DOUBLE_EQ(st.first_arrival_s, 0.4995);
  EXPECT_DOUBLE_EQ(st.last_arrival_s, 2);
  EXPECT_DOUBLE_EQ(st.span_s, 1.5005);
  EXPECT_DOUBLE_EQ(st.rate_per_s, 2 / 1.5005);
  EXPECT_DOUBLE_EQ(st.trace_rate_per_s, 2 / 1.5005 / 2);
  // The whole trace is still read.
  EXPECT_EQ(st.trace_requests, 5);
  EXPECT_DOUBLE_EQ(st.trace_span_s, 12);
  EXPECT_DOUBLE_EQ(st.trace_mean_rate_per_s, 5.0 / 12);
}

TEST(ScanTraffic, CountsSkippedRows) {
  TrafficStats st;
  ASSERT_TRUE(ScanTraffic(Trace(TraceFormat::kBurstGpt,
                                std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/traces/burstgpt_1_head.csv"),
                          Rng(1), &st)
                  .ok());
  EXPECT_EQ(st.requests, 38);
  EXPECT_EQ(st.skipped_rows, 4);
  EXPECT_DOUBLE_EQ(st.trace_span_s, 4569);
}

TEST(ScanTraffic, GeneratorStreamIsScannedWithTheRunsSeed) {
  TrafficSpec g;
  g.kind = TrafficSpec::Kind::kGenerator;
  g.arrival = ArrivalProcess::kConstant;
  g.rate_per_s = 4;
  g.prompt.value = 10;
  g.output.value = 3;
  g.max_requests = 9;
  TrafficStats st;
  ASSERT_TRUE(ScanTraffic(g, Rng(1), &st).ok());
  EXPECT_EQ(st.requests, 9);
  EXPECT_DOUBLE_EQ(st.span_s, 2);  // 0, 0.25, ..., 2 s
  EXPECT_DOUBLE_EQ(st.rate_per_s, 4.5);
  EXPECT_EQ(st.trace_requests, 9);
}

TEST(ScanTraffic, ReportsACorruptRowPastTheWindow) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("fleetsim_scan_" + std::to_string(::getpid()) + ".csv"))
                               .string();
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    std::fputs("arrival_s,prompt_tokens,output_tokens\n0,1,1\n100,1,1\n200,x,1\n", f);
    std::fclose(f);
  }
  TrafficSpec spec = Trace(TraceFormat::kCsv, path);
  spec.end_s = 50;
  TrafficStats st;
  Status s = ScanTraffic(spec, Rng(1), &st);
  std::filesystem::remove(path);
  EXPECT_EQ(s.message().rfind(path + ":4: prompt_tokens", 0), 0u) << s.message();
}

TEST(ScanTraffic, MillionRowTraceIsFastAndStreamed) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("fleetsim_scan_1m_" + std::to_string(::getpid()) + ".csv"))
                               .string();
  constexpr int kRows = 1'000'000;
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fputs("arrival_s,prompt_tokens,output_tokens\n", f);
    for (int i = 0; i < kRows; ++i) std::fprintf(f, "%d.%03d,%d,%d\n", i / 1000, i % 1000, 100 + i % 7, 10 + i % 3);
    std::fclose(f);
  }
  TrafficSpec spec = Trace(TraceFormat::kCsv, path);
  spec.rate_scale = 4;
  const auto t0 = std::chrono::steady_clock::now();
  TrafficStats st;
  Status s = ScanTraffic(spec, Rng(1), &st);
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::filesystem::remove(path);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(st.requests, kRows);
  EXPECT_NEAR(st.trace_span_s, 999.999, 1e-9);
  EXPECT_NEAR(st.trace_mean_rate_per_s, kRows / 999.999, 1e-6);
  EXPECT_NEAR(st.rate_per_s, 4 * kRows / 999.999, 1e-6);
  EXPECT_NEAR(st.trace_rate_per_s, kRows / 999.999, 1e-6);
  std::printf("ScanTraffic: %d rows in %.3f s\n", kRows, wall_s);
  // About a second in a release build; generous for sanitizer builds and
  // a loaded machine.
  EXPECT_LT(wall_s, 30.0);
}

}  // namespace
}  // namespace fleetsim

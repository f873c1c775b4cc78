// MakeRequestSource end to end: trace formats through the window, and the
// bundled traces under scenarios/traces/.
#include "sim/traffic/traffic_spec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/traffic/test_util.h"

namespace fleetsim {
namespace {

using testing_traffic::DataPath;
using testing_traffic::Drain;

TrafficSpec Trace(TraceFormat format, const std::string& path) {
  TrafficSpec s;
  s.kind = TrafficSpec::Kind::kTrace;
  s.format = format;
  s.path = path;
  return s;
}

std::string Bundled(const std::string& name) {
  return std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/traces/" + name;
}

TEST(MakeRequestSource, ReadsEachTraceFormat) {
  struct Case {
    TraceFormat format;
    const char* file;
    size_t rows;
    SimTime last;
  };
  for (const Case& c : {Case{TraceFormat::kAzure, "azure_2024.csv", 5, 2'000'000'000},
                        Case{TraceFormat::kMooncake, "mooncake_sample.jsonl", 5, 12 * kSecond},
                        Case{TraceFormat::kCsv, "plain.csv", 4, 1'500'000'000}}) {
    std::unique_ptr<RequestSource> src;
    Status s = MakeRequestSource(Trace(c.format, DataPath(c.file)), Rng(1), &src);
    ASSERT_TRUE(s.ok()) << s.message();
    std::vector<Request> rows = Drain(*src);
    EXPECT_TRUE(src->status().ok()) << src->status().message();
    ASSERT_EQ(rows.size(), c.rows) << c.file;
    EXPECT_EQ(rows.back().arrival, c.last) << c.file;
  }
}

TEST(MakeRequestSource, AppliesWindowThenRateScale) {
  TrafficSpec spec = Trace(TraceFormat::kMooncake, DataPath("mooncake_sample.jsonl"));
  spec.start_s = 5;
  spec.end_s = 12;
  spec.rate_scale = 2;
  std::unique_ptr<RequestSource> src;
  ASSERT_TRUE(MakeRequestSource(spec, Rng(1), &src).ok());
  std::vector<Request> rows = Drain(*src);
  // Trace times 5.999 s and 9 s are in [5, 12); 12 s is not.
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].arrival, 499'500'000);    // (5.999 - 5) / 2
  EXPECT_EQ(rows[1].arrival, 2'000'000'000);  // (9 - 5) / 2
  EXPECT_EQ(rows[0].id, 0u);
  EXPECT_EQ(rows[1].id, 1u);
  EXPECT_EQ(rows[1].prompt_tokens, 10355);
}

TEST(MakeRequestSource, ReportsMissingTrace) {
  std::unique_ptr<RequestSource> src;
  Status s = MakeRequestSource(Trace(TraceFormat::kAzure, "traces/none.csv"), Rng(1), &src);
  EXPECT_EQ(s.message(), "cannot open trace \"traces/none.csv\": No such file or directory");
}

TEST(MakeRequestSource, ReportsBadHeaderAtOpening) {
  std::unique_ptr<RequestSource> src;
  Status s = MakeRequestSource(Trace(TraceFormat::kCsv, DataPath("azure_2024.csv")), Rng(1), &src);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("azure_2024.csv:1: expected the header"), std::string::npos)
      << s.message();
}

TEST(MakeRequestSource, RejectsBadTraceOptions) {
  std::unique_ptr<RequestSource> src;
  TrafficSpec spec = Trace(TraceFormat::kCsv, DataPath("plain.csv"));
  spec.rate_scale = 0;
  EXPECT_EQ(MakeRequestSource(spec, Rng(1), &src).message(),
            "traffic.rate_scale: expected a positive number, got 0");
  spec.rate_scale = 1;
  spec.start_s = 10;
  spec.end_s = 5;
  EXPECT_EQ(MakeRequestSource(spec, Rng(1), &src).message(),
            "traffic.end_s: expected a number >= start_s (10), got 5");
  spec = Trace(TraceFormat::kCsv, "");
  EXPECT_EQ(MakeRequestSource(spec, Rng(1), &src).message(),
            "traffic.path: expected a trace file name");
}

TEST(MakeRequestSource, GeneratorNeedsAStoppingRule) {
  TrafficSpec spec;
  spec.rate_per_s = 1;
  spec.prompt.value = 10;
  spec.output.value = 10;
  std::unique_ptr<RequestSource> src;
  EXPECT_FALSE(MakeRequestSource(spec, Rng(1), &src).ok());
  spec.max_arrival_s = 10;
  ASSERT_TRUE(MakeRequestSource(spec, Rng(1), &src).ok());
  EXPECT_GT(Drain(*src).size(), 0u);
}

// Streams a bundled trace to the end; returns the row count.
size_t CountBundled(const std::string& name, Request* first, Request* last) {
  std::unique_ptr<RequestSource> src;
  Status s = MakeRequestSource(Trace(TraceFormat::kAzure, Bundled(name)), Rng(1), &src);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return 0;
  size_t n = 0;
  Request r;
  while (src->Next(&r)) {
    if (n == 0) *first = r;
    ++n;
  }
  *last = r;
  EXPECT_TRUE(src->status().ok()) << src->status().message();
  return n;
}

TEST(BundledTraces, AzureConv2023StreamsToTheEnd) {
  Request first, last;
  EXPECT_EQ(CountBundled("azure_conv_2023.csv", &first, &last), 19'366u);
  EXPECT_EQ(first.prompt_tokens, 374);
  EXPECT_EQ(first.output_tokens, 44);
  EXPECT_EQ(last.id, 19'365u);
  // About 58 minutes.
  EXPECT_GT(last.arrival, 55 * 60 * kSecond);
  EXPECT_LT(last.arrival, 60 * 60 * kSecond);
}

TEST(BundledTraces, AzureCode2023StreamsToTheEnd) {
  Request first, last;
  EXPECT_EQ(CountBundled("azure_code_2023.csv", &first, &last), 8'819u);
  EXPECT_EQ(first.prompt_tokens, 4808);
  EXPECT_EQ(first.output_tokens, 10);
  // Last row 2023-11-16 19:14:19.9280160 (no trailing newline), first
  // 18:17:03.9799600.
  EXPECT_EQ(last.arrival, (57 * 60 + 15) * kSecond + 948'056'000);
  EXPECT_EQ(last.prompt_tokens, 549);
  EXPECT_EQ(last.output_tokens, 173);
}

TEST(BundledTraces, ShareGptLengthsLoadAsGeneratorDistribution) {
  TrafficSpec spec;
  spec.rate_per_s = 100;
  spec.max_requests = 1000;
  spec.lengths_csv = Bundled("sharegpt_lengths.csv");
  std::unique_ptr<RequestSource> src;
  Status s = MakeRequestSource(spec, Rng(5), &src);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(Drain(*src).size(), 1000u);
}

}  // namespace
}  // namespace fleetsim

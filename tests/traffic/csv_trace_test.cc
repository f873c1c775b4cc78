#include "sim/traffic/csv_trace.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/traffic/test_util.h"

namespace fleetsim {
namespace {

using testing_traffic::DataPath;
using testing_traffic::Drain;
using testing_traffic::StreamOf;

std::vector<Request> ReadText(const std::string& text, Status* end) {
  std::unique_ptr<RequestSource> src;
  Status s = CsvTraceReader::FromStream("traces/p.csv", StreamOf(text), &src);
  if (!s.ok()) {
    *end = s;
    return {};
  }
  std::vector<Request> rows = Drain(*src);
  *end = src->status();
  return rows;
}

TEST(CsvTraceReader, ParsesFixtureWithOptionalColumnsInAnyOrder) {
  std::unique_ptr<RequestSource> src;
  ASSERT_TRUE(CsvTraceReader::Open(DataPath("plain.csv"), &src).ok());
  std::vector<Request> rows = Drain(*src);
  ASSERT_TRUE(src->status().ok()) << src->status().message();
  ASSERT_EQ(rows.size(), 4u);
  const SimTime arrivals[] = {0, 250'000'000, 500'000'001, 1'500'000'000};
  const int32_t priorities[] = {1, 0, 0, 2};
  const int64_t sessions[] = {7, -1, 8, 9};
  const char* models[] = {"llama-8b", "", "llama-70b", ""};
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].id, i);
    EXPECT_EQ(rows[i].arrival, arrivals[i]) << i;
    EXPECT_EQ(rows[i].prompt_tokens, static_cast<int32_t>(10 * (i + 1))) << i;
    EXPECT_EQ(rows[i].output_tokens, static_cast<int32_t>(i + 1)) << i;
    EXPECT_EQ(rows[i].priority, priorities[i]) << i;
    EXPECT_EQ(rows[i].session_id, sessions[i]) << i;
    EXPECT_EQ(rows[i].model, models[i]) << i;
  }
}

TEST(CsvTraceReader, ReadsThreeColumnsWithCrlfAndNoFinalNewline) {
  Status s;
  std::vector<Request> rows =
      ReadText("arrival_s,prompt_tokens,output_tokens\r\n0,5,6\r\n0.000000001,7,8", &s);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].arrival, 1);
  EXPECT_EQ(rows[1].output_tokens, 8);
  EXPECT_EQ(rows[1].model, "");
}

TEST(CsvTraceReader, RejectsWrongHeader) {
  Status s;
  ReadText("arrival,prompt_tokens,output_tokens\n0,1,1\n", &s);
  EXPECT_EQ(s.message().rfind("traces/p.csv:1: expected the header", 0), 0u) << s.message();
  ReadText("prompt_tokens,arrival_s,output_tokens\n", &s);
  EXPECT_EQ(s.message().rfind("traces/p.csv:1: expected the header", 0), 0u) << s.message();
  ReadText("", &s);
  EXPECT_EQ(s.message().rfind("traces/p.csv:1: empty file", 0), 0u) << s.message();
}

TEST(CsvTraceReader, RejectsUnknownColumn) {
  Status s;
  ReadText("arrival_s,prompt_tokens,output_tokens,user\n", &s);
  EXPECT_EQ(s.message(),
            "traces/p.csv:1: unknown column \"user\" (known after the first three: session_id, "
            "model, priority, tenant, location)");
}

TEST(CsvTraceReader, ReadsTenantAndLocation) {
  Status s;
  std::vector<Request> rs =
      ReadText("arrival_s,prompt_tokens,output_tokens,location,priority,tenant\n"
               "0,10,5,eu,1,acme\n"
               "1.5,20,6,,,\n",
               &s);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[0].tenant, "acme");
  EXPECT_EQ(rs[0].location, "eu");
  EXPECT_EQ(rs[0].priority, 1);
  EXPECT_EQ(rs[1].tenant, "");
  EXPECT_EQ(rs[1].location, "");
  EXPECT_EQ(rs[1].priority, 0);
}

TEST(CsvTraceReader, RejectsDuplicateColumn) {
  Status s;
  ReadText("arrival_s,prompt_tokens,output_tokens,model,model\n", &s);
  EXPECT_EQ(s.message(), "traces/p.csv:1: column \"model\" appears twice");
}

TEST(CsvTraceReader, RejectsWrongColumnCount) {
  Status s;
  std::vector<Request> rows =
      ReadText("arrival_s,prompt_tokens,output_tokens,model\n0,1,1,a\n1,2,2\n", &s);
  EXPECT_EQ(rows.size(), 1u);
  EXPECT_EQ(s.message(), "traces/p.csv:3: expected 4 columns as in the header, got 3");
}

TEST(CsvTraceReader, RejectsBadNumbers) {
  Status s;
  ReadText("arrival_s,prompt_tokens,output_tokens\nsoon,1,1\n", &s);
  EXPECT_EQ(s.message(), "traces/p.csv:2: arrival_s: expected a number of seconds, got \"soon\"");
  ReadText("arrival_s,prompt_tokens,output_tokens\n0,1.5,1\n", &s);
  EXPECT_EQ(s.message(), "traces/p.csv:2: prompt_tokens: expected a positive integer, got \"1.5\"");
  ReadText("arrival_s,prompt_tokens,output_tokens\n0,1,0\n", &s);
  EXPECT_EQ(s.message(), "traces/p.csv:2: output_tokens: expected a positive integer, got \"0\"");
  ReadText("arrival_s,prompt_tokens,output_tokens,session_id\n0,1,1,x\n", &s);
  EXPECT_EQ(s.message().rfind("traces/p.csv:2: session_id: expected a non-negative integer", 0),
            0u);
  ReadText("arrival_s,prompt_tokens,output_tokens,priority\n0,1,1,-1\n", &s);
  EXPECT_EQ(s.message().rfind("traces/p.csv:2: priority: expected a non-negative integer", 0), 0u);
}

TEST(CsvTraceReader, RejectsTimeGoingBackwards) {
  Status s;
  std::vector<Request> rows = ReadText("arrival_s,prompt_tokens,output_tokens\n1,1,1\n0.5,1,1\n", &s);
  EXPECT_EQ(rows.size(), 1u);
  EXPECT_EQ(s.message(),
            "traces/p.csv:3: arrival_s: \"0.5\" is earlier than the previous row's (line 2); the "
            "trace must be sorted by time");
}

TEST(CsvTraceReader, RejectsBlankLineInTheMiddle) {
  Status s;
  ReadText("arrival_s,prompt_tokens,output_tokens\n1,1,1\n \n2,1,1\n", &s);
  EXPECT_EQ(s.message(), "traces/p.csv:3: blank line in the middle of the file");
}

}  // namespace
}  // namespace fleetsim

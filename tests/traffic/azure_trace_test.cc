#include "sim/traffic/azure_trace.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/traffic/test_util.h"

namespace fleetsim {
namespace {

using testing_traffic::DataPath;
using testing_traffic::Drain;
using testing_traffic::StreamOf;

constexpr char kHeader[] = "TIMESTAMP,ContextTokens,GeneratedTokens\n";

// Reads `text` as "traces/x.csv"; returns the rows before the stream ended
// and the final status.
std::vector<Request> ReadText(const std::string& text, Status* end) {
  std::unique_ptr<RequestSource> src;
  Status s = AzureTraceReader::FromStream("traces/x.csv", StreamOf(text), &src);
  if (!s.ok()) {
    *end = s;
    return {};
  }
  std::vector<Request> rows = Drain(*src);
  *end = src->status();
  Request r;
  EXPECT_FALSE(src->Next(&r)) << "a stream that ended must stay ended";
  return rows;
}

TEST(AzureTraceReader, Parses2023FixtureExactly) {
  // CRLF line ends, 7 fractional digits, no newline at the end of the file.
  std::unique_ptr<RequestSource> src;
  ASSERT_TRUE(AzureTraceReader::Open(DataPath("azure_2023.csv"), &src).ok());
  std::vector<Request> rows = Drain(*src);
  ASSERT_TRUE(src->status().ok()) << src->status().message();
  ASSERT_EQ(rows.size(), 5u);
  const SimTime arrivals[] = {0, 200, 200, 90'500'000'100, 9'072'000'000'000'100};
  const int32_t prompts[] = {100, 200, 300, 400, 5};
  const int32_t outputs[] = {10, 20, 30, 40, 1};
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].id, i);
    EXPECT_EQ(rows[i].arrival, arrivals[i]) << i;
    EXPECT_EQ(rows[i].prompt_tokens, prompts[i]) << i;
    EXPECT_EQ(rows[i].output_tokens, outputs[i]) << i;
    EXPECT_EQ(rows[i].session_id, -1);
    EXPECT_TRUE(rows[i].prefix_blocks.empty());
  }
}

TEST(AzureTraceReader, Parses2024FixtureWithOffsetsExactly) {
  std::unique_ptr<RequestSource> src;
  ASSERT_TRUE(AzureTraceReader::Open(DataPath("azure_2024.csv"), &src).ok());
  std::vector<Request> rows = Drain(*src);
  ASSERT_TRUE(src->status().ok()) << src->status().message();
  ASSERT_EQ(rows.size(), 5u);
  const SimTime arrivals[] = {0, 490'070'000, 990'070'000, 1'113'526'789, 2'000'000'000};
  const int32_t prompts[] = {1000, 2000, 3000, 4, 7};
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].arrival, arrivals[i]) << i;
    EXPECT_EQ(rows[i].prompt_tokens, prompts[i]) << i;
  }
  EXPECT_EQ(rows[4].output_tokens, 8);
}

TEST(AzureTraceReader, CrlfAndLfReadTheSame) {
  Status a, b;
  std::vector<Request> lf =
      ReadText("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,4808,10\n"
               "2023-11-16 18:17:04.0319600,3180,8\n", &a);
  std::vector<Request> crlf =
      ReadText("TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:17:03.9799600,4808,10\r\n"
               "2023-11-16 18:17:04.0319600,3180,8", &b);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(lf.size(), 2u);
  ASSERT_EQ(crlf.size(), 2u);
  EXPECT_EQ(lf[1].arrival, 52'000'000);
  EXPECT_EQ(crlf[1].arrival, 52'000'000);
  EXPECT_EQ(crlf[1].output_tokens, 8);
}

TEST(AzureTraceReader, HeaderOnlyIsAnEmptyTrace) {
  Status s;
  EXPECT_TRUE(ReadText(kHeader, &s).empty());
  EXPECT_TRUE(s.ok());
}

TEST(AzureTraceReader, RejectsWrongHeader) {
  Status s;
  ReadText("TIMESTAMP,Context,Generated\n2023-11-16 18:17:03.9,1,1\n", &s);
  EXPECT_EQ(s.message(),
            "traces/x.csv:1: expected the header \"TIMESTAMP,ContextTokens,GeneratedTokens\", got "
            "\"TIMESTAMP,Context,Generated\"");
}

TEST(AzureTraceReader, RejectsMissingHeader) {
  Status s;
  ReadText("2023-11-16 18:17:03.9799600,4808,10\n", &s);
  EXPECT_EQ(s.message().rfind("traces/x.csv:1: expected the header", 0), 0u) << s.message();
}

TEST(AzureTraceReader, RejectsEmptyFile) {
  Status s;
  ReadText("", &s);
  EXPECT_EQ(s.message().rfind("traces/x.csv:1: empty file", 0), 0u) << s.message();
}

TEST(AzureTraceReader, RejectsWrongColumnCount) {
  Status s;
  std::vector<Request> rows = ReadText(
      std::string(kHeader) + "2023-11-16 18:17:03.9799600,4808,10\n2023-11-16 18:17:04,1,2,3\n", &s);
  EXPECT_EQ(rows.size(), 1u);
  EXPECT_EQ(s.message(),
            "traces/x.csv:3: expected 3 columns (TIMESTAMP,ContextTokens,GeneratedTokens), got 4");
  ReadText(std::string(kHeader) + "2023-11-16 18:17:03.9799600,4808\n", &s);
  EXPECT_EQ(s.message(),
            "traces/x.csv:2: expected 3 columns (TIMESTAMP,ContextTokens,GeneratedTokens), got 2");
}

TEST(AzureTraceReader, RejectsNonNumericTokenCount) {
  Status s;
  ReadText(std::string(kHeader) + "2023-11-16 18:17:03.9799600,4808,10\n2023-11-16 18:17:04,abc,2\n",
           &s);
  EXPECT_EQ(s.message(),
            "traces/x.csv:3: ContextTokens: expected a positive integer, got \"abc\"");
}

TEST(AzureTraceReader, RejectsNegativeTokenCount) {
  Status s;
  ReadText(std::string(kHeader) + "2023-11-16 18:17:03.9799600,4808,-1\n", &s);
  EXPECT_EQ(s.message(),
            "traces/x.csv:2: GeneratedTokens: expected a positive integer, got \"-1\"");
}

TEST(AzureTraceReader, RejectsZeroTokenCount) {
  Status s;
  ReadText(std::string(kHeader) + "2023-11-16 18:17:03.9799600,0,5\n", &s);
  EXPECT_EQ(s.message(), "traces/x.csv:2: ContextTokens: expected a positive integer, got \"0\"");
}

TEST(AzureTraceReader, RejectsBadTimestamp) {
  Status s;
  ReadText(std::string(kHeader) + "2023-11-16 18:17:03.9799600,1,1\n2023-13-16 18:17:04,1,1\n", &s);
  EXPECT_EQ(s.message(),
            "traces/x.csv:3: TIMESTAMP: bad timestamp \"2023-13-16 18:17:04\": month out of range");
  ReadText(std::string(kHeader) + "yesterday,1,1\n", &s);
  EXPECT_EQ(s.message().rfind("traces/x.csv:2: TIMESTAMP: bad timestamp \"yesterday\"", 0), 0u)
      << s.message();
}

TEST(AzureTraceReader, RejectsTimeGoingBackwards) {
  Status s;
  std::vector<Request> rows =
      ReadText(std::string(kHeader) +
                   "2023-11-16 18:17:03.5,1,1\n2023-11-16 18:17:04.0,1,1\n2023-11-16 18:17:03.9,1,1\n",
               &s);
  EXPECT_EQ(rows.size(), 2u);
  EXPECT_EQ(s.message(),
            "traces/x.csv:4: TIMESTAMP: \"2023-11-16 18:17:03.9\" is earlier than the previous "
            "row's (line 3); the trace must be sorted by time");
}

TEST(AzureTraceReader, RejectsBlankLineInTheMiddle) {
  Status s;
  std::vector<Request> rows = ReadText(
      std::string(kHeader) + "2023-11-16 18:17:03.5,1,1\n\n2023-11-16 18:17:04.0,1,1\n", &s);
  EXPECT_EQ(rows.size(), 1u);
  EXPECT_EQ(s.message(), "traces/x.csv:3: blank line in the middle of the file");
}

TEST(AzureTraceReader, AcceptsTrailingBlankLine) {
  Status s;
  std::vector<Request> rows =
      ReadText(std::string(kHeader) + "2023-11-16 18:17:03.5,1,1\r\n\r\n", &s);
  EXPECT_EQ(rows.size(), 1u);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(AzureTraceReader, OpenReportsMissingFile) {
  std::unique_ptr<RequestSource> src;
  Status s = AzureTraceReader::Open("no/such/trace.csv", &src);
  EXPECT_EQ(s.message(), "cannot open trace \"no/such/trace.csv\": No such file or directory");
}

}  // namespace
}  // namespace fleetsim

#include "sim/traffic/burstgpt_trace.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/traffic/test_util.h"

namespace fleetsim {
namespace {

using testing_traffic::Drain;
using testing_traffic::StreamOf;

constexpr char kHeader[] = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n";

std::string Bundled(const std::string& name) {
  return std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/traces/" + name;
}

std::vector<Request> ReadText(const std::string& text, Status* end, int64_t* skipped = nullptr) {
  std::unique_ptr<RequestSource> src;
  Status s = BurstGptTraceReader::FromStream("b.csv", StreamOf(text), &src);
  if (!s.ok()) {
    *end = s;
    return {};
  }
  std::vector<Request> rows = Drain(*src);
  *end = src->status();
  if (skipped) *skipped = src->skipped_rows();
  return rows;
}

TEST(BurstGptTraceReader, ReadsBundledSliceAndSkipsFailedRequests) {
  std::unique_ptr<RequestSource> src;
  ASSERT_TRUE(BurstGptTraceReader::Open(Bundled("burstgpt_1_head.csv"), &src).ok());
  std::vector<Request> rows = Drain(*src);
  ASSERT_TRUE(src->status().ok()) << src->status().message();
  // 42 rows, of which 4 failed (Response tokens 0).
  EXPECT_EQ(rows.size(), 38u);
  EXPECT_EQ(src->skipped_rows(), 4);
  EXPECT_EQ(rows[0].arrival, 0);  // Timestamp 5 is the origin
  EXPECT_EQ(rows[0].prompt_tokens, 472);
  EXPECT_EQ(rows[0].output_tokens, 18);
  EXPECT_EQ(rows[1].arrival, 40 * kSecond);
  EXPECT_EQ(rows[2].model, "");  // GPT-4 is not a catalogue model: ignored
  EXPECT_EQ(rows.back().arrival, (4574 - 5) * kSecond);
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i].id, i);
}

TEST(BurstGptTraceReader, FirstKeptRowIsTheOrigin) {
  Status s;
  int64_t skipped = 0;
  std::vector<Request> rows = ReadText(std::string(kHeader) +
                                           "3,ChatGPT,0,0,0,Conversation log\n"
                                           "10.5,GPT-4,7,0,7,API log\n"
                                           "12.25,ChatGPT,5,6,11,API log\n",
                                       &s, &skipped);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].arrival, 0);
  EXPECT_EQ(skipped, 2);
}

TEST(BurstGptTraceReader, AcceptsColumnsInAnyOrderAndBurstGpt3Columns) {
  Status s;
  std::vector<Request> rows = ReadText(
      "Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
      "0,abc-123,2.5,ChatGPT,10,20,30,Conversation log\n"
      "1,,1.0,GPT-4,11,21,32,API log\n",
      &s);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].prompt_tokens, 11);
  EXPECT_EQ(rows[1].output_tokens, 21);

  rows = ReadText("Response tokens,Request tokens,Timestamp\n4,3,1\n", &s);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].prompt_tokens, 3);
  EXPECT_EQ(rows[0].output_tokens, 4);
}

TEST(BurstGptTraceReader, RefusesBadHeaders) {
  struct Case {
    const char* text;
    const char* expect;
  };
  for (const Case& c : {Case{"", "b.csv:1: empty file"},
                        Case{"TIMESTAMP,ContextTokens,GeneratedTokens\n", "b.csv:1: unknown column \"TIMESTAMP\""},
                        Case{"Timestamp,Model,Request tokens\n", "b.csv:1: missing column \"Response tokens\""},
                        Case{"Timestamp,Timestamp,Request tokens,Response tokens\n", "appears twice"}}) {
    Status s;
    ReadText(c.text, &s);
    EXPECT_FALSE(s.ok()) << c.text;
    EXPECT_NE(s.message().find(c.expect), std::string::npos) << s.message();
  }
}

TEST(BurstGptTraceReader, BadRowsNameFileAndLine) {
  struct Case {
    const char* rows;
    const char* expect;
  };
  for (const Case& c : {Case{"5,ChatGPT,-1,3,2,API log\n", "b.csv:3: Request tokens: expected a non-negative integer, got \"-1\""},
                        Case{"5,ChatGPT,1,2.5,2,API log\n", "b.csv:3: Response tokens: expected a non-negative integer"},
                        Case{"x,ChatGPT,1,2,3,API log\n", "b.csv:3: Timestamp: expected a number of seconds, got \"x\""},
                        Case{"5,ChatGPT,1,2\n", "b.csv:3: expected 6 columns as in the header, got 4"},
                        Case{"0,ChatGPT,0,0,0,API log\n", "b.csv:3: Timestamp: \"0\" is earlier than the previous row's (line 2)"},
                        Case{"\n6,ChatGPT,1,2,3,API log\n", "b.csv:3: blank line"}}) {
    Status s;
    std::vector<Request> rows = ReadText(std::string(kHeader) + "4,ChatGPT,1,1,2,API log\n" + c.rows, &s);
    EXPECT_FALSE(s.ok()) << c.rows;
    EXPECT_EQ(s.message().rfind(c.expect, 0), 0u) << s.message();
  }
}

}  // namespace
}  // namespace fleetsim

#include "sim/traffic/splitwise_trace.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/traffic/test_util.h"

namespace fleetsim {
namespace {

using testing_traffic::Drain;
using testing_traffic::StreamOf;

std::vector<Request> ReadText(const std::string& text, Status* end) {
  std::unique_ptr<RequestSource> src;
  Status s = SplitwiseTraceReader::FromStream("s.csv", StreamOf(text), &src);
  if (!s.ok()) {
    *end = s;
    return {};
  }
  std::vector<Request> rows = Drain(*src);
  *end = src->status();
  return rows;
}

TEST(SplitwiseTraceReader, ReadsBundledVidurSlice) {
  std::unique_ptr<RequestSource> src;
  ASSERT_TRUE(SplitwiseTraceReader::Open(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/traces/splitwise_conv_head.csv",
                                         &src)
                  .ok());
  std::vector<Request> rows = Drain(*src);
  ASSERT_TRUE(src->status().ok()) << src->status().message();
  ASSERT_EQ(rows.size(), 400u);
  // The first rows of Vidur's splitwise_conv.csv: 0.0,374,44 and 4.314579,396,109.
  EXPECT_EQ(rows[0].arrival, 0);
  EXPECT_EQ(rows[0].prompt_tokens, 374);
  EXPECT_EQ(rows[0].output_tokens, 44);
  EXPECT_EQ(rows[1].arrival, 4'314'579'000);
  EXPECT_EQ(rows[1].prompt_tokens, 396);
  EXPECT_EQ(rows[1].output_tokens, 109);
}

TEST(SplitwiseTraceReader, FindsColumnsByNameAndToleratesOthers) {
  Status s;
  std::vector<Request> rows = ReadText(
      "num_total_tokens,num_decode_tokens,arrived_at,pd_ratio,num_prefill_tokens\n"
      "30,10,1.5,2.0,20\n"
      "7,3,2.5e0,1.3,4\n",
      &s);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].arrival, 0);
  EXPECT_EQ(rows[0].prompt_tokens, 20);
  EXPECT_EQ(rows[0].output_tokens, 10);
  EXPECT_EQ(rows[1].arrival, kSecond);
}

TEST(SplitwiseTraceReader, RefusesHeadersWithoutTheThreeColumns) {
  for (const char* text : {"", "arrival_s,prompt_tokens,output_tokens\n1,2,3\n",
                           "arrived_at,num_prefill_tokens\n", "arrived_at,arrived_at,num_prefill_tokens,num_decode_tokens\n"}) {
    Status s;
    ReadText(text, &s);
    EXPECT_FALSE(s.ok()) << text;
    EXPECT_EQ(s.message().rfind("s.csv:1: ", 0), 0u) << s.message();
  }
}

TEST(SplitwiseTraceReader, BadRowsNameFileAndLine) {
  struct Case {
    const char* rows;
    const char* expect;
  };
  for (const Case& c : {Case{"1,0,5\n", "s.csv:3: num_prefill_tokens: expected a positive integer, got \"0\""},
                        Case{"1,5,x\n", "s.csv:3: num_decode_tokens: expected a positive integer, got \"x\""},
                        Case{"nan,5,5\n", "s.csv:3: arrived_at: expected a number of seconds"},
                        Case{"0.5,5,5\n", "s.csv:3: arrived_at: \"0.5\" is earlier than the previous row's (line 2)"},
                        Case{"2,5\n", "s.csv:3: expected 3 columns as in the header, got 2"}}) {
    Status s;
    ReadText(std::string("arrived_at,num_prefill_tokens,num_decode_tokens\n1,2,3\n") + c.rows, &s);
    EXPECT_EQ(s.message().rfind(c.expect, 0), 0u) << s.message();
  }
}

}  // namespace
}  // namespace fleetsim

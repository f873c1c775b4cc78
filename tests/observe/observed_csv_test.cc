// fleetsim's per-request CSV (observed_csv.cc).
#include <gtest/gtest.h>

#include "tests/observe/test_util.h"

namespace fleetsim::observe_test {
namespace {

constexpr char kHeader[] = "start_s,input_tokens,output_tokens,ttft_s,e2e_s,itl_s\n";

TEST(ObserveCsv, ReadsExample) {
  std::vector<ObservedRun> runs = ReadExample("requests.csv");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].format, ObservedFormat::kCsv);
  EXPECT_EQ(runs[0].mode, LoadMode::kUnknown);
  Compare c;
  c.tolerance_s = 1e-12;
  ExpectFiveRequests(runs[0], c);
}

TEST(ObserveCsv, ReadsFiveColumnsUnsortedWithCrlf) {
  std::vector<ObservedRun> runs;
  ASSERT_EQ(ReadText("r.csv",
                     "start_s,input_tokens,output_tokens,ttft_s,e2e_s\r\n12.5,10,3,,0.4\r\n10.0,20,0,,\r\n"
                     "11,30,1,0.1,0.1",
                     &runs),
            "");
  const std::vector<ObservedRequest>& r = runs[0].requests;
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].start_s, 0);  // rebased to the first start, in start order
  EXPECT_FALSE(r[0].ok);
  EXPECT_EQ(r[1].start_s, 1);
  EXPECT_EQ(r[2].start_s, 2.5);
  EXPECT_FALSE(r[2].ttft_s);  // not streamed
  EXPECT_EQ(*r[2].e2e_s, 0.4);
}

TEST(ObserveCsv, BadRowsNameTheLine) {
  const std::pair<std::string, std::string> cases[] = {
      {"-1,10,3,0.1,0.2,", "r.csv:2: start_s: expected seconds >= 0, got \"-1\""},
      {"0,0,3,0.1,0.2,", "r.csv:2: input_tokens: expected a positive integer, got \"0\""},
      {"0,10,x,0.1,0.2,", "r.csv:2: output_tokens: expected an integer >= 0, got \"x\""},
      {"0,10,3,-0.1,0.2,", "r.csv:2: ttft_s: expected seconds >= 0 or nothing, got \"-0.1\""},
      {"0,10,3,0.1,inf,", "r.csv:2: e2e_s: expected seconds >= 0 or nothing (a failed request), got \"inf\""},
      {"0,10,3,0.3,0.2,", "r.csv:2: ttft_s: greater than e2e_s"},
      {"0,10,0,0.1,0.2,", "r.csv:2: output_tokens: 0 for a request with an e2e_s (not failed)"},
      {"0,10,3,0.1,,", "r.csv:2: e2e_s: empty (a failed request) but ttft_s or itl_s given"},
      {"0,10,3,0.1,0.2,0.05;;0.05", "r.csv:2: itl_s: expected seconds >= 0 separated by ';', got \"\""},
      {"0,10,3,0.1,0.2", "r.csv:2: expected 6 columns as in the header, got 5"},
  };
  for (const auto& [row, expected] : cases) EXPECT_EQ(ErrorOf("r.csv", kHeader + row + "\n"), expected);
  EXPECT_EQ(ErrorOf("r.csv", "start_s,input_tokens,output_tokens,e2e_s,ttft_s\n"),
            "r.csv:1: expected the header \"start_s,input_tokens,output_tokens,ttft_s,e2e_s\" optionally followed "
            "by itl_s, got \"start_s,input_tokens,output_tokens,e2e_s,ttft_s\"");
  EXPECT_EQ(ErrorOf("r.csv", ""),
            "r.csv:1: empty file; expected the header \"start_s,input_tokens,output_tokens,ttft_s,e2e_s\" "
            "optionally followed by itl_s");
  EXPECT_EQ(ErrorOf("r.csv", kHeader), "r.csv: no requests to read");
}

}  // namespace
}  // namespace fleetsim::observe_test

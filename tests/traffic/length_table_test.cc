#include "sim/traffic/length_table.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>

#include "tests/traffic/test_util.h"

namespace fleetsim {
namespace {

using testing_traffic::DataPath;
using testing_traffic::StreamOf;

TEST(LengthTable, LoadsRowsOfTheFile) {
  std::unique_ptr<LengthTable> t;
  ASSERT_TRUE(LengthTable::Load(DataPath("lengths.csv"), &t).ok());
  ASSERT_EQ(t->rows().size(), 4u);
  EXPECT_EQ(t->rows()[1].prompt_tokens, 300);
  EXPECT_EQ(t->rows()[1].output_tokens, 900);
}

TEST(LengthTable, SamplesOnlyRowsOfTheFileAndAllOfThem) {
  std::unique_ptr<LengthTable> t;
  ASSERT_TRUE(LengthTable::Load(DataPath("lengths.csv"), &t).ok());
  const std::set<std::pair<int32_t, int32_t>> file_rows = {
      {11, 22}, {300, 900}, {1000, 10}, {5, 7}};
  std::set<std::pair<int32_t, int32_t>> seen;
  Rng rng(11);
  for (int i = 0; i < 1000; ++i) {
    const LengthTable::Row& r = t->Sample(rng);
    std::pair<int32_t, int32_t> p(r.prompt_tokens, r.output_tokens);
    ASSERT_TRUE(file_rows.count(p)) << p.first << "," << p.second;
    seen.insert(p);
  }
  EXPECT_EQ(seen, file_rows);
}

TEST(LengthTable, RejectsBadRowsWithFileAndLine) {
  std::unique_ptr<LengthTable> t;
  const std::string header = "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n";
  EXPECT_EQ(LengthTable::FromStream("l.csv", StreamOf(header + "1,2,3,0.5\n1,x,3,0.5\n"), &t)
                .message(),
            "l.csv:3: num_decode_tokens: expected a positive integer, got \"x\"");
  EXPECT_EQ(LengthTable::FromStream("l.csv", StreamOf(header + "0,2,2,0\n"), &t).message(),
            "l.csv:2: num_prefill_tokens: expected a positive integer, got \"0\"");
  EXPECT_EQ(LengthTable::FromStream("l.csv", StreamOf(header + "1,2,3\n"), &t).message(),
            "l.csv:2: expected 4 columns as in the header, got 3");
  EXPECT_EQ(LengthTable::FromStream("l.csv", StreamOf(header + "1,2,3,4\n\n1,2,3,4\n"), &t)
                .message(),
            "l.csv:3: blank line in the middle of the file");
  EXPECT_EQ(LengthTable::FromStream("l.csv", StreamOf("prompt,output\n1,2\n"), &t).message(),
            "l.csv:1: expected a header starting \"num_prefill_tokens,num_decode_tokens\", got "
            "\"prompt,output\"");
  EXPECT_EQ(LengthTable::FromStream("l.csv", StreamOf(header), &t).message(), "l.csv: no rows");
  EXPECT_EQ(LengthTable::Load("missing.csv", &t).message(),
            "cannot open length CSV \"missing.csv\": No such file or directory");
}

TEST(LengthTable, AcceptsTwoColumnFileWithCrlf) {
  std::unique_ptr<LengthTable> t;
  ASSERT_TRUE(LengthTable::FromStream(
                  "l.csv", StreamOf("num_prefill_tokens,num_decode_tokens\r\n4,5\r\n"), &t)
                  .ok());
  EXPECT_EQ(t->rows().size(), 1u);
}

}  // namespace
}  // namespace fleetsim

#include "sim/traffic/mooncake_trace.h"

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
  Status s = MooncakeTraceReader::FromStream("traces/m.jsonl", StreamOf(text), &src);
  if (!s.ok()) {
    *end = s;
    return {};
  }
  std::vector<Request> rows = Drain(*src);
  *end = src->status();
  return rows;
}

TEST(MooncakeTraceReader, ParsesSampleExactly) {
  std::unique_ptr<RequestSource> src;
  ASSERT_TRUE(MooncakeTraceReader::Open(DataPath("mooncake_sample.jsonl"), &src).ok());
  std::vector<Request> rows = Drain(*src);
  ASSERT_TRUE(src->status().ok()) << src->status().message();
  ASSERT_EQ(rows.size(), 5u);
  const SimTime arrivals[] = {0, 0, 5'999'000'000, 9'000'000'000, 12'000'000'000};
  const int32_t prompts[] = {6758, 7322, 1053, 10355, 3628};
  const int32_t outputs[] = {500, 490, 26, 584, 555};
  const size_t blocks[] = {14, 15, 3, 21, 8};
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].id, i);
    EXPECT_EQ(rows[i].arrival, arrivals[i]) << i;
    EXPECT_EQ(rows[i].prompt_tokens, prompts[i]) << i;
    EXPECT_EQ(rows[i].output_tokens, outputs[i]) << i;
    EXPECT_EQ(rows[i].prefix_blocks.size(), blocks[i]) << i;
    EXPECT_EQ(rows[i].prefix_block_tokens, 512);
  }
  EXPECT_EQ(rows[0].prefix_blocks,
            (std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}));
  EXPECT_EQ(rows[2].prefix_blocks, (std::vector<uint64_t>{0, 773, 774}));
  EXPECT_EQ(rows[4].prefix_blocks.back(), 971u);
}

TEST(MooncakeTraceReader, RebasesToFirstTimestampAndReadsCrlf) {
  Status s;
  std::vector<Request> rows = ReadText(
      "{\"timestamp\": 1000, \"input_length\": 10, \"output_length\": 2, \"hash_ids\": [7]}\r\n"
      "{\"timestamp\": 1500.5, \"input_length\": 20, \"output_length\": 3}",
      &s);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].arrival, 0);
  EXPECT_EQ(rows[1].arrival, 500'500'000);
  EXPECT_EQ(rows[0].prefix_blocks, (std::vector<uint64_t>{7}));
  EXPECT_TRUE(rows[1].prefix_blocks.empty()) << "a reused Request must not keep old ids";
}

TEST(MooncakeTraceReader, RejectsInvalidJson) {
  Status s;
  std::vector<Request> rows = ReadText(
      "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1}\n{\"timestamp\": 1,\n", &s);
  EXPECT_EQ(rows.size(), 1u);
  EXPECT_EQ(s.message().rfind("traces/m.jsonl:2: invalid JSON at column", 0), 0u) << s.message();
}

TEST(MooncakeTraceReader, RejectsNumberTooLargeForADouble) {
  // Found by fuzz_trace_mooncake: the JSON parser throws out_of_range here.
  Status s;
  ReadText("{\"timestamp\": 7E8236, \"input_length\": 1, \"output_length\": 1}\n", &s);
  EXPECT_EQ(s.message(), "traces/m.jsonl:1: invalid JSON: number overflow parsing '7E8236'");
}

TEST(MooncakeTraceReader, RejectsDeepNestingNamingLineAndColumn) {
  Status s;
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  std::vector<Request> rows = ReadText("{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1}\n"
                                       "{\"timestamp\": 1, \"hash_ids\": " + deep + "}\n", &s);
  EXPECT_EQ(rows.size(), 1u);
  EXPECT_EQ(s.message(), "traces/m.jsonl:2: invalid JSON at column 285: nested deeper than 256 levels");
}

TEST(MooncakeTraceReader, ShowsABoundedPartOfAHugeValue) {
  Status s;
  std::string ids = "[";
  for (int i = 0; i < 100000; ++i) ids += "\"x\",";
  ids += "1]";
  ReadText("{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": {\"a\": " + ids + "}}\n",
           &s);
  EXPECT_EQ(s.message().rfind("traces/m.jsonl:1: hash_ids: expected an array", 0), 0u) << s.message();
  EXPECT_LT(s.message().size(), 200u) << s.message();
}

TEST(MooncakeTraceReader, RejectsNonObject) {
  Status s;
  ReadText("[1, 2]\n", &s);
  EXPECT_EQ(s.message(), "traces/m.jsonl:1: expected a JSON object, got \"[1,2]\"");
}

TEST(MooncakeTraceReader, RejectsMissingKey) {
  Status s;
  ReadText("{\"timestamp\": 0, \"input_length\": 1}\n", &s);
  EXPECT_EQ(s.message(), "traces/m.jsonl:1: missing \"output_length\"");
}

TEST(MooncakeTraceReader, RejectsNonPositiveOrNonIntegerLengths) {
  Status s;
  ReadText("{\"timestamp\": 0, \"input_length\": 0, \"output_length\": 1}\n", &s);
  EXPECT_EQ(s.message(), "traces/m.jsonl:1: input_length: expected a positive integer, got \"0\"");
  ReadText("{\"timestamp\": 0, \"input_length\": 5, \"output_length\": -2}\n", &s);
  EXPECT_EQ(s.message(), "traces/m.jsonl:1: output_length: expected a positive integer, got \"-2\"");
  ReadText("{\"timestamp\": 0, \"input_length\": \"5\", \"output_length\": 2}\n", &s);
  EXPECT_EQ(s.message(),
            "traces/m.jsonl:1: input_length: expected a positive integer, got \"\\\"5\\\"\"");
  ReadText("{\"timestamp\": 0, \"input_length\": 3000000000, \"output_length\": 2}\n", &s);
  EXPECT_EQ(s.message().rfind("traces/m.jsonl:1: input_length: expected a positive integer", 0),
            0u);
}

TEST(MooncakeTraceReader, RejectsBadHashIds) {
  Status s;
  ReadText("{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 2, \"hash_ids\": [1, -4]}\n",
           &s);
  EXPECT_EQ(s.message(),
            "traces/m.jsonl:1: hash_ids[1]: expected a non-negative integer, got \"-4\"");
  ReadText("{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 2, \"hash_ids\": 3}\n", &s);
  EXPECT_EQ(s.message().rfind("traces/m.jsonl:1: hash_ids: expected an array", 0), 0u);
}

TEST(MooncakeTraceReader, RejectsBadTimestamp) {
  Status s;
  ReadText("{\"timestamp\": \"now\", \"input_length\": 5, \"output_length\": 2}\n", &s);
  EXPECT_EQ(s.message().rfind("traces/m.jsonl:1: timestamp: expected a number", 0), 0u)
      << s.message();
  ReadText("{\"timestamp\": 1e300, \"input_length\": 5, \"output_length\": 2}\n", &s);
  EXPECT_EQ(s.message().rfind("traces/m.jsonl:1: timestamp: out of range", 0), 0u) << s.message();
}

TEST(MooncakeTraceReader, RejectsTimeGoingBackwards) {
  Status s;
  std::vector<Request> rows =
      ReadText("{\"timestamp\": 10, \"input_length\": 5, \"output_length\": 2}\n"
               "{\"timestamp\": 9, \"input_length\": 5, \"output_length\": 2}\n",
               &s);
  EXPECT_EQ(rows.size(), 1u);
  EXPECT_EQ(s.message(),
            "traces/m.jsonl:2: timestamp: earlier than the previous line's (line 1); the trace "
            "must be sorted by time");
}

TEST(MooncakeTraceReader, RejectsBlankLineInTheMiddleButNotAtTheEnd) {
  Status s;
  const std::string row = "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 2}\n";
  EXPECT_EQ(ReadText(row + "\n" + row, &s).size(), 1u);
  EXPECT_EQ(s.message(), "traces/m.jsonl:2: blank line in the middle of the file");
  EXPECT_EQ(ReadText(row + row + "\n", &s).size(), 2u);
  EXPECT_TRUE(s.ok());
}

TEST(MooncakeTraceReader, RejectsEmptyFile) {
  Status s;
  ReadText("", &s);
  EXPECT_EQ(s.message(), "traces/m.jsonl:1: empty file; expected JSON lines");
}

}  // namespace
}  // namespace fleetsim

#include "sim/traffic/line_reader.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/traffic/test_util.h"

namespace fleetsim {
namespace {

using testing_traffic::DataPath;
using testing_traffic::StreamOf;

std::vector<std::string> AllLines(LineReader& r) {
  std::vector<std::string> out;
  std::string_view line;
  while (r.Next(&line)) out.emplace_back(line);
  return out;
}

TEST(LineReader, SplitsOnNewlinesAndDropsCarriageReturns) {
  LineReader r("x", StreamOf("a,b\r\nc\n\r\nlast"));
  EXPECT_EQ(AllLines(r), (std::vector<std::string>{"a,b", "c", "", "last"}));
  EXPECT_TRUE(r.status().ok());
  EXPECT_EQ(r.line_number(), 4);
}

TEST(LineReader, TrailingNewlineDoesNotMakeAnExtraLine) {
  LineReader r("x", StreamOf("a\nb\n"));
  EXPECT_EQ(AllLines(r), (std::vector<std::string>{"a", "b"}));
}

TEST(LineReader, AssemblesLinesAcrossBufferRefills) {
  LineReaderOptions o;
  o.buffer_bytes = 3;  // every line straddles refills
  LineReader r("x", StreamOf("hello,world\r\n\nab\r\nxyz"), o);
  EXPECT_EQ(AllLines(r), (std::vector<std::string>{"hello,world", "", "ab", "xyz"}));
  EXPECT_TRUE(r.status().ok());
}

TEST(LineReader, RejectsOverlongLineNamingIt) {
  LineReaderOptions o;
  o.buffer_bytes = 4;
  o.max_line_bytes = 5;
  LineReader r("f.csv", StreamOf("12345\r\n123456\nok\n"), o);
  std::string_view line;
  ASSERT_TRUE(r.Next(&line));
  EXPECT_EQ(line, "12345");
  EXPECT_FALSE(r.Next(&line));
  EXPECT_EQ(r.status().message(), "f.csv:2: line longer than 5 bytes");
  EXPECT_FALSE(r.Next(&line));
}

TEST(LineReader, DropsUtf8ByteOrderMark) {
  LineReader r("x", StreamOf("\xEF\xBB\xBFheader\nrow"));
  EXPECT_EQ(AllLines(r), (std::vector<std::string>{"header", "row"}));
}

TEST(LineReader, NextRecordSkipsTrailingBlankLines) {
  LineReader r("x", StreamOf("a\nb\n\n  \r\n\n"));
  std::string_view line;
  std::vector<std::string> got;
  while (r.NextRecord(&line)) got.emplace_back(line);
  EXPECT_EQ(got, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(r.status().ok());
}

TEST(LineReader, NextRecordRejectsBlankLineInTheMiddle) {
  LineReader r("t.csv", StreamOf("a\nb\n\n\nc\n"));
  std::string_view line;
  ASSERT_TRUE(r.NextRecord(&line));
  ASSERT_TRUE(r.NextRecord(&line));
  EXPECT_FALSE(r.NextRecord(&line));
  EXPECT_EQ(r.status().message(), "t.csv:3: blank line in the middle of the file");
}

TEST(LineReader, OpenFileReportsMissingFile) {
  std::unique_ptr<LineReader> r;
  Status s = LineReader::OpenFile("/nonexistent/dir/t.csv", "trace", &r);
  EXPECT_EQ(s.message(), "cannot open trace \"/nonexistent/dir/t.csv\": No such file or directory");
}

TEST(LineReader, OpenFileRefusesDirectory) {
  std::unique_ptr<LineReader> r;
  Status s = LineReader::OpenFile(std::string(FLEETSIM_SOURCE_DIR) + "/tests", "trace", &r);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "cannot open trace \"" + std::string(FLEETSIM_SOURCE_DIR) +
                            "/tests\": not a regular file (a directory)");
}

// A FIFO is refused at once: opening it for reading would wait for a writer.
TEST(LineReader, OpenFileRefusesFifoWithoutBlocking) {
  const std::string path = ::testing::TempDir() + "fleetsim_line_reader_fifo_" + std::to_string(::getpid());
  ::unlink(path.c_str());
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  std::unique_ptr<LineReader> r;
  Status s = LineReader::OpenFile(path, "trace", &r);
  ::unlink(path.c_str());
  EXPECT_EQ(s.message(), "cannot open trace \"" + path + "\": not a regular file (a FIFO)");
}

TEST(LineReader, OpenFileRefusesDevices) {
  for (const char* dev : {"/dev/null", "/dev/zero"}) {
    std::unique_ptr<LineReader> r;
    Status s = LineReader::OpenFile(dev, "trace", &r);
    EXPECT_EQ(s.message(), "cannot open trace \"" + std::string(dev) + "\": not a regular file (a character device)");
  }
}

TEST(LineReader, ReadsFileInSmallBuffersExactly) {
  LineReaderOptions o;
  o.buffer_bytes = 7;
  std::unique_ptr<LineReader> r;
  ASSERT_TRUE(LineReader::OpenFile(DataPath("azure_2023.csv"), "trace", &r, o).ok());
  std::vector<std::string> lines = AllLines(*r);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[0], "TIMESTAMP,ContextTokens,GeneratedTokens");
  EXPECT_EQ(lines[5], "2024-03-01 00:00:00.0000000,5,1");
}

}  // namespace
}  // namespace fleetsim

// LineReader: reads a text file one line at a time through a fixed buffer, so
// a trace of any length costs the same memory as its longest line. It is the
// only place trace readers touch the file, and it numbers lines for error
// messages ("path:line: what").
#pragma once

#include <cstdint>
#include <cstdio>
#include <istream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace fleetsim {

struct LineReaderOptions {
  // Longest line accepted, in bytes without the terminator. A longer line is
  // an error rather than an unbounded allocation (a binary file or a file
  // with no newlines would otherwise be read whole). Mooncake lines are a
  // few KB; Azure and CSV rows well under 100 bytes.
  size_t max_line_bytes = 1 << 20;
  // Bytes read from the file per refill. Larger is fewer read calls.
  size_t buffer_bytes = 1 << 16;
};

class LineReader {
 public:
  // Opens `path`. `what` names the file's role in the error message:
  // `cannot open <what> "path": <strerror>`. Anything but a regular file (a
  // directory, a FIFO, a device) is refused without blocking; see base/file.h.
  static Status OpenFile(const std::string& path, std::string_view what,
                         std::unique_ptr<LineReader>* out,
                         const LineReaderOptions& options = LineReaderOptions());

  // Reads from `in` (tests and fuzzers feed an istringstream); `name` stands
  // for the path in error messages.
  LineReader(std::string name, std::unique_ptr<std::istream> in,
             const LineReaderOptions& options = LineReaderOptions());
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // Sets *line to the next line without its "\n" or "\r\n" (a UTF-8 byte
  // order mark at the start of the file is dropped too) and returns true.
  // The view stays valid until the next call. A last line without a newline
  // is returned like any other. Returns false at the end of the input or on
  // an error; status() tells which.
  bool Next(std::string_view* line);

  // Like Next, but for files of records where blank lines (empty or only
  // spaces and tabs) are not allowed: blank lines at the very end of the file
  // are skipped, and a blank line followed by more data is an error naming
  // the blank line.
  bool NextRecord(std::string_view* line);

  // Number (1-based) of the line last returned; 0 before the first.
  int64_t line_number() const { return line_number_; }
  const std::string& name() const { return name_; }
  const Status& status() const { return status_; }

  // "name:line: what" for the line last returned.
  Status ErrorAt(std::string_view what) const { return ErrorAtLine(line_number_, what); }
  Status ErrorAtLine(int64_t line, std::string_view what) const;

 private:
  LineReader(std::string name, std::FILE* file, const LineReaderOptions& options);
  // Refills buf_ from the input; sets eof_ or status_.
  void Fill();

  std::string name_;
  std::FILE* file_ = nullptr;              // owned; exactly one of file_ and stream_
  std::unique_ptr<std::istream> stream_;
  LineReaderOptions options_;
  std::vector<char> buf_;
  size_t pos_ = 0;   // next unread byte in buf_
  size_t end_ = 0;   // bytes valid in buf_
  bool eof_ = false;
  bool done_ = false;
  std::string line_;  // a line that straddles refills is assembled here
  int64_t line_number_ = 0;
  Status status_;
};

}  // namespace fleetsim

// LineTraceReader: the plumbing every line-based trace reader shares (Azure,
// CSV, BurstGPT, Splitwise, Mooncake): where its lines come from (a file or,
// for tests and fuzzers, a stream), the header line, the request ids and
// its sticky error. A reader derives from LineTraceReaderOf<itself> and
// defines a static Start that checks the header and makes the reader.
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "base/status.h"
#include "sim/engine/time.h"
#include "sim/traffic/line_reader.h"
#include "sim/traffic/request.h"
#include "sim/traffic/source.h"

namespace fleetsim {

class LineTraceReader : public RequestSource {
 public:
  const Status& status() const override { return status_; }

 protected:
  // A reader's Start: checks the header (if any) of `lines` and makes the
  // reader over them.
  using StartFn = Status (*)(std::unique_ptr<LineReader> lines, std::unique_ptr<RequestSource>* out);

  // `cannot open trace "path": ...` when the file cannot be read.
  static Status OpenFileWith(StartFn start, const std::string& path, std::unique_ptr<RequestSource>* out) {
    std::unique_ptr<LineReader> lines;
    FLEETSIM_RETURN_IF_ERROR(LineReader::OpenFile(path, "trace", &lines));
    return start(std::move(lines), out);
  }
  // `name` stands for the path in messages.
  static Status OpenStreamWith(StartFn start, std::string name, std::unique_ptr<std::istream> in,
                               std::unique_ptr<RequestSource>* out) {
    return start(std::make_unique<LineReader>(std::move(name), std::move(in)), out);
  }

  explicit LineTraceReader(std::unique_ptr<LineReader> lines) : lines_(std::move(lines)) {}

  // The header line into *header; `path:1: empty file; <expected>` when
  // there is none.
  static Status ReadHeader(LineReader& lines, const std::string& expected, std::string_view* header) {
    if (lines.Next(header)) return Status::Ok();
    if (!lines.status().ok()) return lines.status();
    return lines.ErrorAtLine(1, "empty file; " + expected);
  }

  // A plain row: the next id, its arrival and lengths, and nothing else (no
  // priority, session, model or prefix ids).
  void Emit(Request* out, SimTime arrival, int32_t prompt, int32_t output) {
    out->id = next_id_++;
    out->arrival = arrival;
    out->prompt_tokens = prompt;
    out->output_tokens = output;
    out->priority = 0;
    out->session_id = -1;
    out->model.clear();
    out->prefix_blocks.clear();
    out->prefix_block_tokens = 0;
  }

  // Ends the stream with `s`; returns false for Next to return.
  bool Fail(Status s) {
    status_ = std::move(s);
    failed_ = true;
    return false;
  }

  std::unique_ptr<LineReader> lines_;
  Status status_;
  bool failed_ = false;
  uint64_t next_id_ = 0;  // ids are 0, 1, 2, ... in output order
};

template <typename Reader>
class LineTraceReaderOf : public LineTraceReader {
 public:
  // Opens the file and checks its header (Reader::Start). Errors: `cannot
  // open trace "path": <strerror>`, or the header's, naming path:line.
  static Status Open(const std::string& path, std::unique_ptr<RequestSource>* out) {
    return OpenFileWith(&Reader::Start, path, out);
  }
  // The same over any stream (tests, fuzzers); `name` stands for the path.
  static Status FromStream(std::string name, std::unique_ptr<std::istream> in, std::unique_ptr<RequestSource>* out) {
    return OpenStreamWith(&Reader::Start, std::move(name), std::move(in), out);
  }

 protected:
  using LineTraceReader::LineTraceReader;
};

}  // namespace fleetsim

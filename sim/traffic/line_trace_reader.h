// LineTraceReader: the plumbing every line-based trace reader shares (Azure,
// CSV, BurstGPT, Splitwise, Mooncake): where its lines come from (a file or,
// for tests and fuzzers, a stream) and its sticky error.
#pragma once

#include <istream>
#include <memory>
#include <string>
#include <utility>

#include "base/status.h"
#include "sim/traffic/line_reader.h"
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

  // Ends the stream with `s`; returns false for Next to return.
  bool Fail(Status s) {
    status_ = std::move(s);
    failed_ = true;
    return false;
  }

  std::unique_ptr<LineReader> lines_;
  Status status_;
  bool failed_ = false;
};

}  // namespace fleetsim

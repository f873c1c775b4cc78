#include "sim/traffic/line_reader.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/file.h"

namespace fleetsim {

Status LineReader::OpenFile(const std::string& path, std::string_view what,
                            std::unique_ptr<LineReader>* out, const LineReaderOptions& options) {
  // Only regular files, opened without blocking (a FIFO would otherwise wait
  // for a writer; a directory or a device is refused with a clear message).
  std::FILE* f;
  FLEETSIM_RETURN_IF_ERROR(OpenRegularFile(path, what, &f));
  out->reset(new LineReader(path, f, options));
  return Status::Ok();
}

LineReader::LineReader(std::string name, std::FILE* file, const LineReaderOptions& options)
    : name_(std::move(name)), file_(file), options_(options) {
  if (options_.buffer_bytes == 0) options_.buffer_bytes = 1;
  buf_.resize(options_.buffer_bytes);
}

LineReader::LineReader(std::string name, std::unique_ptr<std::istream> in,
                       const LineReaderOptions& options)
    : name_(std::move(name)), stream_(std::move(in)), options_(options) {
  if (options_.buffer_bytes == 0) options_.buffer_bytes = 1;
  buf_.resize(options_.buffer_bytes);
}

LineReader::~LineReader() {
  if (file_ != nullptr) std::fclose(file_);
}

Status LineReader::ErrorAtLine(int64_t line, std::string_view what) const {
  return Status::Invalid(name_ + ":" + std::to_string(line) + ": " + std::string(what));
}

void LineReader::Fill() {
  pos_ = 0;
  end_ = 0;
  if (file_ != nullptr) {
    end_ = std::fread(buf_.data(), 1, buf_.size(), file_);
    if (end_ < buf_.size()) {
      if (std::ferror(file_)) {
        status_ = ErrorAtLine(line_number_ + 1, std::string("read error: ") + std::strerror(errno));
      } else {
        eof_ = true;
      }
    }
    return;
  }
  stream_->read(buf_.data(), static_cast<std::streamsize>(buf_.size()));
  end_ = static_cast<size_t>(stream_->gcount());
  if (stream_->bad()) {
    status_ = ErrorAtLine(line_number_ + 1, "read error");
  } else if (end_ < buf_.size()) {
    eof_ = true;
  }
}

bool LineReader::Next(std::string_view* line) {
  if (done_ || !status_.ok()) return false;
  bool assembling = false;  // part of the line is already in line_
  bool found_newline = false;
  for (;;) {
    if (pos_ == end_) {
      if (eof_) break;
      Fill();
      if (!status_.ok()) return false;
      if (pos_ == end_) break;  // nothing more
    }
    const char* start = buf_.data() + pos_;
    const size_t avail = end_ - pos_;
    const char* nl = static_cast<const char*>(std::memchr(start, '\n', avail));
    const size_t len = nl != nullptr ? static_cast<size_t>(nl - start) : avail;
    const size_t total = (assembling ? line_.size() : 0) + len;
    if (total > options_.max_line_bytes + 1) {  // +1: a "\r" before "\n" is not counted
      status_ = ErrorAtLine(line_number_ + 1,
                            "line longer than " + std::to_string(options_.max_line_bytes) +
                                " bytes");
      return false;
    }
    if (nl != nullptr && !assembling) {
      // Common case: the whole line sits in the buffer; no copy.
      *line = std::string_view(start, len);
      pos_ += len + 1;
      found_newline = true;
      break;
    }
    if (!assembling) line_.clear();
    line_.append(start, len);
    assembling = true;
    pos_ += len;
    if (nl != nullptr) {
      ++pos_;
      found_newline = true;
      *line = line_;
      break;
    }
  }
  if (!found_newline) {
    // End of input. A final line without a newline still counts.
    if (!assembling) {
      done_ = true;
      return false;
    }
    *line = line_;
  }
  if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
  if (line->size() > options_.max_line_bytes) {
    status_ = ErrorAtLine(line_number_ + 1,
                          "line longer than " + std::to_string(options_.max_line_bytes) + " bytes");
    return false;
  }
  ++line_number_;
  if (line_number_ == 1 && line->substr(0, 3) == "\xEF\xBB\xBF") line->remove_prefix(3);
  return true;
}

namespace {
bool IsBlank(std::string_view s) {
  for (char c : s) {
    if (c != ' ' && c != '\t') return false;
  }
  return true;
}
}  // namespace

bool LineReader::NextRecord(std::string_view* line) {
  if (!Next(line)) return false;
  if (!IsBlank(*line)) return true;
  const int64_t first_blank = line_number_;
  while (Next(line)) {
    if (!IsBlank(*line)) {
      status_ = ErrorAtLine(first_blank, "blank line in the middle of the file");
      return false;
    }
  }
  return false;  // only blank lines to the end (or a read error, in status_)
}

}  // namespace fleetsim

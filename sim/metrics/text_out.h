// Buffered, locale-independent writers for CSV rows and JSON documents.
// Numbers go through std::to_chars, so output is byte-identical across
// platforms and fast enough for a million rows.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "sim/engine/time.h"

namespace fleetsim {

// Appends formatted values to a string buffer.
class TextBuffer {
 public:
  std::string& str() { return buf_; }
  void Raw(std::string_view s) { buf_.append(s); }
  void Char(char c) { buf_.push_back(c); }
  void Int(int64_t v) {
    char tmp[24];
    auto [p, ec] = std::to_chars(tmp, tmp + sizeof tmp, v);
    buf_.append(tmp, p);
  }
  // Shortest representation that round-trips; "null" for non-finite.
  void Double(double v);
  // Fixed decimals, rounded half away from zero on the decimal value.
  void Fixed(double v, int decimals);
  // Nanoseconds as seconds with 9 decimals: exact.
  void Seconds(SimTime ns);
  void JsonString(std::string_view s);

 private:
  std::string buf_;
};

// A file written through a TextBuffer, flushed every 1 MiB.
class BufferedFile {
 public:
  BufferedFile() = default;
  ~BufferedFile() { Close(); }
  BufferedFile(const BufferedFile&) = delete;
  BufferedFile& operator=(const BufferedFile&) = delete;
  // Returns false (errno set) if the file cannot be created.
  bool Open(const std::string& path);
  bool is_open() const { return f_ != nullptr; }
  TextBuffer& out() { return buf_; }
  void MaybeFlush() {
    if (buf_.str().size() >= (1u << 20)) Flush();
  }
  void Flush();
  // Returns false if any write failed.
  bool Close();

 private:
  std::FILE* f_ = nullptr;
  TextBuffer buf_;
  bool ok_ = true;
};

}  // namespace fleetsim

namespace fleetsim {

// Writes a pretty-printed JSON document (2-space indent) into a string.
// Keys appear in the order written, so output is stable.
class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view k);
  JsonWriter& Int(int64_t v);
  JsonWriter& Double(double v);
  JsonWriter& String(std::string_view s);
  JsonWriter& Bool(bool b);
  JsonWriter& Null();
  // A value already in JSON (compact, one line), written as is.
  JsonWriter& RawValue(std::string_view json);
  std::string Finish() {
    buf_.Char('\n');
    return std::move(buf_.str());
  }

 private:
  void BeforeValue();
  void Newline();
  TextBuffer buf_;
  std::vector<bool> first_;  // per open container: no element yet
  bool after_key_ = false;
};

}  // namespace fleetsim

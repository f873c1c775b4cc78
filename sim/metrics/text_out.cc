#include "sim/metrics/text_out.h"

#include <cmath>

namespace fleetsim {

void TextBuffer::Double(double v) {
  if (!std::isfinite(v)) {
    buf_.append("null");
    return;
  }
  char tmp[32];
  auto [p, ec] = std::to_chars(tmp, tmp + sizeof tmp, v);
  buf_.append(tmp, p);
}

void TextBuffer::Fixed(double v, int decimals) {
  if (!std::isfinite(v)) {
    buf_.append("null");
    return;
  }
  char tmp[64];
  auto [p, ec] = std::to_chars(tmp, tmp + sizeof tmp, v, std::chars_format::fixed, decimals);
  buf_.append(tmp, p);
}

void TextBuffer::Seconds(SimTime ns) {
  if (ns < 0) {
    buf_.push_back('-');
    ns = -ns;
  }
  Int(ns / kSecond);
  char frac[10];
  int64_t r = ns % kSecond;
  for (int i = 8; i >= 0; --i) {
    frac[i] = static_cast<char>('0' + r % 10);
    r /= 10;
  }
  buf_.push_back('.');
  buf_.append(frac, 9);
}

void TextBuffer::JsonString(std::string_view s) {
  buf_.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"': buf_.append("\\\""); break;
      case '\\': buf_.append("\\\\"); break;
      case '\n': buf_.append("\\n"); break;
      case '\t': buf_.append("\\t"); break;
      case '\r': buf_.append("\\r"); break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char tmp[8];
          std::snprintf(tmp, sizeof tmp, "\\u%04x", c);
          buf_.append(tmp);
        } else {
          buf_.push_back(c);
        }
    }
  }
  buf_.push_back('"');
}

bool BufferedFile::Open(const std::string& path) {
  f_ = std::fopen(path.c_str(), "wb");
  ok_ = f_ != nullptr;
  return ok_;
}

void BufferedFile::Flush() {
  if (!f_) return;
  std::string& s = buf_.str();
  if (!s.empty() && std::fwrite(s.data(), 1, s.size(), f_) != s.size()) ok_ = false;
  s.clear();
}

bool BufferedFile::Close() {
  if (!f_) return ok_;
  Flush();
  if (std::fclose(f_) != 0) ok_ = false;
  f_ = nullptr;
  return ok_;
}

}  // namespace fleetsim

namespace fleetsim {

void JsonWriter::Newline() {
  buf_.Char('\n');
  for (size_t i = 0; i < first_.size(); ++i) buf_.Raw("  ");
}

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) buf_.Char(',');
    first_.back() = false;
    Newline();
  }
}

JsonWriter& JsonWriter::BeginObject() {
  BeforeValue();
  buf_.Char('{');
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::EndObject() {
  bool empty = first_.back();
  first_.pop_back();
  if (!empty) Newline();
  buf_.Char('}');
  return *this;
}

JsonWriter& JsonWriter::BeginArray() {
  BeforeValue();
  buf_.Char('[');
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::EndArray() {
  bool empty = first_.back();
  first_.pop_back();
  if (!empty) Newline();
  buf_.Char(']');
  return *this;
}

JsonWriter& JsonWriter::Key(std::string_view k) {
  BeforeValue();
  buf_.JsonString(k);
  buf_.Raw(": ");
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::Int(int64_t v) {
  BeforeValue();
  buf_.Int(v);
  return *this;
}

JsonWriter& JsonWriter::Double(double v) {
  BeforeValue();
  buf_.Double(v);
  return *this;
}

JsonWriter& JsonWriter::RawValue(std::string_view json) {
  BeforeValue();
  buf_.Raw(json);
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view s) {
  BeforeValue();
  buf_.JsonString(s);
  return *this;
}

JsonWriter& JsonWriter::Bool(bool b) {
  BeforeValue();
  buf_.Raw(b ? "true" : "false");
  return *this;
}

JsonWriter& JsonWriter::Null() {
  BeforeValue();
  buf_.Raw("null");
  return *this;
}

}  // namespace fleetsim

#include "sim/traffic/text_fields.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

namespace fleetsim {

std::string_view TrimSpaces(std::string_view s) {
  size_t b = 0;
  size_t e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  return s.substr(b, e - b);
}

size_t SplitCsv(std::string_view line, std::string_view* fields, size_t max_fields) {
  size_t n = 0;
  size_t start = 0;
  for (;;) {
    size_t comma = line.find(',', start);
    std::string_view f =
        line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (n < max_fields) fields[n] = TrimSpaces(f);
    ++n;
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return n;
}

bool ParseInt64(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

bool ParseUint64(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

bool ParseFiniteDouble(std::string_view s, double* out) {
  if (s.empty()) return false;
  if (s.front() == '+') return false;
  const char* end = s.data() + s.size();
  double v;
  auto [ptr, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || ptr != end || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool ParsePositiveInt32(std::string_view s, int32_t* out) {
  int64_t v;
  if (!ParseInt64(s, &v) || v < 1 || v > std::numeric_limits<int32_t>::max()) return false;
  *out = static_cast<int32_t>(v);
  return true;
}

namespace {

constexpr int64_t kMaxAbsSeconds = 4'000'000'000;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

bool ParseSecondsToTime(std::string_view s, SimTime* out) {
  if (s.empty()) return false;
  if (s.find_first_of("eE") != std::string_view::npos) {
    double v;
    const char* end = s.data() + s.size();
    auto [ptr, ec] = std::from_chars(s.data(), end, v);
    if (ec != std::errc() || ptr != end || !std::isfinite(v)) return false;
    if (!(std::fabs(v) < static_cast<double>(kMaxAbsSeconds))) return false;
    *out = static_cast<SimTime>(std::llround(v * 1e9));
    return true;
  }
  size_t i = 0;
  bool negative = false;
  if (s[i] == '-' || s[i] == '+') {
    negative = s[i] == '-';
    ++i;
  }
  int64_t whole = 0;
  size_t int_digits = 0;
  while (i < s.size() && IsDigit(s[i])) {
    whole = whole * 10 + (s[i] - '0');
    if (whole >= kMaxAbsSeconds) return false;
    ++i;
    ++int_digits;
  }
  int64_t frac = 0;
  size_t frac_digits = 0;
  bool round_up = false;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && IsDigit(s[i])) {
      if (frac_digits < 9) {
        frac = frac * 10 + (s[i] - '0');
      } else if (frac_digits == 9) {
        round_up = s[i] >= '5';
      }
      ++frac_digits;
      ++i;
    }
  }
  if (i != s.size() || int_digits + frac_digits == 0) return false;
  for (size_t d = frac_digits; d < 9; ++d) frac *= 10;
  int64_t ns = whole * kSecond + frac + (round_up ? 1 : 0);
  *out = negative ? -ns : ns;
  return true;
}

std::string FormatNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string QuoteForMessage(std::string_view s, size_t max_chars) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string q = "\"";
  const bool cut = s.size() > max_chars;
  if (cut) s = s.substr(0, max_chars);
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      q += '\\';
      q += ch;
    } else if (c < 0x20 || c >= 0x7f) {
      q += "\\x";
      q += kHex[c >> 4];
      q += kHex[c & 15];
    } else {
      q += ch;
    }
  }
  if (cut) q += "...";
  q += '"';
  return q;
}

}  // namespace fleetsim

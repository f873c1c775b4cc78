#include "sim/traffic/timestamp.h"

#include <limits>

namespace fleetsim {

int64_t DaysFromCivil(int64_t y, int m, int d) {
  // Shift the year to start in March so the leap day is the last day of the
  // year; then whole 400-year eras of 146097 days, years of 365 days plus
  // leap days, and months by the 153-days-per-5-months rule.
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;                                   // [0, 399]
  const int64_t mp = (m + 9) % 12;                                     // March = 0
  const int64_t doy = (153 * mp + 2) / 5 + d - 1;                      // [0, 365]
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;           // [0, 146096]
  return era * 146097 + doe - 719468;  // 719468: days from 0000-03-01 to 1970-01-01
}

namespace {

// Reads exactly n digits at s[*i]; advances *i.
bool Digits(std::string_view s, size_t* i, int n, int* out) {
  if (*i + static_cast<size_t>(n) > s.size()) return false;
  int v = 0;
  for (int k = 0; k < n; ++k) {
    const char c = s[*i + k];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *i += n;
  *out = v;
  return true;
}

bool Expect(std::string_view s, size_t* i, char c) {
  if (*i >= s.size() || s[*i] != c) return false;
  ++*i;
  return true;
}

bool IsLeap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int DaysInMonth(int y, int m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[m - 1];
}

}  // namespace

bool ParseTimestamp(std::string_view s, int64_t* ns_since_epoch, const char** why) {
  static const char* const kShape = "expected YYYY-MM-DD HH:MM:SS[.fraction][+00:00]";
  size_t i = 0;
  int year, month, day, hour, minute, second;
  if (!Digits(s, &i, 4, &year) || !Expect(s, &i, '-') || !Digits(s, &i, 2, &month) ||
      !Expect(s, &i, '-') || !Digits(s, &i, 2, &day)) {
    *why = kShape;
    return false;
  }
  if (i >= s.size() || (s[i] != ' ' && s[i] != 'T')) {
    *why = kShape;
    return false;
  }
  ++i;
  if (!Digits(s, &i, 2, &hour) || !Expect(s, &i, ':') || !Digits(s, &i, 2, &minute) ||
      !Expect(s, &i, ':') || !Digits(s, &i, 2, &second)) {
    *why = kShape;
    return false;
  }
  int64_t frac_ns = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    int digits = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (digits == 9) {
        *why = "more than 9 fractional digits";
        return false;
      }
      frac_ns = frac_ns * 10 + (s[i] - '0');
      ++digits;
      ++i;
    }
    if (digits == 0) {
      *why = "no digits after the decimal point";
      return false;
    }
    for (int d = digits; d < 9; ++d) frac_ns *= 10;
  }
  int64_t offset_s = 0;
  if (i < s.size()) {
    if (s[i] == 'Z') {
      ++i;
    } else if (s[i] == '+' || s[i] == '-') {
      const int sign = s[i] == '-' ? -1 : 1;
      ++i;
      int oh, om;
      if (!Digits(s, &i, 2, &oh) || !Expect(s, &i, ':') || !Digits(s, &i, 2, &om) || oh > 23 ||
          om > 59) {
        *why = "bad time zone offset (expected +HH:MM)";
        return false;
      }
      offset_s = sign * (oh * 3600 + om * 60);
    }
    if (i != s.size()) {
      *why = kShape;
      return false;
    }
  }
  if (month < 1 || month > 12) {
    *why = "month out of range";
    return false;
  }
  if (day < 1 || day > DaysInMonth(year, month)) {
    *why = "day out of range for the month";
    return false;
  }
  if (hour > 23 || minute > 59 || second > 59) {
    *why = "time of day out of range";
    return false;
  }
  if (year < 1970 || year > 2262) {
    *why = "year out of range (1970 to 2262)";
    return false;
  }
  const int64_t secs =
      DaysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset_s;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (secs < 0 || secs > (kMax - frac_ns) / 1'000'000'000) {
    *why = "time out of range (1970 to 2262)";
    return false;
  }
  *ns_since_epoch = secs * 1'000'000'000 + frac_ns;
  return true;
}

}  // namespace fleetsim

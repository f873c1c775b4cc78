#include "tools/report/text.h"

#include <cmath>
#include <cstdarg>
#include <cstdio>

namespace fleetsim::report {

std::string HtmlEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string Format(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  const int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) return "";
  if (static_cast<size_t>(n) < sizeof buf) return std::string(buf, n);
  std::string out(n, '\0');
  va_start(ap, fmt);
  std::vsnprintf(out.data(), n + 1, fmt, ap);
  va_end(ap);
  return out;
}

std::string Num(double v) {
  if (!std::isfinite(v)) return "n/a";
  if (v == 0) return "0";  // never "-0"
  const double a = std::fabs(v);
  if (a >= 1e4 && a < 1e9) return Format("%.0f", v);
  return Format("%.4g", v);
}

std::string Num(const std::optional<double>& v) { return v ? Num(*v) : "n/a"; }

std::string PlusMinus(const std::optional<double>& mean, const std::optional<double>& half) {
  if (!mean) return "n/a";
  if (!half) return Num(*mean);
  return Num(*mean) + " ± " + Num(*half);
}

std::string Percent(const std::optional<double>& fraction) {
  if (!fraction || !std::isfinite(*fraction)) return "n/a";
  return Format("%.1f%%", *fraction * 100);
}

std::string Usd(const std::optional<double>& v) {
  if (!v || !std::isfinite(*v)) return "n/a";
  return Format("$%.2f", *v);
}

}  // namespace fleetsim::report

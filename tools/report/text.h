// Text for reports: escaping and fixed, locale-free number formatting, so the
// same inputs always give the same bytes.
#pragma once

#include <optional>
#include <string>

namespace fleetsim::report {

// `s` with &, <, >, " and ' replaced by entities.
std::string HtmlEscape(const std::string& s);

// A figure with 4 significant digits ("%.4g"), written out in full from 10^4
// to 10^9 so that a latency of 15300 ms does not read "1.53e+04"; "n/a" for
// a figure that does not exist.
std::string Num(double v);
std::string Num(const std::optional<double>& v);
// "mean ± half" (just the mean when there is no half-width).
std::string PlusMinus(const std::optional<double>& mean, const std::optional<double>& half);
std::string Percent(const std::optional<double>& fraction);  // "99.9%"
std::string Usd(const std::optional<double>& v);             // "$12.34"
// printf into a std::string (C locale is assumed: fleetsim never sets one).
std::string Format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace fleetsim::report

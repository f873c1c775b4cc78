// Field-level helpers shared by the trace and length-CSV readers: splitting a
// CSV row, parsing numbers with std::from_chars (no streams, no locale, no
// allocation), and quoting user text safely for one-line error messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sim/engine/time.h"

namespace fleetsim {

// Drops leading and trailing spaces and tabs.
std::string_view TrimSpaces(std::string_view s);

// Splits a comma-separated row. Stores the first `max_fields` fields (each
// trimmed of spaces) in fields[] and returns the total number of fields,
// which may exceed max_fields. Quoting is not supported: none of the formats
// read here quote fields.
size_t SplitCsv(std::string_view line, std::string_view* fields, size_t max_fields);

// Whole-field integer parses; false on anything else (sign characters other
// than a leading '-', spaces, trailing text, overflow).
bool ParseInt64(std::string_view s, int64_t* out);
bool ParseUint64(std::string_view s, uint64_t* out);
// A finite decimal number ("0.25", "-3", "1e-05"); false on anything else
// (inf, nan, spaces, trailing text, out of double range).
bool ParseFiniteDouble(std::string_view s, double* out);
// An integer in [1, 2^31 - 1]: token counts.
bool ParsePositiveInt32(std::string_view s, int32_t* out);

// Decimal seconds ("12", "0.25", "-3.5", "1e-05") to nanoseconds. Plain
// decimals are converted exactly, digit by digit (more than 9 fractional
// digits round half up on the 10th); exponent forms go through double and
// round to the nearest nanosecond. Accepts |s| < 4e9 s (about 126 years), so
// that differences of two parsed times cannot overflow SimTime.
bool ParseSecondsToTime(std::string_view s, SimTime* out);

// `v` with printf's "%g" (6 significant digits), for error messages.
std::string FormatNumber(double v);

// `s` in double quotes for an error message, cut to `max_chars` characters
// (with "..."), with control and non-ASCII bytes written as \xNN so the
// message stays on one line.
std::string QuoteForMessage(std::string_view s, size_t max_chars = 60);

}  // namespace fleetsim

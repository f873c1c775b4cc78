// Calendar timestamps as written by the Azure LLM inference traces, parsed to
// integer nanoseconds without going through the C library (timegm and
// strptime depend on the locale and the time zone database; days-from-civil
// arithmetic does not).
#pragma once

#include <cstdint>
#include <string_view>

namespace fleetsim {

// Days from 1970-01-01 to the proleptic Gregorian date y-m-d.
// REQUIRES: 1 <= m <= 12, 1 <= d <= 31.
int64_t DaysFromCivil(int64_t y, int m, int d);

// Parses "YYYY-MM-DD HH:MM:SS[.fraction][Z|+HH:MM|-HH:MM]" (a 'T' may stand
// for the space) to nanoseconds since 1970-01-01T00:00:00Z. The fraction has
// 1 to 9 digits. A time zone offset is subtracted, so "+01:00" times come out
// in UTC; without an offset the time is taken as UTC. Years 1970 to 2262
// (the range of int64 nanoseconds from 1970), so the result is >= 0.
// On failure returns false and sets *why to a short static reason.
bool ParseTimestamp(std::string_view s, int64_t* ns_since_epoch, const char** why);

}  // namespace fleetsim

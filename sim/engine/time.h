// Simulated time: signed 64-bit nanoseconds since the start of the run.
// Range: +/- 292 years, far beyond any trace; resolution 1 ns, far below any
// kernel. Integer ticks make event order exact and outputs byte-identical;
// doubles appear only at the edges (parsing seconds, printing milliseconds).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace fleetsim {

using SimTime = int64_t;  // nanoseconds

inline constexpr SimTime kNanosecond = 1;
inline constexpr SimTime kMicrosecond = 1000;
inline constexpr SimTime kMillisecond = 1000 * 1000;
inline constexpr SimTime kSecond = 1000 * 1000 * 1000;
inline constexpr SimTime kTimeNever = std::numeric_limits<int64_t>::max();

// Rounds to the nearest nanosecond.
inline SimTime SecondsToTime(double s) { return static_cast<SimTime>(std::llround(s * 1e9)); }
inline SimTime MillisToTime(double ms) { return static_cast<SimTime>(std::llround(ms * 1e6)); }
inline SimTime MicrosToTime(double us) { return static_cast<SimTime>(std::llround(us * 1e3)); }
inline double TimeToSeconds(SimTime t) { return static_cast<double>(t) * 1e-9; }
inline double TimeToMillis(SimTime t) { return static_cast<double>(t) * 1e-6; }

}  // namespace fleetsim

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

// Rounds to the nearest nanosecond, saturating: at or beyond 9.2e18 ns (292
// years) either way the result is kTimeNever or -kTimeNever, and NaN is
// kTimeNever, so no number read from a file can wrap (llround of an
// out-of-range double is unspecified). In-range values cost one comparison
// more and round exactly as before.
inline SimTime NanosToTime(double ns) {
  if (!(ns < 9.2e18)) return kTimeNever;
  if (!(ns > -9.2e18)) return -kTimeNever;
  return static_cast<SimTime>(std::llround(ns));
}
inline SimTime SecondsToTime(double s) { return NanosToTime(s * 1e9); }
inline SimTime MillisToTime(double ms) { return NanosToTime(ms * 1e6); }
inline SimTime MicrosToTime(double us) { return NanosToTime(us * 1e3); }
inline double TimeToSeconds(SimTime t) { return static_cast<double>(t) * 1e-9; }
inline double TimeToMillis(SimTime t) { return static_cast<double>(t) * 1e-6; }

}  // namespace fleetsim

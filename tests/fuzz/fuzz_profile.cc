// libFuzzer target: the profile loader (a scenario's perf.profile, written
// by `fleetsim calibrate` or by hand) must answer any input with a Status;
// what it accepts must write back and reload to the same profile, and its
// fitted curves must evaluate to finite times.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "model/profile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fleetsim::Profile p;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  fleetsim::Status s = fleetsim::LoadProfile(text, "fuzz.json", &p);
  if (!s.ok()) {
    if (s.message().empty()) __builtin_trap();  // every error says what is wrong
    return 0;
  }
  std::string out;
  if (fleetsim::WriteProfileJson(p, &out).ok()) {
    fleetsim::Profile back;
    if (!fleetsim::LoadProfile(out, "rewritten.json", &back).ok() || !(back == p)) __builtin_trap();
  }
  for (const auto& [key, fit] : p.fits) {
    for (double size : {0.5, 1.0, 3.0, 1e3, 1e6}) {
      if (!std::isfinite(fit.Predict(size, 1e8))) __builtin_trap();
    }
  }
  fleetsim::GpuSpec g;
  (void)fleetsim::GpuSpecFromProfile(p, &g);
  return 0;
}

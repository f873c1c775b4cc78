// libFuzzer target: the benchmark-file readers (sim/observe) must answer any
// input with runs or a one-line Status, never a crash, hang or sanitizer
// report, whichever format they are told it is; what they accept must keep
// the ObservedRun contract, and the summary must print it.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/observe/observed_summary.h"
#include "sim/observe/read_observed.h"

namespace {

bool Time(const std::optional<double>& t) { return !t || (std::isfinite(*t) && *t >= 0); }

void Check(const std::vector<fleetsim::ObservedRun>& runs) {
  for (const fleetsim::ObservedRun& run : runs) {
    if (run.per_request_timing == run.requests.empty()) __builtin_trap();
    double prev = 0;
    for (const fleetsim::ObservedRequest& r : run.requests) {
      if (!std::isfinite(r.start_s) || r.start_s < prev) __builtin_trap();  // sorted, from 0
      prev = r.start_s;
      if (!Time(r.ttft_s) || !Time(r.e2e_s) || r.input_tokens < 0 || r.output_tokens < 0) __builtin_trap();
      for (double g : r.itl_s)
        if (!std::isfinite(g) || g < 0) __builtin_trap();
      if (r.ok && (!r.e2e_s || r.output_tokens < 1)) __builtin_trap();
      if (!r.ok && (r.ttft_s || r.e2e_s)) __builtin_trap();
      if (r.ttft_s && r.e2e_s && *r.ttft_s > *r.e2e_s * (1 + 1e-9) + 1e-9) __builtin_trap();
    }
    if (!run.requests.empty() && run.requests.front().start_s != 0) __builtin_trap();
    (void)fleetsim::FormatObservedRun(run);
  }
  if (runs.size() > 1) (void)fleetsim::FormatObservedRunTable(runs);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const char* format : {"", "vllm", "aiperf", "genaiperf", "guidellm", "csv"}) {
    fleetsim::ReadObservedOptions options;
    options.format = format;
    options.allow_aggregates = size % 2 == 1;
    options.read_companion = false;  // nothing beside a fuzz input
    std::vector<fleetsim::ObservedRun> runs;
    const fleetsim::Status s = fleetsim::ReadObservedText("fuzz.json", text, options, &runs);
    if (!s.ok()) {
      if (s.message().empty() || s.message().find('\n') != std::string::npos || !runs.empty()) __builtin_trap();
      continue;
    }
    Check(runs);
  }
  return 0;
}

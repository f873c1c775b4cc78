// libFuzzer target: the BurstGPT trace reader must answer any input with
// requests and a Status, never a crash, hang or sanitizer report.
#include "sim/traffic/burstgpt_trace.h"
#include "tests/fuzz/trace_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fleetsim::fuzz::FuzzReader<fleetsim::BurstGptTraceReader>(data, size, "fuzz.csv");
  return 0;
}

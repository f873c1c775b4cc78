// libFuzzer target: the Splitwise (Vidur-processed) trace reader must answer
// any input with requests and a Status, never a crash, hang or sanitizer
// report.
#include "sim/traffic/splitwise_trace.h"
#include "tests/fuzz/trace_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fleetsim::fuzz::FuzzReader<fleetsim::SplitwiseTraceReader>(data, size, "fuzz.csv");
  return 0;
}

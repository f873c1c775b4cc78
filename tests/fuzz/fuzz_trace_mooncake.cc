// libFuzzer target: the Mooncake JSONL reader must answer any input with
// requests and a Status, never a crash, hang or sanitizer report.
#include "sim/traffic/mooncake_trace.h"
#include "tests/fuzz/trace_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fleetsim::fuzz::FuzzReader<fleetsim::MooncakeTraceReader>(data, size, "fuzz.jsonl");
  return 0;
}

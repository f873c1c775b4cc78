// libFuzzer target: the AzureTraceReader must answer any input with requests and
// a Status, never a crash, hang or sanitizer report. The input is fed through
// an istringstream, the same code path as a file.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>

#include "sim/traffic/azure_trace.h"

namespace {

// Drains the reader and traps on any broken RequestSource contract, so the
// fuzzer reports it like a crash.
void DrainAndCheck(fleetsim::RequestSource& src) {
  fleetsim::Request r;
  fleetsim::SimTime prev = 0;
  uint64_t n = 0;
  while (src.Next(&r)) {
    if (r.id != n) __builtin_trap();
    if (r.arrival < prev || (n == 0 && r.arrival != 0)) __builtin_trap();
    if (r.prompt_tokens < 1 || r.output_tokens < 1) __builtin_trap();
    prev = r.arrival;
    ++n;
  }
  // An error must say where and what; a stream that ended stays ended.
  if (!src.status().ok() && src.status().message().empty()) __builtin_trap();
  if (src.status().message().find('\n') != std::string::npos) __builtin_trap();
  if (src.Next(&r)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<fleetsim::RequestSource> src;
  fleetsim::Status s = fleetsim::AzureTraceReader::FromStream(
      "fuzz.csv", std::make_unique<std::istringstream>(text), &src);
  if (!s.ok()) {
    if (s.message().empty() || src != nullptr) __builtin_trap();
    return 0;
  }
  DrainAndCheck(*src);
  return 0;
}

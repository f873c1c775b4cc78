// libFuzzer target: the scenario parser must answer any input with a Status,
// never a crash, hang or sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sim/scenario/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fleetsim::ScenarioSpec spec;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  fleetsim::Status s = fleetsim::ParseScenario(text, "fuzz.json", "/nonexistent", &spec);
  if (!s.ok() && s.message().empty()) __builtin_trap();  // every error says what is wrong
  return 0;
}

// libFuzzer target: the plan parser must answer any input with a Status,
// never a crash, hang or sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/plan/plan_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fleetsim::PlanSpec plan;
  const std::string text(reinterpret_cast<const char*>(data), size);
  fleetsim::Status s = fleetsim::ParsePlan(text, "/nonexistent/fuzz.json", &plan);
  if (!s.ok() && s.message().empty()) __builtin_trap();  // every error says what is wrong
  return 0;
}

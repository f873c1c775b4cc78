// Scenario parsing: JSON text -> ScenarioSpec. Every error is one line that
// names the file and JSON path: `s.json: fleet.pools[0].tp: expected a
// positive integer, got -2`. Unknown keys are errors, never ignored.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "sim/scenario/scenario_spec.h"

namespace fleetsim {

// `file` names the source in messages; relative trace paths are resolved
// against `base_dir`. `overrides` ("KEY=VALUE", the CLI's --set) replace or
// add keys before the scenario is checked, so they are checked exactly like
// the file: KEY is a JSON path ("fleet.pools[0].replicas"), VALUE is JSON
// ("4", "true", "[1,2]") or, when it does not parse as JSON, a string.
Status ParseScenario(std::string_view json_text, const std::string& file,
                     const std::string& base_dir, ScenarioSpec* out,
                     const std::vector<std::string>& overrides = {});
// Reads and parses a scenario file.
Status LoadScenarioFile(const std::string& path, ScenarioSpec* out,
                        const std::vector<std::string>& overrides = {});

// Every key path the parser accepts, as "fleet.pools[].gpu" (arrays as []),
// from the same tables the parser checks against; the schema test compares
// them with scenarios/schema.json.
std::vector<std::string> ScenarioKeyPaths();

// The accepted range of one numeric key, as the parser enforces it.
struct NumericBound {
  const char* path;  // "fleet.pools[].tp", in ScenarioKeyPaths' notation
  bool integer;      // an integer (2.0 counts) rather than any number
  // Numbers: [lo, hi], or (lo, hi] when lo_open.
  double lo = 0;
  bool lo_open = false;
  double hi = 0;
  // Integers: [int_lo, int_hi].
  int64_t int_lo = 0, int_hi = 0;
};
// Every numeric key's bound (a length key's integer shorthand included, as
// "traffic.generator.prompt_tokens"), from the table the parser checks
// against; the schema test compares them with scenarios/schema.json. Why
// each bound is what it is: sim/scenario/parse.cc, above the table.
std::vector<NumericBound> ScenarioNumericBounds();

}  // namespace fleetsim

// Scenario parsing: JSON text -> ScenarioSpec. Every error is one line that
// names the file and JSON path: `s.json: fleet.pools[0].tp: expected a
// positive integer, got -2`. Unknown keys are errors, never ignored.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "sim/scenario/scenario_spec.h"

namespace fleetsim {

// `file` names the source in messages; relative trace paths are resolved
// against `base_dir`.
Status ParseScenario(std::string_view json_text, const std::string& file,
                     const std::string& base_dir, ScenarioSpec* out);
// Reads and parses a scenario file.
Status LoadScenarioFile(const std::string& path, ScenarioSpec* out);

// Every key path the parser accepts, as "fleet.pools[].gpu" (arrays as []),
// from the same tables the parser checks against; the schema test compares
// them with scenarios/schema.json.
std::vector<std::string> ScenarioKeyPaths();

}  // namespace fleetsim

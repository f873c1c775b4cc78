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

}  // namespace fleetsim

// Catalog: the model zoo, the hardware catalogue and the engine table,
// loaded from the JSON files compiled into the binary (model/zoo,
// model/hardware, model/engines) and optionally from user files.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/engine_spec.h"
#include "model/hardware.h"
#include "model/model_spec.h"

namespace fleetsim {

class Catalog {
 public:
  // Loads the built-in data. Fails only if the embedded files are broken
  // (a test guards that).
  static Status LoadBuiltin(Catalog* out);

  // Adds one JSON document; `origin` names it in errors ("model/zoo/x.json").
  // Errors name the JSON path: "origin: layers: expected a positive integer".
  Status AddModelJson(std::string_view json_text, const std::string& origin);
  Status AddGpuJson(std::string_view json_text, const std::string& origin);
  Status AddEngineJson(std::string_view json_text, const std::string& origin);

  const ModelSpec* FindModel(std::string_view name) const;
  const GpuSpec* FindGpu(std::string_view name) const;
  const EngineProfile* FindEngine(std::string_view name) const;

  // Sorted names, for "unknown X (known: ...)" messages and `fleetsim list`.
  std::vector<std::string> ModelNames() const;
  std::vector<std::string> GpuNames() const;
  std::vector<std::string> EngineNames() const;

 private:
  std::map<std::string, ModelSpec, std::less<>> models_;
  std::map<std::string, GpuSpec, std::less<>> gpus_;
  std::map<std::string, EngineProfile, std::less<>> engines_;
};

// An engine profile (model/engine_spec.h) from JSON text or a user's file;
// errors name the origin and the JSON path.
Status ParseEngineProfile(std::string_view json_text, const std::string& origin, EngineProfile* out);
Status LoadEngineProfileFile(const std::string& path, EngineProfile* out);
// The profile as JSON that ParseEngineProfile reads back to the same
// profile (every value a finite double within the parser's bounds).
Status WriteEngineProfileJson(const EngineProfile& profile, std::string* out);

// "A, B, C": for error messages listing valid names.
std::string JoinNames(const std::vector<std::string>& names);

}  // namespace fleetsim

// Typed reads from a parsed JSON value with the JSON path in every message,
// shared by the observe readers (private to sim/observe). A `Where` carries
// the prefix that names the file ("run.json: ") or the line
// ("profile_export.jsonl:7: "); paths are display paths with indices
// ("benchmarks[0].requests.successful[3].prompt_tokens").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace fleetsim::observe_internal {

using Json = nlohmann::json;

// ParseJson (base/json_parse.h) as for files written by Python's json
// module: a NaN or Infinity reads as null, so an optional figure is absent
// and a required one is reported missing.
Status ParsePythonJson(std::string_view text, Json* out, bool single_line = false);

class Where {
 public:
  explicit Where(std::string prefix) : prefix_(std::move(prefix)) {}
  // "<prefix><path>: <what>" (no path: "<prefix><what>").
  Status Error(std::string_view path, std::string_view what) const;
  const std::string& prefix() const { return prefix_; }

 private:
  std::string prefix_;
};

// "path.key" ("key" at the top), "path[i]".
std::string Join(std::string_view path, std::string_view key);
std::string Index(std::string_view path, size_t i);

// `v` for a message: compact JSON, at most 40 characters.
std::string Shown(const Json& v);

// Member `key` of `obj` when `obj` is an object holding it with a non-null
// value; nullptr otherwise (absent and null read alike: pydantic writes null
// for an unset optional field).
const Json* Member(const Json& obj, std::string_view key);

// Member `key` of `obj` (at `path`), which must be present and non-null:
// "<path>.<key>: missing".
Status Required(const Where& w, const Json& obj, std::string_view path, std::string_view key, const Json** out);

Status ExpectObject(const Where& w, const Json& v, std::string_view path);
Status ExpectArray(const Where& w, const Json& v, std::string_view path);

// A finite number.
Status ReadNumber(const Where& w, const Json& v, std::string_view path, double* out);
// A duration or time offset: a number >= 0, times `seconds_per_unit`.
Status ReadSeconds(const Where& w, const Json& v, std::string_view path, double seconds_per_unit, double* out);
// An integer in [lo, hi] (a float with an integral value, as Python's
// json writes numpy numbers, is accepted).
Status ReadInteger(const Where& w, const Json& v, std::string_view path, int64_t lo, int64_t hi, int64_t* out);
// A token count: an integer in [min, 2^31 - 1] (min 0 or 1).
Status ReadTokens(const Where& w, const Json& v, std::string_view path, int32_t min, int32_t* out);
Status ReadString(const Where& w, const Json& v, std::string_view path, std::string* out);

// Optional members: absent or null leaves *out unset; anything else must be
// what is asked for.
Status OptionalSeconds(const Where& w, const Json& obj, std::string_view path, std::string_view key,
                       double seconds_per_unit, std::optional<double>* out);
Status OptionalNumber(const Where& w, const Json& obj, std::string_view path, std::string_view key,
                      std::optional<double>* out);
Status OptionalString(const Where& w, const Json& obj, std::string_view path, std::string_view key, std::string* out);

// Seconds per unit of a tool's time unit name ("ns", "us", "ms", "sec", "s").
Status TimeUnitSeconds(const Where& w, const Json& unit, std::string_view path, double* out);

}  // namespace fleetsim::observe_internal

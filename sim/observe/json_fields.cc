#include "sim/observe/json_fields.h"

#include <cmath>
#include <limits>

#include "base/json_parse.h"

namespace fleetsim::observe_internal {

Status ParsePythonJson(std::string_view text, Json* out, bool single_line) {
  JsonParseOptions options;
  options.single_line = single_line;
  options.python_non_finite = true;
  return ParseJson(text, out, options);
}

Status Where::Error(std::string_view path, std::string_view what) const {
  std::string msg = prefix_;
  if (!path.empty()) {
    msg += path;
    msg += ": ";
  }
  msg += what;
  return Status::Invalid(std::move(msg));
}

std::string Join(std::string_view path, std::string_view key) {
  if (path.empty()) return std::string(key);
  std::string s(path);
  s += '.';
  s += key;
  return s;
}

std::string Index(std::string_view path, size_t i) { return std::string(path) + "[" + std::to_string(i) + "]"; }

std::string Shown(const Json& v) { return DescribeJson(v, 40); }

const Json* Member(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

Status Required(const Where& w, const Json& obj, std::string_view path, std::string_view key, const Json** out) {
  *out = Member(obj, key);
  if (*out == nullptr) return w.Error(Join(path, key), "missing");
  return Status::Ok();
}

Status ExpectObject(const Where& w, const Json& v, std::string_view path) {
  if (v.is_object()) return Status::Ok();
  return w.Error(path, "expected an object, got " + Shown(v));
}

Status ExpectArray(const Where& w, const Json& v, std::string_view path) {
  if (v.is_array()) return Status::Ok();
  return w.Error(path, "expected an array, got " + Shown(v));
}

Status ReadNumber(const Where& w, const Json& v, std::string_view path, double* out) {
  // nlohmann parses only finite numbers; an unsigned beyond 2^53 rounds,
  // which no field read here can hold meaningfully anyway.
  if (!v.is_number()) return w.Error(path, "expected a number, got " + Shown(v));
  *out = v.get<double>();
  return Status::Ok();
}

Status ReadSeconds(const Where& w, const Json& v, std::string_view path, double seconds_per_unit, double* out) {
  double x;
  if (!v.is_number() || (x = v.get<double>()) < 0) {
    return w.Error(path, "expected a time >= 0, got " + Shown(v));
  }
  *out = x * seconds_per_unit;
  return Status::Ok();
}

Status ReadInteger(const Where& w, const Json& v, std::string_view path, int64_t lo, int64_t hi, int64_t* out) {
  const std::string expected = "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got ";
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(hi)) return w.Error(path, expected + Shown(v));
    *out = static_cast<int64_t>(u);
  } else if (v.is_number_integer()) {
    *out = v.get<int64_t>();
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d != std::floor(d) || !(d >= static_cast<double>(lo) && d <= static_cast<double>(hi))) {
      return w.Error(path, expected + Shown(v));
    }
    *out = static_cast<int64_t>(d);
  } else {
    return w.Error(path, expected + Shown(v));
  }
  if (*out < lo || *out > hi) return w.Error(path, expected + Shown(v));
  return Status::Ok();
}

Status ReadTokens(const Where& w, const Json& v, std::string_view path, int32_t min, int32_t* out) {
  int64_t n;
  FLEETSIM_RETURN_IF_ERROR(ReadInteger(w, v, path, min, std::numeric_limits<int32_t>::max(), &n));
  *out = static_cast<int32_t>(n);
  return Status::Ok();
}

Status ReadString(const Where& w, const Json& v, std::string_view path, std::string* out) {
  if (!v.is_string()) return w.Error(path, "expected a string, got " + Shown(v));
  *out = v.get<std::string>();
  return Status::Ok();
}

Status OptionalSeconds(const Where& w, const Json& obj, std::string_view path, std::string_view key,
                       double seconds_per_unit, std::optional<double>* out) {
  const Json* v = Member(obj, key);
  if (v == nullptr) return Status::Ok();
  double s;
  FLEETSIM_RETURN_IF_ERROR(ReadSeconds(w, *v, Join(path, key), seconds_per_unit, &s));
  *out = s;
  return Status::Ok();
}

Status OptionalNumber(const Where& w, const Json& obj, std::string_view path, std::string_view key,
                      std::optional<double>* out) {
  const Json* v = Member(obj, key);
  if (v == nullptr) return Status::Ok();
  double x;
  FLEETSIM_RETURN_IF_ERROR(ReadNumber(w, *v, Join(path, key), &x));
  *out = x;
  return Status::Ok();
}

Status OptionalString(const Where& w, const Json& obj, std::string_view path, std::string_view key, std::string* out) {
  const Json* v = Member(obj, key);
  if (v == nullptr) return Status::Ok();
  return ReadString(w, *v, Join(path, key), out);
}

Status TimeUnitSeconds(const Where& w, const Json& unit, std::string_view path, double* out) {
  std::string u;
  FLEETSIM_RETURN_IF_ERROR(ReadString(w, unit, path, &u));
  if (u == "ns") {
    *out = 1e-9;
  } else if (u == "us") {
    *out = 1e-6;
  } else if (u == "ms") {
    *out = 1e-3;
  } else if (u == "sec" || u == "s") {
    *out = 1;
  } else {
    return w.Error(path, "unknown time unit " + Shown(unit) + " (known: ns, us, ms, sec, s)");
  }
  return Status::Ok();
}

}  // namespace fleetsim::observe_internal

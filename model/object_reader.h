// ObjectReader: reads the fields of one JSON object into typed values, each
// error naming the origin (a file) and the JSON path. Read through by
// catalog.cc (the zoo, hardware and engine files), hf_config.cc (a Hugging
// Face config.json) and sim/fit/measurement_set.cc (published figures).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/json_parse.h"
#include "base/status.h"
#include "model/catalog.h"
#include "model/dtype.h"

namespace fleetsim {
namespace model_json {

using nlohmann::json;

// Parses `text` as one JSON object (base/json_parse.h: syntax errors with
// line and column, a nesting limit).
inline Status ParseDocument(std::string_view text, const std::string& origin, json* out) {
  FLEETSIM_RETURN_IF_ERROR(ParseJson(text, out).WithPrefix(origin + ": "));
  if (!out->is_object()) {
    return Status::Invalid(origin + ": expected a JSON object at the top level");
  }
  return Status::Ok();
}

enum class Bound { kPositive, kNonNegative };

// Reads the fields of one JSON object. `prefix` is the object's JSON path
// with a trailing dot ("scale_up."), empty at the top level. Observes the
// object and the origin string; both must outlive the reader.
class ObjectReader {
 public:
  ObjectReader() = default;
  ObjectReader(const json& object, const std::string& origin, std::string prefix)
      : object_(&object), origin_(&origin), prefix_(std::move(prefix)) {}

  // Fails on the first key not in `allowed`. Call before reading fields, so
  // a misspelt key is reported as unknown rather than as a missing one.
  Status CheckKeys(std::initializer_list<std::string_view> allowed) const {
    return CheckKeys(std::vector<std::string>(allowed.begin(), allowed.end()));
  }
  Status CheckKeys(std::vector<std::string> allowed) const {
    for (auto it = object_->begin(); it != object_->end(); ++it) {
      if (std::find(allowed.begin(), allowed.end(), it.key()) != allowed.end()) continue;
      std::sort(allowed.begin(), allowed.end());
      return Error(it.key(), "unknown key (known: " + JoinNames(allowed) + ")");
    }
    return Status::Ok();
  }

  bool Has(std::string_view key) const { return object_->find(key) != object_->end(); }
  bool IsNull(std::string_view key) const {
    auto it = object_->find(key);
    return it != object_->end() && it->is_null();
  }

  Status Error(std::string_view key, const std::string& what) const {
    return Status::Invalid(*origin_ + ": " + Path(key) + ": " + what);
  }
  std::string Path(std::string_view key) const { return prefix_ + std::string(key); }

  Status String(std::string_view key, std::string* out) const {
    const json* v = nullptr;
    FLEETSIM_RETURN_IF_ERROR(Get(key, &v));
    if (!v->is_string() || v->get_ref<const std::string&>().empty()) {
      return Error(key, "expected a non-empty string");
    }
    *out = v->get<std::string>();
    return Status::Ok();
  }

  Status Bool(std::string_view key, bool* out) const {
    const json* v = nullptr;
    FLEETSIM_RETURN_IF_ERROR(Get(key, &v));
    if (!v->is_boolean()) return Error(key, "expected true or false");
    *out = v->get<bool>();
    return Status::Ok();
  }

  // An integer in [1 or 0, max]. 18.0 is not an integer here: a count
  // written as a float is more likely a mistake than a convenience.
  Status Int64(std::string_view key, Bound bound, int64_t max, int64_t* out) const {
    const json* v = nullptr;
    FLEETSIM_RETURN_IF_ERROR(Get(key, &v));
    const std::string expected = bound == Bound::kPositive ? "expected a positive integer"
                                                           : "expected a non-negative integer";
    if (!v->is_number_integer()) return Error(key, expected);
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(max)) {
      return Error(key, expected + " no larger than " + std::to_string(max));
    }
    const int64_t value = v->get<int64_t>();
    if (value < (bound == Bound::kPositive ? 1 : 0)) return Error(key, expected);
    if (value > max) return Error(key, expected + " no larger than " + std::to_string(max));
    *out = value;
    return Status::Ok();
  }

  Status Int(std::string_view key, Bound bound, int* out) const {
    int64_t v = 0;
    FLEETSIM_RETURN_IF_ERROR(Int64(key, bound, std::numeric_limits<int>::max(), &v));
    *out = static_cast<int>(v);
    return Status::Ok();
  }

  Status Number(std::string_view key, Bound bound, double* out) const {
    const json* v = nullptr;
    FLEETSIM_RETURN_IF_ERROR(Get(key, &v));
    const char* expected =
        bound == Bound::kPositive ? "expected a positive number" : "expected a non-negative number";
    if (!v->is_number()) return Error(key, expected);
    const double value = v->get<double>();
    if (!std::isfinite(value) || value < 0 || (bound == Bound::kPositive && value == 0)) {
      return Error(key, expected);
    }
    *out = value;
    return Status::Ok();
  }

  Status DTypeField(std::string_view key, DType* out) const {
    std::string name;
    FLEETSIM_RETURN_IF_ERROR(String(key, &name));
    std::optional<DType> t = ParseDType(name);
    if (!t) {
      return Error(key, "unknown dtype \"" + name + "\" (known: fp32, bf16, fp16, fp8, int8, int4)");
    }
    *out = *t;
    return Status::Ok();
  }

  Status Object(std::string_view key, ObjectReader* out) const {
    const json* v = nullptr;
    FLEETSIM_RETURN_IF_ERROR(Get(key, &v));
    if (!v->is_object()) return Error(key, "expected an object");
    *out = ObjectReader(*v, *origin_, Path(key) + ".");
    return Status::Ok();
  }

  const json& object() const { return *object_; }

  // A versioned file's header: "format" must be `format`, and "version" this
  // reader's `version` (a newer file is refused, not half read).
  Status FormatAndVersion(std::string_view format, int64_t version) const {
    std::string f;
    FLEETSIM_RETURN_IF_ERROR(String("format", &f));
    if (f != format) return Error("format", "expected \"" + std::string(format) + "\", got \"" + f + "\"");
    int64_t v = 0;
    FLEETSIM_RETURN_IF_ERROR(Int64("version", Bound::kPositive, 1000, &v));
    if (v != version)
      return Error("version", "this fleetsim reads version " + std::to_string(version) + ", got " + std::to_string(v));
    return Status::Ok();
  }

 private:
  Status Get(std::string_view key, const json** out) const {
    auto it = object_->find(key);
    if (it == object_->end()) return Error(key, "missing required key");
    *out = &*it;
    return Status::Ok();
  }

  const json* object_ = nullptr;
  const std::string* origin_ = nullptr;
  std::string prefix_;
};

}  // namespace model_json
}  // namespace fleetsim

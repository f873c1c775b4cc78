// Profile JSON loading and writing. nlohmann/json stays in this file.
#include "model/profile.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/file.h"
#include "base/json_parse.h"

namespace fleetsim {

double ProfileCurve::At(double v) const {
  FLEETSIM_CHECK(!x.empty());
  const size_t n = x.size();
  if (v <= x[0]) return ns[0];
  if (n == 1) return ns[0];
  if (v >= x[n - 1]) {
    const double slope = std::max(0.0, (ns[n - 1] - ns[n - 2]) / (x[n - 1] - x[n - 2]));
    return ns[n - 1] + slope * (v - x[n - 1]);
  }
  // First grid point above v; x[0] < v < x[n-1] so 1 <= i <= n-1.
  const size_t i = static_cast<size_t>(std::upper_bound(x.begin(), x.end(), v) - x.begin());
  const double f = (v - x[i - 1]) / (x[i] - x[i - 1]);
  return ns[i - 1] + f * (ns[i] - ns[i - 1]);
}

bool ProfileDeviceInfo::operator==(const ProfileDeviceInfo& o) const {
  return backend == o.backend && name == o.name && software == o.software && memory_bytes == o.memory_bytes &&
         compute_units == o.compute_units && compute_capability == o.compute_capability &&
         sm_clock_khz == o.sm_clock_khz && memory_clock_khz == o.memory_clock_khz &&
         memory_bus_width_bits == o.memory_bus_width_bits && l2_cache_bytes == o.l2_cache_bytes &&
         gemm_tflops == o.gemm_tflops && copy_gbps == o.copy_gbps && h2d_gbps == o.h2d_gbps &&
         d2h_gbps == o.d2h_gbps;
}

bool ProfileCalibration::operator==(const ProfileCalibration& o) const {
  return backend == o.backend && grid == o.grid && tp == o.tp && warmup == o.warmup &&
         repetitions == o.repetitions && flush_cache == o.flush_cache && wall_seconds == o.wall_seconds;
}

bool AttentionDecision::operator==(const AttentionDecision& o) const {
  return achieved_fraction == o.achieved_fraction && threshold == o.threshold && ceiling == o.ceiling &&
         use_measured == o.use_measured && published_efficiency == o.published_efficiency &&
         published_source == o.published_source;
}

bool ProfileLink::operator==(const ProfileLink& o) const {
  return src == o.src && dst == o.dst && kind == o.kind && alpha_ns == o.alpha_ns && gbps == o.gbps &&
         points == o.points;
}

bool CollectiveCheck::operator==(const CollectiveCheck& o) const {
  return collective == o.collective && ranks == o.ranks && bytes == o.bytes && measured_ns == o.measured_ns &&
         predicted_ns == o.predicted_ns && predicted_with_reduce_ns == o.predicted_with_reduce_ns;
}

bool Profile::operator==(const Profile& o) const {
  return device == o.device && source == o.source && date == o.date && model == o.model && gemm == o.gemm &&
         elementwise == o.elementwise && embedding == o.embedding &&
         all_reduce_intra_node == o.all_reduce_intra_node && send_recv_intra_node == o.send_recv_intra_node &&
         send_recv_inter_node == o.send_recv_inter_node && notes == o.notes && device_info == o.device_info &&
         calibration == o.calibration && measurements == o.measurements && fits == o.fits &&
         attention == o.attention && links == o.links && collective_checks == o.collective_checks &&
         topology == o.topology;
}

namespace {

using nlohmann::json;

constexpr const char* kFormat = "fleetsim-profile-1";

std::string Join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

Status Bad(const std::string& path, const std::string& what) {
  return Status::Invalid((path.empty() ? "" : path + ": ") + what);
}

Status CheckKeys(const json& j, const std::string& path, std::initializer_list<const char*> keys) {
  if (!j.is_object()) return Bad(path, "expected an object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for (const char* k : keys) known = known || it.key() == k;
    if (!known) {
      std::string valid;
      for (const char* k : keys) valid += std::string(valid.empty() ? "" : ", ") + k;
      return Bad(Join(path, it.key()), "unknown key (valid: " + valid + ")");
    }
  }
  return Status::Ok();
}

Status ParseCurve(const json& j, const std::string& path, ProfileCurve* out) {
  if (!j.is_array() || j.empty()) return Bad(path, "expected a non-empty array of [x, ns] pairs");
  ProfileCurve c;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string p = path + "[" + std::to_string(i) + "]";
    const json& e = j[i];
    if (!e.is_array() || e.size() != 2 || !e[0].is_number() || !e[1].is_number())
      return Bad(p, "expected a pair of numbers [x, ns]");
    const double x = e[0].get<double>(), ns = e[1].get<double>();
    if (!std::isfinite(x) || x < 0) return Bad(p, "x must be a finite non-negative number");
    if (!std::isfinite(ns) || ns < 0) return Bad(p, "time must be a finite non-negative number of ns");
    if (!c.x.empty() && x <= c.x.back()) return Bad(p, "x must increase strictly along the array");
    c.x.push_back(x);
    c.ns.push_back(ns);
  }
  *out = std::move(c);
  return Status::Ok();
}

// {"1": curve, "2": curve}: keys are positive integers.
Status ParseCurveMap(const json& j, const std::string& path, std::map<int, ProfileCurve>* out) {
  if (!j.is_object() || j.empty()) return Bad(path, "expected a non-empty object keyed by worker count");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const std::string p = Join(path, k);
    int n = 0;
    bool good = !k.empty() && k.size() <= 6 && k[0] != '0';
    for (char ch : k) good = good && ch >= '0' && ch <= '9';
    if (good) n = std::stoi(k);
    if (!good || n < 1) return Bad(p, "key must be a positive integer");
    FLEETSIM_RETURN_IF_ERROR(ParseCurve(it.value(), p, &(*out)[n]));
  }
  return Status::Ok();
}

// Typed readers of one key of object `o` at `path`; a missing key is an
// error when required, else leaves *out alone.
Status GetNumber(const json& o, const std::string& path, const char* key, bool required, double* out,
                 double min = -INFINITY) {
  const std::string p = Join(path, key);
  if (!o.contains(key)) return required ? Bad(p, "required") : Status::Ok();
  const json& v = o.at(key);
  if (!v.is_number() || !std::isfinite(v.get<double>())) return Bad(p, "expected a finite number");
  if (v.get<double>() < min) return Bad(p, "must be at least " + json(min).dump());
  *out = v.get<double>();
  return Status::Ok();
}

template <typename Int>
Status GetInt(const json& o, const std::string& path, const char* key, bool required, Int* out) {
  const std::string p = Join(path, key);
  if (!o.contains(key)) return required ? Bad(p, "required") : Status::Ok();
  const json& v = o.at(key);
  if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
      v.get<int64_t>() > static_cast<int64_t>(std::numeric_limits<Int>::max()))
    return Bad(p, "expected a non-negative integer");
  *out = static_cast<Int>(v.get<int64_t>());
  return Status::Ok();
}

Status GetString(const json& o, const std::string& path, const char* key, bool required, std::string* out) {
  const std::string p = Join(path, key);
  if (!o.contains(key)) return required ? Bad(p, "required") : Status::Ok();
  if (!o.at(key).is_string()) return Bad(p, "expected a string");
  *out = o.at(key).get<std::string>();
  return Status::Ok();
}

Status GetBool(const json& o, const std::string& path, const char* key, bool required, bool* out) {
  const std::string p = Join(path, key);
  if (!o.contains(key)) return required ? Bad(p, "required") : Status::Ok();
  if (!o.at(key).is_boolean()) return Bad(p, "expected true or false");
  *out = o.at(key).get<bool>();
  return Status::Ok();
}

Status GetNumberArray(const json& o, const std::string& path, const char* key, std::vector<double>* out) {
  const std::string p = Join(path, key);
  if (!o.contains(key)) return Bad(p, "required");
  const json& a = o.at(key);
  if (!a.is_array()) return Bad(p, "expected an array of numbers");
  out->clear();
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_number() || !std::isfinite(a[i].get<double>()))
      return Bad(p + "[" + std::to_string(i) + "]", "expected a finite number");
    out->push_back(a[i].get<double>());
  }
  return Status::Ok();
}

Status ParseDeviceInfo(const json& j, const std::string& path, ProfileDeviceInfo* d) {
  FLEETSIM_RETURN_IF_ERROR(CheckKeys(j, path,
                                     {"backend", "name", "software", "memory_bytes", "compute_units",
                                      "compute_capability", "sm_clock_khz", "memory_clock_khz",
                                      "memory_bus_width_bits", "l2_cache_bytes", "gemm_tflops", "copy_gbps",
                                      "h2d_gbps", "d2h_gbps"}));
  FLEETSIM_RETURN_IF_ERROR(GetString(j, path, "backend", true, &d->backend));
  FLEETSIM_RETURN_IF_ERROR(GetString(j, path, "name", true, &d->name));
  FLEETSIM_RETURN_IF_ERROR(GetString(j, path, "software", false, &d->software));
  FLEETSIM_RETURN_IF_ERROR(GetInt(j, path, "memory_bytes", false, &d->memory_bytes));
  FLEETSIM_RETURN_IF_ERROR(GetInt(j, path, "compute_units", false, &d->compute_units));
  FLEETSIM_RETURN_IF_ERROR(GetInt(j, path, "compute_capability", false, &d->compute_capability));
  FLEETSIM_RETURN_IF_ERROR(GetInt(j, path, "sm_clock_khz", false, &d->sm_clock_khz));
  FLEETSIM_RETURN_IF_ERROR(GetInt(j, path, "memory_clock_khz", false, &d->memory_clock_khz));
  FLEETSIM_RETURN_IF_ERROR(GetInt(j, path, "memory_bus_width_bits", false, &d->memory_bus_width_bits));
  FLEETSIM_RETURN_IF_ERROR(GetInt(j, path, "l2_cache_bytes", false, &d->l2_cache_bytes));
  if (j.contains("gemm_tflops")) {
    const json& g = j.at("gemm_tflops");
    const std::string gp = Join(path, "gemm_tflops");
    if (!g.is_object()) return Bad(gp, "expected an object of dtype: TFLOP/s");
    for (auto it = g.begin(); it != g.end(); ++it) {
      double v = 0;
      FLEETSIM_RETURN_IF_ERROR(GetNumber(g, gp, it.key().c_str(), true, &v, 0));
      d->gemm_tflops[it.key()] = v;
    }
  }
  FLEETSIM_RETURN_IF_ERROR(GetNumber(j, path, "copy_gbps", false, &d->copy_gbps, 0));
  FLEETSIM_RETURN_IF_ERROR(GetNumber(j, path, "h2d_gbps", false, &d->h2d_gbps, 0));
  FLEETSIM_RETURN_IF_ERROR(GetNumber(j, path, "d2h_gbps", false, &d->d2h_gbps, 0));
  return Status::Ok();
}

Status ParseCalibration(const json& j, const std::string& path, ProfileCalibration* c) {
  FLEETSIM_RETURN_IF_ERROR(
      CheckKeys(j, path, {"backend", "grid", "tp", "warmup", "repetitions", "flush_cache", "wall_seconds"}));
  FLEETSIM_RETURN_IF_ERROR(GetString(j, path, "backend", true, &c->backend));
  FLEETSIM_RETURN_IF_ERROR(GetString(j, path, "grid", false, &c->grid));
  std::vector<double> tp;
  if (j.contains("tp")) FLEETSIM_RETURN_IF_ERROR(GetNumberArray(j, path, "tp", &tp));
  for (size_t i = 0; i < tp.size(); ++i) {
    if (tp[i] < 1 || tp[i] != std::floor(tp[i]) || tp[i] > 1024)
      return Bad(Join(path, "tp") + "[" + std::to_string(i) + "]", "expected a positive integer");
    c->tp.push_back(static_cast<int>(tp[i]));
  }
  FLEETSIM_RETURN_IF_ERROR(GetInt(j, path, "warmup", false, &c->warmup));
  FLEETSIM_RETURN_IF_ERROR(GetInt(j, path, "repetitions", false, &c->repetitions));
  FLEETSIM_RETURN_IF_ERROR(GetBool(j, path, "flush_cache", false, &c->flush_cache));
  FLEETSIM_RETURN_IF_ERROR(GetNumber(j, path, "wall_seconds", false, &c->wall_seconds, 0));
  return Status::Ok();
}

Status ParseMeasurements(const json& j, const std::string& path, std::map<std::string, MeasurementTable>* out) {
  if (!j.is_object()) return Bad(path, "expected an object keyed by \"<op>.<dtype>\"");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string p = Join(path, it.key());
    FLEETSIM_RETURN_IF_ERROR(CheckKeys(it.value(), p, {"fields", "rows"}));
    MeasurementTable t;
    const json& f = it.value().contains("fields") ? it.value().at("fields") : json();
    if (!f.is_array() || f.size() < 2) return Bad(Join(p, "fields"), "expected an array of column names");
    for (const json& name : f) {
      if (!name.is_string()) return Bad(Join(p, "fields"), "expected column names (strings)");
      t.fields.push_back(name.get<std::string>());
    }
    if (t.fields[t.fields.size() - 2] != "median_ns" || t.fields.back() != "spread")
      return Bad(Join(p, "fields"), "the last two columns must be \"median_ns\" and \"spread\"");
    const json& r = it.value().contains("rows") ? it.value().at("rows") : json();
    if (!r.is_array()) return Bad(Join(p, "rows"), "expected an array of rows");
    for (size_t i = 0; i < r.size(); ++i) {
      const std::string rp = Join(p, "rows") + "[" + std::to_string(i) + "]";
      if (!r[i].is_array() || r[i].size() != t.fields.size())
        return Bad(rp, "expected " + std::to_string(t.fields.size()) + " numbers, one per field");
      std::vector<double> row;
      for (const json& v : r[i]) {
        if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
          return Bad(rp, "expected finite non-negative numbers");
        row.push_back(v.get<double>());
      }
      t.rows.push_back(std::move(row));
    }
    (*out)[it.key()] = std::move(t);
  }
  return Status::Ok();
}

Status ParseFit(const json& j, const std::string& path, FittedCurve* f) {
  FLEETSIM_RETURN_IF_ERROR(CheckKeys(j, path,
                                     {"size", "scale", "count", "fixed_ns", "knots", "values", "per_count", "cv_method",
                                      "cv_median_rel_error", "cv_p90_rel_error", "samples"}));
  FLEETSIM_RETURN_IF_ERROR(GetString(j, path, "size", true, &f->size_var));
  FLEETSIM_RETURN_IF_ERROR(GetString(j, path, "scale", true, &f->scale_var));
  FLEETSIM_RETURN_IF_ERROR(GetNumber(j, path, "fixed_ns", true, &f->fixed_ns, 0));
  if (f->fixed_ns > 1e12) return Bad(Join(path, "fixed_ns"), "must be at most 1e12 ns");
  FLEETSIM_RETURN_IF_ERROR(GetNumberArray(j, path, "knots", &f->knots));
  FLEETSIM_RETURN_IF_ERROR(GetNumberArray(j, path, "values", &f->values));
  if (f->knots.empty() || f->knots.size() != f->values.size())
    return Bad(Join(path, "values"), "expected one value per knot, and at least one knot");
  for (size_t i = 0; i < f->knots.size(); ++i) {
    // Sizes are counts (rows, tokens, pairs): knots start at 1. g grows
    // with size (a slow CPU's attention reaches ~1e6 ns per unit), so its
    // bound is loose: it only keeps every time the simulator derives
    // finite (the PerfModel caps an iteration at 1e15 ns).
    if (f->knots[i] < 1 || f->knots[i] > 1e15 || (i > 0 && f->knots[i] <= f->knots[i - 1]))
      return Bad(Join(path, "knots") + "[" + std::to_string(i) + "]", "knots must be in [1, 1e15] and increase");
    if (f->values[i] < 0 || f->values[i] > 1e12)
      return Bad(Join(path, "values") + "[" + std::to_string(i) + "]", "must be in [0, 1e12] ns per unit");
  }
  // The per-count term (fitted_curve.h): both keys or neither.
  FLEETSIM_RETURN_IF_ERROR(GetString(j, path, "count", false, &f->count_var));
  if (f->count_var.empty() != !j.contains("per_count"))
    return Bad(Join(path, f->count_var.empty() ? "per_count" : "count"),
               "\"count\" (a non-empty name) and \"per_count\" go together");
  FLEETSIM_RETURN_IF_ERROR(GetNumber(j, path, "per_count", false, &f->per_count, 0));
  if (f->per_count > 1e12) return Bad(Join(path, "per_count"), "must be at most 1e12 ns per count per unit");
  FLEETSIM_RETURN_IF_ERROR(GetString(j, path, "cv_method", false, &f->cv_method));
  FLEETSIM_RETURN_IF_ERROR(GetNumber(j, path, "cv_median_rel_error", false, &f->cv_median_rel_error, 0));
  FLEETSIM_RETURN_IF_ERROR(GetNumber(j, path, "cv_p90_rel_error", false, &f->cv_p90_rel_error, 0));
  FLEETSIM_RETURN_IF_ERROR(GetInt(j, path, "samples", false, &f->samples));
  return Status::Ok();
}

Status ParseAttention(const json& j, const std::string& path, AttentionDecision* a) {
  FLEETSIM_RETURN_IF_ERROR(CheckKeys(j, path,
                                     {"achieved_fraction", "threshold", "ceiling", "use_measured",
                                      "published_efficiency", "published_source"}));
  FLEETSIM_RETURN_IF_ERROR(GetNumber(j, path, "achieved_fraction", true, &a->achieved_fraction, 0));
  FLEETSIM_RETURN_IF_ERROR(GetNumber(j, path, "threshold", true, &a->threshold, 0));
  FLEETSIM_RETURN_IF_ERROR(GetString(j, path, "ceiling", false, &a->ceiling));
  FLEETSIM_RETURN_IF_ERROR(GetBool(j, path, "use_measured", true, &a->use_measured));
  FLEETSIM_RETURN_IF_ERROR(GetNumber(j, path, "published_efficiency", false, &a->published_efficiency, 0));
  FLEETSIM_RETURN_IF_ERROR(GetString(j, path, "published_source", false, &a->published_source));
  if (!a->use_measured && !(a->published_efficiency > 0 && a->published_efficiency <= 1))
    return Bad(Join(path, "published_efficiency"),
               "required in (0, 1] when the measured kernel is not used");
  return Status::Ok();
}

Status ParseLink(const json& j, const std::string& path, ProfileLink* l) {
  FLEETSIM_RETURN_IF_ERROR(CheckKeys(j, path, {"src", "dst", "kind", "alpha_ns", "gbps", "points"}));
  FLEETSIM_RETURN_IF_ERROR(GetString(j, path, "src", true, &l->src));
  FLEETSIM_RETURN_IF_ERROR(GetString(j, path, "dst", true, &l->dst));
  FLEETSIM_RETURN_IF_ERROR(GetString(j, path, "kind", true, &l->kind));
  if (l->kind != "h2d" && l->kind != "d2h" && l->kind != "peer" && l->kind != "rank_staged" &&
      l->kind != "rank_direct")
    return Bad(Join(path, "kind"), "expected \"h2d\", \"d2h\", \"peer\", \"rank_staged\" or \"rank_direct\"");
  FLEETSIM_RETURN_IF_ERROR(GetNumber(j, path, "alpha_ns", true, &l->alpha_ns, 0));
  // 1 MB/s: anything slower is not a link a GPU fleet runs on, and keeps
  // every time derived from it finite.
  FLEETSIM_RETURN_IF_ERROR(GetNumber(j, path, "gbps", true, &l->gbps, 1e-3));
  if (j.contains("points")) FLEETSIM_RETURN_IF_ERROR(ParseCurve(j.at("points"), Join(path, "points"), &l->points));
  return Status::Ok();
}

Status ParseCheck(const json& j, const std::string& path, CollectiveCheck* c) {
  FLEETSIM_RETURN_IF_ERROR(CheckKeys(
      j, path, {"collective", "ranks", "bytes", "measured_ns", "predicted_ns", "predicted_with_reduce_ns"}));
  FLEETSIM_RETURN_IF_ERROR(GetString(j, path, "collective", true, &c->collective));
  FLEETSIM_RETURN_IF_ERROR(GetInt(j, path, "ranks", true, &c->ranks));
  FLEETSIM_RETURN_IF_ERROR(GetNumber(j, path, "bytes", true, &c->bytes, 0));
  FLEETSIM_RETURN_IF_ERROR(GetNumber(j, path, "measured_ns", true, &c->measured_ns, 0));
  FLEETSIM_RETURN_IF_ERROR(GetNumber(j, path, "predicted_ns", true, &c->predicted_ns, 0));
  FLEETSIM_RETURN_IF_ERROR(GetNumber(j, path, "predicted_with_reduce_ns", false, &c->predicted_with_reduce_ns, 0));
  return Status::Ok();
}

Status ParseTopology(const json& j, const std::string& path, ProfileTopology* t) {
  if (!j.is_object()) return Bad(path, "expected an object");
  FLEETSIM_RETURN_IF_ERROR(CheckKeys(j, path, {"ranks", "measured", "datasheet"}));
  FLEETSIM_RETURN_IF_ERROR(GetInt(j, path, "ranks", true, &t->ranks));
  if (t->ranks < 1) return Bad(Join(path, "ranks"), "expected at least 1");
  for (const char* key : {"measured", "datasheet"}) {
    std::vector<std::string>& out = std::string(key) == "measured" ? t->measured : t->datasheet;
    if (!j.contains(key)) continue;
    const json& a = j.at(key);
    if (!a.is_array()) return Bad(Join(path, key), "expected an array of strings");
    for (size_t i = 0; i < a.size(); ++i) {
      if (!a[i].is_string()) return Bad(Join(path, key) + "[" + std::to_string(i) + "]", "expected a string");
      out.push_back(a[i].get<std::string>());
    }
  }
  return Status::Ok();
}

// Parses an array at top[key] element by element with `parse`.
template <typename T, typename F>
Status ParseArray(const json& top, const char* key, F parse, std::vector<T>* out) {
  if (!top.contains(key)) return Status::Ok();
  const json& a = top.at(key);
  if (!a.is_array()) return Bad(key, "expected an array");
  for (size_t i = 0; i < a.size(); ++i) {
    T v;
    FLEETSIM_RETURN_IF_ERROR(parse(a[i], std::string(key) + "[" + std::to_string(i) + "]", &v));
    out->push_back(std::move(v));
  }
  return Status::Ok();
}

// Parses an object at top[key] value by value with `parse`.
template <typename T, typename F>
Status ParseObject(const json& top, const char* key, F parse, std::map<std::string, T>* out) {
  if (!top.contains(key)) return Status::Ok();
  const json& o = top.at(key);
  if (!o.is_object()) return Bad(key, "expected an object");
  for (auto it = o.begin(); it != o.end(); ++it)
    FLEETSIM_RETURN_IF_ERROR(parse(it.value(), Join(key, it.key()), &(*out)[it.key()]));
  return Status::Ok();
}

Status ParseCalibrated(const json& top, Profile* p) {
  if (top.contains("device_info")) {
    p->device_info.emplace();
    FLEETSIM_RETURN_IF_ERROR(ParseDeviceInfo(top.at("device_info"), "device_info", &*p->device_info));
  }
  if (top.contains("calibration")) {
    p->calibration.emplace();
    FLEETSIM_RETURN_IF_ERROR(ParseCalibration(top.at("calibration"), "calibration", &*p->calibration));
  }
  if (top.contains("measurements"))
    FLEETSIM_RETURN_IF_ERROR(ParseMeasurements(top.at("measurements"), "measurements", &p->measurements));
  FLEETSIM_RETURN_IF_ERROR(ParseObject(top, "fits", ParseFit, &p->fits));
  FLEETSIM_RETURN_IF_ERROR(ParseObject(top, "attention", ParseAttention, &p->attention));
  for (const auto& [kind, a] : p->attention) {
    if (kind != "attention_prefill" && kind != "attention_decode")
      return Bad("attention." + kind, "unknown attention kind (valid: attention_prefill, attention_decode)");
  }
  FLEETSIM_RETURN_IF_ERROR(ParseArray(top, "links", ParseLink, &p->links));
  FLEETSIM_RETURN_IF_ERROR(ParseArray(top, "collective_checks", ParseCheck, &p->collective_checks));
  if (top.contains("topology")) {
    p->topology.emplace();
    FLEETSIM_RETURN_IF_ERROR(ParseTopology(top.at("topology"), "topology", &*p->topology));
  }
  return Status::Ok();
}

Status Parse(const json& top, Profile* p) {
  FLEETSIM_RETURN_IF_ERROR(CheckKeys(top, "",
                                     {"format", "device", "source", "date", "model", "ops", "collectives", "notes",
                                      "device_info", "calibration", "measurements", "fits", "attention", "links",
                                      "collective_checks", "topology"}));
  std::string format;
  FLEETSIM_RETURN_IF_ERROR(GetString(top, "", "format", true, &format));
  if (format != kFormat) return Bad("format", "expected \"" + std::string(kFormat) + "\", got \"" + format + "\"");
  FLEETSIM_RETURN_IF_ERROR(GetString(top, "", "device", true, &p->device));
  FLEETSIM_RETURN_IF_ERROR(GetString(top, "", "source", false, &p->source));
  FLEETSIM_RETURN_IF_ERROR(GetString(top, "", "date", false, &p->date));
  if (top.contains("model") && !top.at("model").is_null()) {
    if (!top.at("model").is_string() || top.at("model").get_ref<const std::string&>().empty())
      return Bad("model", "expected a model name or null");
    p->model = top.at("model").get<std::string>();
  }
  if (top.contains("ops")) {
    const json& ops = top.at("ops");
    FLEETSIM_RETURN_IF_ERROR(CheckKeys(ops, "ops", {"gemm", "elementwise", "embedding"}));
    const std::pair<const char*, std::map<int, ProfileCurve>*> kinds[] = {
        {"gemm", &p->gemm}, {"elementwise", &p->elementwise}, {"embedding", &p->embedding}};
    for (const auto& [kind, table] : kinds) {
      if (!ops.contains(kind)) continue;
      const std::string path = std::string("ops.") + kind;
      FLEETSIM_RETURN_IF_ERROR(CheckKeys(ops.at(kind), path, {"tp"}));
      if (!ops.at(kind).contains("tp")) return Bad(path + ".tp", "required");
      FLEETSIM_RETURN_IF_ERROR(ParseCurveMap(ops.at(kind).at("tp"), path + ".tp", table));
    }
  }
  if (p->has_compute_ops() && !p->model)
    return Bad("model", "required (a model name) when \"ops\" holds measurements");
  if (top.contains("collectives")) {
    const json& c = top.at("collectives");
    FLEETSIM_RETURN_IF_ERROR(CheckKeys(c, "collectives", {"all_reduce", "send_recv"}));
    if (c.contains("all_reduce")) {
      FLEETSIM_RETURN_IF_ERROR(CheckKeys(c.at("all_reduce"), "collectives.all_reduce", {"intra_node"}));
      if (c.at("all_reduce").contains("intra_node"))
        FLEETSIM_RETURN_IF_ERROR(ParseCurveMap(c.at("all_reduce").at("intra_node"),
                                               "collectives.all_reduce.intra_node", &p->all_reduce_intra_node));
    }
    if (c.contains("send_recv")) {
      const json& s = c.at("send_recv");
      FLEETSIM_RETURN_IF_ERROR(CheckKeys(s, "collectives.send_recv", {"intra_node", "inter_node"}));
      if (s.contains("intra_node"))
        FLEETSIM_RETURN_IF_ERROR(
            ParseCurve(s.at("intra_node"), "collectives.send_recv.intra_node", &p->send_recv_intra_node));
      if (s.contains("inter_node"))
        FLEETSIM_RETURN_IF_ERROR(
            ParseCurve(s.at("inter_node"), "collectives.send_recv.inter_node", &p->send_recv_inter_node));
    }
  }
  if (top.contains("notes")) {
    const json& n = top.at("notes");
    if (!n.is_array()) return Bad("notes", "expected an array of strings");
    for (size_t i = 0; i < n.size(); ++i) {
      if (!n[i].is_string()) return Bad("notes[" + std::to_string(i) + "]", "expected a string");
      p->notes.push_back(n[i].get<std::string>());
    }
  }
  return ParseCalibrated(top, p);
}

// --- writer: the profile is built as a JSON tree (keys sorted, as nlohmann's
// default object keeps them) and printed with a fixed layout: one key per
// line, and an array of numbers (a point, a table row) on one line, so that
// a profile reads as a table and diffs line by line.

void Print(const json& j, const std::string& indent, std::string* out) {
  if (j.is_object()) {
    if (j.empty()) {
      *out += "{}";
      return;
    }
    *out += "{\n";
    size_t i = 0;
    for (auto it = j.begin(); it != j.end(); ++it) {
      *out += indent + "  " + json(it.key()).dump() + ": ";
      Print(it.value(), indent + "  ", out);
      *out += ++i < j.size() ? ",\n" : "\n";
    }
    *out += indent + "}";
    return;
  }
  if (j.is_array()) {
    bool scalars = true;  // numbers (a point, a table row) stay on one line
    for (const json& e : j) scalars = scalars && (e.is_number() || e.is_boolean() || e.is_null());
    if (scalars) {
      *out += "[";
      for (size_t i = 0; i < j.size(); ++i) *out += (i ? ", " : "") + j[i].dump();
      *out += "]";
      return;
    }
    *out += "[\n";
    for (size_t i = 0; i < j.size(); ++i) {
      *out += indent + "  ";
      Print(j[i], indent + "  ", out);
      *out += i + 1 < j.size() ? ",\n" : "\n";
    }
    *out += indent + "]";
    return;
  }
  *out += j.dump();
}

// The JSON path of the first NaN or infinity in j, or "" (JSON cannot hold
// them: nlohmann would write null, which the loader rejects).
std::string FirstNonFinite(const json& j, const std::string& path) {
  if (j.is_number_float()) return std::isfinite(j.get<double>()) ? "" : (path.empty() ? "(top)" : path);
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      if (std::string b = FirstNonFinite(it.value(), Join(path, it.key())); !b.empty()) return b;
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i)
      if (std::string b = FirstNonFinite(j[i], path + "[" + std::to_string(i) + "]"); !b.empty()) return b;
  }
  return "";
}

json CurveJson(const ProfileCurve& c) {
  json a = json::array();
  for (size_t i = 0; i < c.x.size(); ++i) a.push_back(json::array({c.x[i], c.ns[i]}));
  return a;
}

json CurveMapJson(const std::map<int, ProfileCurve>& m) {
  json o = json::object();
  for (const auto& [k, c] : m) o[std::to_string(k)] = CurveJson(c);
  return o;
}

void AddCalibrated(const Profile& p, json* top) {
  json& t = *top;
  if (p.device_info) {
    const ProfileDeviceInfo& d = *p.device_info;
    t["device_info"] = {{"backend", d.backend},
                        {"name", d.name},
                        {"software", d.software},
                        {"memory_bytes", d.memory_bytes},
                        {"compute_units", d.compute_units},
                        {"compute_capability", d.compute_capability},
                        {"sm_clock_khz", d.sm_clock_khz},
                        {"memory_clock_khz", d.memory_clock_khz},
                        {"memory_bus_width_bits", d.memory_bus_width_bits},
                        {"l2_cache_bytes", d.l2_cache_bytes},
                        {"gemm_tflops", d.gemm_tflops},
                        {"copy_gbps", d.copy_gbps},
                        {"h2d_gbps", d.h2d_gbps},
                        {"d2h_gbps", d.d2h_gbps}};
  }
  if (p.calibration) {
    const ProfileCalibration& c = *p.calibration;
    t["calibration"] = {{"backend", c.backend},         {"grid", c.grid},
                        {"tp", c.tp},                   {"warmup", c.warmup},
                        {"repetitions", c.repetitions}, {"flush_cache", c.flush_cache},
                        {"wall_seconds", c.wall_seconds}};
  }
  if (!p.measurements.empty()) {
    json& m = t["measurements"];
    for (const auto& [key, table] : p.measurements) m[key] = {{"fields", table.fields}, {"rows", table.rows}};
  }
  if (!p.fits.empty()) {
    json& fits = t["fits"];
    for (const auto& [key, f] : p.fits) {
      fits[key] = {{"size", f.size_var},
                   {"scale", f.scale_var},
                   {"fixed_ns", f.fixed_ns},
                   {"knots", f.knots},
                   {"values", f.values},
                   {"cv_method", f.cv_method},
                   {"cv_median_rel_error", f.cv_median_rel_error},
                   {"cv_p90_rel_error", f.cv_p90_rel_error},
                   {"samples", f.samples}};
      // Only a form with the per-count term writes it, so that older
      // profiles round-trip unchanged.
      if (!f.count_var.empty()) {
        fits[key]["count"] = f.count_var;
        fits[key]["per_count"] = f.per_count;
      }
    }
  }
  if (!p.attention.empty()) {
    json& att = t["attention"];
    for (const auto& [key, a] : p.attention) {
      att[key] = {{"achieved_fraction", a.achieved_fraction}, {"threshold", a.threshold},
                  {"ceiling", a.ceiling},                     {"use_measured", a.use_measured},
                  {"published_efficiency", a.published_efficiency}, {"published_source", a.published_source}};
    }
  }
  if (!p.links.empty()) {
    json& links = t["links"] = json::array();
    for (const ProfileLink& l : p.links) {
      links.push_back({{"src", l.src},
                       {"dst", l.dst},
                       {"kind", l.kind},
                       {"alpha_ns", l.alpha_ns},
                       {"gbps", l.gbps},
                       {"points", CurveJson(l.points)}});
    }
  }
  if (!p.collective_checks.empty()) {
    json& checks = t["collective_checks"] = json::array();
    for (const CollectiveCheck& c : p.collective_checks) {
      checks.push_back({{"collective", c.collective},
                        {"ranks", c.ranks},
                        {"bytes", c.bytes},
                        {"measured_ns", c.measured_ns},
                        {"predicted_ns", c.predicted_ns},
                        {"predicted_with_reduce_ns", c.predicted_with_reduce_ns}});
    }
  }
  if (p.topology) {
    t["topology"] = {{"ranks", p.topology->ranks},
                     {"measured", p.topology->measured},
                     {"datasheet", p.topology->datasheet}};
  }
}

}  // namespace

bool Profile::SlowestPeerLink(double* alpha_ns, double* gbps, int* devices) const {
  std::set<std::string> joined;
  *alpha_ns = 0;
  *gbps = 0;
  for (const ProfileLink& l : links) {
    if (l.kind != "peer" || l.gbps <= 0) continue;
    joined.insert(l.src);
    joined.insert(l.dst);
    *gbps = *gbps == 0 ? l.gbps : std::min(*gbps, l.gbps);
    *alpha_ns = std::max(*alpha_ns, l.alpha_ns);
  }
  *devices = static_cast<int>(joined.size());
  return *gbps > 0;
}

Status GpuSpecFromProfile(const Profile& p, GpuSpec* out) {
  if (!p.device_info)
    return Status::Invalid("profile of \"" + p.device + "\" has no device_info to describe the device with");
  const ProfileDeviceInfo& d = *p.device_info;
  auto tflops = [&](const char* dtype) {
    auto it = d.gemm_tflops.find(dtype);
    return it == d.gemm_tflops.end() ? 0.0 : it->second;
  };
  GpuSpec g;
  g.name = p.device;
  g.vendor = d.backend == "cuda" ? "nvidia" : d.backend;
  g.family = p.device;
  g.memory_mib = d.memory_bytes / (1024 * 1024);
  // One measured dtype stands for the 16-bit ones.
  g.bf16_tflops = std::max(tflops("bf16"), tflops("fp16"));
  g.fp32_tflops = tflops("fp32");
  g.mem_bandwidth_gbps = d.copy_gbps;
  if (g.bf16_tflops <= 0 && g.fp32_tflops <= 0)
    return Status::Invalid("profile of \"" + p.device + "\": device_info.gemm_tflops has no measured GEMM peak");
  if (g.bf16_tflops <= 0) g.bf16_tflops = g.fp32_tflops;
  if (g.fp32_tflops <= 0) g.fp32_tflops = g.bf16_tflops;
  if (g.memory_mib <= 0 || g.mem_bandwidth_gbps <= 0)
    return Status::Invalid("profile of \"" + p.device +
                           "\": device_info needs memory_bytes and copy_gbps to describe the device");
  const double host = std::min(d.h2d_gbps > 0 ? d.h2d_gbps : d.d2h_gbps, d.d2h_gbps > 0 ? d.d2h_gbps : d.h2d_gbps);
  if (!(host > 0))
    return Status::Invalid("profile of \"" + p.device +
                           "\": device_info has no measured host link (h2d_gbps, d2h_gbps), which swap and "
                           "cross-device traffic need; calibrate without --no-links");
  g.pcie_gbps_per_direction = host;
  double peer_gbps = 0, peer_alpha = 0;
  int peer_devices = 0;
  p.SlowestPeerLink(&peer_alpha, &peer_gbps, &peer_devices);
  g.scale_up.kind = peer_gbps > 0 ? "measured" : "none";
  g.scale_up.topology = peer_gbps > 0 ? "switch" : "none";
  g.scale_up.gbps_per_direction_per_link = peer_gbps;
  g.scale_up.links = peer_gbps > 0 ? 1 : 0;
  g.scale_up.latency_us = peer_alpha / 1e3;
  for (const char* c : {"on_demand", "reserved", "spot"}) g.prices[c] = std::nullopt;
  const std::string src = "measured by " + p.source + " on " + p.date;
  for (const char* f : {"memory_mib", "bf16_tflops", "fp32_tflops", "mem_bandwidth_gbps", "scale_up",
                        "pcie_gbps_per_direction"})
    g.sources[f] = src;
  *out = std::move(g);
  return Status::Ok();
}

Status LoadProfile(std::string_view text, const std::string& origin, Profile* out) {
  json top;
  FLEETSIM_RETURN_IF_ERROR(ParseJson(text, &top).WithPrefix(origin + ": "));
  Profile p;
  Status s = Parse(top, &p);
  if (!s.ok()) return s.WithPrefix(origin + ": ");
  *out = std::move(p);
  return Status::Ok();
}

Status LoadProfileFile(const std::string& path, Profile* out) {
  std::string text;
  FLEETSIM_RETURN_IF_ERROR(ReadWholeFile(path, "profile", &text));
  return LoadProfile(text, path, out);
}

Status WriteProfileJson(const Profile& p, std::string* out) {
  if (p.has_compute_ops() && !p.model)
    return Status::Invalid("profile: a model name is required when ops hold measurements");
  json top = json::object();
  json& coll = top["collectives"] = json::object();
  if (!p.all_reduce_intra_node.empty()) coll["all_reduce"]["intra_node"] = CurveMapJson(p.all_reduce_intra_node);
  if (!p.send_recv_inter_node.empty()) coll["send_recv"]["inter_node"] = CurveJson(p.send_recv_inter_node);
  if (!p.send_recv_intra_node.empty()) coll["send_recv"]["intra_node"] = CurveJson(p.send_recv_intra_node);
  top["date"] = p.date;
  top["device"] = p.device;
  top["format"] = kFormat;
  top["model"] = p.model ? json(*p.model) : json(nullptr);
  top["notes"] = p.notes;
  json& ops = top["ops"] = json::object();
  const std::pair<const char*, const std::map<int, ProfileCurve>*> kinds[] = {
      {"elementwise", &p.elementwise}, {"embedding", &p.embedding}, {"gemm", &p.gemm}};
  for (const auto& [kind, table] : kinds) {
    if (!table->empty()) ops[kind]["tp"] = CurveMapJson(*table);
  }
  top["source"] = p.source;
  AddCalibrated(p, &top);
  if (const std::string bad = FirstNonFinite(top, ""); !bad.empty())
    return Status::Invalid("profile: " + bad + ": not a finite number (a measurement of zero time?)");
  std::string s;
  Print(top, "", &s);
  s += "\n";
  *out = std::move(s);
  return Status::Ok();
}

}  // namespace fleetsim

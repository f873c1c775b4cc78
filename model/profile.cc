// Profile JSON loading and writing. nlohmann/json stays in this file.
#include "model/profile.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

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

bool Profile::operator==(const Profile& o) const {
  return device == o.device && source == o.source && date == o.date && model == o.model && gemm == o.gemm &&
         elementwise == o.elementwise && embedding == o.embedding &&
         all_reduce_intra_node == o.all_reduce_intra_node && send_recv_intra_node == o.send_recv_intra_node &&
         send_recv_inter_node == o.send_recv_inter_node && notes == o.notes;
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

Status ParseString(const json& top, const char* key, bool required, std::string* out) {
  if (!top.contains(key)) return required ? Bad(key, "required") : Status::Ok();
  const json& v = top.at(key);
  if (!v.is_string()) return Bad(key, "expected a string");
  *out = v.get<std::string>();
  return Status::Ok();
}

Status Parse(const json& top, Profile* p) {
  FLEETSIM_RETURN_IF_ERROR(
      CheckKeys(top, "", {"format", "device", "source", "date", "model", "ops", "collectives", "notes"}));
  std::string format;
  FLEETSIM_RETURN_IF_ERROR(ParseString(top, "format", true, &format));
  if (format != kFormat) return Bad("format", "expected \"" + std::string(kFormat) + "\", got \"" + format + "\"");
  FLEETSIM_RETURN_IF_ERROR(ParseString(top, "device", true, &p->device));
  FLEETSIM_RETURN_IF_ERROR(ParseString(top, "source", false, &p->source));
  FLEETSIM_RETURN_IF_ERROR(ParseString(top, "date", false, &p->date));
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
  return Status::Ok();
}

// --- writer: a small pretty-printer with a fixed layout (one point per line).

std::string Str(const std::string& s) { return json(s).dump(); }
std::string Num(double v) { return json(v).dump(); }

void WriteCurve(const ProfileCurve& c, const std::string& indent, std::string* out) {
  *out += "[\n";
  for (size_t i = 0; i < c.x.size(); ++i) {
    *out += indent + "  [" + Num(c.x[i]) + ", " + Num(c.ns[i]) + "]" + (i + 1 < c.x.size() ? ",\n" : "\n");
  }
  *out += indent + "]";
}

// Keys written in string order ("1" < "16" < "2"), the order a sorted-key
// JSON dump would give, so the output does not depend on who wrote it.
void WriteCurveMap(const std::map<int, ProfileCurve>& m, const std::string& indent, std::string* out) {
  std::map<std::string, const ProfileCurve*> sorted;
  for (const auto& [k, c] : m) sorted[std::to_string(k)] = &c;
  *out += "{\n";
  size_t i = 0;
  for (const auto& [k, c] : sorted) {
    *out += indent + "  " + Str(k) + ": ";
    WriteCurve(*c, indent + "  ", out);
    *out += ++i < sorted.size() ? ",\n" : "\n";
  }
  *out += indent + "}";
}

}  // namespace

Status LoadProfile(std::string_view text, const std::string& origin, Profile* out) {
  json top = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (top.is_discarded()) return Status::Invalid(origin + ": not valid JSON");
  Profile p;
  Status s = Parse(top, &p);
  if (!s.ok()) return s.WithPrefix(origin + ": ");
  *out = std::move(p);
  return Status::Ok();
}

Status LoadProfileFile(const std::string& path, Profile* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Invalid("cannot open profile \"" + path + "\": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::Invalid("cannot read profile \"" + path + "\": " + std::strerror(errno));
  return LoadProfile(ss.str(), path, out);
}

Status WriteProfileJson(const Profile& p, std::string* out) {
  if (p.has_compute_ops() && !p.model)
    return Status::Invalid("profile: a model name is required when ops hold measurements");
  std::string s = "{\n";
  // Top-level keys in sorted order: collectives, date, device, format,
  // model, notes, ops, source.
  s += "  \"collectives\": {";
  bool first_c = true;
  if (!p.all_reduce_intra_node.empty()) {
    s += "\n    \"all_reduce\": {\n      \"intra_node\": ";
    WriteCurveMap(p.all_reduce_intra_node, "      ", &s);
    s += "\n    }";
    first_c = false;
  }
  if (!p.send_recv_intra_node.empty() || !p.send_recv_inter_node.empty()) {
    s += std::string(first_c ? "\n" : ",\n") + "    \"send_recv\": {";
    bool first = true;
    const std::pair<const char*, const ProfileCurve*> sr[] = {{"inter_node", &p.send_recv_inter_node},
                                                             {"intra_node", &p.send_recv_intra_node}};
    for (const auto& [k, c] : sr) {
      if (c->empty()) continue;
      s += std::string(first ? "\n" : ",\n") + "      " + Str(k) + ": ";
      WriteCurve(*c, "      ", &s);
      first = false;
    }
    s += "\n    }";
    first_c = false;
  }
  s += first_c ? "},\n" : "\n  },\n";
  s += "  \"date\": " + Str(p.date) + ",\n";
  s += "  \"device\": " + Str(p.device) + ",\n";
  s += "  \"format\": " + Str(kFormat) + ",\n";
  s += "  \"model\": " + (p.model ? Str(*p.model) : std::string("null")) + ",\n";
  s += "  \"notes\": [";
  for (size_t i = 0; i < p.notes.size(); ++i) s += std::string(i ? "," : "") + "\n    " + Str(p.notes[i]);
  s += p.notes.empty() ? "],\n" : "\n  ],\n";
  s += "  \"ops\": {";
  bool first = true;
  const std::pair<const char*, const std::map<int, ProfileCurve>*> kinds[] = {
      {"elementwise", &p.elementwise}, {"embedding", &p.embedding}, {"gemm", &p.gemm}};
  for (const auto& [kind, table] : kinds) {
    if (table->empty()) continue;
    s += std::string(first ? "\n" : ",\n") + "    " + Str(kind) + ": {\n      \"tp\": ";
    WriteCurveMap(*table, "      ", &s);
    s += "\n    }";
    first = false;
  }
  s += first ? "},\n" : "\n  },\n";
  s += "  \"source\": " + Str(p.source) + "\n}\n";
  *out = std::move(s);
  return Status::Ok();
}

}  // namespace fleetsim

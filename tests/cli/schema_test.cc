// scenarios/schema.json and the scenario parser describe the same format.
// The schema is what editors and users read; the parser is what runs. These
// tests walk the schema and check, key by key, that the two agree: the same
// key paths, the same required keys, the same enum values, the same ranges
// and types at their boundaries, and that every bundled scenario is accepted
// by both.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "model/catalog.h"
#include "sim/plan/plan_spec.h"
#include "sim/runner/run.h"
#include "sim/scenario/parse.h"
#include "tests/cli/cli_test_util.h"

namespace fleetsim {
namespace {

using nlohmann::json;

std::string SourcePath(const std::string& rel) { return std::string(FLEETSIM_SOURCE_DIR) + "/" + rel; }

json LoadJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

const json& Schema() {
  static const json* schema = new json(LoadJsonFile(SourcePath("scenarios/schema.json")));
  return *schema;
}

// A schema node with its $ref followed (only local "#/..." references).
const json& Resolve(const json& node) {
  if (node.is_object() && node.contains("$ref")) {
    const std::string ref = node.at("$ref").get<std::string>();
    if (ref.rfind("#/", 0) != 0) throw std::runtime_error("non-local $ref " + ref);
    return Resolve(Schema().at(json::json_pointer(ref.substr(1))));
  }
  return node;
}

bool HasType(const json& node, const std::string& type) {
  if (!node.contains("type")) return false;
  const json& t = node.at("type");
  if (t.is_string()) return t.get<std::string>() == type;
  return std::find(t.begin(), t.end(), type) != t.end();
}

// What the walk finds, in the parser's path notation ("fleet.pools[].gpu").
struct SchemaFacts {
  std::set<std::string> key_paths;
  // Paths of object nodes, with whether additionalProperties is false.
  std::map<std::string, bool> closed_objects;
  // Required keys as (object path, key).
  std::vector<std::pair<std::string, std::string>> required;
  // Scalar leaves as (key path, schema node); a oneOf contributes one entry
  // per scalar branch.
  std::vector<std::pair<std::string, json>> leaves;
  std::vector<std::string> problems;
};

std::string Join(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

void Walk(const json& raw, const std::string& path, SchemaFacts* f) {
  const json& node = Resolve(raw);
  if (!node.is_object()) {
    f->problems.push_back(path + ": schema node is not an object");
    return;
  }
  // Alternatives: walk each. An object with its own properties uses oneOf
  // only to constrain which of them go together (traffic.generator).
  if ((node.contains("oneOf") || node.contains("anyOf")) && !node.contains("properties")) {
    for (const json& branch : node.contains("oneOf") ? node.at("oneOf") : node.at("anyOf")) Walk(branch, path, f);
    return;
  }
  if (HasType(node, "object") || node.contains("properties")) {
    // A map (names as data, e.g. region -> round trip): no properties, every
    // value checked by the additionalProperties schema. Its keys are not key
    // paths; the map itself is a leaf of the parser's.
    if (!node.contains("properties") && node.contains("additionalProperties") &&
        node.at("additionalProperties").is_object()) {
      f->closed_objects[path] = true;
      return;
    }
    f->closed_objects[path] = node.contains("additionalProperties") && node.at("additionalProperties") == false;
    if (node.contains("required")) {
      for (const json& k : node.at("required")) {
        const std::string key = k.get<std::string>();
        f->required.emplace_back(path, key);
        if (!node.contains("properties") || !node.at("properties").contains(key))
          f->problems.push_back(Join(path, key) + ": required but not among the properties");
      }
    }
    if (node.contains("properties")) {
      for (auto it = node.at("properties").begin(); it != node.at("properties").end(); ++it) {
        const std::string child = Join(path, it.key());
        f->key_paths.insert(child);
        Walk(it.value(), child, f);
      }
    }
    return;
  }
  if (HasType(node, "array") || node.contains("items")) {
    if (!node.contains("items")) {
      f->problems.push_back(path + ": array without items");
      return;
    }
    Walk(node.at("items"), path + "[]", f);
    return;
  }
  f->leaves.emplace_back(path, node);
}

SchemaFacts WalkSchema() {
  SchemaFacts f;
  Walk(Schema(), "", &f);
  return f;
}

// ---- applying schema paths to example scenarios ----

// A valid scenario holding every object the schema describes, either with a
// generator (lengths given as lognormal objects; probes of other dists
// rebuild the object, see LengthFor) or with a trace. Keys tied to another key by a rule
// the schema cannot state (warmup_s < duration_s, start_s < end_s) are left
// out so that probing one of them alone stays meaningful.
// The length keys each "dist" reads (sim/scenario/parse.cc, ParseLength);
// probing a key under a dist that ignores it would test nothing.
bool IsLengthKey(const std::string& path) {
  return path.find("_tokens.") != std::string::npos &&
         (path.rfind("traffic.generator.", 0) == 0 || path.rfind("traffic.trace.", 0) == 0);
}
std::string DistReading(const std::string& key) {
  if (key == "value") return "fixed";
  if (key == "median" || key == "sigma") return "lognormal";
  return "uniform";  // min, max
}
std::string LastKey(const std::string& path) { return path.substr(path.rfind('.') + 1); }

// A complete length object of `dist`, holding only the keys that dist uses.
json LengthFor(const std::string& dist) {
  if (dist == "fixed") return {{"dist", "fixed"}, {"value", 100}};
  if (dist == "uniform") return {{"dist", "uniform"}, {"min", 1}, {"max", 4000}};
  return {{"dist", "lognormal"}, {"median", 100}, {"sigma", 0.5}, {"min", 1}, {"max", 4000}};
}

json GeneratorBase() {
  const json length = {{"dist", "lognormal"}, {"median", 100}, {"sigma", 0.5}, {"min", 1}, {"max", 4000}};
  return json{{"name", "schema-test"},
              {"description", "every object present"},
              {"seed", 1},
              {"duration_s", 100},
              {"model", "Llama-3.1-8B"},
              {"fleet",
               {{"router", "round_robin"},
                {"pools", json::array({{{"name", "p"},
                                        {"model", "Llama-3.1-8B"},
                                        {"gpu", "H100-SXM"},
                                        {"replicas", 1},
                                        {"tp", 1},
                                        {"pp", 1},
                                        {"engine", "vllm"},
                                        {"scheduler", "vllm"},
                                        {"max_num_batched_tokens", 2048},
                                        {"max_num_seqs", 256},
                                        {"gpu_memory_utilization", 0.9},
                                        {"block_size", 16},
                                        {"pricing_class", "on_demand"},
                                        {"usd_per_gpu_hour", 2.5},
                                        {"spares", 1},
                                        {"zone", "z"},
                                        {"region", "r"}}})},
                {"router_options", json::object()},
                {"metrics_scrape_ms", 50},
                {"admission",
                 {{"queue_order", "strict"},
                  {"max_queue_per_replica", 64},
                  {"max_queue", 1000},
                  {"classes", json::array({{{"name", "c"}, {"priority", 0}, {"weight", 1}, {"queue_timeout_s", 30}}})},
                  {"tenants", json::array({{{"name", "t"}, {"rate_per_s", 10}, {"burst", 20}}})}}},
                {"degradation", json::array({{{"policy", "cap_output"},
                                              {"class", "c"},
                                              {"trigger", {{"queue_per_replica", 8}, {"predicted_ttft_ms", 2000}, {"saturated", true}}},
                                              {"max_output_tokens", 128},
                                              {"pool", "p"}}})},
                {"regions", json::array({{{"name", "r"}}})},
                {"clients", json::array({{{"name", "l"}, {"rtt_ms", {{"r", 10}}}}})},
                {"global_balancer",
                 {{"policy", "nearest"}, {"latency_budget_ms", 50}, {"saturation_outstanding", 32}, {"weights", {{"r", 1}}}}},
                {"canary",
                 {{"pool", "p"},
                  {"baseline", "q"},
                  {"start_s", 0},
                  {"steps", json::array({{{"share", 0.5}, {"duration_s", 60}}})},
                  {"rollback",
                   {{"ttft_p99_margin", 0.2},
                    {"tpot_p99_margin", 0.2},
                    {"error_rate_margin", 0.01},
                    {"min_requests", 20},
                    {"max_extensions", 3}}}}},
                {"gpus_per_node", 8},
                {"nodes_per_rack", 4},
                {"recovery", "replace"},
                {"health_check", {{"interval_s", 10}, {"timeout_s", 30}, {"unhealthy_threshold", 3}}},
                {"outlier_ejection",
                 {{"consecutive_failures", 5},
                  {"interval_s", 10},
                  {"base_ejection_s", 30},
                  {"max_ejection_s", 300},
                  {"max_ejection_percent", 10}}},
                {"retries",
                 {{"max_retries", 1},
                  {"base_backoff_ms", 25},
                  {"max_backoff_ms", 250},
                  {"budget_percent", 20},
                  {"min_retry_concurrency", 3}}},
                {"max_requests_per_replica", 1024},
                {"request_timeout_s", 15},
                {"cold_start",
                 {{"provision_s", 600},
                  {"provision_s_by_class", {{"on_demand", 600}, {"reserved", 0}, {"spot", 600}}},
                  {"container_start_s", 120},
                  {"weight_source", "disk"},
                  {"weight_load_gb_per_s", 0.33},
                  {"warmup_s", 30}}},
                {"rolling_restarts",
                 json::array({{{"pool", "p"}, {"at_s", 10}, {"batch", 1}, {"drain_timeout_s", 60}}})}}},
              // Every key a failure model may read, in one entry: the parser
              // checks types and ranges; which model reads which key is
              // checked when the run is built.
              {"failures",
               json::array({{{"model", "drill"},
                             {"mtbf_hours", 1000},
                             {"mttr_s", 60},
                             {"at_s", 5},
                             {"node", 0},
                             {"replica", 0},
                             {"rack", 0},
                             {"zone", "z"},
                             {"kind", "hang"}}})},
              {"traffic",
               {{"generator",
                 {{"arrival", "gamma"},
                  {"rate_per_s", 5},
                  {"cv", 2},
                  {"prompt_tokens", length},
                  {"output_tokens", length},
                  {"model", "Llama-3.1-8B"},
                  {"shared_prefix", {{"groups", 4}, {"tokens", 1024}}},
                  {"sessions", {{"turns", 3}, {"think_time_s", 5}, {"max_context_tokens", 8192}}}}},
                {"max_requests", 10},
                {"max_arrival_s", 50},
                {"mix", json::array({{{"weight", 1},
                                      {"tenant", "t"},
                                      {"model", "Llama-3.1-8B"},
                                      {"priority", 0},
                                      {"location", "l"}}})}}},
              {"slo", {{"ttft_ms", 500}, {"tpot_ms", 50}}},
              {"perf",
               {{"gemm_compute_efficiency", 0.7},
                {"gemm_memory_efficiency", 0.8},
                {"attention_compute_efficiency", 0.5},
                {"attention_memory_efficiency", 0.7},
                {"elementwise_memory_efficiency", 0.8},
                {"launch_overhead_us", 5},
                {"link_efficiency", 0.8}}}};
}

json TraceBase() {
  json j = GeneratorBase();
  j["traffic"] = {{"trace", {{"format", "azure"}, {"path", "t.csv"}, {"end_s", 60}, {"rate_scale", 2}}},
                  {"max_requests", 10}};
  return j;
}

// A ServeGen trace with its lengths given in the scenario: the only trace
// format that takes prompt_tokens/output_tokens/lengths_csv (a rule between
// keys that the schema does not state, like start_s < end_s).
json ServeGenBase() {
  json j = TraceBase();
  const json length = {{"dist", "lognormal"}, {"median", 100}, {"sigma", 0.5}, {"min", 1}, {"max", 4000}};
  j["traffic"]["trace"]["format"] = "servegen";
  j["traffic"]["trace"]["prompt_tokens"] = length;
  j["traffic"]["trace"]["output_tokens"] = length;
  return j;
}

// "fleet.pools[].gpu" -> "/fleet/pools/0/gpu".
json::json_pointer Pointer(const std::string& path) {
  std::string p;
  std::stringstream ss(path);
  std::string seg;
  while (std::getline(ss, seg, '.')) {
    if (seg.size() > 2 && seg.compare(seg.size() - 2, 2, "[]") == 0) {
      p += "/" + seg.substr(0, seg.size() - 2) + "/0";
    } else {
      p += "/" + seg;
    }
  }
  return json::json_pointer(p);
}

// "fleet.pools[].gpu" -> "fleet.pools[0].gpu", as the parser's messages say.
std::string Display(std::string path) {
  for (size_t p = path.find("[]"); p != std::string::npos; p = path.find("[]", p)) path.replace(p, 2, "[0]");
  return path;
}

// The example scenario that contains the parent object of `path`.
json BaseFor(const std::string& path) {
  for (const char* k : {"traffic.trace.prompt_tokens", "traffic.trace.output_tokens", "traffic.trace.lengths_csv"})
    if (path.rfind(k, 0) == 0) return ServeGenBase();
  json j = path.rfind("traffic.trace", 0) == 0 ? TraceBase() : GeneratorBase();
  // An autoscaled pool (bounds wide enough for any probe of the others,
  // the replicas at time 0 within them; no spares), and a capacity limit.
  if (path.rfind("fleet.pools[].autoscaler", 0) == 0) {
    json& pool = j["fleet"]["pools"][0];
    pool.erase("spares");
    pool["replicas"] = 1;
    pool["autoscaler"] = {{"policy", "hpa"}, {"max_replicas", 100000}};
    if (path.rfind("fleet.pools[].autoscaler.schedule", 0) == 0) {
      pool["autoscaler"]["policy"] = "scheduled";
      pool["autoscaler"]["schedule"] = json::array({{{"hour", 0}, {"replicas", 1}}});
    }
    if (path.rfind("fleet.pools[].autoscaler.options", 0) == 0) pool["autoscaler"]["options"] = json::object();
  }
  if (path.rfind("fleet.gpu_capacity", 0) == 0)
    j["fleet"]["gpu_capacity"] = json::array({{{"gpu", "H100-SXM"}, {"pricing_class", "spot"}, {"gpus", 8}}});
  // A speculative pool drafting with the target's own zoo model (the same
  // vocabulary); head_layers is read only for an EAGLE head.
  if (path.rfind("fleet.pools[].speculative", 0) == 0) {
    json& sp = j["fleet"]["pools"][0]["speculative"];
    sp = {{"method", "draft_model"},
          {"draft_model", "Llama-3.1-8B"},
          {"num_speculative_tokens", 2},
          {"acceptance", {{"mean", 0.6}, {"concentration", 4}}}};
    if (path == "fleet.pools[].speculative.head_layers") {
      sp["method"] = "eagle";
      sp.erase("draft_model");
    }
  }
  // An expert balance names one popularity: probes of redundant_experts
  // go with zipf_s, probes of a load beside a positive one.
  if (path == "fleet.pools[].expert_balance.redundant_experts")
    j["fleet"]["pools"][0]["expert_balance"] = {{"zipf_s", 1}};
  if (path == "fleet.pools[].expert_balance.loads[]")
    j["fleet"]["pools"][0]["expert_balance"] = {{"loads", {1, 1}}};
  if (path.rfind("fleet.pools[].spot", 0) == 0) {
    j["fleet"]["pools"][0]["pricing_class"] = "spot";
    j["fleet"]["pools"][0]["spot"] = json::object();
  }
  return j;
}

Status Parse(const json& j) {
  ScenarioSpec spec;
  return ParseScenario(j.dump(), "t.json", "", &spec);
}

// ---- a validator for the subset of JSON Schema that schema.json uses ----

// The sign of a - b; exact when both are JSON integers (as doubles,
// 9223372036854775807 and 9223372036854775808 are equal).
int CompareNumbers(const json& a, const json& b) {
  if (a.is_number_integer() && b.is_number_integer()) {
    auto wide = [](const json& v) {
      return v.is_number_unsigned() ? static_cast<__int128>(v.get<uint64_t>()) : static_cast<__int128>(v.get<int64_t>());
    };
    return wide(a) < wide(b) ? -1 : wide(a) > wide(b) ? 1 : 0;
  }
  const double x = a.get<double>(), y = b.get<double>();
  return x < y ? -1 : x > y ? 1 : 0;
}

// Keywords that constrain nothing.
const std::set<std::string> kAnnotations = {"$schema", "$id", "$defs", "title", "description"};

bool TypeMatches(const std::string& type, const json& v) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "integer")
    return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  return false;
}

void Validate(const json& raw, const json& v, const std::string& where, std::vector<std::string>* errors) {
  const json& node = Resolve(raw);
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string& kw = it.key();
    const json& arg = it.value();
    if (kAnnotations.count(kw)) continue;
    if (kw == "type") {
      bool ok = false;
      if (arg.is_string()) {
        ok = TypeMatches(arg.get<std::string>(), v);
      } else {
        for (const json& t : arg) ok = ok || TypeMatches(t.get<std::string>(), v);
      }
      if (!ok) errors->push_back(where + ": expected type " + arg.dump() + ", got " + v.dump());
    } else if (kw == "enum") {
      if (std::find(arg.begin(), arg.end(), v) == arg.end()) errors->push_back(where + ": not in " + arg.dump());
    } else if (kw == "minimum") {
      if (v.is_number() && CompareNumbers(v, arg) < 0) errors->push_back(where + ": below minimum");
    } else if (kw == "maximum") {
      if (v.is_number() && CompareNumbers(v, arg) > 0) errors->push_back(where + ": above maximum");
    } else if (kw == "exclusiveMinimum") {
      if (v.is_number() && CompareNumbers(v, arg) <= 0) errors->push_back(where + ": not above minimum");
    } else if (kw == "minLength") {
      if (v.is_string() && v.get<std::string>().size() < arg.get<size_t>()) errors->push_back(where + ": too short");
    } else if (kw == "minItems") {
      if (v.is_array() && v.size() < arg.get<size_t>()) errors->push_back(where + ": too few items");
    } else if (kw == "required") {
      for (const json& k : arg)
        if (v.is_object() && !v.contains(k.get<std::string>()))
          errors->push_back(Join(where, k.get<std::string>()) + ": required");
    } else if (kw == "properties") {
      if (!v.is_object()) continue;
      for (auto p = arg.begin(); p != arg.end(); ++p)
        if (v.contains(p.key())) Validate(p.value(), v.at(p.key()), Join(where, p.key()), errors);
    } else if (kw == "additionalProperties") {
      if (arg.is_object()) {
        // A map: every value not among the properties is checked by `arg`.
        if (!v.is_object()) continue;
        for (auto p = v.begin(); p != v.end(); ++p)
          if (!node.contains("properties") || !node.at("properties").contains(p.key()))
            Validate(arg, p.value(), Join(where, p.key()), errors);
        continue;
      }
      if (arg != false) {
        errors->push_back(where + ": validator supports only additionalProperties: false or a schema");
        continue;
      }
      if (!v.is_object()) continue;
      for (auto p = v.begin(); p != v.end(); ++p)
        if (!node.contains("properties") || !node.at("properties").contains(p.key()))
          errors->push_back(Join(where, p.key()) + ": not allowed");
    } else if (kw == "items") {
      if (!v.is_array()) continue;
      for (size_t i = 0; i < v.size(); ++i) Validate(arg, v[i], where + "[" + std::to_string(i) + "]", errors);
    } else if (kw == "oneOf") {
      int matches = 0;
      for (const json& branch : arg) {
        std::vector<std::string> sub;
        Validate(branch, v, where, &sub);
        matches += sub.empty();
      }
      if (matches != 1) errors->push_back(where + ": matches " + std::to_string(matches) + " oneOf branches");
    } else if (kw == "anyOf") {
      bool any = false;
      for (const json& branch : arg) {
        std::vector<std::string> sub;
        Validate(branch, v, where, &sub);
        any = any || sub.empty();
      }
      if (!any) errors->push_back(where + ": matches no anyOf branch");
    } else if (kw == "not") {
      std::vector<std::string> sub;
      Validate(arg, v, where, &sub);
      if (sub.empty()) errors->push_back(where + ": matches a schema it must not (" + arg.dump() + ")");
    } else {
      // Fail loudly rather than silently accept: extend the validator when
      // the schema grows a new keyword.
      errors->push_back(where + ": schema keyword \"" + kw + "\" not supported by the test's validator");
    }
  }
}

std::vector<std::string> ValidateScenario(const json& scenario) {
  std::vector<std::string> errors;
  Validate(Schema(), scenario, "", &errors);
  return errors;
}

std::string JoinLines(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += "  " + x + "\n";
  return s;
}

// ---- the tests ----

TEST(ScenarioSchema, KeyPathsEqualTheParsers) {
  const SchemaFacts f = WalkSchema();
  ASSERT_TRUE(f.problems.empty()) << JoinLines(f.problems);
  const std::vector<std::string> parser_list = ScenarioKeyPaths();
  const std::set<std::string> parser(parser_list.begin(), parser_list.end());
  EXPECT_EQ(parser.size(), parser_list.size()) << "ScenarioKeyPaths lists a path twice";
  std::vector<std::string> only_schema, only_parser;
  std::set_difference(f.key_paths.begin(), f.key_paths.end(), parser.begin(), parser.end(),
                      std::back_inserter(only_schema));
  std::set_difference(parser.begin(), parser.end(), f.key_paths.begin(), f.key_paths.end(),
                      std::back_inserter(only_parser));
  EXPECT_TRUE(only_schema.empty()) << "in schema.json, not accepted by the parser:\n" << JoinLines(only_schema);
  EXPECT_TRUE(only_parser.empty()) << "accepted by the parser, missing from schema.json:\n" << JoinLines(only_parser);
  // The walk reached the nested objects, not just the top level.
  for (const char* p : {"fleet.pools[].gpu", "traffic.generator.prompt_tokens.dist", "traffic.trace.format"})
    EXPECT_TRUE(f.key_paths.count(p)) << p;
}

TEST(ScenarioSchema, EveryObjectForbidsUnknownKeys) {
  const SchemaFacts f = WalkSchema();
  ASSERT_FALSE(f.closed_objects.empty());
  for (const auto& [path, closed] : f.closed_objects)
    EXPECT_TRUE(closed) << (path.empty() ? "(top level)" : path) << ": \"additionalProperties\": false missing";
}

TEST(ScenarioSchema, ExampleScenariosAreValid) {
  // The examples every other test edits must be valid for both sides, or
  // the other tests prove nothing.
  for (const json& j : {GeneratorBase(), TraceBase(), ServeGenBase()}) {
    EXPECT_TRUE(ValidateScenario(j).empty()) << JoinLines(ValidateScenario(j));
    const Status s = Parse(j);
    EXPECT_TRUE(s.ok()) << s.message();
  }
}

TEST(ScenarioSchema, RequiredKeysAreRequiredByTheParser) {
  const SchemaFacts f = WalkSchema();
  ASSERT_FALSE(f.required.empty());
  for (const auto& [object, key] : f.required) {
    const std::string path = Join(object, key);
    SCOPED_TRACE(path);
    json j = BaseFor(path);
    json::json_pointer ptr = Pointer(path);
    // A length key is required only by its own dist's branch: start from a
    // complete object of the dist that reads it.
    if (IsLengthKey(path) && LastKey(path) != "dist") j[ptr.parent_pointer()] = LengthFor(DistReading(LastKey(path)));
    ASSERT_TRUE(j.contains(ptr)) << "example scenario lacks " << path;
    j.at(ptr.parent_pointer()).erase(ptr.back());
    EXPECT_FALSE(ValidateScenario(j).empty());
    const Status s = Parse(j);
    EXPECT_FALSE(s.ok()) << "parser accepts a scenario without " << path;
    EXPECT_NE(s.message().find(Display(path)), std::string::npos) << s.message();
  }
}

// Values of one scalar leaf just inside (`good`) and just outside (`bad`)
// the schema's constraints. Integers are probed as JSON integers; see
// IntegralNumbersAreIntegers for 1.0 and the like.
struct Probes {
  std::vector<json> good, bad;
};
Probes ProbesFor(const json& node) {
  Probes p;
  if (node.contains("enum")) {
    for (const json& e : node.at("enum")) p.good.push_back(e);
    p.bad.push_back("not-a-choice");
  } else if (HasType(node, "boolean")) {
    p.good = {true, false};
    p.bad = {"yes", 1};
  } else if (HasType(node, "string")) {
    p.bad.push_back("");
    p.bad.push_back(7);
  } else if (HasType(node, "integer") || HasType(node, "number")) {
    const bool integer = HasType(node, "integer");
    if (integer) p.bad.push_back(1.5);
    p.bad.push_back("3");
    // The boundary itself and the nearest value beyond it: the next integer,
    // or the next double (so 1e-06 and 1.0000000000000002e-06 are told apart).
    auto step = [&](const json& m, int dir) -> json {
      if (integer) {
        if (m.is_number_unsigned() && dir > 0) return json(m.get<uint64_t>() + 1);
        return json(m.get<int64_t>() + dir);
      }
      return json(std::nextafter(m.get<double>(), dir > 0 ? INFINITY : -INFINITY));
    };
    if (node.contains("minimum")) {
      p.good.push_back(node.at("minimum"));
      p.bad.push_back(step(node.at("minimum"), -1));
    }
    if (node.contains("exclusiveMinimum")) {
      p.good.push_back(step(node.at("exclusiveMinimum"), +1));
      p.bad.push_back(node.at("exclusiveMinimum"));
    }
    if (node.contains("maximum")) {
      p.good.push_back(node.at("maximum"));
      p.bad.push_back(step(node.at("maximum"), +1));
    }
    // Far beyond every bound: refused, never wrapped or crashed on.
    p.bad.push_back(1e308);
    p.bad.push_back(-1e308);
  } else {
    ADD_FAILURE() << "leaf with no type or enum: " << node.dump();
  }
  return p;
}


json ScenarioWith(const std::string& path, const json& v, const std::string& dist = "") {
  json j = BaseFor(path);
  if (IsLengthKey(path)) {
    const json::json_pointer ptr = Pointer(path);
    if (LastKey(path) == "dist") {
      // Probing the dist itself: a complete object of that dist (or, for a
      // value no dist has, the base object with the bad dist).
      if (v.is_string() && (v == "fixed" || v == "lognormal" || v == "uniform"))
        j[ptr.parent_pointer()] = LengthFor(v.get<std::string>());
    } else {
      j[ptr.parent_pointer()] = LengthFor(dist.empty() ? DistReading(LastKey(path)) : dist);
    }
  }
  // A probe of one side of a two-key rule (warmup_s < duration_s, start_s <
  // end_s, min <= max) drops or widens the other side, so that the probe
  // tests the key's own bound.
  if (path == "warmup_s") j.erase("duration_s");
  // Closed-loop keys go with "concurrency" and without an arrival process.
  if (path == "traffic.generator.concurrency" || path == "traffic.generator.think_time_s" ||
      path == "traffic.generator.think_time_dist") {
    json& g = j["traffic"]["generator"];
    for (const char* k : {"arrival", "rate_per_s", "cv", "sessions"}) g.erase(k);
    g["concurrency"] = 2;
  }
  if (path == "traffic.trace.start_s") j["traffic"]["trace"].erase("end_s");
  if (path == "fleet.pools[].speculative.method" && (v == "eagle" || v == "mtp"))
    j["fleet"]["pools"][0]["speculative"].erase("draft_model");
  if (IsLengthKey(path) && LastKey(path) == "min") j[Pointer(path).parent_pointer()]["max"] = int64_t{1} << 30;
  // The replicas at time 0 stay within the autoscaler's bounds.
  if (path == "fleet.pools[].autoscaler.min_replicas" && v.is_number_integer())
    j["fleet"]["pools"][0]["replicas"] = std::clamp<double>(v.get<double>(), 1, 100000);
  j[Pointer(path)] = v;
  return j;
}

void ExpectAccepted(const std::string& path, const json& j, const json& v) {
  ASSERT_TRUE(ValidateScenario(j).empty()) << "probe " << v.dump() << " should be valid:\n"
                                           << JoinLines(ValidateScenario(j));
  const Status s = Parse(j);
  EXPECT_TRUE(s.ok()) << "schema allows " << path << " = " << v.dump() << ", parser says: " << s.message();
}

void ExpectRejected(const std::string& path, const json& j, const json& v) {
  ASSERT_FALSE(ValidateScenario(j).empty()) << "probe " << v.dump() << " should be invalid";
  const Status s = Parse(j);
  EXPECT_FALSE(s.ok()) << "schema forbids " << path << " = " << v.dump() << " (in " << j.dump()
                       << "), parser accepts it";
  if (!s.ok()) {
    EXPECT_NE(s.message().find(Display(path)), std::string::npos) << s.message();
  }
}

// Each scalar leaf is probed just inside and just outside the schema's
// constraints; the parser must draw the line in the same place and name the
// key when it refuses.
TEST(ScenarioSchema, ParserAcceptsAndRejectsAtTheSchemasBounds) {
  const SchemaFacts f = WalkSchema();
  int probes = 0;
  for (const auto& [path, node] : f.leaves) {
    SCOPED_TRACE(path);
    const Probes p = ProbesFor(node);
    for (const json& v : p.good) ExpectAccepted(path, ScenarioWith(path, v), v);
    for (const json& v : p.bad) ExpectRejected(path, ScenarioWith(path, v), v);
    probes += static_cast<int>(p.good.size() + p.bad.size());
  }
  EXPECT_GT(probes, 100);
}

// The numeric leaves of the schema, as (key path, schema node).
std::vector<std::pair<std::string, json>> NumericLeaves() {
  std::vector<std::pair<std::string, json>> out;
  for (const auto& [path, node] : WalkSchema().leaves)
    if (HasType(node, "integer") || HasType(node, "number")) out.emplace_back(path, node);
  return out;
}

// Every number has a finite range on both sides, in the schema and in the
// parser's table (ScenarioNumericBounds), and the two state the same range
// exactly; the probes above then check that the parser enforces it.
TEST(ScenarioSchema, NumericBoundsEqualTheParsers) {
  const std::vector<NumericBound> bounds = ScenarioNumericBounds();
  std::set<std::string> seen;
  int compared = 0;
  for (const auto& leaf : NumericLeaves()) {
    const std::string& path = leaf.first;
    const auto& node = leaf.second;
    SCOPED_TRACE(path);
    const auto it = std::find_if(bounds.begin(), bounds.end(), [&](const NumericBound& b) { return b.path == path; });
    ASSERT_NE(it, bounds.end()) << "no parser bound for " << path;
    seen.insert(path);
    const NumericBound& b = *it;
    EXPECT_EQ(HasType(node, "integer"), b.integer);
    ASSERT_TRUE(node.contains("maximum")) << "schema gives no maximum";
    ASSERT_NE(node.contains("minimum"), node.contains("exclusiveMinimum")) << "schema needs one lower bound";
    if (b.integer) {
      EXPECT_FALSE(node.contains("exclusiveMinimum"));
      if (node.contains("minimum")) {
        EXPECT_EQ(node.at("minimum"), json(b.int_lo));
      }
      EXPECT_EQ(node.at("maximum"), json(b.int_hi));
    } else {
      const json& lo = node.contains("minimum") ? node.at("minimum") : node.at("exclusiveMinimum");
      EXPECT_EQ(node.contains("exclusiveMinimum"), b.lo_open);
      EXPECT_EQ(lo.get<double>(), b.lo);
      EXPECT_EQ(node.at("maximum").get<double>(), b.hi);
    }
    ++compared;
  }
  for (const NumericBound& b : bounds) EXPECT_TRUE(seen.count(b.path)) << b.path << ": bound for no schema key";
  EXPECT_GT(compared, 50);
}

// The same through the executable: 1e308 in any numeric key is exit 2 with
// one line naming the file and the key; nothing wraps, nothing crashes.
TEST(ScenarioSchema, HugeNumberInAnyKeyIsExitTwoNamingIt) {
  clitest::ScratchDir dir;
  int probes = 0;
  for (const auto& [path, node] : NumericLeaves()) {
    SCOPED_TRACE(path);
    const std::string file = dir.Write("s.json", ScenarioWith(path, json(1e308)).dump());
    const clitest::CommandResult r = clitest::RunFleetsim("validate " + clitest::ShellQuote(file));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(clitest::CountLines(r.output), 1) << r.output;
    EXPECT_NE(r.output.find(file + ": " + Display(path) + ": "), std::string::npos) << r.output;
    ++probes;
  }
  EXPECT_GT(probes, 50);
}

// JSON Schema's "integer" is any number with a zero fraction ("replicas":
// 2.0 is valid), so a scenario an editor accepts must not be refused for it.
TEST(ScenarioSchema, IntegralNumbersAreIntegers) {
  const SchemaFacts f = WalkSchema();
  int probes = 0;
  for (const auto& [path, node] : f.leaves) {
    if (!HasType(node, "integer")) continue;
    SCOPED_TRACE(path);
    const double v = node.contains("minimum") ? node.at("minimum").get<double>() + 1 : 2.0;
    ExpectAccepted(path, ScenarioWith(path, json(v)), json(v));
    ++probes;
  }
  EXPECT_GT(probes, 5);
}

// Under every "dist", a bad value of any length key is refused and named:
// by its type or range, or because that dist does not use the key (the
// schema's per-dist branches refuse it too), so {"dist": "lognormal",
// "value": "ten"} never slips through.
TEST(ScenarioSchema, LengthKeysAreCheckedWhateverTheDist) {
  const SchemaFacts f = WalkSchema();
  int probes = 0;
  for (const auto& [path, node] : f.leaves) {
    if (!IsLengthKey(path) || LastKey(path) == "dist") continue;
    for (const char* dist : {"fixed", "lognormal", "uniform"}) {
      SCOPED_TRACE(path + " with dist " + dist);
      for (const json& v : ProbesFor(node).bad) {
        ExpectRejected(path, ScenarioWith(path, v, dist), v);
        ++probes;
      }
    }
  }
  EXPECT_GT(probes, 20);
}

TEST(ScenarioSchema, ValidatorRejectsWhatTheSchemaForbids) {
  // The test's own validator must be able to say no.
  json j = GeneratorBase();
  j["fleet"]["pools"][0]["replicas"] = 0;
  EXPECT_FALSE(ValidateScenario(j).empty());
  j = GeneratorBase();
  j["fleet"]["pools"][0]["gpus"] = "H100-SXM";
  EXPECT_FALSE(ValidateScenario(j).empty());
  j = GeneratorBase();
  j["traffic"]["generator"]["prompt_tokens"] = 1.5;
  EXPECT_FALSE(ValidateScenario(j).empty());
  j = GeneratorBase();
  j["traffic"]["generator"]["prompt_tokens"] = 12;  // the integer shorthand
  EXPECT_TRUE(ValidateScenario(j).empty()) << JoinLines(ValidateScenario(j));
  EXPECT_TRUE(Parse(j).ok()) << Parse(j).message();
}

// The bundled scenario files, or the bundled plans (format "fleetsim-plan").
std::vector<std::string> BundledFiles(bool plans) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(SourcePath("scenarios"))) {
    if (e.path().extension() != ".json" || e.path().filename() == "schema.json") continue;
    const nlohmann::json doc = LoadJsonFile(e.path().string());
    const bool plan = doc.is_object() && doc.value("format", "") == "fleetsim-plan";
    if (plan == plans) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}
std::vector<std::string> BundledScenarios() { return BundledFiles(false); }

// Every bundled plan parses, and its inline scenario conforms to the schema
// and builds.
TEST(BundledPlans, ParseAndTheirScenariosConformToTheSchema) {
  const std::vector<std::string> files = BundledFiles(true);
  ASSERT_GE(files.size(), 2u);
  Catalog catalog;
  ASSERT_TRUE(Catalog::LoadBuiltin(&catalog).ok());
  Policies policies;
  RegisterBuiltins(&policies);
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    PlanSpec plan;
    const Status s = LoadPlanFile(path, &plan);
    ASSERT_TRUE(s.ok()) << s.message();
    const nlohmann::json doc = LoadJsonFile(path);
    ASSERT_TRUE(doc["scenario"].is_object());
    EXPECT_TRUE(ValidateScenario(doc["scenario"]).empty()) << JoinLines(ValidateScenario(doc["scenario"]));
    ScenarioSpec spec;
    ASSERT_TRUE(ParseScenario(plan.scenario_text, plan.scenario_file, plan.scenario_base_dir, &spec).ok());
    std::unique_ptr<ScenarioRun> run;
    const Status b = ScenarioRun::Build(spec, catalog, policies, &run);
    EXPECT_TRUE(b.ok()) << b.message();
    if (!spec.traffic.path.empty()) {
      EXPECT_TRUE(std::filesystem::exists(spec.traffic.path)) << spec.traffic.path;
    }
  }
}

TEST(BundledScenarios, ParseValidateAndConformToTheSchema) {
  const std::vector<std::string> files = BundledScenarios();
  ASSERT_FALSE(files.empty());
  Catalog catalog;
  ASSERT_TRUE(Catalog::LoadBuiltin(&catalog).ok());
  Policies policies;
  RegisterBuiltins(&policies);
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    ScenarioSpec spec;
    const Status s = LoadScenarioFile(path, &spec);
    ASSERT_TRUE(s.ok()) << s.message();
    // A live scenario on this machine's CPU ("cpu-host") builds once
    // `fleetsim live` has calibrated the machine (tests/live runs it).
    bool live_only = spec.perf_profile.empty();
    for (const PoolSpec& p : spec.pools) live_only = live_only && p.gpu == "cpu-host";
    if (!live_only) {
      std::unique_ptr<ScenarioRun> run;
      const Status b = ScenarioRun::Build(spec, catalog, policies, &run);
      EXPECT_TRUE(b.ok()) << b.message();
    }
    EXPECT_TRUE(ValidateScenario(LoadJsonFile(path)).empty()) << JoinLines(ValidateScenario(LoadJsonFile(path)));
    // Files the scenario names travel with it.
    if (!spec.traffic.path.empty()) {
      EXPECT_TRUE(std::filesystem::exists(spec.traffic.path)) << spec.traffic.path;
    }
    if (!spec.traffic.lengths_csv.empty()) {
      EXPECT_TRUE(std::filesystem::exists(spec.traffic.lengths_csv)) << spec.traffic.lengths_csv;
    }
  }
}

// Found by fuzz_scenario: a number too large for a double made nlohmann
// throw out_of_range, which escaped the parser.
TEST(ScenarioParse, NumberTooLargeForADoubleIsAnError) {
  ScenarioSpec spec;
  Status s = ParseScenario("{\"seed\": 888e8888888}", "big.json", "", &spec);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("big.json: invalid JSON"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("number overflow"), std::string::npos) << s.message();
}

// 100,000 levels of nesting overflowed the stack while the error message
// printed the value; now the parse refuses it, naming where.
TEST(ScenarioParse, NestingDeeperThanTheLimitIsAnError) {
  ScenarioSpec spec;
  const std::string deep = "{\"fleet\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  const Status s = ParseScenario(deep, "deep.json", "", &spec);
  EXPECT_EQ(s.message(), "deep.json: invalid JSON at line 1, column 266: nested deeper than 256 levels");
  // 200 levels parse, and the message that shows the value stays short.
  const std::string ok = "{\"fleet\": " + std::string(200, '[') + std::string(200, ']') + "}";
  const Status t = ParseScenario(ok, "ok.json", "", &spec);
  EXPECT_EQ(t.message().rfind("ok.json: fleet: expected an object, got [[[[", 0), 0u) << t.message();
  EXPECT_LT(t.message().size(), 120u) << t.message();
}

}  // namespace
}  // namespace fleetsim

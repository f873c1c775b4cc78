// PlanSpec parsing (sim/plan/plan_spec.h): a good plan's typed form, and
// one-line messages naming the plan file and the JSON path for bad ones.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/plan/plan_spec.h"

namespace fleetsim {
namespace {

using nlohmann::json;

const char kFile[] = "plans/spec-test.json";

// Like tests/plan/data/small_plan.json, with an inline scenario that needs no
// other file.
json GoodPlan() {
  return json::parse(R"({
    "format": "fleetsim-plan",
    "version": 1,
    "name": "spec-test",
    "scenario": {
      "name": "base", "seed": 7, "model": "Llama-3.1-8B",
      "fleet": { "router": "least_outstanding",
                 "pools": [{ "name": "pool", "gpu": "H100-SXM", "replicas": 1, "tp": 1 }] },
      "traffic": { "generator": { "arrival": "poisson", "rate_per_s": 20, "prompt_tokens": 200, "output_tokens": 50 },
                   "max_requests": 200 },
      "slo": { "ttft_ms": 1000, "tpot_ms": 50 }
    },
    "dimensions": [
      { "key": "fleet.pools[0].gpu", "values": ["H100-SXM", "A100-80G"] },
      { "keys": ["fleet.pools[0].tp", "fleet.pools[0].scheduler"], "values": [[1, "vllm"], [2, "sglang"]] },
      { "key": "fleet.pools[0].replicas", "search": "bisect", "min": 2, "max": 8 }
    ],
    "targets": {
      "ttft_ms": { "p99": 1000, "p50": 200 },
      "tpot_ms": { "p90": 50 },
      "e2e_ms": { "p95": 9000 },
      "attainment": 0.9,
      "max_reject_rate": 0.01,
      "budget_usd_per_hour": 40
    },
    "quotas": { "H100-SXM": 8 },
    "load": { "rate_scales": [0.5, 1, 1.5, 2], "max_rate_scale": 3 },
    "replications": 3,
    "seed": 11,
    "shortlist": 2
  })");
}

Status Parse(const json& plan, PlanSpec* out) { return ParsePlan(plan.dump(2), kFile, out); }

const PlanTarget* FindTarget(const PlanSpec& p, const std::string& id) {
  for (const PlanTarget& t : p.targets)
    if (t.id == id) return &t;
  return nullptr;
}

TEST(ParsePlan, AcceptsAGoodPlan) {
  PlanSpec p;
  const Status s = Parse(GoodPlan(), &p);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(p.file, kFile);
  EXPECT_EQ(p.name, "spec-test");
  EXPECT_EQ(p.sha256.size(), 64u);
  EXPECT_NE(p.scenario_text.find("Llama-3.1-8B"), std::string::npos);
  ASSERT_EQ(p.dimensions.size(), 3u);
  EXPECT_EQ(p.dimensions[0].keys, std::vector<std::string>{"fleet.pools[0].gpu"});
  ASSERT_EQ(p.dimensions[0].values.size(), 2u);
  EXPECT_EQ(p.dimensions[0].values[1], std::vector<std::string>{"\"A100-80G\""});
  EXPECT_FALSE(p.dimensions[0].bisect);
  ASSERT_EQ(p.dimensions[1].keys.size(), 2u);
  ASSERT_EQ(p.dimensions[1].values.size(), 2u);
  EXPECT_EQ(p.dimensions[1].values[1], (std::vector<std::string>{"2", "\"sglang\""}));
  EXPECT_TRUE(p.dimensions[2].bisect);
  EXPECT_EQ(p.dimensions[2].min, 2);
  EXPECT_EQ(p.dimensions[2].max, 8);
  EXPECT_EQ(p.dimensions[2].path, "dimensions[2]");

  ASSERT_EQ(p.targets.size(), 6u);
  const PlanTarget* t = FindTarget(p, "ttft_p99");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->metric, "ttft_p99_ms");
  EXPECT_TRUE(t->is_max);
  EXPECT_DOUBLE_EQ(t->limit, 1000);
  ASSERT_NE(FindTarget(p, "ttft_p50"), nullptr);
  ASSERT_NE(FindTarget(p, "tpot_p90"), nullptr);
  EXPECT_EQ(FindTarget(p, "tpot_p90")->metric, "tpot_p90_ms");
  ASSERT_NE(FindTarget(p, "e2e_p95"), nullptr);
  EXPECT_EQ(FindTarget(p, "tpot_p99"), nullptr);
  t = FindTarget(p, "attainment");
  ASSERT_NE(t, nullptr);
  EXPECT_FALSE(t->is_max);
  EXPECT_DOUBLE_EQ(t->limit, 0.9);
  t = FindTarget(p, "reject_rate");
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->is_max);
  EXPECT_DOUBLE_EQ(t->limit, 0.01);

  ASSERT_TRUE(p.budget_usd_per_hour.has_value());
  EXPECT_DOUBLE_EQ(*p.budget_usd_per_hour, 40);
  EXPECT_EQ(p.quotas, (std::map<std::string, int64_t>{{"H100-SXM", 8}}));
  EXPECT_EQ(p.rate_scales, (std::vector<double>{0.5, 1, 1.5, 2}));
  EXPECT_DOUBLE_EQ(p.max_rate_scale, 3);
  EXPECT_FALSE(p.trace_window_s.has_value());
  EXPECT_EQ(p.replications, 3);
  EXPECT_EQ(p.seed, 11u);
  EXPECT_EQ(p.shortlist, 2);
}

TEST(ParsePlan, Defaults) {
  json j = GoodPlan();
  for (const char* k : {"load", "replications", "seed", "shortlist", "quotas", "name"}) j.erase(k);
  j["targets"].erase("budget_usd_per_hour");
  PlanSpec p;
  const Status s = Parse(j, &p);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(p.name, "spec-test");  // the file's stem
  EXPECT_EQ(p.rate_scales, (std::vector<double>{0.5, 0.75, 1, 1.25, 1.5, 2}));
  EXPECT_DOUBLE_EQ(p.max_rate_scale, 4);
  EXPECT_EQ(p.replications, 5);
  EXPECT_EQ(p.seed, 1u);
  EXPECT_EQ(p.shortlist, 3);
  EXPECT_TRUE(p.quotas.empty());
  EXPECT_FALSE(p.budget_usd_per_hour.has_value());
}

TEST(ParsePlan, RateScalesGainOneAndAreSortedAndDistinct) {
  json j = GoodPlan();
  j["load"]["rate_scales"] = {2, 0.5, 2, 0.75, 0.5};
  PlanSpec p;
  Status s = Parse(j, &p);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(p.rate_scales, (std::vector<double>{0.5, 0.75, 1, 2}));

  j["load"]["rate_scales"] = {1.5};
  s = Parse(j, &p);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(p.rate_scales, (std::vector<double>{1, 1.5}));

  j["load"]["rate_scales"] = {1, 1};
  s = Parse(j, &p);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(p.rate_scales, (std::vector<double>{1}));
}

TEST(ParsePlan, SeedDifferentPlansDifferentHashes) {
  PlanSpec a, b;
  json j = GoodPlan();
  ASSERT_TRUE(Parse(j, &a).ok());
  j["seed"] = 12;
  ASSERT_TRUE(Parse(j, &b).ok());
  EXPECT_NE(a.sha256, b.sha256);
}

TEST(ParsePlan, BisectOverSeveralPoolsTakesRatios) {
  json j = GoodPlan();
  j["dimensions"][2] = {{"keys", {"fleet.pools[0].replicas", "fleet.pools[1].replicas"}},
                        {"search", "bisect"},
                        {"min", 1},
                        {"max", 4},
                        {"ratios", {{1, 1}, {1, 3}, {2, 3}}}};
  PlanSpec p;
  const Status s = Parse(j, &p);
  ASSERT_TRUE(s.ok()) << s.message();
  const PlanDimension& d = p.dimensions[2];
  EXPECT_TRUE(d.bisect);
  EXPECT_EQ(d.keys.size(), 2u);
  EXPECT_EQ(d.ratios, (std::vector<std::vector<int64_t>>{{1, 1}, {1, 3}, {2, 3}}));
  // One key without ratios: the key is the multiplier itself.
  PlanSpec q;
  ASSERT_TRUE(Parse(GoodPlan(), &q).ok());
  EXPECT_EQ(q.dimensions[2].ratios, (std::vector<std::vector<int64_t>>{{1}}));
}

TEST(ParsePlan, AcceptsTheSmallPlanFile) {
  PlanSpec p;
  const std::string path = FLEETSIM_SOURCE_DIR "/tests/plan/data/small_plan.json";
  const Status s = LoadPlanFile(path, &p);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(p.file, path);
  EXPECT_EQ(p.name, "small-plan");
  EXPECT_EQ(p.dimensions.size(), 3u);
  int bisected = 0;
  for (const PlanDimension& d : p.dimensions) bisected += d.bisect;
  EXPECT_EQ(bisected, 1);
  EXPECT_EQ(p.targets.size(), 4u);
  EXPECT_EQ(p.replications, 3);
  EXPECT_EQ(p.shortlist, 2);
  // The inline scenario's relative paths resolve against the plan's folder.
  EXPECT_EQ(std::filesystem::path(p.scenario_base_dir), std::filesystem::path(path).parent_path());
}

TEST(ParsePlan, ScenarioFileRelativeToThePlan) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("fleetsim_plan_spec_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "scen");
  {
    std::ofstream f(dir / "scen" / "base.json");
    f << GoodPlan()["scenario"].dump();
  }
  json j = GoodPlan();
  j["scenario"] = "scen/base.json";
  PlanSpec p;
  const Status s = ParsePlan(j.dump(), (dir / "p.json").string(), &p);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(std::filesystem::path(p.scenario_file), dir / "scen" / "base.json");
  EXPECT_EQ(std::filesystem::path(p.scenario_base_dir), dir / "scen");
  EXPECT_EQ(json::parse(p.scenario_text), GoodPlan()["scenario"]);
}

struct BadPlan {
  std::string name;
  std::function<void(json&)> edit;
  std::vector<std::string> expect;  // substrings besides the file name
};

std::vector<BadPlan> BadPlans() {
  return {
      {"missing_targets", [](json& j) { j.erase("targets"); }, {"targets", "missing"}},
      {"no_target_named", [](json& j) { j["targets"] = json::object({{"budget_usd_per_hour", 10}}); }, {"targets"}},
      {"unknown_key", [](json& j) { j["replicas"] = 3; }, {"replicas", "unknown key"}},
      {"unknown_target_key", [](json& j) { j["targets"]["ttft_p99_ms"] = 3; }, {"targets.ttft_p99_ms", "unknown key"}},
      {"wrong_format", [](json& j) { j["format"] = "fleetsim-scenario"; }, {"format", "fleetsim-plan"}},
      {"missing_format", [](json& j) { j.erase("format"); }, {"format"}},
      {"wrong_version", [](json& j) { j["version"] = 2; }, {"version", "2"}},
      {"bisect_with_values",
       [](json& j) { j["dimensions"][2]["values"] = {1, 2}; },
       {"dimensions[2].values", "bisect"}},
      {"two_bisect",
       [](json& j) {
         j["dimensions"].push_back({{"key", "fleet.pools[1].replicas"}, {"search", "bisect"}, {"min", 1}, {"max", 4}});
       },
       {"dimensions[3]", "only one dimension can be bisected", "dimensions[2]"}},
      {"duplicate_key_across_dimensions",
       [](json& j) { j["dimensions"].push_back({{"key", "fleet.pools[0].scheduler"}, {"values", {"vllm"}}}); },
       {"dimensions[3]", "fleet.pools[0].scheduler", "earlier dimension"}},
      {"bisected_key_not_replicas",
       [](json& j) { j["dimensions"][2]["key"] = "fleet.pools[0].tp"; },
       {"dimensions[2].key", "replica counts"}},
      {"bisect_max_beyond_scenario_bound",
       [](json& j) { j["dimensions"][2]["max"] = 100001; },
       {"dimensions[2].max"}},
      {"arity_short",
       [](json& j) { j["dimensions"][1]["values"].push_back({4}); },
       {"dimensions[1].values[2]", "2 values"}},
      {"arity_long",
       [](json& j) { j["dimensions"][1]["values"][0] = {1, "vllm", 3}; },
       {"dimensions[1].values[0]", "2 values"}},
      {"percentile_p75", [](json& j) { j["targets"]["ttft_ms"]["p75"] = 300; }, {"targets.ttft_ms.p75"}},
      {"percentile_p999", [](json& j) { j["targets"]["tpot_ms"] = {{"p99.9", 50}}; }, {"targets.tpot_ms.p99.9"}},
      {"no_percentile", [](json& j) { j["targets"]["itl_ms"] = json::object(); }, {"targets.itl_ms"}},
      {"attainment_above_one", [](json& j) { j["targets"]["attainment"] = 1.01; }, {"targets.attainment"}},
      {"attainment_zero", [](json& j) { j["targets"]["attainment"] = 0; }, {"targets.attainment"}},
      {"reject_rate_one", [](json& j) { j["targets"]["max_reject_rate"] = 1; }, {"targets.max_reject_rate"}},
      {"replications_zero", [](json& j) { j["replications"] = 0; }, {"replications"}},
      {"replications_101", [](json& j) { j["replications"] = 101; }, {"replications", "100"}},
      {"replications_fraction", [](json& j) { j["replications"] = 2.5; }, {"replications"}},
      {"empty_dimension_values", [](json& j) { j["dimensions"][0]["values"] = json::array(); }, {"dimensions[0].values"}},
      {"dimension_without_values", [](json& j) { j["dimensions"][0].erase("values"); }, {"dimensions[0].values"}},
      {"repeated_dimension_value",
       [](json& j) { j["dimensions"][0]["values"] = {"H100-SXM", "H100-SXM"}; },
       {"dimensions[0].values[1]", "repeats"}},
      {"bisect_max_below_min", [](json& j) { j["dimensions"][2]["max"] = 1; }, {"dimensions[2].max"}},
      {"bisect_two_keys",
       [](json& j) {
         j["dimensions"][2].erase("key");
         j["dimensions"][2]["keys"] = {"fleet.pools[0].replicas", "fleet.pools[0].max_num_seqs"};
       },
       {"dimensions[2].keys", "replica counts"}},
      {"bisect_two_pools_without_ratios",
       [](json& j) {
         j["dimensions"][2].erase("key");
         j["dimensions"][2]["keys"] = {"fleet.pools[0].replicas", "fleet.pools[1].replicas"};
       },
       {"dimensions[2].ratios", "needs ratios"}},
      {"bisect_same_key_twice",
       [](json& j) {
         j["dimensions"][2].erase("key");
         j["dimensions"][2]["keys"] = {"fleet.pools[0].replicas", "fleet.pools[0].replicas"};
         j["dimensions"][2]["ratios"] = {{1, 2}};
       },
       {"dimensions[2].keys", "twice"}},
      {"ratio_of_the_wrong_length",
       [](json& j) { j["dimensions"][2]["ratios"] = {{1, 2}}; },
       {"dimensions[2].ratios[0]", "1 integers"}},
      {"ratio_share_zero", [](json& j) { j["dimensions"][2]["ratios"] = {{1}, {0}}; }, {"dimensions[2].ratios[1]"}},
      {"ratio_share_fraction", [](json& j) { j["dimensions"][2]["ratios"] = {{1.5}}; }, {"dimensions[2].ratios[0]"}},
      {"ratio_repeated", [](json& j) { j["dimensions"][2]["ratios"] = {{2}, {2}}; }, {"dimensions[2].ratios[1]", "repeats"}},
      {"ratio_times_max_beyond_bound",
       [](json& j) { j["dimensions"][2]["ratios"] = {{100000}}; },
       {"dimensions[2].ratios[0]", "exceeds"}},
      {"ratios_on_an_exhaustive_dimension",
       [](json& j) { j["dimensions"][0]["ratios"] = {{1}}; },
       {"dimensions[0].search", "ratios"}},
      {"key_and_keys", [](json& j) { j["dimensions"][0]["keys"] = {"fleet.router"}; }, {"dimensions[0]"}},
      {"seed_dimension", [](json& j) { j["dimensions"][0] = {{"key", "seed"}, {"values", {1, 2}}}; }, {"dimensions[0].key", "seed"}},
      {"unknown_search", [](json& j) { j["dimensions"][2]["search"] = "grid"; }, {"dimensions[2].search", "grid"}},
      {"scenario_missing_file", [](json& j) { j["scenario"] = "no-such-scenario.json"; }, {"scenario", "no-such-scenario.json"}},
      {"scenario_number", [](json& j) { j["scenario"] = 3; }, {"scenario"}},
      {"scenario_missing", [](json& j) { j.erase("scenario"); }, {"scenario", "missing"}},
      {"dimensions_missing", [](json& j) { j.erase("dimensions"); }, {"dimensions", "missing"}},
      {"rate_scale_zero", [](json& j) { j["load"]["rate_scales"] = {0, 1}; }, {"load.rate_scales"}},
      {"rate_scales_empty", [](json& j) { j["load"]["rate_scales"] = json::array(); }, {"load.rate_scales"}},
      {"max_rate_scale_below_one", [](json& j) { j["load"]["max_rate_scale"] = 0.5; }, {"load.max_rate_scale"}},
      {"quota_negative", [](json& j) { j["quotas"]["A100-80G"] = -1; }, {"quotas.A100-80G"}},
      {"shortlist_zero", [](json& j) { j["shortlist"] = 0; }, {"shortlist"}},
      {"budget_zero", [](json& j) { j["targets"]["budget_usd_per_hour"] = 0; }, {"targets.budget_usd_per_hour"}},
      {"not_json", nullptr, {}},
  };
}

TEST(ParsePlan, BadPlansGiveOneLineNamingFileAndPath) {
  for (const BadPlan& c : BadPlans()) {
    SCOPED_TRACE(c.name);
    std::string text;
    if (c.edit) {
      json j = GoodPlan();
      c.edit(j);
      text = j.dump(2);
    } else {
      text = "{ \"format\": \"fleetsim-plan\", ";
    }
    PlanSpec p;
    p.name = "untouched";
    const Status s = ParsePlan(text, kFile, &p);
    ASSERT_FALSE(s.ok()) << "accepted";
    const std::string& m = s.message();
    EXPECT_EQ(m.rfind(std::string(kFile) + ": ", 0), 0u) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    for (const std::string& e : c.expect) EXPECT_NE(m.find(e), std::string::npos) << "want \"" << e << "\" in: " << m;
    EXPECT_EQ(p.name, "untouched") << "a failed parse must leave *out alone";
  }
}

TEST(LoadPlanFile, MissingFileNamesIt) {
  PlanSpec p;
  const Status s = LoadPlanFile("/nonexistent/fleetsim/plan.json", &p);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/nonexistent/fleetsim/plan.json"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace fleetsim

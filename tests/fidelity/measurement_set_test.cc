// Measurement sets (sim/fit/measurement_set.h): published figures with their
// citations, read as replays. A small set must come back run by run (its
// scenario with the run's overrides, the workload it describes, the figures);
// every mistake must be answered with the file and the JSON path. Then the
// fit over runs that each have their own scenario (sim/fit/engine_fit.h), on
// a truth made here, and the bundled profile against the bundled published
// runs it was not fitted on.
#include "sim/fit/measurement_set.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "model/catalog.h"
#include "sim/engine/time.h"
#include "sim/fit/engine_fit.h"
#include "sim/runner/run.h"
#include "sim/scenario/scenario_spec.h"
#include "tests/fidelity/world.h"

namespace fleetsim {
namespace {

using nlohmann::json;

using fidelity_test::World;

// A fresh folder under the system temp directory, removed with its files.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "measurement_set_test.XXXXXX").string();
    if (mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
    EXPECT_FALSE(path_.empty()) << "mkdtemp failed";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string Write(const std::string& name, const std::string& text) const {
    const std::string p = (std::filesystem::path(path_) / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

 private:
  std::string path_;
};

json Source(const std::string& date) {
  return {{"url", "https://example.org/bench"},
          {"title", "A benchmark post"},
          {"date", date},
          {"engine_version", "vllm 0.6.3"},
          {"quote", "batch size 1, 311.55 tok/s"}};
}

// Three runs, one per arrival mode: a closed loop on two A100s (tp 2), a
// Poisson run of another model, a batch sent at once to the offline engine.
json SmallSet() {
  json set = {{"format", "fleetsim-measurements"},
              {"version", 1},
              {"description", "test set"},
              {"seed", 7},
              {"scenario",
               {{"name", "small"},
                {"model", "Qwen2.5-0.5B"},
                {"fleet", {{"pools", {{{"name", "p"}, {"gpu", "H100-SXM"}, {"replicas", 1}, {"tp", 1}}}}}}}}};
  set["runs"] = json::array();
  set["runs"].push_back({{"id", "closed"},
                         {"split", "fit"},
                         {"source", Source("2024-11-06")},
                         {"notes", "two GPUs"},
                         {"set", {{"fleet.pools[0].gpu", "A100-80G"}, {"fleet.pools[0].tp", 2}}},
                         {"workload",
                          {{"requests", 8}, {"prompt_tokens", 512}, {"output_tokens", 64}, {"concurrency", 4}}},
                         {"observed", {{"tpot_mean", 10.5}, {"output_tokens_per_s", 300}}}});
  json poisson_source = Source("2025-02");
  poisson_source.erase("engine_version");
  poisson_source["gpu_detail"] = "H100 SXM5 80GB";
  set["runs"].push_back({{"id", "poisson"},
                         {"split", "held_out"},
                         {"source", poisson_source},
                         {"set", {{"model", "Llama-3.1-8B"}}},
                         {"workload",
                          {{"requests", 200}, {"prompt_tokens", 100}, {"output_tokens", 10}, {"rate_per_s", 5}}},
                         {"observed", {{"ttft_p50", 20}}}});
  set["runs"].push_back(
      {{"id", "offline"},
       {"split", "fit"},
       {"source", Source("2024-12-01")},
       {"workload",
        {{"requests", 4}, {"prompt_tokens", 10}, {"output_tokens", 20}, {"all_at_once", true}, {"server", false}}},
       {"observed", {{"e2e_mean", 150}}}});
  return set;
}

json With(json j, const std::function<void(json&)>& edit) {
  edit(j);
  return j;
}

Status Parse(const json& doc, MeasurementSet* out, const std::string& split = "") {
  return ParseMeasurementSet(doc.dump(), "set.json", split, out);
}

std::vector<SimTime> Arrivals(const ReplayRun& r) {
  std::vector<SimTime> t;
  for (const Request& q : r.requests) t.push_back(q.arrival);
  return t;
}

TEST(MeasurementSet, ReadsEachRunWithItsScenarioWorkloadAndCitation) {
  MeasurementSet set;
  const Status s = Parse(SmallSet(), &set);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(set.file, "set.json");
  EXPECT_EQ(set.description, "test set");
  EXPECT_EQ(set.seed, 7u);
  ASSERT_EQ(set.runs.size(), 3u);
  EXPECT_EQ(set.runs[0].id, "closed");
  EXPECT_EQ(set.runs[1].id, "poisson");
  EXPECT_EQ(set.runs[2].id, "offline");
  EXPECT_EQ(set.runs[0].split, "fit");
  EXPECT_EQ(set.runs[1].split, "held_out");
  EXPECT_EQ(set.runs[0].run.name, "closed");
  // The citation: title (date), url; engine version (when the source gives one).
  EXPECT_EQ(set.runs[0].citation, "A benchmark post (2024-11-06), https://example.org/bench; vllm 0.6.3");
  EXPECT_EQ(set.runs[1].citation, "A benchmark post (2025-02), https://example.org/bench");
  EXPECT_EQ(set.runs[0].date, "2024-11-06");
  EXPECT_EQ(set.runs[0].engine_version, "vllm 0.6.3");
  EXPECT_EQ(set.runs[1].engine_version, "");

  // Each run's own scenario: the set's with the run's overrides.
  for (const Measurement& m : set.runs) {
    ASSERT_NE(m.run.scenario, nullptr) << m.id;
    ASSERT_EQ(m.run.scenario->pools.size(), 1u) << m.id;
  }
  const PoolSpec& closed = set.runs[0].run.scenario->pools[0];
  EXPECT_EQ(closed.gpu, "A100-80G");
  EXPECT_EQ(closed.tp, 2);
  EXPECT_EQ(set.runs[0].run.scenario->model, "Qwen2.5-0.5B");
  EXPECT_EQ(closed.model, "Qwen2.5-0.5B");
  const PoolSpec& poisson = set.runs[1].run.scenario->pools[0];
  EXPECT_EQ(poisson.gpu, "H100-SXM");
  EXPECT_EQ(poisson.tp, 1);
  EXPECT_EQ(set.runs[1].run.scenario->model, "Llama-3.1-8B");
  EXPECT_EQ(poisson.model, "Llama-3.1-8B");
  EXPECT_EQ(set.runs[2].run.scenario->pools[0].gpu, "H100-SXM");
  EXPECT_EQ(set.runs[2].run.scenario->model, "Qwen2.5-0.5B");

  // Workloads: counts and lengths as written.
  const ReplayRun& c = set.runs[0].run;
  ASSERT_EQ(c.requests.size(), 8u);
  ASSERT_TRUE(c.concurrency.has_value());
  EXPECT_EQ(*c.concurrency, 4);
  EXPECT_TRUE(c.server);
  for (const Request& q : c.requests) {
    EXPECT_EQ(q.prompt_tokens, 512);
    EXPECT_EQ(q.output_tokens, 64);
  }
  const ReplayRun& p = set.runs[1].run;
  ASSERT_EQ(p.requests.size(), 200u);
  EXPECT_FALSE(p.concurrency.has_value());
  for (const Request& q : p.requests) {
    EXPECT_EQ(q.prompt_tokens, 100);
    EXPECT_EQ(q.output_tokens, 10);
  }
  // Poisson arrivals: from 0, non-decreasing, at about the stated rate
  // (200 requests at 5 per second: the last near 40 s).
  EXPECT_EQ(p.requests.front().arrival, 0);
  const std::vector<SimTime> t = Arrivals(p);
  EXPECT_TRUE(std::is_sorted(t.begin(), t.end()));
  EXPECT_GT(std::set<SimTime>(t.begin(), t.end()).size(), 190u);  // not all at once
  EXPECT_NEAR(TimeToSeconds(t.back()), 199.0 / 5, 0.25 * 199.0 / 5);
  const ReplayRun& o = set.runs[2].run;
  ASSERT_EQ(o.requests.size(), 4u);
  EXPECT_FALSE(o.concurrency.has_value());
  EXPECT_FALSE(o.server);
  for (const Request& q : o.requests) {
    EXPECT_EQ(q.arrival, 0);
    EXPECT_EQ(q.prompt_tokens, 10);
    EXPECT_EQ(q.output_tokens, 20);
  }

  // Observed figures, by the fit's metric names; the others unset.
  auto figure = [](const ReplayRun& r, const char* name) { return r.observed.values[FitMetricIndex(name)]; };
  EXPECT_EQ(figure(c, "tpot_mean"), 10.5);
  EXPECT_EQ(figure(c, "output_tokens_per_s"), 300);
  EXPECT_FALSE(figure(c, "ttft_p50").has_value());
  EXPECT_EQ(figure(p, "ttft_p50"), 20);
  EXPECT_EQ(figure(o, "e2e_mean"), 150);
  int set_figures = 0;
  for (const auto& v : c.observed.values) set_figures += v.has_value();
  EXPECT_EQ(set_figures, 2);
}

TEST(MeasurementSet, PoissonArrivalsAreTheSameForTheSameSeedAndDifferForAnother) {
  MeasurementSet a, b, other;
  ASSERT_TRUE(Parse(SmallSet(), &a).ok());
  ASSERT_TRUE(Parse(SmallSet(), &b).ok());
  ASSERT_TRUE(Parse(With(SmallSet(), [](json& j) { j["seed"] = 8; }), &other).ok());
  const std::vector<SimTime> ta = Arrivals(a.runs[1].run), tb = Arrivals(b.runs[1].run),
                             to = Arrivals(other.runs[1].run);
  EXPECT_EQ(ta, tb);
  ASSERT_EQ(to.size(), ta.size());
  EXPECT_NE(to, ta);
  // A run's draws do not depend on which runs a split keeps.
  MeasurementSet held_out;
  ASSERT_TRUE(Parse(SmallSet(), &held_out, "held_out").ok());
  ASSERT_EQ(held_out.runs.size(), 1u);
  EXPECT_EQ(Arrivals(held_out.runs[0].run), ta);
}

TEST(MeasurementSet, SplitKeepsOnlyItsRunsAndAnUnknownSplitIsAnError) {
  MeasurementSet fit;
  ASSERT_TRUE(Parse(SmallSet(), &fit, "fit").ok());
  ASSERT_EQ(fit.runs.size(), 2u);
  EXPECT_EQ(fit.runs[0].id, "closed");
  EXPECT_EQ(fit.runs[1].id, "offline");
  MeasurementSet none;
  const Status s = Parse(SmallSet(), &none, "test");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("set.json"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("\"test\""), std::string::npos) << s.message();
}

TEST(MeasurementSet, LooksLikeMeasurementSetOnlyForItsFormat) {
  EXPECT_TRUE(LooksLikeMeasurementSet(SmallSet().dump()));
  EXPECT_TRUE(LooksLikeMeasurementSet(R"({"format": "fleetsim-measurements"})"));
  EXPECT_FALSE(LooksLikeMeasurementSet(R"({"format": "other"})"));
  EXPECT_FALSE(LooksLikeMeasurementSet(R"({"format": 1})"));
  EXPECT_FALSE(LooksLikeMeasurementSet(R"(["fleetsim-measurements"])"));
  EXPECT_FALSE(LooksLikeMeasurementSet("start_s,input_tokens,output_tokens\n0,1,1\n"));
}

TEST(MeasurementSet, LengthsCsvDrawsOnlyRowsThatPassTheFilters) {
  TempDir dir;
  dir.Write("lengths.csv",
            "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n"
            "5,10,15,0.5\n"          // prompt under min_tokens
            "100,50,150,2\n"         // kept
            "3000,20,3020,150\n"     // prompt over max_prompt_tokens
            "1000,1500,2500,0.67\n"  // total over max_total_tokens
            "200,4,204,50\n"         // output under min_tokens
            "300,60,360,5\n");       // kept
  json set = With(SmallSet(), [](json& j) {
    j["runs"][1]["workload"] = {{"requests", 300},
                                {"lengths_csv", "lengths.csv"},  // beside the set file
                                {"min_tokens", 8},
                                {"max_prompt_tokens", 2048},
                                {"max_total_tokens", 2048},
                                {"rate_per_s", 5}};
  });
  const std::string path = dir.Write("set.json", set.dump());
  MeasurementSet m;
  const Status s = LoadMeasurementSet(path, "", &m);
  ASSERT_TRUE(s.ok()) << s.message();
  const ReplayRun& r = m.runs[1].run;
  ASSERT_EQ(r.requests.size(), 300u);
  int first = 0, second = 0;
  for (const Request& q : r.requests) {
    const bool a = q.prompt_tokens == 100 && q.output_tokens == 50;
    const bool b = q.prompt_tokens == 300 && q.output_tokens == 60;
    EXPECT_TRUE(a || b) << q.prompt_tokens << "," << q.output_tokens;
    first += a;
    second += b;
  }
  EXPECT_GT(first, 0);
  EXPECT_GT(second, 0);
  // Without the filters every row may be drawn (the default min_tokens is 1).
  set["runs"][1]["workload"].erase("min_tokens");
  set["runs"][1]["workload"].erase("max_prompt_tokens");
  set["runs"][1]["workload"].erase("max_total_tokens");
  ASSERT_TRUE(LoadMeasurementSet(dir.Write("set.json", set.dump()), "", &m).ok());
  std::set<std::pair<int, int>> seen;
  for (const Request& q : m.runs[1].run.requests) seen.insert({q.prompt_tokens, q.output_tokens});
  EXPECT_EQ(seen.size(), 6u);
  // Filters that no row passes.
  set["runs"][1]["workload"]["min_tokens"] = 5000;
  const Status none = LoadMeasurementSet(dir.Write("set.json", set.dump()), "", &m);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.message().find("runs[1].workload: no row of lengths_csv"), std::string::npos) << none.message();
  // A missing CSV is named with the run's path.
  set["runs"][1]["workload"].erase("min_tokens");
  set["runs"][1]["workload"]["lengths_csv"] = "missing.csv";
  const Status missing = LoadMeasurementSet(dir.Write("set.json", set.dump()), "", &m);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("runs[1].workload.lengths_csv: "), std::string::npos) << missing.message();
  EXPECT_NE(missing.message().find("missing.csv"), std::string::npos) << missing.message();
}

struct BadSet {
  const char* name;
  std::function<void(json&)> edit;
  std::vector<std::string> expect;  // substrings of the message, besides "set.json: "
};

TEST(MeasurementSet, ErrorsNameTheFileAndTheJsonPath) {
  const std::string known_metrics =
      "known: ttft_p50, ttft_p90, tpot_p50, tpot_p90, itl_p50, itl_p90, output_tokens_per_s, ttft_mean, "
      "tpot_mean, itl_mean, e2e_p50, e2e_mean, prefill_step_ms, decode_step_ms";
  const BadSet cases[] = {
      {"wrong format", [](json& j) { j["format"] = "fleetsim-scenario"; },
       {"set.json: format: expected \"fleetsim-measurements\", got \"fleetsim-scenario\""}},
      {"wrong version", [](json& j) { j["version"] = 2; }, {"set.json: version: this fleetsim reads version 1, got 2"}},
      {"unknown top-level key", [](json& j) { j["runz"] = json::array(); }, {"set.json: runz: unknown key"}},
      {"no runs", [](json& j) { j["runs"] = json::array(); }, {"set.json: runs: expected a non-empty array"}},
      {"unknown run key", [](json& j) { j["runs"][1]["observd"] = json::object(); },
       {"set.json: runs[1].observd: unknown key"}},
      {"duplicate id", [](json& j) { j["runs"][1]["id"] = "closed"; },
       {"set.json: runs[1].id: \"closed\" is used by an earlier run"}},
      {"missing source.quote", [](json& j) { j["runs"][1]["source"].erase("quote"); },
       {"set.json: runs[1].source.quote: missing required key"}},
      {"unknown source key", [](json& j) { j["runs"][1]["source"]["author"] = "x"; },
       {"set.json: runs[1].source.author: unknown key"}},
      {"concurrency and rate_per_s", [](json& j) { j["runs"][1]["workload"]["concurrency"] = 4; },
       {"set.json: runs[1].workload: give exactly one of concurrency"}},
      {"neither concurrency nor rate_per_s", [](json& j) { j["runs"][1]["workload"].erase("rate_per_s"); },
       {"set.json: runs[1].workload: give exactly one of concurrency"}},
      {"all_at_once false", [](json& j) {
         j["runs"][2]["workload"]["all_at_once"] = false;
       },
       {"set.json: runs[2].workload.all_at_once: expected true"}},
      {"lengths_csv with prompt_tokens", [](json& j) { j["runs"][1]["workload"]["lengths_csv"] = "x.csv"; },
       {"set.json: runs[1].workload: give lengths_csv or prompt_tokens and output_tokens, not both"}},
      {"a filter without lengths_csv", [](json& j) { j["runs"][1]["workload"]["max_prompt_tokens"] = 100; },
       {"set.json: runs[1].workload.max_prompt_tokens: applies to lengths_csv only"}},
      {"workload and step", [](json& j) { j["runs"][1]["step"] = {{"batch", 1}, {"prompt_tokens", 8}, {"decode_steps", 4}}; },
       {"set.json: runs[1]: give workload (requests a client sent) or step", "not both"}},
      {"neither workload nor step", [](json& j) { j["runs"][1].erase("workload"); },
       {"set.json: runs[1]: give workload", "not neither"}},
      {"a step run's figure on a workload", [](json& j) { j["runs"][1]["observed"]["decode_step_ms"] = 8; },
       {"set.json: runs[1].observed.decode_step_ms: a step run's figure: give step, not workload"}},
      {"a client's figure on a step run",
       [](json& j) {
         j["runs"][1].erase("workload");
         j["runs"][1]["step"] = {{"batch", 2}, {"prompt_tokens", 8}, {"decode_steps", 4}};
       },
       {"set.json: runs[1].observed.", "a step run gives prefill_step_ms and decode_step_ms only"}},
      {"a step of no sequences",
       [](json& j) {
         j["runs"][1].erase("workload");
         j["runs"][1]["step"] = {{"batch", 0}, {"prompt_tokens", 8}, {"decode_steps", 4}};
       },
       {"set.json: runs[1].step.batch: expected a positive integer"}},
      {"unknown step key",
       [](json& j) {
         j["runs"][1].erase("workload");
         j["runs"][1]["step"] = {{"batch", 1}, {"prompt_tokens", 8}, {"decode_steps", 4}, {"steps", 3}};
       },
       {"set.json: runs[1].step.steps: unknown key"}},
      {"no requests", [](json& j) { j["runs"][1]["workload"]["requests"] = 0; },
       {"set.json: runs[1].workload.requests: expected a positive integer"}},
      {"unknown workload key", [](json& j) { j["runs"][1]["workload"]["rate"] = 5; },
       {"set.json: runs[1].workload.rate: unknown key"}},
      {"unknown observed figure", [](json& j) { j["runs"][1]["observed"]["ttft_p99"] = 30; },
       {"set.json: runs[1].observed.ttft_p99: unknown figure", known_metrics}},
      {"no observed figure", [](json& j) { j["runs"][1]["observed"] = json::object(); },
       {"set.json: runs[1].observed: no figure"}},
      {"negative figure", [](json& j) { j["runs"][1]["observed"]["ttft_p50"] = -3; },
       {"set.json: runs[1].observed.ttft_p50: expected a positive number"}},
      {"zero figure", [](json& j) { j["runs"][1]["observed"]["ttft_p50"] = 0; },
       {"set.json: runs[1].observed.ttft_p50: expected a positive number"}},
      {"scenario with traffic",
       [](json& j) {
         j["scenario"]["traffic"] = {
             {"generator", {{"arrival", "poisson"}, {"rate_per_s", 1}, {"prompt_tokens", 1}, {"output_tokens", 1}}},
             {"max_requests", 1}};
       },
       {"set.json: scenario.traffic: "}},
      {"set makes the scenario invalid", [](json& j) { j["runs"][1]["set"]["fleet.pools[0].tp"] = 0; },
       {"set.json: runs[1]", "fleet.pools[0].tp"}},
      {"set with an unknown scenario key", [](json& j) { j["runs"][1]["set"]["fleet.pools[0].tpp"] = 2; },
       {"set.json: runs[1]", "fleet.pools[0].tpp"}},
      {"set with two pools",
       [](json& j) {
         j["runs"][1]["set"]["fleet.pools"] = {{{"name", "p"}, {"gpu", "H100-SXM"}},
                                               {{"name", "q"}, {"gpu", "H100-SXM"}}};
       },
       {"set.json: runs[1]", "one pool", "has 2"}},
      // Keys the replay would drop are refused rather than ignored.
      {"set of a traffic key", [](json& j) { j["runs"][1]["set"]["traffic.max_requests"] = 1000; },
       {"set.json: runs[1].set.traffic.max_requests: a measured run's workload"}},
      {"set of the seed", [](json& j) { j["runs"][1]["set"]["seed"] = 99; }, {"set.json: runs[1].set.seed: "}},
      {"scenario with warmup_s", [](json& j) { j["scenario"]["warmup_s"] = 100; },
       {"set.json: scenario.warmup_s: a replay measures every request to the end"}},
      {"a rate below the generator's bound", [](json& j) { j["runs"][1]["workload"]["rate_per_s"] = 1e-15; },
       {"set.json: runs[1].workload.rate_per_s: expected a rate from 1e-6 to 1e6"}},
      {"a length range upside down",
       [](json& j) { j["runs"][1]["workload"]["prompt_tokens"] = {{"min", 100}, {"max", 10}}; },
       {"set.json: runs[1].workload.prompt_tokens.max: is less than min"}},
  };
  for (const BadSet& c : cases) {
    SCOPED_TRACE(c.name);
    MeasurementSet out;
    const Status s = Parse(With(SmallSet(), c.edit), &out);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.message().rfind("set.json: ", 0), 0u) << s.message();
    for (const std::string& e : c.expect) EXPECT_NE(s.message().find(e), std::string::npos) << s.message();
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
    EXPECT_TRUE(out.runs.empty());
  }
}

// --- The fit over runs with their own scenarios ---------------------------

// A run of `requests` closed-loop requests of Qwen2.5-0.5B on one or two
// H100s, without an API server.
ReplayRun OfflineRun(const std::string& name, int tp, int64_t concurrency, int requests) {
  auto spec = std::make_shared<ScenarioSpec>();
  spec->file = name + ".json";
  spec->model = "Qwen2.5-0.5B";
  PoolSpec p;
  p.path = "fleet.pools[0]";
  p.name = "p";
  p.model = spec->model;
  p.gpu = "H100-SXM";
  p.tp = tp;
  spec->pools.push_back(p);
  ReplayRun r;
  r.name = name;
  r.scenario = std::move(spec);
  r.server = false;
  r.concurrency = concurrency;
  const int prompts[] = {100, 600, 1200}, outputs[] = {40, 120, 80};
  for (int i = 0; i < requests; ++i) {
    Request q;
    q.prompt_tokens = prompts[i % 3];
    q.output_tokens = outputs[(i / 3) % 3];
    r.requests.push_back(q);
  }
  r.observed.values[0] = 1;  // placeholder until the truth is simulated
  return r;
}

TEST(MeasuredFit, RecoversTheStepAndTensorParallelStepTermsFromRunsWithTheirOwnScenarios) {
  const World w;
  std::vector<ReplayRun> runs = {OfflineRun("tp1-c1", 1, 1, 6), OfflineRun("tp1-c16", 1, 16, 48),
                                 OfflineRun("tp2-c1", 2, 1, 6), OfflineRun("tp2-c16", 2, 16, 48)};
  // The truth: a slower engine than the bundled estimates, with a per-step
  // cost at tp 2 that tp 1 lacks. Each run's truth has its own pool's
  // resolved terms with these four set, so nothing else differs.
  const double truth[6] = {3000, 25, 0.2, 2000, 0, 0};
  std::vector<ReplayRun> truth_runs = runs;
  for (ReplayRun& r : truth_runs) {
    auto spec = std::make_shared<ScenarioSpec>(*r.scenario);
    std::unique_ptr<ScenarioRun> check;
    const Status s = ScenarioRun::Build(*spec, w.catalog, w.policies, &check);
    ASSERT_TRUE(s.ok()) << s.message();
    EngineSpec e = check->pools()[0].engine;
    for (int i = 0; i < 4; ++i) *e.Term(kFitTerms[i]) = truth[i];
    spec->pools[0].engine_terms = e;
    r.scenario = std::move(spec);
  }
  std::vector<RunErrors> truth_figures;
  Status s = PredictRuns(*truth_runs[0].scenario, w.catalog, w.policies, truth_runs, 1, &truth_figures);
  ASSERT_TRUE(s.ok()) << s.message();
  for (size_t i = 0; i < runs.size(); ++i)
    for (int m = 0; m < kNumFitMetrics; ++m) {
      SCOPED_TRACE(runs[i].name + " " + kFitMetrics[m]);
      // Every figure but ITL (no chunk gaps recorded here: one token a step)
      // and a step run's.
      if (m == 4 || m == 5 || m == 9 || m == kPrefillStepMetric || m == kDecodeStepMetric) continue;
      ASSERT_TRUE(truth_figures[i].simulated.values[m].has_value());
      runs[i].observed.values[m] = truth_figures[i].simulated.values[m];
    }

  // The truth differs from the profile in CPU terms only: fitted on that
  // side (with the GPU side free too, a slower GEMM explains the same runs
  // as well; StepFit's tests cover that side).
  FitOptions o;
  o.cross_validate = false;
  o.scope = FitScope::kCpuServer;
  FitResult f;
  s = FitEngine(*runs[0].scenario, w.catalog, w.policies, runs, o, &f);
  ASSERT_TRUE(s.ok()) << s.message();
  // The bundled estimates miss the slower engine; the fitted terms do not.
  EXPECT_GT(*MedianAbsErrorAll(f.before), 0.15);
  EXPECT_LT(*MedianAbsErrorAll(f.after), 0.05);
  EXPECT_NEAR(f.terms[0], truth[0], 0.2 * truth[0]);
  EXPECT_NEAR(f.terms[3], truth[3], 0.2 * truth[3]);
  // No run has a server: its terms are not informed and keep their values.
  EXPECT_TRUE(f.informed[0]);
  EXPECT_TRUE(f.informed[3]);
  EXPECT_FALSE(f.informed[4]);
  EXPECT_FALSE(f.informed[5]);
  // (Kept up to the rounding of the fit's log-space round trip.)
  EXPECT_NEAR(f.terms[4], f.initial_terms[4], 1e-9 * f.initial_terms[4]);
  EXPECT_NEAR(f.terms[5], f.initial_terms[5], 1e-9 * f.initial_terms[5]);
}

TEST(MeasuredFit, TensorParallelStepIsNotInformedByRunsAtTp1) {
  const World w;
  std::vector<ReplayRun> runs = {OfflineRun("tp1-c1", 1, 1, 3), OfflineRun("tp1-c4", 1, 4, 8)};
  FitOptions o;
  o.max_iterations = 0;
  o.cross_validate = false;
  FitResult f;
  const Status s = FitEngine(*runs[0].scenario, w.catalog, w.policies, runs, o, &f);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(f.informed[0]);
  EXPECT_FALSE(f.informed[3]);
  EXPECT_FALSE(f.informed[4]);
  // With a served run among them, the server's terms are informed.
  runs[1].server = true;
  ASSERT_TRUE(FitEngine(*runs[0].scenario, w.catalog, w.policies, runs, o, &f).ok());
  EXPECT_TRUE(f.informed[4]);
  EXPECT_FALSE(f.informed[3]);
}

// --- The bundled profile on the bundled published runs --------------------

TEST(PublicServing, BundledProfilePredictsHeldOutRunsWithinTheTarget) {
  const World w;
  const std::string path = std::string(FLEETSIM_SOURCE_DIR) + "/tests/fidelity/data/public_serving.json";
  MeasurementSet set;
  Status s = LoadMeasurementSet(path, "", &set);
  ASSERT_TRUE(s.ok()) << s.message();
  std::vector<ReplayRun> runs;
  for (const Measurement& m : set.runs) {
    // "fit_<profile>": the runs that profile's terms were fitted on.
    EXPECT_TRUE(m.split.rfind("fit_", 0) == 0 || m.split == "held_out") << m.id << ": " << m.split;
    EXPECT_FALSE(m.citation.empty()) << m.id;
    runs.push_back(m.run);
  }
  std::vector<RunErrors> errors;
  s = PredictRuns(*runs.front().scenario, w.catalog, w.policies, runs, set.seed, &errors);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(errors.size(), runs.size());
  std::vector<RunErrors> held_out, held_out_v0;
  for (size_t i = 0; i < runs.size(); ++i) {
    SCOPED_TRACE(runs[i].name);
    EXPECT_EQ(errors[i].run, runs[i].name);
    for (int m = 0; m < kNumFitMetrics; ++m) {
      if (!runs[i].observed.values[m]) continue;
      // Every published figure has a simulated counterpart.
      EXPECT_TRUE(errors[i].simulated.values[m].has_value()) << kFitMetrics[m];
      ASSERT_TRUE(errors[i].error[m].has_value()) << kFitMetrics[m];
    }
    if (set.runs[i].split == "held_out") held_out.push_back(errors[i]);
    if (set.runs[i].split == "held_out" && runs[i].scenario->pools[0].scheduler == "vllm_v0")
      held_out_v0.push_back(errors[i]);
  }
  ASSERT_GE(held_out.size(), 5u);
  const std::optional<double> abs_err = MedianAbsErrorAll(held_out);
  ASSERT_TRUE(abs_err.has_value());
  EXPECT_LE(*abs_err, 0.10);                             // the issue's target on runs not fitted
  EXPECT_LE(std::fabs(*MedianBiasAll(held_out)), 0.05);  // and a bias of at most 5%
  // The fitted profile alone (vllm_v0: runs of other models, batch sizes,
  // tp and a GPU it was not fitted on), to the same target.
  ASSERT_GE(held_out_v0.size(), 10u);
  EXPECT_LE(*MedianAbsErrorAll(held_out_v0), 0.10);
  EXPECT_LE(std::fabs(*MedianBiasAll(held_out_v0)), 0.05);
}

}  // namespace
}  // namespace fleetsim

// `fleetsim fit` end to end: two "observed" runs of a server slower than the
// bundled vLLM estimates (made by fleetsim itself with an engine profile
// whose CPU and server terms are larger, written out as the per-request CSV
// that `fleetsim observe` reads), fitted from the bundled profile. The
// written profile must load, name its source for the pool's GPU, model and
// tp, and reproduce the runs: median error at most 5% on the runs fitted and
// 10% on each run left out, per metric (the issue's targets).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "model/catalog.h"
#include "tests/cli/cli_test_util.h"

namespace fleetsim {
namespace {

using clitest::CommandResult;
using clitest::RunFleetsim;
using clitest::ScratchDir;
using clitest::ShellQuote;
using nlohmann::json;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// requests.csv (id,arrival_s,first_scheduled_s,first_token_s,finish_s,prompt,output,...) as the
// observe CSV: start_s,input_tokens,output_tokens,ttft_s,e2e_s.
std::string AsObservedCsv(const std::string& requests_csv) {
  std::istringstream in(requests_csv);
  std::string line, out = "start_s,input_tokens,output_tokens,ttft_s,e2e_s\n";
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    const double arrival = std::stod(f[1]), first = std::stod(f[3]), finish = std::stod(f[4]);
    char row[160];
    std::snprintf(row, sizeof row, "%.9f,%s,%s,%.9f,%.9f\n", arrival, f[5].c_str(), f[6].c_str(), first - arrival,
                  finish - arrival);
    out += row;
  }
  return out;
}

TEST(CliFit, FitsTheTermsOfASlowerServerAndPredictsARunLeftOut) {
  ScratchDir dir;
  // The "real" server: the bundled vLLM profile with slower CPU and server.
  json profile = json::parse(Read(std::string(FLEETSIM_SOURCE_DIR) + "/model/engines/vllm.json"));
  profile["name"] = "slow";
  auto set = [&](const char* term, double v) { profile["terms"][term][0]["value"] = v; };
  set("step_cpu_us", 2500);
  set("seq_cpu_us", 20);
  set("server_request_us", 4000);
  dir.Write("slow.json", profile.dump());
  const json scenario = json::parse(R"({
    "name": "fit-cli", "seed": 3, "model": "Llama-3.1-8B",
    "fleet": { "pools": [ { "name": "p", "gpu": "H100-SXM", "replicas": 1, "tp": 1, "async_scheduling": false } ] },
    "traffic": { "generator": { "arrival": "poisson", "rate_per_s": 4,
                                "prompt_tokens": { "dist": "uniform", "min": 100, "max": 2000 },
                                "output_tokens": { "dist": "uniform", "min": 20, "max": 300 } },
                 "max_requests": 200 } })");
  const std::string base = dir.Write("base.json", scenario.dump());
  // Two observed runs at different loads.
  for (const auto& [name, rate] : {std::pair<std::string, double>{"low", 2}, {"high", 12}}) {
    json s = scenario;
    s["fleet"]["pools"][0]["engine"] = "slow.json";
    s["traffic"]["generator"]["rate_per_s"] = rate;
    const std::string path = dir.Write(name + ".json", s.dump());
    CommandResult r = RunFleetsim("run " + ShellQuote(path) + " --quiet --out " + ShellQuote(dir.File(name)));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    dir.Write(name + ".csv", AsObservedCsv(Read(dir.File(name + "/requests.csv"))));
  }
  // The server differs from the profile in its CPU terms only; with the
  // GPU terms free too (the default), a slower decode kernel explains two
  // runs' TPOT as well as a slower step, so the CPU side is fitted alone.
  CommandResult r = RunFleetsim("fit " + ShellQuote(dir.File("low.csv")) + " " + ShellQuote(dir.File("high.csv")) +
                                " --scenario " + ShellQuote(base) + " --out " + ShellQuote(dir.File("fitted.json")) +
                                " --name vllm-fitted --terms cpu");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The printed table: every metric, before / fitted / left out.
  std::istringstream table(r.output);
  int metrics = 0;
  for (std::string line; std::getline(table, line);) {
    char metric[64];
    double before, fitted, left_out;
    if (std::sscanf(line.c_str(), " %63s %lf%% %lf%% %lf%%", metric, &before, &fitted, &left_out) != 4) continue;
    SCOPED_TRACE(line);
    ++metrics;
    EXPECT_LT(fitted, 5.0);
    EXPECT_LT(left_out, 10.0);
  }
  // TTFT, TPOT and throughput; ITL needs chunk gaps, which this CSV lacks.
  EXPECT_EQ(metrics, 5) << r.output;
  // The profile loads, and its fitted entries name this pool.
  EngineProfile p;
  const Status s = LoadEngineProfileFile(dir.File("fitted.json"), &p);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(p.name, "vllm-fitted");
  const EngineTermEntry& step = p.terms.at("step_cpu_us").front();
  EXPECT_EQ(step.gpu, "H100-SXM");
  EXPECT_EQ(step.model, "Llama-3.1-8B");
  EXPECT_EQ(step.tp, 1);
  EXPECT_NE(step.source.find("fleetsim fit on 2 observed runs"), std::string::npos) << step.source;
  EXPECT_NEAR(step.value, 2500, 500);
  EXPECT_TRUE(std::ifstream(dir.File("fitted-report/report.md")).good());
  EXPECT_TRUE(std::ifstream(dir.File("fitted-report/errors.svg")).good());
  // A scenario using the fitted profile no longer warns about step_cpu_us.
  json use = scenario;
  use["fleet"]["pools"][0]["engine"] = "fitted.json";
  r = RunFleetsim("run " + ShellQuote(dir.Write("use.json", use.dump())) + " --quiet --out " +
                  ShellQuote(dir.File("use")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("step_cpu_us"), std::string::npos) << r.output;
}

// A scenario of one H100 pool, the base the refusals are tried against.
const char* kOnePool = R"({"name": "x", "model": "Llama-3.1-8B",
    "fleet": {"pools": [{"name": "p", "gpu": "H100-SXM"}]},
    "traffic": {"generator": {"arrival": "poisson", "rate_per_s": 1, "prompt_tokens": 10, "output_tokens": 10},
                "max_requests": 5}})";

TEST(CliFit, RefusesWhatItCannotReplay) {
  ScratchDir dir;
  const std::string data = std::string(FLEETSIM_SOURCE_DIR) + "/tests/observe/data/";
  const std::string one = dir.Write("one.json", kOnePool);
  const std::string two = dir.Write("two.json", R"({"name": "x", "model": "Llama-3.1-8B",
    "fleet": {"pools": [{"name": "p", "gpu": "H100-SXM"}, {"name": "q", "gpu": "H100-SXM"}]},
    "traffic": {"generator": {"arrival": "poisson", "rate_per_s": 1, "prompt_tokens": 10, "output_tokens": 10},
                "max_requests": 5}})");
  const std::pair<std::string, std::string> cases[] = {
      {"fit " + ShellQuote(data + "vllm_summary.json") + " --scenario " + ShellQuote(one) + " --out " +
           ShellQuote(dir.File("a.json")),
       "--save-detailed"},
      {"fit " + ShellQuote(data + "requests.csv") + " --scenario " + ShellQuote(two) + " --out " +
           ShellQuote(dir.File("a.json")),
       "fit replays one pool"},
      {"fit " + ShellQuote(dir.File("missing.csv")) + " --scenario " + ShellQuote(one) + " --out " +
           ShellQuote(dir.File("a.json")),
       "missing.csv"},
      {"fit " + ShellQuote(data + "requests.csv") + " --scenario " + ShellQuote(one) + " --out " +
           ShellQuote(dir.path().string()),
       "is a folder"},
  };
  for (const auto& [args, expect] : cases) {
    SCOPED_TRACE(args);
    const CommandResult r = RunFleetsim(args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(expect), std::string::npos) << r.output;
  }
  EXPECT_FALSE(std::ifstream(dir.File("a.json")).good());
}

// A measurement set of three published runs on one H100 (tp 1): two of the
// offline engine (server false) for the "fit" split, of two different
// models, and a served run held out.
json SmallMeasurementSet() {
  auto source = [](const std::string& date, const std::string& version) {
    return json{{"url", "https://example.org/" + date},
                {"title", "A benchmark post"},
                {"date", date},
                {"engine_version", version},
                {"quote", "batch size 1"}};
  };
  json set = {{"format", "fleetsim-measurements"},
              {"version", 1},
              {"seed", 5},
              {"scenario",
               {{"name", "measured"},
                {"model", "Qwen2.5-0.5B"},
                {"fleet", {{"pools", {{{"name", "p"}, {"gpu", "H100-SXM"}, {"replicas", 1}, {"tp", 1}}}}}}}}};
  set["runs"] = json::array();
  set["runs"].push_back(
      {{"id", "qwen-c1"},
       {"split", "fit"},
       {"source", source("2024-11-06", "vllm 0.6.3")},
       {"workload",
        {{"requests", 4}, {"prompt_tokens", 200}, {"output_tokens", 64}, {"concurrency", 1}, {"server", false}}},
       {"observed", {{"tpot_mean", 6}, {"e2e_mean", 420}}}});
  set["runs"].push_back(
      {{"id", "llama-c4"},
       {"split", "fit"},
       {"source", source("2025-01-15", "vllm 0.6.4")},
       {"set", {{"model", "Llama-3.1-8B"}}},
       {"workload",
        {{"requests", 8}, {"prompt_tokens", 500}, {"output_tokens", 64}, {"concurrency", 4}, {"server", false}}},
       {"observed", {{"tpot_mean", 12}}}});
  set["runs"].push_back(
      {{"id", "served-held-out"},
       {"split", "held_out"},
       {"source", source("2023-05-01", "vllm 0.1.0")},
       {"set", {{"model", "Qwen2.5-1.5B"}}},
       {"workload", {{"requests", 6}, {"prompt_tokens", 300}, {"output_tokens", 32}, {"rate_per_s", 2}}},
       {"observed", {{"ttft_mean", 40}}}});
  return set;
}

TEST(CliFit, FitsASplitOfAMeasurementSetAndWritesOnlyTheTermsItsRunsInform) {
  ScratchDir dir;
  const std::string set = dir.Write("set.json", SmallMeasurementSet().dump());
  CommandResult r =
      RunFleetsim("fit " + ShellQuote(set) + " --split fit --out " + ShellQuote(dir.File("fitted.json")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EngineProfile fitted, bundled;
  Status s = LoadEngineProfileFile(dir.File("fitted.json"), &fitted);
  ASSERT_TRUE(s.ok()) << s.message();
  s = LoadEngineProfileFile(std::string(FLEETSIM_SOURCE_DIR) + "/model/engines/vllm.json", &bundled);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(fitted.name, "vllm");  // the runs' pool's profile
  // The fitted entry names what the fitted runs share: the GPU and tp, not
  // the model (Qwen2.5-0.5B and Llama-3.1-8B).
  const EngineTermEntry& step = fitted.terms.at("step_cpu_us").front();
  EXPECT_EQ(step.gpu, "H100-SXM");
  EXPECT_EQ(step.model, "");
  EXPECT_EQ(step.tp, 1);
  EXPECT_FALSE(step.estimate);
  EXPECT_NE(step.source.find("fleetsim fit on 2 observed runs (qwen-c1, llama-c4)"), std::string::npos)
      << step.source;
  // Dates and versions of the fitted runs' sources (not the held-out run's).
  EXPECT_EQ(step.date, "2024-11-06 to 2025-01-15");
  EXPECT_EQ(step.engine_version, "vllm 0.6.3; vllm 0.6.4");
  // Four significant figures.
  char rounded[32];
  std::snprintf(rounded, sizeof rounded, "%.4g", step.value);
  EXPECT_EQ(std::stod(rounded), step.value) << step.value;
  EXPECT_EQ(fitted.terms.at("step_cpu_us").size(), bundled.terms.at("step_cpu_us").size() + 1);
  // No fitted run has a server, and none runs at tp > 1: those terms are
  // the bundled profile's, entry for entry.
  for (const char* term : {"server_request_us", "server_prompt_token_us", "tp_step_cpu_us"}) {
    SCOPED_TRACE(term);
    const auto& a = fitted.terms.at(term);
    const auto& b = bundled.terms.at(term);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].value, b[i].value);
      EXPECT_EQ(a[i].gpu, b[i].gpu);
      EXPECT_EQ(a[i].model, b[i].model);
      EXPECT_EQ(a[i].tp, b[i].tp);
      EXPECT_EQ(a[i].source, b[i].source);
    }
  }
  EXPECT_NE(r.output.find("no run depends on it"), std::string::npos) << r.output;
  EXPECT_TRUE(std::ifstream(dir.File("fitted-report/report.md")).good());
  EXPECT_TRUE(std::ifstream(dir.File("fitted-report/errors.svg")).good());
}

TEST(CliFit, WrittenEntriesNameAModelAndTpOnlyWithTheGpu) {
  ScratchDir dir;
  // The same model and tp on two GPUs: the entry is generic.
  json set = SmallMeasurementSet();
  set["runs"][1]["set"] = {{"fleet.pools[0].gpu", "A100-80G"}};
  const std::string path = dir.Write("set.json", set.dump());
  const CommandResult r = RunFleetsim("fit " + ShellQuote(path) + " --split fit --quiet --out " +
                                      ShellQuote(dir.File("fitted.json")) + " --report " +
                                      ShellQuote(dir.File("report")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // --quiet leaves only the fit's warnings, and on two GPUs one says the
  // GPU terms were not fitted.
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);)
    EXPECT_EQ(line.rfind("fleetsim: warning: fit: ", 0), 0u) << line;
  EXPECT_NE(r.output.find("more than one GPU"), std::string::npos) << r.output;
  EngineProfile fitted;
  const Status s = LoadEngineProfileFile(dir.File("fitted.json"), &fitted);
  ASSERT_TRUE(s.ok()) << s.message();
  for (const KernelTermInfo& k : kKernelTerms) EXPECT_EQ(fitted.terms.count(k.name), 0u) << k.name;
  const EngineTermEntry& step = fitted.terms.at("step_cpu_us").front();
  EXPECT_NE(step.source.find("fleetsim fit"), std::string::npos) << step.source;
  EXPECT_EQ(step.gpu, "");
  EXPECT_EQ(step.model, "");
  EXPECT_EQ(step.tp, 0);
  EXPECT_TRUE(std::ifstream(dir.File("report/report.md")).good());
  EXPECT_FALSE(std::filesystem::exists(dir.File("fitted-report")));
}

TEST(CliFit, RefusesSplitsAndProfilesItCannotFit) {
  ScratchDir dir;
  const std::string requests = std::string(FLEETSIM_SOURCE_DIR) + "/tests/observe/data/requests.csv";
  const std::string one = dir.Write("one.json", kOnePool);
  const std::string set = dir.Write("set.json", SmallMeasurementSet().dump());
  json mixed = SmallMeasurementSet();
  mixed["runs"][1]["set"]["fleet.pools[0].scheduler"] = "sglang";
  const std::string mixed_set = dir.Write("mixed.json", mixed.dump());
  const std::string out = " --out " + ShellQuote(dir.File("a.json"));
  const std::pair<std::string, std::vector<std::string>> cases[] = {
      {"fit " + ShellQuote(requests) + " --scenario " + ShellQuote(one) + " --split fit" + out,
       {"fleetsim: " + requests + ": --split selects runs of measurement sets"}},
      {"fit " + ShellQuote(requests) + out, {"fleetsim: " + requests + ": ", "give --scenario"}},
      {"fit " + ShellQuote(mixed_set) + out,
       {"fleetsim: " + mixed_set + ": runs[1] (llama-c4): ", "\"sglang\"", "\"vllm\"", "runs[0] (qwen-c1)",
        "cannot be fitted together"}},
      {"fit " + ShellQuote(set) + " --split test" + out, {"fleetsim: " + set + ": runs: no run has split \"test\""}},
  };
  for (const auto& [args, expect] : cases) {
    SCOPED_TRACE(args);
    const CommandResult r = RunFleetsim(args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(clitest::CountLines(r.output), 1) << r.output;
    for (const std::string& e : expect) EXPECT_NE(r.output.find(e), std::string::npos) << r.output;
  }
  EXPECT_FALSE(std::ifstream(dir.File("a.json")).good());
  EXPECT_FALSE(std::filesystem::exists(dir.File("a-report")));
}

}  // namespace
}  // namespace fleetsim

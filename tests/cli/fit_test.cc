// `fleetsim fit` end to end: two "observed" runs of a server slower than the
// bundled vLLM estimates (made by fleetsim itself with an engine profile
// whose CPU and server terms are larger, written out as the per-request CSV
// that `fleetsim observe` reads), fitted from the bundled profile. The
// written profile must load, name its source for the pool's GPU, model and
// tp, and reproduce the runs: median error at most 5% on the runs fitted and
// 10% on each run left out, per metric (the issue's targets).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

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
    "fleet": { "pools": [ { "name": "p", "gpu": "H100-SXM", "replicas": 1, "tp": 1 } ] },
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
  CommandResult r = RunFleetsim("fit " + ShellQuote(dir.File("low.csv")) + " " + ShellQuote(dir.File("high.csv")) +
                                " --scenario " + ShellQuote(base) + " --out " + ShellQuote(dir.File("fitted.json")) +
                                " --name vllm-fitted");
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

TEST(CliFit, RefusesWhatItCannotReplay) {
  ScratchDir dir;
  const std::string data = std::string(FLEETSIM_SOURCE_DIR) + "/tests/observe/data/";
  const std::string one = dir.Write("one.json", R"({"name": "x", "model": "Llama-3.1-8B",
    "fleet": {"pools": [{"name": "p", "gpu": "H100-SXM"}]},
    "traffic": {"generator": {"arrival": "poisson", "rate_per_s": 1, "prompt_tokens": 10, "output_tokens": 10},
                "max_requests": 5}})");
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

}  // namespace
}  // namespace fleetsim

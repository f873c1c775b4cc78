// The bundled plan, scenarios/plan-llama70b.json, cut short (two
// replications over 300 s windows of the trace) and run end to end: it must
// recommend a fleet that meets its targets, drop the configurations that do
// not fit in memory with their reason, and write every output. Release
// build only (tests/cli/CMakeLists.txt): it runs about 1,000 simulations.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_test_util.h"

namespace fleetsim::clitest {
namespace {

using nlohmann::json;

json ReadJson(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return json::parse(ss.str());
}

TEST(PlanScenario, Llama70bCutShortRecommendsAFleetThatMeetsItsTargets) {
  ScratchDir dir;
  json plan = ReadJson(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/plan-llama70b.json");
  plan["replications"] = 2;
  plan["load"]["trace_window_s"] = 300;
  plan["scenario"]["traffic"]["trace"]["path"] =
      std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/traces/azure_conv_2023.csv";
  const std::string file = dir.Write("plan.json", plan.dump(2));
  const CommandResult r = RunFleetsim("plan " + ShellQuote(file) + " --out " + ShellQuote(dir.File("out")) + " -j 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* f : {"plan.json", "report.html", "report.md", "curves.csv", "frontier.csv", "chosen/summary.json",
                        "chosen/timeseries.csv", "chosen/report.html"})
    EXPECT_TRUE(std::filesystem::exists(dir.File("out/" + std::string(f)))) << f;
  const json out = ReadJson(dir.File("out/plan.json"));
  ASSERT_FALSE(out["recommendations"].empty()) << r.output;
  EXPECT_EQ(out["families"].size(), 72u);

  // tp 2 of a 70B model in bf16 does not fit an 80 GB GPU: dropped, with why.
  int dropped_memory = 0;
  for (const json& f : out["families"]) {
    if (f["status"] != "dropped") continue;
    EXPECT_NE(f["reason"].get<std::string>().find("does not fit"), std::string::npos) << f.dump();
    EXPECT_EQ(f["settings"]["fleet.pools[0].tp"], 2) << f.dump();
    ++dropped_memory;
  }
  EXPECT_EQ(dropped_memory, 16);  // H100 and A100-80G at tp 2: 2 GPUs x 4 engine settings x 2 routers

  // Every recommendation meets every target by its interval's upper bound,
  // within the H100 quota.
  double last_cost = 0;
  for (const json& rec : out["recommendations"]) {
    const std::string id = rec["config"];
    const double cost = rec["usd_per_hour"];
    EXPECT_GE(cost, last_cost);
    last_cost = cost;
    bool found = false;
    for (const json& p : out["points"]) {
      if (p["config"] != id || p["rate_scale"] != 1) continue;
      found = true;
      EXPECT_TRUE(p["meets_all"].get<bool>());
      EXPECT_LE(p["metrics"]["ttft_p99_ms"]["hi"].get<double>(), 2000);
      EXPECT_LE(p["metrics"]["tpot_p99_ms"]["hi"].get<double>(), 100);
    }
    EXPECT_TRUE(found) << id;
    for (const json& c : out["configs"]) {
      if (c["id"] == id && c["gpus_by_type"].contains("H100-SXM")) {
        EXPECT_LE(c["gpus_by_type"]["H100-SXM"].get<int>(), 64);
      }
    }
    EXPECT_NE(rec["launch"]["command"].get<std::string>().find("Llama-3.1-70B"), std::string::npos);
  }
  EXPECT_TRUE(out["load"]["traffic_replicated"].get<bool>());
  EXPECT_NEAR(out["load"]["base_rate_per_s"].get<double>(), 20, 4);
}


// The bundled DeepSeek-V3 plan end to end: every shard family fits, and
// the cheapest fleet runs attention data-parallel beside EP8. Under TP8
// every GPU keeps the whole 576-element latent of every token (MLA's KV is
// not split by heads), so a node holds an eighth of the tokens it holds
// with eight attention ranks; the launch line says so to SGLang.
TEST(PlanScenario, DeepSeekV3PrefersDataParallelAttention) {
  ScratchDir dir;
  json plan = ReadJson(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/plan-deepseek-v3.json");
  plan["scenario"]["traffic"]["trace"]["path"] =
      std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/traces/azure_conv_2023.csv";
  const std::string file = dir.Write("plan.json", plan.dump(2));
  const CommandResult r = RunFleetsim("plan " + ShellQuote(file) + " --out " + ShellQuote(dir.File("out")) + " -j 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json out = ReadJson(dir.File("out/plan.json"));
  EXPECT_EQ(out["families"].size(), 6u);
  for (const json& f : out["families"]) EXPECT_NE(f["status"], "dropped") << f.dump();
  ASSERT_FALSE(out["recommendations"].empty()) << r.output;
  const json& best = out["recommendations"][0];
  const std::string command = best["launch"]["command"];
  EXPECT_NE(command.find("sglang.launch_server --model-path deepseek-ai/DeepSeek-V3"), std::string::npos) << command;
  EXPECT_NE(command.find("--enable-dp-attention"), std::string::npos) << command;
}

}  // namespace
}  // namespace fleetsim::clitest
